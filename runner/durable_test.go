package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// sideEffects is a non-idempotent tool's world: lines appended to a file.
type sideEffects struct {
	mu    sync.Mutex
	lines []string
}

func (s *sideEffects) tool() tool.Tool {
	return tool.Func("append_line", "Append a line to the journal.", func(_ context.Context, in struct {
		Line string `json:"line"`
	}) (string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, in.Line)
		return "appended", nil
	}, tool.Inline())
}

func journalScript() scripted.Script {
	return scripted.Script{Turns: []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "append_line", Args: map[string]string{"line": "one"}}, {Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
		{Tools: []scripted.ToolCall{{Name: "append_line", Args: map[string]string{"line": "two"}}}},
		{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.9)}},
		{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 1, "b": 4}}}},
		{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	}}
}

func journalTask(fx *sideEffects) runner.Task {
	return runner.Task{
		Goal:   "Journal two lines, then answer 2+3.",
		Tools:  []tool.Tool{fx.tool(), add},
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 20, Time: time.Minute},
	}
}

// dying is a store whose process "dies" before its n-th append: that append
// and every write after it are lost.
type dying struct {
	store.Store
	mu      sync.Mutex
	appends int
	n       int
	// finalUpdate kills the process at the update that records the
	// Result, after every append succeeded.
	finalUpdate bool
}

var errDied = errors.New("process died")

func (d *dying) dead(count bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if count {
		d.appends++
	}
	return d.n > 0 && d.appends >= d.n
}

func (d *dying) Append(ctx context.Context, run string, e []store.Entry) error {
	if d.dead(true) {
		return errDied
	}
	return d.Store.Append(ctx, run, e)
}

func (d *dying) UpdateRun(ctx context.Context, id string, u store.Update) error {
	if d.dead(false) || (d.finalUpdate && u.Result != nil) {
		return errDied
	}
	return d.Store.UpdateRun(ctx, id, u)
}

func (d *dying) SaveSnapshot(ctx context.Context, id string, s store.Snapshot) error {
	if d.dead(false) {
		return errDied
	}
	return d.Store.SaveSnapshot(ctx, id, s)
}

