package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/temporal"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

var add = tool.Func("add", "Add two integers.", func(_ context.Context, in addIn) (int, error) {
	return in.A + in.B, nil
}, tool.Idempotent())

// sent counts the calls of send, a tool that is not safe to run twice.
var sent atomic.Int64

var send = tool.Func("send", "Send a message (not safe to run twice).", func(_ context.Context, in struct {
	To string `json:"to"`
}) (string, error) {
	sent.Add(1)
	return "sent to " + in.To, nil
})

// executes is a check with execution provenance: it runs as an activity,
// where equals runs as a local one.
var executes = verify.Func{CheckName: "executes", Prov: verify.Execution, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
	return verify.Verdict{OK: c.Answer != "", Confidence: 1, Detail: "empty answer"}, nil
}}

func conf(f float64) *float64 { return &f }

func addCall(a, b int) scripted.ToolCall {
	return scripted.ToolCall{Name: "add", Args: map[string]int{"a": a, "b": b}}
}

func finish(answer string) *scripted.Finish {
	return &scripted.Finish{Answer: answer, Confidence: conf(0.95)}
}

// echo returns n bytes of text ending in "tail-<n>".
var echo = tool.Func("echo", "Return n bytes of text.", func(_ context.Context, in struct {
	N int `json:"n"`
}) (string, error) {
	tail := fmt.Sprintf("tail-%d", in.N)
	return strings.Repeat("x", max(in.N-len(tail), 0)) + tail, nil
}, tool.Idempotent())

func baseTask() runner.Task {
	return runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add, send, echo},
		Checks: verify.Tiers{Cheap: []verify.Verifier{executes}, Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 10, Cost: budget.USD(0.25), Time: time.Hour},
	}
}

