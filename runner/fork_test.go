package runner_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
)

// requests is a model that keeps the requests it is sent.
type requests struct {
	model.Model
	mu   sync.Mutex
	seen []model.Request
}

func (r *requests) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req)
	r.mu.Unlock()
	return r.Model.Generate(ctx, req)
}

func playing(t *testing.T, turns ...scripted.Turn) model.Model {
	t.Helper()
	m, err := scripted.New(scripted.Script{Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parentRun runs the journal task to done in a fresh store: two tool
// steps (two lines journalled), a rejected answer, the right one.
func parentRun(t *testing.T) (*memory.Store, *sideEffects) {
	t.Helper()
	db, fx := memory.New(), &sideEffects{}
	m, err := scripted.New(journalScript(), scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), journalTask(fx), runner.Config{Model: m, Store: db, RunID: "parent"})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("parent: %s %v (%s)", res.Status, err, res.Reason)
	}
	return db, fx
}

// snapshotRun is a run's row and log, to compare before and after.
func snapshotRun(t *testing.T, db store.Store, id string) (store.Run, []store.Entry) {
	t.Helper()
	row, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := db.Entries(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return row, entries
}

// TestFork: a fork from step 3's model call, with another model and a
// message, copies the two tool steps without running them again, leaves
// the parent as it was, records where it came from, and replays.
func TestFork(t *testing.T) {
	ctx := context.Background()
	db, fx := parentRun(t)
	wantRow, wantLog := snapshotRun(t, db, "parent")
	recs, err := runner.LoadLog(ctx, db, "parent")
	if err != nil {
		t.Fatal(err)
	}
	points := runner.ForkPoints(recs)
	if len(points) != 5 || points[2].Step != 3 {
		t.Fatalf("fork points = %+v; want one per step, 5", points)
	}
	other := &requests{Model: playing(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}})}
	res, err := runner.Fork(ctx, journalTask(fx), runner.Config{Store: db, RunID: "child"},
		runner.ForkOptions{From: "parent", At: points[2].Seq, Model: other, Message: "Answer 5 now."})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("fork: %s %v (%s)", res.Status, err, res.Reason)
	}
	if got := fx.lines; !cmp.Equal(got, []string{"one", "two"}) {
		t.Errorf("journal after the fork = %q; want the parent's two lines only: no tool of the prefix runs again", got)
	}
	if res.Usage.Steps != 3 || len(res.Attempts) != 1 {
		t.Errorf("fork usage steps = %d, attempts %d; want 3 (two copied, one new) and 1", res.Usage.Steps, len(res.Attempts))
	}
	if len(other.seen) != 1 {
		t.Fatalf("the fork's model was called %d times; want 1", len(other.seen))
	}
	msgs := other.seen[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.User || !strings.Contains(last.Content[len(last.Content)-1].Text, "Answer 5 now.") {
		t.Errorf("the fork's first request ends %+v; want the user message", last)
	}
	gotRow, gotLog := snapshotRun(t, db, "parent")
	if diff := cmp.Diff(wantRow, gotRow); diff != "" {
		t.Errorf("the parent's row changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(wantLog, gotLog); diff != "" {
		t.Errorf("the parent's log changed (-before +after):\n%s", diff)
	}
	row, log := snapshotRun(t, db, "child")
	if row.ForkOf != "parent" || row.ForkSeq != points[2].Seq || row.Status != string(loop.Done) {
		t.Errorf("child row: fork of %q at %d, status %s; want parent at %d, done", row.ForkOf, row.ForkSeq, row.Status, points[2].Seq)
	}
	for i, e := range log[:points[2].Seq] {
		if head := `{"seq":` + itoa(int64(i+1)) + `,"run":"child",`; !strings.HasPrefix(string(e.Data), head) || !strings.HasSuffix(string(e.Data), string(wantLog[i].Data[len(head)+1:])) {
			t.Fatalf("copied entry %d is not the parent's retagged as the child's: %s", i+1, e.Data)
		}
	}
	childRecs, err := runner.LoadLog(ctx, db, "child")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(childRecs); err != nil {
		t.Errorf("the fork's log does not replay: %v", err)
	}
}

// TestForkCarriesOn: without another model, the run's model carries on
// from where the parent's calls ended, and a fork's budget replaces the
// parent's: a parent exhausted at 3 steps, forked at step 2 with 10,
// finishes.
func TestForkCarriesOn(t *testing.T) {
	ctx := context.Background()
	db, fx := memory.New(), &sideEffects{}
	task := journalTask(fx)
	task.Budget = budget.Limits{Steps: 3, Time: time.Minute}
	res, err := runner.Run(ctx, task, runner.Config{Model: playing(t, journalScript().Turns...), Store: db, RunID: "parent"})
	if err != nil || res.Status != loop.Exhausted(budget.Steps) {
		t.Fatalf("parent: %s %v; want exhausted:steps", res.Status, err)
	}
	recs, _ := runner.LoadLog(ctx, db, "parent")
	at := runner.ForkPoints(recs)[1].Seq
	lines := len(fx.lines)
	res, err = runner.Fork(ctx, task, runner.Config{Store: db, RunID: "child", Model: playing(t, journalScript().Turns...)},
		runner.ForkOptions{From: "parent", At: at, Budget: &budget.Limits{Steps: 10, Time: time.Minute}})
	if err != nil || res.Status != loop.Done || res.Limits.Steps != 10 {
		t.Fatalf("fork: %s %v (%s), steps limit %d; want done within 10", res.Status, err, res.Reason, res.Limits.Steps)
	}
	// The script's turn 2 journals "two" again: it is the fork's own step.
	if got := fx.lines[lines:]; !cmp.Equal(got, []string{"two"}) {
		t.Errorf("the fork journalled %q; want its own step 2's line only", got)
	}
}

// TestForkPoints: a fork from anywhere but a step's model call is refused
// with the nearest points named; so is a budget that does not validate,
// a task that is not the parent's, and a run that does not exist.
func TestForkPoints(t *testing.T) {
	ctx := context.Background()
	db, fx := parentRun(t)
	recs, _ := runner.LoadLog(ctx, db, "parent")
	points := runner.ForkPoints(recs)
	firstTool := points[0].Seq + 3 // the reply, the run_tools command, then the first of two results
	changed := journalTask(fx)
	changed.Goal = "another goal"
	for _, tc := range []struct {
		name string
		task runner.Task
		opts runner.ForkOptions
		want string
	}{
		{"zero", journalTask(fx), runner.ForkOptions{From: "parent", At: 0}, "entry 0 is outside its log (entries 1–"},
		{"past the end", journalTask(fx), runner.ForkOptions{From: "parent", At: recs[len(recs)-1].Seq + 1}, "outside its log"},
		{"the spec", journalTask(fx), runner.ForkOptions{From: "parent", At: 1}, "entry 1 is a run entry: not a point a fork can start from"},
		{"mid-way through tools", journalTask(fx), runner.ForkOptions{From: "parent", At: firstTool},
			"is a tool_result event, after step 1's model call: not a point a fork can start from"},
		{"nearest", journalTask(fx), runner.ForkOptions{From: "parent", At: firstTool},
			"nearest: entry " + itoa(points[0].Seq) + " (step 1's model call) or entry " + itoa(points[1].Seq) + " (step 2's model call)"},
		{"budget", journalTask(fx), runner.ForkOptions{From: "parent", At: points[1].Seq, Budget: &budget.Limits{Steps: -5}}, "steps: -5 is negative"},
		{"budget spent", journalTask(fx), runner.ForkOptions{From: "parent", At: points[2].Seq, Budget: &budget.Limits{Steps: 2, Time: time.Minute}},
			"the copied steps of run parent have already spent the fork's steps budget (3 of 2): give the fork more"},
		{"task", changed, runner.ForkOptions{From: "parent", At: points[1].Seq}, "the task has changed since the run started"},
		{"missing", journalTask(fx), runner.ForkOptions{From: "nope", At: 3}, "not found"},
		{"message", journalTask(fx), runner.ForkOptions{From: "parent", At: points[1].Seq, Message: strings.Repeat("x", runner.MaxMessageBytes+1)}, "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runner.Fork(ctx, tc.task, runner.Config{Store: db, RunID: "child-" + tc.name, Model: playing(t)}, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Fork error = %v; want it to say %q", err, tc.want)
			}
			if _, err := db.Run(ctx, "child-"+tc.name); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a refused fork left a run behind (%v)", err)
			}
		})
	}
	if len(fx.lines) != 2 {
		t.Errorf("refused forks ran tools: journal %q", fx.lines)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Seek passes a resume's or fork's call count to the model inside.
func (r *requests) Seek(calls int) {
	if s, ok := r.Model.(runner.Seeker); ok {
		s.Seek(calls)
	}
}

// TestForkPendingApproval: a run waiting for a person's approval cannot
// be forked at its question (the error says why and where it can be);
// a fork from the step before asks again.
func TestForkPendingApproval(t *testing.T) {
	ctx := context.Background()
	db, fx := memory.New(), &sideEffects{}
	task := journalTask(fx)
	task.Permissions = []loop.Permission{{Tool: "append_line", Action: loop.Ask}}
	_, err := runner.Run(ctx, task, runner.Config{Model: playing(t, journalScript().Turns...), Store: db, RunID: "parent", Human: runner.Later})
	if _, waiting := errors.AsType[*runner.AwaitingError](err); !waiting {
		t.Fatalf("parent: %v; want it waiting for an approval", err)
	}
	recs, _ := runner.LoadLog(ctx, db, "parent")
	ask := recs[len(recs)-1].Seq
	_, err = runner.Fork(ctx, task, runner.Config{Store: db, RunID: "child", Model: playing(t)}, runner.ForkOptions{From: "parent", At: ask})
	if err == nil || !strings.Contains(err.Error(), "is an ask_human command (a pending approval), after step 1's model call") ||
		!strings.Contains(err.Error(), "nearest: entry 3 (step 1's model call)") {
		t.Fatalf("fork at the approval: %v", err)
	}
	_, err = runner.Fork(ctx, task, runner.Config{Store: db, RunID: "child", Model: playing(t, journalScript().Turns...), Human: runner.Later}, runner.ForkOptions{From: "parent", At: 3})
	if _, waiting := errors.AsType[*runner.AwaitingError](err); !waiting || len(fx.lines) != 0 {
		t.Fatalf("fork before the approval: %v, journal %q; want it asking again, nothing journalled", err, fx.lines)
	}
}

// TestForkResumed: a fork cancelled in its first call is resumed like
// any run: its log (the copied prefix, the fork event) rebuilds it.
func TestForkResumed(t *testing.T) {
	ctx := context.Background()
	db, fx := parentRun(t)
	recs, _ := runner.LoadLog(ctx, db, "parent")
	at := runner.ForkPoints(recs)[2].Seq
	cctx, cancel := context.WithCancel(ctx)
	m := &cancelAt{requests: requests{Model: playing(t, journalScript().Turns...)}, at: 1, cancel: cancel}
	res, err := runner.Fork(cctx, journalTask(fx), runner.Config{Store: db, RunID: "child", Model: m}, runner.ForkOptions{From: "parent", At: at, Message: "Mind the check."})
	if res.Status != loop.Cancelled {
		t.Fatalf("fork: %s %v; want cancelled", res.Status, err)
	}
	res, err = runner.Resume(ctx, journalTask(fx), runner.Config{Store: db, RunID: "child", Model: playing(t, journalScript().Turns...)}, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done || len(fx.lines) != 2 {
		t.Fatalf("resumed fork: %s %v (%s), journal %q", res.Status, err, res.Reason, fx.lines)
	}
	all, _ := runner.LoadLog(ctx, db, "child")
	if _, err := replay.Run(all); err != nil {
		t.Errorf("the resumed fork's log does not replay: %v", err)
	}
}

// FuzzForkPoint: whatever a stored log holds (its entries decoded as
// Resume and Fork decode them), finding its fork points and judging one
// never panics, and a refused point's error names the run.
func FuzzForkPoint(f *testing.F) {
	f.Add([]byte(`{"kind":"run","spec":{}}`), []byte(`{"kind":"command","command":{"type":"call_model","id":"m1","request":{"purpose":"step"}}}`), []byte(`{"kind":"event"}`), int64(3))
	f.Add([]byte(`{"kind":"note","note":{"type":"attempt"}}`), []byte(`{"kind":"command","command":{"type":"ask_human","approval":{"id":"c"}}}`), []byte(`{"kind":"command","command":[1]}`), int64(2))
	f.Add([]byte(`{}`), []byte(`{"kind":"event","event":{"type":"tool_result"}}`), []byte(`{"kind":"retry"}`), int64(-1))
	f.Fuzz(func(t *testing.T, a, b, c []byte, at int64) {
		var recs []observe.Record
		for i, data := range [][]byte{a, b, c} {
			rec, err := observe.Decode(data)
			if err != nil {
				return
			}
			rec.Seq = int64(i + 1)
			recs = append(recs, rec)
		}
		runner.ForkPoints(recs)
		if err := runner.CheckForkPoint("fuzzed", recs, at); err != nil && !strings.Contains(err.Error(), "run fuzzed") {
			t.Fatalf("error without the run: %v", err)
		}
	})
}