func newScripted(t *testing.T, s scripted.Script) *scripted.Model {
	t.Helper()
	m, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStoredRunMatchesItsLog: the store holds exactly the entries observers
// saw, and the row ends with the Result.
func TestStoredRunMatchesItsLog(t *testing.T) {
	st := memory.New()
	var mem observe.Memory
	fx := &sideEffects{}
	res, err := runner.Run(context.Background(), journalTask(fx), runner.Config{
		Model: newScripted(t, journalScript()), RunID: "r1", Store: st, Observers: []observe.Observer{&mem}, Labels: []string{"x"},
	})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s", err, res.Status)
	}
	entries, err := st.Entries(context.Background(), "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := mem.Entries()
	if len(entries) != len(seen) {
		t.Fatalf("store has %d entries, observers saw %d", len(entries), len(seen))
	}
	for i, e := range entries {
		want, _ := observe.Encode(seen[i])
		if e.Seq != int64(i+1) || string(e.Data) != string(want) {
			t.Fatalf("entry %d differs:\n got %s\nwant %s", i+1, e.Data, want)
		}
	}
	row, err := st.Run(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	var stored loop.Result
	if err := json.Unmarshal(row.Result, &stored); err != nil {
		t.Fatal(err)
	}
	if row.Status != "done" || row.Steps != int64(res.Usage.Steps) || !slices.Equal(row.Labels, []string{"x"}) {
		t.Errorf("row = %+v", row)
	}
	if diff := cmp.Diff(res, stored, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("stored result differs (-run +stored):\n%s", diff)
	}
}

// TestResumeAfterCrashAtEveryPoint kills the run before each of its
// appends in turn (the entries of that append are lost, as when a process
// dies while its tools run) and resumes it in a "new process": a fresh
// model, registry and runner over the same store. Every resumed run must
// end with the uninterrupted run's Result, with a gap-free log, and the
// non-idempotent tool must never have run twice.
func TestResumeAfterCrashAtEveryPoint(t *testing.T) {
	ctx := context.Background()
	fx := &sideEffects{}
	want, err := runner.Run(ctx, journalTask(fx), runner.Config{Model: newScripted(t, journalScript()), Store: memory.New(), RunID: "base"})
	if err != nil || want.Status != loop.Done {
		t.Fatalf("uninterrupted run: %v %s", err, want.Status)
	}
	if !slices.Equal(fx.lines, []string{"one", "two"}) {
		t.Fatalf("uninterrupted lines = %q", fx.lines)
	}
	// A call answered UnknownOutcome shows the model a different text, so
	// input tokens may differ; everything else must not.
	ignore := cmpopts.IgnoreFields(budget.Usage{}, "Time", "InputTokens")
	unknown, kills := 0, 0
	defer func() {
		t.Logf("%d kill points, %d resumed calls answered %q", kills, unknown, runner.OutcomeUnknown)
		if unknown == 0 {
			t.Error("no kill point left a non-idempotent call's outcome unknown")
		}
	}()
	for n := 1; ; n++ {
		fx := &sideEffects{}
		st := &dying{Store: memory.New(), n: n}
		cfg := runner.Config{Model: newScripted(t, journalScript()), Store: st, RunID: "r", SnapshotEvery: 3}
		res, err := runner.Run(ctx, journalTask(fx), cfg)
		if err == nil {
			if n < 3 {
				t.Fatalf("crash point %d was never reached", n)
			}
			break // past the last append: nothing left to kill
		}
		if !errors.Is(err, errDied) {
			t.Fatalf("kill %d: %v (%s)", n, err, res.Status)
		}
		kills++
		st.n = 0 // the new process's store works
		cfg.Model = newScripted(t, journalScript())
		res, err = runner.Resume(ctx, journalTask(fx), cfg, runner.ResumeOptions{})
		if err != nil {
			t.Fatalf("kill %d: resume: %v", n, err)
		}
		if diff := cmp.Diff(want, res, ignore, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("kill %d: result differs (-want +got):\n%s", n, diff)
		}
		if sorted := slices.Sorted(slices.Values(fx.lines)); len(slices.Compact(sorted)) != len(fx.lines) || len(fx.lines) > 2 {
			t.Errorf("kill %d: journal %q: a non-idempotent call ran twice", n, fx.lines)
		}
		recs, err := runner.LoadLog(ctx, st, "r")
		if err != nil {
			t.Fatal(err)
		}
		answered := map[string]int{}
		for i, rec := range recs {
			if rec.Seq != int64(i+1) {
				t.Fatalf("kill %d: entry %d has seq %d", n, i+1, rec.Seq)
			}
			if rec.Event != nil && rec.Event.Call != "" {
				answered[string(rec.Event.Type)+" "+rec.Event.Call]++
			}
			if rec.Event != nil && rec.Event.Tool != nil && rec.Event.Tool.Outcome == runner.OutcomeUnknown {
				unknown++
			}
		}
		for k, c := range answered {
			if c > 1 {
				t.Errorf("kill %d: %s answered %d times", n, k, c)
			}
		}
	}
}

// TestResumeFromAnOldSnapshot: a snapshot written by a build of another
// snapshot version is passed over, and the run is rebuilt from its log.
func TestResumeFromAnOldSnapshot(t *testing.T) {
	ctx := context.Background()
	want, err := runner.Run(ctx, journalTask(&sideEffects{}), runner.Config{Model: newScripted(t, journalScript()), Store: memory.New(), RunID: "base"})
	if err != nil {
		t.Fatal(err)
	}
	st := &dying{Store: memory.New(), n: 5}
	fx := &sideEffects{}
	cfg := runner.Config{Model: newScripted(t, journalScript()), Store: st, RunID: "r", SnapshotEvery: 3}
	if _, err := runner.Run(ctx, journalTask(fx), cfg); !errors.Is(err, errDied) {
		t.Fatalf("run: %v, want it to die", err)
	}
	st.n = 0
	snap, err := st.LatestSnapshot(ctx, "r")
	if err != nil {
		t.Fatalf("no snapshot to age: %v", err)
	}
	var old map[string]any
	if err := json.Unmarshal(snap.Data, &old); err != nil {
		t.Fatal(err)
	}
	old["version"] = loop.SnapshotVersion - 1
	snap.Data, _ = json.Marshal(old)
	if err := st.SaveSnapshot(ctx, "r", snap); err != nil {
		t.Fatal(err)
	}
	cfg.Model = newScripted(t, journalScript())
	res, err := runner.Resume(ctx, journalTask(fx), cfg, runner.ResumeOptions{})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	ignore := cmpopts.IgnoreFields(budget.Usage{}, "Time", "InputTokens")
	if diff := cmp.Diff(want, res, ignore, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("result differs (-want +got):\n%s", diff)
	}
}

// TestResumeAfterDeathAtTheLastUpdate: a run whose log is complete but
// whose row was never told it finished is settled by Resume.
func TestResumeAfterDeathAtTheLastUpdate(t *testing.T) {
	ctx := context.Background()
	st := &dying{Store: memory.New(), finalUpdate: true}
	fx := &sideEffects{}
	cfg := runner.Config{Model: newScripted(t, journalScript()), Store: st, RunID: "r"}
	res, err := runner.Run(ctx, journalTask(fx), cfg)
	if !errors.Is(err, errDied) || res.Status != loop.Done {
		t.Fatalf("%v %s", err, res.Status)
	}
	if row, _ := st.Run(ctx, "r"); row.Status != store.StatusRunning {
		t.Fatalf("row status %q, want running", row.Status)
	}
	st.finalUpdate = false
	cfg.Model = newScripted(t, journalScript())
	again, err := runner.Resume(ctx, journalTask(fx), cfg, runner.ResumeOptions{})
	if err != nil || again.Status != loop.Done {
		t.Fatalf("resume: %v %s", err, again.Status)
	}
	if row, _ := st.Run(ctx, "r"); row.Status != "done" || row.Result == nil {
		t.Errorf("row = %q %s", row.Status, row.Result)
	}
	if n, _ := st.LastSeq(ctx, "r"); fx.lines == nil || n == 0 {
		t.Error("nothing recorded")
	}
	if len(fx.lines) != 2 {
		t.Errorf("journal %q: resume re-ran a tool", fx.lines)
	}
}

// TestResumeCancelled: a cancelled run carries on where it stopped.
func TestResumeCancelled(t *testing.T) {
	st := memory.New()
	fx := &sideEffects{}
	ctx, cancel := context.WithCancel(context.Background())
	m := newScripted(t, journalScript())
	cfg := runner.Config{Model: m, Store: st, RunID: "c", Observers: []observe.Observer{observe.Func(func(e observe.Entry) {
		if e.Kind == observe.KindCommand && e.Command.Type == loop.RunTools && e.Command.ID == "t2" {
			cancel()
		}
	})}}
	res, err := runner.Run(ctx, journalTask(fx), cfg)
	if err != nil || res.Status != loop.Cancelled {
		t.Fatalf("%v %s", err, res.Status)
	}
	row, _ := st.Run(context.Background(), "c")
	if row.Status != "cancelled" {
		t.Fatalf("row status %q", row.Status)
	}
	cfg.Observers, cfg.Model = nil, newScripted(t, journalScript())
	res, err = runner.Resume(context.Background(), journalTask(fx), cfg, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resumed: %v %s %s", err, res.Status, res.Reason)
	}
	if _, err := runner.Resume(context.Background(), journalTask(fx), cfg, runner.ResumeOptions{}); !errors.Is(err, runner.ErrFinished) {
		t.Errorf("resuming a done run: %v", err)
	}
}

// TestAwaitingInput: with nobody to answer now, an escalation leaves the
// run awaiting_input; an answer carries it on to done.
func TestAwaitingInput(t *testing.T) {
	st := memory.New()
	empty := scripted.Turn{}
	script := scripted.Script{Turns: []scripted.Turn{empty, empty, empty, empty, empty, empty, {Expect: []string{"try 5"}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}}}}
	task := addTask()
	task.Policy.Escalate = true
	task.Policy.Progress.Window = 2
	cfg := runner.Config{Model: newScripted(t, script), Store: st, RunID: "h", Human: runner.Later}
	_, err := runner.Run(context.Background(), task, cfg)
	var aw *runner.AwaitingError
	if !errors.As(err, &aw) || aw.Question == "" {
		t.Fatalf("want an AwaitingError, got %v", err)
	}
	row, _ := st.Run(context.Background(), "h")
	if row.Status != store.StatusAwaitingInput || row.Question != aw.Question || row.Steps != 6 {
		t.Fatalf("row = %q %q, %d steps; want awaiting_input with the question after 6 steps", row.Status, row.Question, row.Steps)
	}
	cfg.Model = newScripted(t, script)
	answer := "try 5"
	res, err := runner.Resume(context.Background(), task, cfg, runner.ResumeOptions{Answer: &answer})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s %s", err, res.Status, res.Reason)
	}
}