func newModel(t testing.TB, turns ...scripted.Turn) *scripted.Model {
	t.Helper()
	m, err := scripted.New(scripted.Script{Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// env is one in-process test environment with a worker's activities
// over a memory store.
type env struct {
	*testsuite.TestWorkflowEnvironment
	store *memory.Store
	acts  *temporal.Activities
	in    temporal.Input
}

func newEnv(t *testing.T, task runner.Task, m model.Model, human bool) *env {
	t.Helper()
	return newEnvRedacting(t, task, m, human, nil)
}

// newEnvRedacting is newEnv for a task whose secrets red knows.
func newEnvRedacting(t *testing.T, task runner.Task, m model.Model, human bool, red *redact.Redactor) *env {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quietLogger())
	te := suite.NewTestWorkflowEnvironment()
	te.SetTestTimeout(30 * time.Second)
	st := memory.New()
	acts := temporal.NewActivities(st, func(context.Context, store.Run) (temporal.Live, error) {
		return temporal.Live{Task: task, Model: m, Redactor: red}, nil
	})
	t.Cleanup(acts.Close)
	temporal.Register(te, acts)
	opts := temporal.StartOptions{RunID: "t1", TaskQueue: "q", Human: human, Redactor: red}
	in, err := temporal.NewInput(task, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.Begin(context.Background(), st, in, opts, time.Now()); err != nil {
		t.Fatal(err)
	}
	return &env{TestWorkflowEnvironment: te, store: st, acts: acts, in: in}
}

// run executes the workflow to its end and returns its Result.
func (e *env) run(t *testing.T) loop.Result {
	t.Helper()
	e.ExecuteWorkflow(temporal.WorkflowName, e.in)
	if !e.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var res loop.Result
	if err := e.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// localRun runs the same task and script with the local runner.
func localRun(t *testing.T, task runner.Task, m model.Model) loop.Result {
	t.Helper()
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m, RunID: "local", Store: memory.New()})
	if err != nil && res.Status != loop.Failed {
		t.Fatal(err)
	}
	return res
}

// withoutTime drops what depends on the clock: wall time used.
func withoutTime(r loop.Result) loop.Result {
	r.Usage.Time = 0
	return r
}

// checkStored checks that the run's row and log say what the workflow
// said: the Result on the row, and a log that replays identically.
func checkStored(t *testing.T, st store.Store, id string, res loop.Result) {
	t.Helper()
	row, err := st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != string(res.Status) {
		t.Errorf("row status %q, workflow result %q", row.Status, res.Status)
	}
	var stored loop.Result
	if err := json.Unmarshal(row.Result, &stored); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(res, stored); d != "" {
		t.Errorf("stored Result differs from the workflow's (-workflow +stored):\n%s", d)
	}
	recs, err := runner.LoadLog(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("the stored log does not replay: %v", err)
	}
	last := recs[len(recs)-1]
	if last.Kind != observe.KindCommand || !strings.Contains(string(last.Command), `"finish"`) {
		t.Errorf("the log ends with %s %s, not the finish command", last.Kind, last.Command)
	}
}

// TestExitStatuses runs one script per exit status through the workflow
// and through the local runner: the Results are equal (but for wall
// time), and the stored log replays.
func TestExitStatuses(t *testing.T) {
	repeat := func(n int) []scripted.Turn {
		turns := make([]scripted.Turn, n)
		for i := range turns {
			turns[i] = scripted.Turn{Tools: []scripted.ToolCall{addCall(1, 1)}}
		}
		return turns
	}
	distinct := func(n int) []scripted.Turn {
		turns := make([]scripted.Turn, n)
		for i := range turns {
			turns[i] = scripted.Turn{Tools: []scripted.ToolCall{addCall(i, 1)}}
		}
		return turns
	}
	for _, tc := range []struct {
		name   string
		status loop.Status
		task   func(*runner.Task)
		turns  []scripted.Turn
	}{
		{name: "done", status: loop.Done, turns: []scripted.Turn{
			{Text: "Adding.", Tools: []scripted.ToolCall{addCall(2, 3)}},
			{Expect: []string{"5"}, Finish: finish("6")},
			{Expect: []string{`expected "5", got "6"`}, Finish: finish("5")},
		}},
		{name: "exhausted", status: loop.Exhausted(budget.Steps), task: func(t *runner.Task) { t.Budget.Steps = 3 }, turns: distinct(10)},
		{name: "stalled", status: loop.Stalled("repeating"), turns: repeat(10)},
		{name: "escalated", status: loop.Escalated, task: func(t *runner.Task) { t.Policy.Escalate = true }, turns: repeat(10)},
		{name: "failed", status: loop.Failed, turns: []scripted.Turn{{Error: "the model broke"}}},
		// A large output crosses to later model calls by reference: the
		// model still sees all of it (its tail), as in a local run.
		{name: "large output", status: loop.Done, turns: []scripted.Turn{
			{Tools: []scripted.ToolCall{{Name: "echo", Args: map[string]int{"n": 3000}}}},
			{Expect: []string{"tail-3000"}, Tools: []scripted.ToolCall{addCall(2, 3)}},
			{Expect: []string{"5"}, Finish: finish("5")},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := baseTask()
			if tc.task != nil {
				tc.task(&task)
			}
			e := newEnv(t, task, newModel(t, tc.turns...), false)
			res := e.run(t)
			if res.Status != tc.status {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Reason, tc.status)
			}
			local := localRun(t, task, newModel(t, tc.turns...))
			if d := cmp.Diff(withoutTime(local), withoutTime(res)); d != "" {
				t.Errorf("the Temporal run's Result differs from the local run's (-local +temporal):\n%s", d)
			}
			checkStored(t, e.store, "t1", res)
		})
	}
}

func approvalTask() runner.Task {
	task := baseTask()
	task.Permissions = []loop.Permission{{Tool: "send", Action: loop.Ask}}
	return task
}

var approvalTurns = []scripted.Turn{
	{Tools: []scripted.ToolCall{{Name: "send", Args: map[string]string{"to": "ops"}}}},
	{Tools: []scripted.ToolCall{addCall(2, 3)}},
	{Finish: finish("5")},
}

// TestApprovalByUpdate: a call a permission rule asks about waits for the
// answer Update; an answer of the wrong kind is refused with ratchet
// approve's message, and an approval runs the call.
func TestApprovalByUpdate(t *testing.T) {
	for _, approved := range []bool{true, false} {
		t.Run(map[bool]string{true: "approve", false: "deny"}[approved], func(t *testing.T) {
			sent.Store(0)
			e := newEnv(t, approvalTask(), newModel(t, approvalTurns...), true)
			var wrongKind, accepted error
			e.RegisterDelayedCallback(func() {
				row, err := e.store.Run(context.Background(), "t1")
				if err != nil || row.Status != store.StatusAwaitingInput || !strings.Contains(row.Question, "send") {
					t.Errorf("while waiting the row is %q asking %q (%v), want awaiting_input asking about send", row.Status, row.Question, err)
				}
				e.UpdateWorkflow(temporal.UpdateAnswer, "u1", &testsuite.TestUpdateCallback{
					OnReject: func(err error) { wrongKind = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
				}, temporal.Answer{Text: "sure"})
				e.UpdateWorkflow(temporal.UpdateAnswer, "u2", &testsuite.TestUpdateCallback{
					OnReject: func(err error) { accepted = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
				}, temporal.Answer{Approved: &approved, Text: "because"})
			}, time.Minute)
			res := e.run(t)
			if res.Status != loop.Done {
				t.Fatalf("status %s (%s)", res.Status, res.Reason)
			}
			if wrongKind == nil || !strings.Contains(wrongKind.Error(), "asks for an approval (approve or deny), not an answer") {
				t.Errorf("an answer to an approval question: %v, want it refused", wrongKind)
			}
			if accepted != nil {
				t.Errorf("the approval was refused: %v", accepted)
			}
			want := int64(0)
			if approved {
				want = 1
			}
			if got := sent.Load(); got != want {
				t.Errorf("send ran %d times, want %d", got, want)
			}
			row, _ := e.store.Run(context.Background(), "t1")
			if row.Question != "" {
				t.Errorf("the finished row still asks %q", row.Question)
			}
			checkStored(t, e.store, "t1", res)
		})
	}
}

// TestCancelledWhileWaiting: cancelling the workflow ends the run
// cancelled, and the Result still reaches the row.
func TestCancelledWhileWaiting(t *testing.T) {
	e := newEnv(t, approvalTask(), newModel(t, approvalTurns...), true)
	e.RegisterDelayedCallback(e.CancelWorkflow, time.Minute)
	e.ExecuteWorkflow(temporal.WorkflowName, e.in)
	var res loop.Result
	if err := e.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Cancelled {
		t.Fatalf("status %s (%s), want cancelled", res.Status, res.Reason)
	}
	checkStored(t, e.store, "t1", res)
}

// TestUnknownOutcome: a call of a tool that is not safe to run twice gets
// one attempt; when it fails without an answer (its worker died) the model
// is told the outcome is unknown, and the call is not made again.
func TestUnknownOutcome(t *testing.T) {
	turns := []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "send", Args: map[string]string{"to": "ops"}}}},
		{Expect: []string{"The outcome of this call is unknown"}, Finish: finish("5")},
	}
	e := newEnv(t, baseTask(), newModel(t, turns...), false)
	var attempts atomic.Int64
	e.OnActivity("ratchet.tool", mock.Anything, mock.Anything).Return(func(context.Context, temporal.ToolInput) (temporal.ToolResult, error) {
		attempts.Add(1)
		return temporal.ToolResult{}, errors.New("the worker died mid-call")
	})
	res := e.run(t)
	if res.Status != loop.Done {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if got := attempts.Load(); got != 1 {
		t.Errorf("the non-idempotent call was attempted %d times, want 1", got)
	}
}

