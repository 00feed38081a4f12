package temporal_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/temporal"
)

// historiesDir holds recorded workflow histories that TestReplayHistories
// replays through this build. RATCHET_RECORD_HISTORIES=1 rewrites them
// from TestRealServer's runs.
const historiesDir = "testdata/histories"

// dial connects to the dev server at addr, which may take a moment to
// take requests after it listens.
func dial(t testing.TB, addr string) client.Client {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger()})
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("dialling the dev server: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fleet is a worker whose runs' tasks are registered by run ID.
type fleet struct {
	c     client.Client
	store store.Store
	tasks map[string]temporal.Live
	queue string
}

func newFleet(t *testing.T, c client.Client, queue string) *fleet {
	t.Helper()
	f := &fleet{c: c, store: memory.New(), tasks: map[string]temporal.Live{}, queue: queue}
	acts := temporal.NewActivities(f.store, func(_ context.Context, row store.Run) (temporal.Live, error) {
		return f.tasks[row.ID], nil
	})
	w := worker.New(c, queue, worker.Options{})
	temporal.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		acts.Close()
	})
	return f
}

func (f *fleet) start(t *testing.T, id string, task runner.Task, m model.Model, opts temporal.StartOptions) client.WorkflowRun {
	t.Helper()
	f.tasks[id] = temporal.Live{Task: task, Model: m}
	opts.RunID, opts.TaskQueue = id, f.queue
	run, err := temporal.Start(context.Background(), f.c, f.store, task, opts)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// record writes the histories of the workflow runs of run (one more per
// continue-as-new) as golden files, when RATCHET_RECORD_HISTORIES=1.
func record(t *testing.T, c client.Client, name, id, firstRun string) {
	t.Helper()
	if os.Getenv("RATCHET_RECORD_HISTORIES") != "1" {
		return
	}
	ctx := context.Background()
	if err := os.MkdirAll(historiesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	runID := firstRun
	for part := 1; runID != ""; part++ {
		hist := &historypb.History{}
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, ev)
		}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(historiesDir, fmt.Sprintf("%s-%d.json", name, part)), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		runID = ""
		if last := hist.Events[len(hist.Events)-1]; last.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
			runID = last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// waitStatus waits until run id's row has status want.
func waitStatus(t *testing.T, st store.Store, id, want string) store.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		row, err := st.Run(context.Background(), id)
		if err == nil && row.Status == want {
			return row
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %q (%v), want %q", id, row.Status, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRealServer runs the workflow on a real dev server, with a worker in
// this process: a run whose Result equals the local runner's, one that
// continues as new several times on the way, one approved by Update, and
// one given a message by Update.
// Under RATCHET_RECORD_HISTORIES=1 it rewrites the golden histories.
func TestRealServer(t *testing.T) {
	addr := testenv.TemporalServer(t)
	c := dial(t, addr)
	defer c.Close()
	f := newFleet(t, c, "ratchet-test")
	ctx := context.Background()

	t.Run("done", func(t *testing.T) {
		turns := []scripted.Turn{
			{Text: "Adding.", Tools: []scripted.ToolCall{addCall(2, 3)}},
			{Expect: []string{"5"}, Finish: finish("6")},
			{Expect: []string{`expected "5", got "6"`}, Finish: finish("5")},
		}
		run := f.start(t, "done", baseTask(), newModel(t, turns...), temporal.StartOptions{})
		first := run.GetRunID() // Get follows the run past a continue-as-new
		var res loop.Result
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		local := localRun(t, baseTask(), newModel(t, turns...))
		if d := cmp.Diff(withoutTime(local), withoutTime(res)); d != "" {
			t.Errorf("-local +temporal:\n%s", d)
		}
		checkStored(t, f.store, "done", res)
		record(t, c, "done", "done", first)
	})

	t.Run("continued", func(t *testing.T) {
		var turns []scripted.Turn
		for i := range 12 {
			turns = append(turns, scripted.Turn{Tools: []scripted.ToolCall{addCall(i, 1)}})
		}
		turns = append(turns, scripted.Turn{Finish: finish("5")})
		task := baseTask()
		task.Budget.Steps = 20
		run := f.start(t, "continued", task, newModel(t, turns...), temporal.StartOptions{HistoryLimit: 40})
		first := run.GetRunID()
		var res loop.Result
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		local := localRun(t, task, newModel(t, turns...))
		if d := cmp.Diff(withoutTime(local), withoutTime(res)); d != "" {
			t.Errorf("-local +temporal:\n%s", d)
		}
		checkStored(t, f.store, "continued", res)
		// The workflow continued as new: its latest run is not its first.
		desc, err := c.DescribeWorkflow(ctx, "continued", "")
		if err != nil {
			t.Fatal(err)
		}
		if desc.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId() == first {
			t.Error("the run never continued as new")
		}
		record(t, c, "continued", "continued", first)
	})

	t.Run("approval", func(t *testing.T) {
		sent.Store(0)
		run := f.start(t, "approval", approvalTask(), newModel(t, approvalTurns...), temporal.StartOptions{Human: true})
		first := run.GetRunID()
		row := waitStatus(t, f.store, "approval", store.StatusAwaitingInput)
		if !strings.Contains(row.Question, "send") {
			t.Errorf("question %q does not name the call", row.Question)
		}
		err := temporal.SendAnswer(ctx, c, "approval", temporal.Answer{Text: "yes please"})
		if err == nil || !strings.Contains(err.Error(), "asks for an approval (approve or deny), not an answer") {
			t.Errorf("an answer to an approval: %v, want it refused", err)
		}
		yes := true
		if err := temporal.SendAnswer(ctx, c, "approval", temporal.Answer{Approved: &yes}); err != nil {
			t.Fatal(err)
		}
		var res loop.Result
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != loop.Done || sent.Load() != 1 {
			t.Errorf("status %s, send ran %d times; want done and once", res.Status, sent.Load())
		}
		if err := temporal.SendAnswer(ctx, c, "approval", temporal.Answer{Approved: &yes}); err == nil {
			t.Error("an answer to a finished run was taken")
		}
		checkStored(t, f.store, "approval", res)
		record(t, c, "approval", "approval", first)
	})

	t.Run("subagents", func(t *testing.T) {
		task := subagentTask(t)
		run := f.start(t, "subagents", task, newModel(t, subagentTurns...), temporal.StartOptions{})
		first := run.GetRunID()
		var res loop.Result
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		local := localRun(t, task, newModel(t, subagentTurns...))
		if d := cmp.Diff(withoutTime(local), withoutTime(res)); d != "" {
			t.Errorf("-local +temporal:\n%s", d)
		}
		checkStored(t, f.store, "subagents", res)
		checkChild(t, f.store, "subagents/c1", "subagents")
		desc, err := c.DescribeWorkflow(ctx, "subagents/c1", "")
		if err != nil {
			t.Fatal(err)
		}
		info := desc.RawResponse.GetWorkflowExecutionInfo()
		if p := info.GetParentExecution().GetWorkflowId(); p != "subagents" {
			t.Errorf("the sub-agent's workflow has parent %q, want subagents", p)
		}
		record(t, c, "subagents", "subagents", first)
		record(t, c, "subagents-child", "subagents/c1", info.GetExecution().GetRunId())
	})

	t.Run("say", func(t *testing.T) {
		turns := []scripted.Turn{
			{Delay: time.Second, Tools: []scripted.ToolCall{addCall(2, 3)}},
			{Expect: []string{"The sum is what they want."}, Finish: finish("5")},
		}
		run := f.start(t, "say", baseTask(), newModel(t, turns...), temporal.StartOptions{})
		first := run.GetRunID()
		// Step 1's call is in the log before it is made; it takes a second.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if seq, _ := f.store.LastSeq(ctx, "say"); seq >= 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("step 1's model call was never logged")
			}
		}
		if err := temporal.SendSay(ctx, c, "say", ""); err == nil || !strings.Contains(err.Error(), "the message is empty") {
			t.Errorf("an empty message: %v, want it refused", err)
		}
		if err := temporal.SendSay(ctx, c, "say", "The sum is what they want."); err != nil {
			t.Fatal(err)
		}
		var res loop.Result
		if err := run.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != loop.Done {
			t.Errorf("status %s (%s); want done, step 2 having seen the message", res.Status, res.Reason)
		}
		checkStored(t, f.store, "say", res)
		record(t, c, "say", "say", first)
	})
}

// TestReplayHistories replays the recorded histories through this build's
// workflow: a change that breaks determinism (another command, another
// order, another activity) fails here, before it breaks a run in flight.
func TestReplayHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no recorded histories in %s (RATCHET_RECORD_HISTORIES=1 go test -run TestRealServer ./temporal records them)", historiesDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(temporal.Workflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), file); err != nil {
				t.Fatal(err)
			}
		})
	}
}