// TestResumeRefusesAChangedTask: the spec must be the one recorded.
func TestResumeRefusesAChangedTask(t *testing.T) {
	st := &dying{Store: memory.New(), n: 2}
	fx := &sideEffects{}
	cfg := runner.Config{Model: newScripted(t, journalScript()), Store: st, RunID: "x"}
	if _, err := runner.Run(context.Background(), journalTask(fx), cfg); !errors.Is(err, errDied) {
		t.Fatal(err)
	}
	st.n = 0
	task := journalTask(fx)
	task.Goal = "something else"
	if _, err := runner.Resume(context.Background(), task, cfg, runner.ResumeOptions{}); err == nil {
		t.Fatal("resumed with a different goal")
	}
}

// TestRecordedResultIsReused: when the process dies while a turn's other
// calls run, the results already recorded are reused on resume: the
// non-idempotent call is neither run again nor answered unknown.
func TestRecordedResultIsReused(t *testing.T) {
	ctx := context.Background()
	for n := 1; n < 20; n++ {
		fx := &sideEffects{}
		st := &dying{Store: memory.New(), n: n}
		cfg := runner.Config{Model: newScripted(t, journalScript()), Store: st, RunID: "r"}
		if _, err := runner.Run(ctx, journalTask(fx), cfg); !errors.Is(err, errDied) {
			t.Fatalf("kill %d never came", n)
		}
		recs, err := runner.LoadLog(ctx, st, "r")
		if err != nil {
			continue // died before anything was recorded
		}
		var results []string
		for _, rec := range recs {
			if rec.Event != nil && rec.Event.Type == loop.EventToolResult {
				results = append(results, rec.Event.Call)
			}
		}
		if len(results) != 1 {
			continue // not the point between the turn's two results
		}
		st.n = 0
		cfg.Model = newScripted(t, journalScript())
		res, err := runner.Resume(ctx, journalTask(fx), cfg, runner.ResumeOptions{})
		if err != nil || res.Status != loop.Done {
			t.Fatalf("resume: %v %s", err, res.Status)
		}
		recs, _ = runner.LoadLog(ctx, st, "r")
		answers := 0
		for _, rec := range recs {
			if rec.Event != nil && rec.Event.Call == results[0] {
				answers++
			}
			if rec.Event != nil && rec.Event.Tool != nil && rec.Event.Tool.Outcome == runner.OutcomeUnknown && rec.Event.Call == results[0] {
				t.Errorf("call %s answered unknown although its result was recorded", rec.Event.Call)
			}
		}
		if answers != 1 {
			t.Errorf("call %s answered %d times", results[0], answers)
		}
		if !slices.Equal(fx.lines, []string{"one", "two"}) {
			t.Errorf("journal %q", fx.lines)
		}
		return
	}
	t.Fatal("no kill point fell between the two results of the first turn")
}