// TestIdempotentRetried: an idempotent tool's failed attempt is retried.
func TestIdempotentRetried(t *testing.T) {
	turns := []scripted.Turn{
		{Tools: []scripted.ToolCall{addCall(2, 3)}},
		{Expect: []string{"5"}, Finish: finish("5")},
	}
	e := newEnv(t, baseTask(), newModel(t, turns...), false)
	var attempts atomic.Int64
	e.OnActivity("ratchet.tool", mock.Anything, mock.Anything).Return(func(ctx context.Context, in temporal.ToolInput) (temporal.ToolResult, error) {
		if attempts.Add(1) == 1 {
			return temporal.ToolResult{}, errors.New("the worker died mid-call")
		}
		return e.acts.Tool(ctx, in)
	})
	res := e.run(t)
	if res.Status != loop.Done {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if got := attempts.Load(); got != 2 {
		t.Errorf("the idempotent call was attempted %d times, want 2", got)
	}
}

// TestSuiteWorkflow: a run started by the child Update is a child of the
// suite workflow, which ends once it is closed and its children have.
func TestSuiteWorkflow(t *testing.T) {
	turns := []scripted.Turn{{Tools: []scripted.ToolCall{addCall(2, 3)}}, {Finish: finish("5")}}
	e := newEnv(t, baseTask(), newModel(t, turns...), false)
	var childErr error
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(temporal.UpdateChild, "c1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { childErr = err }, OnAccept: func() {}, OnComplete: func(_ any, err error) {
				if childErr == nil {
					childErr = err
				}
			},
		}, e.in)
		e.UpdateWorkflow(temporal.UpdateClose, "close", &testsuite.TestUpdateCallback{
			OnReject: func(error) {}, OnAccept: func() {}, OnComplete: func(any, error) {},
		})
	}, time.Second)
	e.ExecuteWorkflow(temporal.SuiteWorkflowName)
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.GetWorkflowResult(&n); err != nil || n != 1 {
		t.Fatalf("suite result %d (%v), want 1 child", n, err)
	}
	if childErr != nil {
		t.Errorf("starting the child: %v", childErr)
	}
	row, err := e.store.Run(context.Background(), "t1")
	if err != nil || row.Status != string(loop.Done) {
		t.Errorf("the child's row: %q (%v), want done", row.Status, err)
	}
}

