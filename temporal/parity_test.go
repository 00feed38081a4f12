package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/temporal"
)

// A parity feature is a feature of the shell as a run of one task shows
// it in its log; a parity path is a way of carrying out a run. Each path
// must show each feature as the local run does.
type parityFeature struct {
	name  string
	turns []scripted.Turn
	// hooks and guardrails are the run's; flaky says the first model call
	// fails with a temporary error (a local model's transport retries it,
	// a worker's activity is retried by Temporal).
	// bills is what that failed attempt is billed (model.Hooks.OnBilled).
	hooks      runner.Hooks
	guardrails []runner.Guardrail
	flaky      bool
	bills      model.Usage
	// patch is the patch the run's workspace gives as it finishes.
	patch *loop.Patch
}

// parityPath carries out feature f's run as id and returns the store
// holding its log and the run's ID there.
type parityPath func(t *testing.T, f parityFeature, id string) (store.Store, string)

var parityFeatures = []parityFeature{
	{
		name:  "hooks",
		turns: []scripted.Turn{{Tools: []scripted.ToolCall{addCall(2, 3), {Name: "echo", Args: map[string]int{"n": 4}}}}, {Finish: finish("5")}},
		hooks: runner.Hooks{
			BeforeModel: func(context.Context, runner.ModelCall) (runner.ModelDecision, error) {
				return runner.ModelDecision{Context: "be brief"}, nil
			},
			BeforeTool: func(_ context.Context, c runner.ToolCall) (runner.ToolDecision, error) {
				if c.Name == "echo" {
					return runner.ToolDecision{Deny: "no echoes"}, nil
				}
				return runner.ToolDecision{}, nil
			},
			AfterTool: func(_ context.Context, _ runner.ToolCall, out runner.ToolOutput) (runner.ToolOutput, error) {
				out.Output += " (checked)"
				return out, nil
			},
		},
	},
	{
		name:  "guardrails",
		turns: []scripted.Turn{{Tools: []scripted.ToolCall{{Name: "echo", Args: map[string]int{"n": 4}}}}, {Finish: finish("5")}},
		guardrails: []runner.Guardrail{{Name: "no-echo", Output: func(_ context.Context, r *model.Response) (runner.Verdict, error) {
			for _, b := range r.Content {
				if b.Type == model.ToolUse && b.Name == "echo" {
					return runner.Verdict{Trip: true, Reason: "echo is not allowed"}, nil
				}
			}
			return runner.Verdict{}, nil
		}}},
	},
	{
		name:  "patch",
		turns: []scripted.Turn{{Tools: []scripted.ToolCall{addCall(2, 3)}}, {Finish: finish("5")}},
		patch: &loop.Patch{Diff: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-4\n+5\n", Files: []string{"f"}},
	},
	{
		name:  "retry entries",
		turns: []scripted.Turn{{Tools: []scripted.ToolCall{addCall(2, 3)}}, {Finish: finish("5")}},
		flaky: true,
	},
	{
		name:  "billed attempts",
		turns: []scripted.Turn{{Tools: []scripted.ToolCall{addCall(2, 3)}}, {Finish: finish("5")}},
		flaky: true,
		bills: model.Usage{InputTokens: 300, OutputTokens: 500, Cost: 7000, CostKnown: true},
	},
}

func TestParity(t *testing.T) {
	f := newFleet(t, dial(t, testenv.TemporalServer(t)), "ratchet-parity")
	paths := []struct {
		name string
		run  parityPath
	}{
		{"run", localPath},
		{"resume", resumePath},
		{"fork", forkPath},
		{"eval run", evalPath},
		{"--temporal run", f.parityPath},
	}
	for _, feat := range parityFeatures {
		t.Run(feat.name, func(t *testing.T) {
			want := parityView(t)(localPath(t, feat, "want"))
			if len(want) < 2 {
				t.Fatalf("the local run shows too little of %s to compare: %q", feat.name, want)
			}
			for _, p := range paths {
				id := strings.ReplaceAll(feat.name+"/"+p.name, " ", "-")
				if got := parityView(t)(p.run(t, feat, id)); !cmp.Equal(got, want) {
					t.Errorf("%s on path %s (-local +path):\n%s", feat.name, p.name, cmp.Diff(want, got))
				}
			}
		})
	}
}

// parityView returns what a run's log shows of the shell's features: its
// hook decisions, retries, tool results, patch and how it ended. What a
// command led to is sorted: on Temporal a batch's tool calls are decided
// and answered each in its own activity, in call order (docs/temporal.md).
// It takes a path's results as they are.
func parityView(t *testing.T) func(st store.Store, id string) []string {
	return func(st store.Store, id string) []string {
		t.Helper()
		return logView(t, st, id)
	}
}

func logView(t *testing.T, st store.Store, id string) []string {
	t.Helper()
	recs, err := runner.LoadLog(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	var view []string
	from := 0
	for _, r := range recs {
		switch {
		case r.Kind == observe.KindCommand:
			slices.Sort(view[from:])
			from = len(view)
		case r.Kind == observe.KindHook:
			view = append(view, "hook "+string(r.Note))
		case r.Kind == observe.KindRetry:
			view = append(view, fmt.Sprintf("retry %s attempt %d", r.Retry.Call, r.Retry.Attempt))
		case r.Event != nil && r.Event.Tool != nil:
			view = append(view, "tool "+r.Event.Call+" "+r.Event.Tool.Outcome+" "+r.Event.Tool.Output)
		case r.Event != nil && r.Event.Guardrail != nil:
			view = append(view, "guardrail "+r.Event.Guardrail.Name+" "+r.Event.Guardrail.Reason)
		}
	}
	slices.Sort(view[from:])
	row, err := st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var res loop.Result
	if err := json.Unmarshal(row.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Patch != nil {
		view = append(view, "patch "+res.Patch.Diff)
	}
	u := res.Usage
	view = append(view, fmt.Sprintf("usage model_calls=%d input=%d output=%d cost=%d", u.ModelCalls, u.InputTokens, u.OutputTokens, u.Cost))
	return append(view, "status "+row.Status)
}

// model is f's model for a local run (with a transport that retries) or
// for a worker (without: Temporal retries the activity).
func (f parityFeature) model(t *testing.T, worker bool) model.Model {
	m := newModel(t, f.turns...)
	if !f.flaky {
		return m
	}
	return &flakyModel{Model: m, retries: !worker, bills: f.bills}
}

// flakyModel fails the run's first model call once with a temporary
// error; with retries it retries it, as model/retry's transport does,
// telling the call's hooks. The run's first call is call 0 of the script
// (a resumed run, or a worker, says which call it makes by Seek).
type flakyModel struct {
	model.Model
	retries      bool
	bills        model.Usage
	next         atomic.Int64
	failedBefore atomic.Bool
}

func (m *flakyModel) Seek(calls int) {
	m.next.Store(int64(calls))
	if s, ok := m.Model.(runner.Seeker); ok {
		s.Seek(calls)
	}
}

func (m *flakyModel) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if m.next.Add(1) == 1 && !m.failedBefore.Swap(true) {
		err := &model.APIError{Kind: model.ErrOverloaded, Status: 529, Message: "overloaded"}
		if h := model.HooksFrom(ctx); h.OnBilled != nil && m.bills != (model.Usage{}) {
			h.OnBilled(m.bills)
		}
		if !m.retries {
			return model.Response{}, err
		}
		if h := model.HooksFrom(ctx); h.OnRetry != nil {
			h.OnRetry(model.Retry{Attempt: 2, Status: 529, Reason: err.Error()})
		}
	}
	return m.Model.Generate(ctx, req)
}

func (f parityFeature) config(t *testing.T, id string, st store.Store) runner.Config {
	return runner.Config{Model: f.model(t, false), RunID: id, Store: st, Hooks: f.hooks, Guardrails: f.guardrails, Patch: f.takePatch()}
}

// takePatch is the run's patch taker: nil when f has no patch.
func (f parityFeature) takePatch() func(context.Context) *loop.Patch {
	if f.patch == nil {
		return nil
	}
	return func(context.Context) *loop.Patch { p := *f.patch; return &p }
}

func localPath(t *testing.T, f parityFeature, id string) (store.Store, string) {
	st := memory.New()
	if _, err := runner.Run(context.Background(), baseTask(), f.config(t, id, st)); err != nil {
		t.Logf("run %s: %v", id, err)
	}
	return st, id
}

// evalPath runs f as the one case of a suite.
func evalPath(t *testing.T, f parityFeature, id string) (store.Store, string) {
	dir, err := eval.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runs := memory.New()
	suite := &eval.Suite{Label: "parity", Repeats: 1, Cases: []eval.Case{{Name: id, Repeats: 1, Task: &taskfile.File{}}}}
	out, err := eval.Run(context.Background(), suite, eval.Config{Store: dir, Runs: runs, NoLogs: true, Hooks: f.hooks, Guardrails: f.guardrails,
		Load: func(context.Context, eval.Case, int) (eval.Job, error) {
			return eval.Job{Task: baseTask(), Model: f.model(t, false), Patch: f.takePatch()}, nil
		}})
	if err != nil || len(out.Records) != 1 || len(out.LoadErrors) > 0 {
		t.Fatalf("eval: %v, %d records, load errors %v", err, len(out.Records), out.LoadErrors)
	}
	return runs, out.Records[0].Run
}

// resumePath runs f, then keeps of its log only what a process that died
// as it began its first tool batch (or its first model call, when there is
// none) would have left, and resumes it there in a new store.
func resumePath(t *testing.T, f parityFeature, id string) (store.Store, string) {
	ctx := context.Background()
	first, _ := localPath(t, f, id)
	entries, err := first.Entries(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for i, e := range entries {
		var c struct{ Type loop.CommandType }
		if e.Kind != string(observe.KindCommand) || json.Unmarshal(e.Data, &struct{ Command any }{&c}) != nil {
			continue
		}
		if c.Type == loop.RunTools || c.Type == loop.CallModel && cut == 0 {
			cut = i + 1
		}
		if c.Type == loop.RunTools {
			break
		}
	}
	st := memory.New()
	if err := st.CreateRun(ctx, store.Run{ID: id, Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, id, entries[:cut]); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(ctx, baseTask(), f.config(t, id, st), runner.ResumeOptions{}); err != nil {
		t.Logf("resume %s: %v", id, err)
	}
	return st, id
}

// forkPath runs f without its features, then forks the run from its
// first model call with them: everything after the fork point is the
// fork's.
func forkPath(t *testing.T, f parityFeature, id string) (store.Store, string) {
	st := memory.New()
	plain := parityFeature{turns: f.turns}
	if _, err := runner.Run(context.Background(), baseTask(), plain.config(t, id+"-parent", st)); err != nil {
		t.Logf("parent of %s: %v", id, err)
	}
	recs, err := runner.LoadLog(context.Background(), st, id+"-parent")
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.config(t, id, st)
	_, err = runner.Fork(context.Background(), baseTask(), cfg, runner.ForkOptions{From: id + "-parent", At: runner.ForkPoints(recs)[0].Seq, Model: cfg.Model})
	if err != nil {
		t.Logf("fork %s: %v", id, err)
	}
	return st, id
}

func (fl *fleet) parityPath(t *testing.T, f parityFeature, id string) (store.Store, string) {
	fl.tasks[id] = temporal.Live{Task: baseTask(), Model: f.model(t, true), Hooks: f.hooks, Guardrails: f.guardrails, Patch: f.takePatch()}
	run, err := temporal.Start(context.Background(), fl.c, fl.store, baseTask(), temporal.StartOptions{RunID: id, TaskQueue: fl.queue})
	if err != nil {
		t.Fatal(err)
	}
	var res loop.Result
	if err := run.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if (res.Patch == nil) != (f.patch == nil) {
		t.Errorf("the workflow's Result has patch %v, want %v", res.Patch, f.patch)
	}
	return fl.store, id
}

// billingOutage fails every call with a temporary error after billing it,
// as a provider whose streams are all cut after output does.
type billingOutage struct{ bills model.Usage }

func (m billingOutage) Generate(ctx context.Context, _ model.Request) (model.Response, error) {
	if h := model.HooksFrom(ctx); h.OnBilled != nil {
		h.OnBilled(m.bills)
	}
	return model.Response{}, &model.APIError{Kind: model.ErrOverloaded, Status: 529, Message: "overloaded"}
}

// TestBilledAttemptsFailedForGood: when every attempt of a model activity
// fails, what each was billed still reaches the run's usage.
func TestBilledAttemptsFailedForGood(t *testing.T) {
	f := newFleet(t, dial(t, testenv.TemporalServer(t)), "ratchet-billed")
	bills := model.Usage{InputTokens: 300, OutputTokens: 500, Cost: 7000, CostKnown: true}
	run := f.start(t, "billed-outage", baseTask(), billingOutage{bills}, temporal.StartOptions{Attempts: 2})
	var res loop.Result
	if err := run.Get(context.Background(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Failed || res.Usage.Cost != 2*bills.Cost || res.Usage.OutputTokens != 2*bills.OutputTokens {
		t.Errorf("ended %s with usage %+v, want failed with both attempts' %d µ$ and %d output tokens", res.Status, res.Usage, 2*bills.Cost, 2*bills.OutputTokens)
	}
}