// TestPatchIsStoredRedacted: the patch the shell takes as the run finishes
// is on the stored Result, with the run's secrets redacted and the patch
// marked so (applying it would write the marks).
func TestPatchIsStoredRedacted(t *testing.T) {
	st := memory.New()
	secret := "sk-live-0123456789abcdef"
	taken := 0
	cfg := runner.Config{
		Model: newScripted(t, journalScript()), Store: st, RunID: "patched",
		Redactor: redact.New(secret),
		Patch: func(context.Context) *loop.Patch {
			taken++
			return &loop.Patch{Diff: "+KEY=" + secret + "\n", Files: []string{".env"}, Original: "/w", Fingerprint: "sha256:x"}
		},
	}
	res, err := runner.Run(context.Background(), journalTask(&sideEffects{}), cfg)
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %v", res.Status, err)
	}
	row, err := st.Run(context.Background(), "patched")
	if err != nil {
		t.Fatal(err)
	}
	var stored loop.Result
	if err := json.Unmarshal(row.Result, &stored); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*loop.Patch{res.Patch, stored.Patch} {
		if p == nil || strings.Contains(p.Diff, secret) || !p.Redacted || !strings.HasPrefix(p.Diff, "+KEY=") {
			t.Errorf("patch %+v: want the secret redacted and the patch marked redacted", p)
		}
	}
	if taken != 1 {
		t.Errorf("the patch was taken %d times, want once", taken)
	}
}