// subagentTask is baseTask with sub-agents that may add, and subagentTurns
// its script: the parent spawns, the child adds and finishes, the parent
// finishes with what it was told.
func subagentTask(t *testing.T) runner.Task {
	digits, err := check.Regex(`^\d+$`)
	if err != nil {
		t.Fatal(err)
	}
	task := baseTask()
	task.Subagents = &runner.Subagents{Tools: []string{"add"}, Checks: verify.Tiers{Cheap: []verify.Verifier{digits}}, Budget: budget.Limits{Steps: 4}}
	return task
}

var subagentTurns = []scripted.Turn{
	{Tools: []scripted.ToolCall{{Name: "spawn_subagent", Args: map[string]string{"goal": "Add 2 and 3 with the add tool."}}}},
	{Expect: []string{"Add 2 and 3"}, Tools: []scripted.ToolCall{addCall(2, 3)}}, // the sub-agent
	{Expect: []string{"5"}, Finish: finish("5")},                                 // the sub-agent
	{Expect: []string{"Sub-agent c1 ended done", "5"}, Finish: finish("5")},
}

// checkChild checks a sub-agent's row: it names its parent, ended done,
// and its log replays.
func checkChild(t *testing.T, st store.Store, id, parent string) {
	t.Helper()
	row, err := st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if row.Parent != parent || row.Status != string(loop.Done) {
		t.Errorf("the child's row: parent %q, status %q; want %s, done", row.Parent, row.Status, parent)
	}
	var child loop.Result
	if err := json.Unmarshal(row.Result, &child); err != nil {
		t.Fatal(err)
	}
	checkStored(t, st, id, child)
}

// TestSubagents: a spawn_subagent call runs the sub-agent as a child
// workflow, as the local runner runs it as a child run: the same Result,
// the child's row names its parent, and both logs replay.
func TestSubagents(t *testing.T) {
	task := subagentTask(t)
	e := newEnv(t, task, newModel(t, subagentTurns...), false)
	res := e.run(t)
	if res.Status != loop.Done {
		t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
	}
	local := localRun(t, task, newModel(t, subagentTurns...))
	if d := cmp.Diff(withoutTime(local), withoutTime(res)); d != "" {
		t.Errorf("the Temporal run's Result differs from the local run's (-local +temporal):\n%s", d)
	}
	checkStored(t, e.store, "t1", res)
	checkChild(t, e.store, "t1/c1", "t1")
}

