package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
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
}, tool.Idempotent(), tool.Inline())

func conf(f float64) *float64 { return &f }

func newModel(t testing.TB, turns ...scripted.Turn) *scripted.Model {
	t.Helper()
	m, err := scripted.New(scripted.Script{Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func addTask() runner.Task {
	return runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 10, Cost: budget.USD(0.25), Time: 10 * time.Second},
	}
}

// TestRunDoneAfterRejection is the README example through the real shell.
func TestRunDoneAfterRejection(t *testing.T) {
	m := newModel(t,
		scripted.Turn{Text: "Adding.", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
		scripted.Turn{Expect: []string{"5"}, Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.9)}},
		scripted.Turn{Expect: []string{`expected "5", got "6"`}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}},
	)
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	res, err := runner.Run(context.Background(), addTask(), runner.Config{Model: m, RunID: "r1", Observers: []observe.Observer{jl}})
	if err != nil {
		t.Fatal(err)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Done || res.Best == nil || res.Best.Answer != "5" || res.Usage.Steps != 3 || res.Usage.ToolCalls != 1 {
		t.Fatalf("got %s best=%+v usage=%+v", res.Status, res.Best, res.Usage)
	}
	if got := len(res.Attempts); got != 2 {
		t.Errorf("attempts = %d, want 2", got)
	}

	// The log is a contiguous sequence ending in the finish command.
	var kinds []string
	for i, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var e struct {
			Seq     int64           `json:"seq"`
			Run     string          `json:"run"`
			Kind    string          `json:"kind"`
			Event   json.RawMessage `json:"event"`
			Command struct {
				Type    string `json:"type"`
				Request *struct {
					Messages int `json:"messages"`
				} `json:"request"`
			} `json:"command"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.Seq != int64(i+1) || e.Run != "r1" {
			t.Fatalf("line %d: seq %d run %q", i+1, e.Seq, e.Run)
		}
		k := e.Kind
		if e.Kind == "command" {
			k += ":" + e.Command.Type
			if e.Command.Type == "call_model" && e.Command.Request.Messages == 0 {
				t.Errorf("line %d: call_model without a message count", i+1)
			}
		}
		kinds = append(kinds, k)
	}
	want := []string{
		"run",                         // the spec, for replay
		"event", "command:call_model", // start
		"event", "command:run_tools", // reply with add
		"event", "command:call_model", // tool result
		"event", "note", "command:verify", // finish 6
		"event", "note", "command:call_model", // verdict: rejected
		"event", "note", "command:verify", // finish 5
		"event", "command:finish", // verdict: done
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("log kinds (-want +got):\n%s", diff)
	}
}

// TestCancelMidTool: cancelling the context while a tool runs ends the run
// cancelled promptly, and the tool sees its context cancelled.
func TestCancelMidTool(t *testing.T) {
	started := make(chan struct{})
	var sawCancel atomic.Bool
	block := tool.Func("block", "Blocks until cancelled.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		sawCancel.Store(true)
		return "", ctx.Err()
	})
	m := newModel(t, scripted.Turn{Tools: []scripted.ToolCall{{Name: "block"}}})
	task := addTask()
	task.Tools = []tool.Tool{block}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	start := time.Now()
	res, err := runner.Run(ctx, task, runner.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Cancelled {
		t.Fatalf("status %s, want cancelled (%s)", res.Status, res.Reason)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("cancellation took %s", el)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !sawCancel.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !sawCancel.Load() {
		t.Error("the tool's context was never cancelled")
	}
}

// TestToolPanicIsAnObservation: a panicking tool does not crash the run; the
// model is told and carries on.
func TestToolPanicIsAnObservation(t *testing.T) {
	boom := tool.Func("boom", "Panics.", func(context.Context, struct{}) (string, error) { panic("kaboom") })
	m := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "boom"}}},
		scripted.Turn{Expect: []string{"kaboom"}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.8)}},
	)
	task := addTask()
	task.Tools = []tool.Tool{boom}
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("status %s err %v", res.Status, err)
	}
}

// TestHungModelCannotOutliveTheBudget: a model that never answers is cut off
// at the deadline derived from the time budget.
func TestHungModelCannotOutliveTheBudget(t *testing.T) {
	hang := scripted.Turn{Delay: time.Hour, Text: "never"}
	m := newModel(t, hang, hang)
	task := addTask()
	// The closing turn gets the reserve, 10% of the budget: enough slack on
	// a loaded machine.
	task.Budget.Time = 2 * time.Second
	start := time.Now()
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Exhausted(budget.Time) {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if el := time.Since(start); el < 2*time.Second || el > 4*time.Second {
		t.Errorf("run took %s; want about the 2s budget", el)
	}
	if res.Usage.ModelCalls != 2 {
		t.Errorf("model calls %d, want 2 (the step and the closing turn)", res.Usage.ModelCalls)
	}
}

// TestModelFailureIsFailed: an infrastructure failure ends the run failed
// and Run returns an error beside the Result.
func TestModelFailureIsFailed(t *testing.T) {
	m := newModel(t, scripted.Turn{Error: "401 unauthorized"})
	res, err := runner.Run(context.Background(), addTask(), runner.Config{Model: m})
	if err == nil || res.Status != loop.Failed || !strings.Contains(res.Reason, "401") {
		t.Fatalf("status %s reason %q err %v", res.Status, res.Reason, err)
	}
}

type answerer string

func (a answerer) Ask(context.Context, string) (string, error) { return string(a), nil }

type nobody struct{}

func (nobody) Ask(context.Context, string) (string, error) { return "", runner.ErrNoHuman }

// TestEscalation: a stuck run asks a person when one is reachable, and ends
// escalated with the question when nobody answers.
func TestEscalation(t *testing.T) {
	empty := scripted.Turn{}
	for _, tc := range []struct {
		name  string
		human runner.Asker
		want  loop.Status
	}{
		{"answered", answerer("the answer is 5"), loop.Done},
		{"nobody", nobody{}, loop.Escalated},
		{"no asker", nil, loop.Escalated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, empty, empty, empty, empty, empty, empty,
				scripted.Turn{Expect: []string{"the answer is 5"}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(1)}})
			task := addTask()
			task.Policy.Escalate = true
			task.Policy.Progress.Window = 2
			res, err := runner.Run(context.Background(), task, runner.Config{Model: m, Human: tc.human})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want {
				t.Fatalf("status %s (%s)", res.Status, res.Reason)
			}
			if tc.want == loop.Escalated && res.Question == "" {
				t.Error("escalated without a question")
			}
		})
	}
}

func TestInvalidTask(t *testing.T) {
	task := addTask()
	task.Checks = verify.Tiers{}
	task.Budget.Steps = 1
	_, err := runner.Run(context.Background(), task, runner.Config{Model: newModel(t)})
	if err == nil {
		t.Fatal("no error for a task without checks")
	}
	for _, want := range []string{"checks: no cheap or expensive check given", "steps: limit 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := runner.Run(context.Background(), addTask(), runner.Config{}); err == nil {
		t.Error("no error without a model")
	}
}

// TestCheckErrorFailsTheRun: a verifier that cannot run is infrastructure.
func TestCheckErrorFailsTheRun(t *testing.T) {
	broken := verify.Func{CheckName: "sandbox", Prov: verify.Execution, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
		return verify.Verdict{}, errors.New("bwrap not found")
	}}
	task := addTask()
	task.Checks = verify.Tiers{Cheap: []verify.Verifier{broken}}
	m := newModel(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(1)}})
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m})
	if err == nil || res.Status != loop.Failed || !strings.Contains(res.Reason, "bwrap not found") {
		t.Fatalf("status %s reason %q err %v", res.Status, res.Reason, err)
	}
}

// TestVerdictConfidenceIsClamped: a verifier reporting NaN or out-of-range
// confidence cannot poison the log or calibration.
func TestVerdictConfidenceIsClamped(t *testing.T) {
	for _, c := range []float64{math.NaN(), math.Inf(1), -3, 7} {
		odd := verify.Func{CheckName: "odd", Prov: verify.Validation, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
			return verify.Verdict{OK: true, Confidence: c}, nil
		}}
		task := addTask()
		task.Checks = verify.Tiers{Cheap: []verify.Verifier{odd}}
		var log bytes.Buffer
		jl := observe.NewJSONL(&log)
		m := newModel(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(1)}})
		res, err := runner.Run(context.Background(), task, runner.Config{Model: m, Observers: []observe.Observer{jl}})
		if err != nil || res.Status != loop.Done {
			t.Fatalf("confidence %v: status %s err %v", c, res.Status, err)
		}
		if err := jl.Flush(); err != nil {
			t.Fatalf("confidence %v: log: %v", c, err)
		}
		if got := res.Best.Verdicts[0].Confidence; !(got >= 0 && got <= 1) {
			t.Errorf("confidence %v recorded as %v", c, got)
		}
	}
}

// TestUnsureCandidateGetsAlternatives: a low-confidence finish makes the
// runner sample alternatives in parallel and check them all; one passes.
func TestUnsureCandidateGetsAlternatives(t *testing.T) {
	alt := scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}}
	m := newModel(t,
		scripted.Turn{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.3)}},
		alt, alt, // the two samples, played in whichever order they arrive
	)
	task := addTask()
	task.Checks = verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}}
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("status %s err %v (%s)", res.Status, err, res.Reason)
	}
	if len(res.Attempts) != 3 || !res.Best.Sample || res.Usage.ModelCalls != 3 || res.Usage.Steps != 1 {
		t.Errorf("attempts %d, best %+v, usage %+v: want 3 attempts, a sampled winner, 3 model calls in 1 step", len(res.Attempts), res.Best, res.Usage)
	}
}

// TestPanickingVerifierIsInfrastructure: a verifier that panics ends the run
// failed with a Result, instead of crashing the process.
func TestPanickingVerifierIsInfrastructure(t *testing.T) {
	boom := verify.Func{CheckName: "boom", Prov: verify.Validation, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
		panic("verifier bug")
	}}
	task := addTask()
	task.Checks = verify.Tiers{Cheap: []verify.Verifier{boom, check.Equals("5")}}
	m := newModel(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(1)}})
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m})
	if err == nil || res.Status != loop.Failed || !strings.Contains(res.Reason, "verifier bug") {
		t.Fatalf("status %s reason %q err %v", res.Status, res.Reason, err)
	}
}

// TestCheckNames: checks with the same name are told apart by a suffix,
// across tiers, in tier order.
func TestCheckNames(t *testing.T) {
	task := addTask()
	task.Checks = verify.Tiers{
		Cheap:     []verify.Verifier{check.Equals("5"), check.Equals("5")},
		Expensive: []verify.Verifier{check.Equals("5")},
	}
	spec, byName, err := task.Spec()
	if err != nil {
		t.Fatal(err)
	}
	want := []loop.Check{{Name: "equals", Tier: verify.Cheap}, {Name: "equals#2", Tier: verify.Cheap}, {Name: "equals#3", Tier: verify.Expensive}}
	if diff := cmp.Diff(want, spec.Checks); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	if len(byName) != 3 {
		t.Errorf("%d verifiers by name, want 3", len(byName))
	}
}

// TestLoneCheckHasTheRunsDeadline: a verify command's only check runs on
// the run's goroutine, still under the command's deadline: a check that
// waits for its context is cut off when the time budget runs out.
func TestLoneCheckHasTheRunsDeadline(t *testing.T) {
	stuck := verify.Func{CheckName: "stuck", Prov: verify.Execution, Fn: func(ctx context.Context, _ verify.Candidate) (verify.Verdict, error) {
		<-ctx.Done()
		return verify.Verdict{}, ctx.Err()
	}}
	task := addTask()
	task.Checks = verify.Tiers{Cheap: []verify.Verifier{stuck}}
	task.Budget.Time = 300 * time.Millisecond
	m := newModel(t, scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(1)}})
	done := make(chan loop.Result, 1)
	go func() {
		res, _ := runner.Run(context.Background(), task, runner.Config{Model: m})
		done <- res
	}()
	select {
	case res := <-done:
		if res.Status == loop.Done {
			t.Errorf("status %s: a check that never answered passed", res.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end: the lone check is not under the run's deadline")
	}
}