// sayTurns add, then finish only once the request carries what was said.
var sayTurns = []scripted.Turn{
	{Tools: []scripted.ToolCall{addCall(2, 3)}},
	{Expect: []string{"The sum is what they want."}, Finish: finish("5")},
}

// TestSayByUpdate: a message said by Update while step 1's model call is
// in flight is logged as a user_message event and carried by step 2's
// request; an empty message is refused.
func TestSayByUpdate(t *testing.T) {
	e := newEnv(t, baseTask(), newModel(t, sayTurns...), false)
	var empty, said error
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(temporal.UpdateSay, "s1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { empty = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, temporal.Say{})
		e.UpdateWorkflow(temporal.UpdateSay, "s2", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { said = err }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, temporal.Say{Text: "The sum is what they want."})
	}, 0)
	res := e.run(t)
	if res.Status != loop.Done {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if empty == nil || said != nil {
		t.Errorf("the empty message: %v (want refused); the message: %v (want taken)", empty, said)
	}
	checkStored(t, e.store, "t1", res)
	recs, _ := runner.LoadLog(context.Background(), e.store, "t1")
	n := 0
	for _, r := range recs {
		if r.Kind == observe.KindEvent && r.Event.Type == loop.EventUserMessage {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the log holds %d user_message events; want 1", n)
	}
}

// TestAdmission: what a worker's model, tools and checks produce is
// admitted before it leaves the worker, as in a local run: a secret the
// run knows reaches neither the workflow's history (the activities'
// results) nor the store, and bytes that are not UTF-8 are replaced with a
// repair entry; the log replays.
func TestAdmission(t *testing.T) {
	const canary = "sk-canary-7f3a9c1e5b"
	red := redact.New(canary)
	leak := tool.Func("leak", "Print the environment.", func(context.Context, struct{}) (string, error) {
		return "KEY=" + canary, nil
	}, tool.Idempotent())
	task := baseTask()
	task.Goal = "What is 2+3? The key is " + canary + "."
	task.Tools = append(task.Tools, leak)
	turns := []scripted.Turn{
		{Text: "Leaking " + canary + " and a bad byte \xff.", Tools: []scripted.ToolCall{{Name: "leak", Args: map[string]any{}}}},
		{Expect: []string{"KEY=[redacted]"}, Finish: finish("5")},
	}
	e := newEnvRedacting(t, task, newModel(t, turns...), false, red)
	var results []string
	e.SetOnActivityCompletedListener(func(_ *activity.Info, result converter.EncodedValue, _ error) {
		var raw json.RawMessage
		if result != nil && result.HasValue() && result.Get(&raw) == nil {
			results = append(results, string(raw))
		}
	})
	if raw, _ := json.Marshal(e.in); strings.Contains(string(raw), canary) {
		t.Error("the workflow's input holds the secret")
	}
	res := e.run(t)
	if res.Status != loop.Done {
		t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
	}
	if len(results) < 3 {
		t.Fatalf("%d activity results seen, want the model's, the tool's and the checks'", len(results))
	}
	for _, r := range results {
		if strings.Contains(r, canary) {
			t.Errorf("an activity's result holds the secret: %s", r)
		}
	}
	entries, err := e.store.Entries(context.Background(), "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	repairs := 0
	for _, en := range entries {
		if strings.Contains(string(en.Data), canary) {
			t.Errorf("entry %d holds the secret: %s", en.Seq, en.Data)
		}
		if en.Kind == string(observe.KindRepair) {
			repairs++
		}
	}
	if repairs != 1 {
		t.Errorf("%d repair entries, want 1 (the reply's bad byte)", repairs)
	}
	checkStored(t, e.store, "t1", res)
}
