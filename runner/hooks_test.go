package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store/memory"
)

// runLogged runs task with cfg, logging to JSONL, and checks that the log
// replays (no hook is called by a replay: it has none).
func runLogged(t *testing.T, task runner.Task, cfg runner.Config) (loop.Result, []observe.Record, error) {
	t.Helper()
	var log bytes.Buffer
	j := observe.NewJSONL(&log)
	cfg.Observers = append(cfg.Observers, j)
	res, err := runner.Run(context.Background(), task, cfg)
	if ferr := j.Flush(); ferr != nil {
		t.Fatal(ferr)
	}
	recs, rerr := observe.ReadJSONL(&log)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if _, rerr := replay.Run(recs); rerr != nil {
		t.Errorf("the log does not replay: %v", rerr)
	}
	return res, recs, err
}

func hookEntries(recs []observe.Record) []string {
	var out []string
	for _, r := range recs {
		if r.Kind == observe.KindHook {
			var n loop.Note
			_ = json.Unmarshal(r.Note, &n)
			out = append(out, n.Problem)
		}
	}
	return out
}

func addThenFinish() []scripted.Turn {
	return []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
		{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	}
}

// TestToolHooks: a rewritten argument runs, a rewritten result is what the
// model sees, and each is a hook entry.
func TestToolHooks(t *testing.T) {
	turns := addThenFinish()
	turns[1].Expect = []string{"sum=41"}
	hooks := runner.Hooks{
		BeforeTool: func(_ context.Context, c runner.ToolCall) (runner.ToolDecision, error) {
			return runner.ToolDecision{Args: json.RawMessage(`{"a":40,"b":1}`)}, nil
		},
		AfterTool: func(_ context.Context, _ runner.ToolCall, out runner.ToolOutput) (runner.ToolOutput, error) {
			return runner.ToolOutput{Output: "sum=" + out.Output}, nil
		},
	}
	res, recs, err := runLogged(t, addTask(), runner.Config{Model: newModel(t, turns...), Hooks: hooks})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
	}
	if got := strings.Join(hookEntries(recs), ","); got != "before_tool:args,after_tool:rewrite" {
		t.Errorf("hook entries %s", got)
	}
}

// TestHookFailures: a tool hook's error or panic is an error result the
// model sees (after_tool's withholds the result); nothing crashes.
func TestHookFailures(t *testing.T) {
	for _, tt := range []struct {
		name  string
		hooks runner.Hooks
		want  string
	}{
		{"before_tool error", runner.Hooks{BeforeTool: func(context.Context, runner.ToolCall) (runner.ToolDecision, error) {
			return runner.ToolDecision{}, errors.New("policy service down")
		}}, `tool "add" not run: the before_tool hook failed: policy service down`},
		{"before_tool panic", runner.Hooks{BeforeTool: func(context.Context, runner.ToolCall) (runner.ToolDecision, error) {
			panic("boom")
		}}, "the before_tool hook failed: panicked: boom"},
		{"after_tool panic", runner.Hooks{AfterTool: func(context.Context, runner.ToolCall, runner.ToolOutput) (runner.ToolOutput, error) {
			panic("boom")
		}}, `the result of tool "add" is withheld: the after_tool hook failed: panicked: boom`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			turns := addThenFinish()
			turns[1].Expect = []string{tt.want}
			res, _, err := runLogged(t, addTask(), runner.Config{Model: newModel(t, turns...), Hooks: tt.hooks})
			if err != nil || res.Status != loop.Done {
				t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
			}
		})
	}
}

// TestBeforeModel: context is added to the call only, a refusal ends the
// run guardrail:before_model, and a panic ends it failed with the reason.
func TestBeforeModel(t *testing.T) {
	var calls atomic.Int32
	ctxHook := runner.Hooks{BeforeModel: func(_ context.Context, c runner.ModelCall) (runner.ModelDecision, error) {
		calls.Add(1)
		return runner.ModelDecision{Context: "today is Tuesday"}, nil
	}}
	turns := addThenFinish()
	turns[0].Expect = []string{"today is Tuesday"}
	turns[1].Expect = []string{"today is Tuesday"}
	res, recs, err := runLogged(t, addTask(), runner.Config{Model: newModel(t, turns...), Hooks: ctxHook})
	if err != nil || res.Status != loop.Done || calls.Load() != 2 {
		t.Fatalf("%v %s: %s (hook called %d times)", err, res.Status, res.Reason, calls.Load())
	}
	if got := strings.Join(hookEntries(recs), ","); got != "before_model:context,before_model:context" {
		t.Errorf("hook entries %s", got)
	}

	refuse := runner.Hooks{BeforeModel: func(context.Context, runner.ModelCall) (runner.ModelDecision, error) {
		return runner.ModelDecision{Refuse: "out of hours"}, nil
	}}
	res, _, err = runLogged(t, addTask(), runner.Config{Model: newModel(t, addThenFinish()...), Hooks: refuse})
	if err != nil || res.Status != loop.Guardrail("before_model") || !strings.Contains(res.Reason, "out of hours") {
		t.Errorf("refused: %v %s: %s", err, res.Status, res.Reason)
	}

	panics := runner.Hooks{BeforeModel: func(context.Context, runner.ModelCall) (runner.ModelDecision, error) { panic("boom") }}
	res, _, _ = runLogged(t, addTask(), runner.Config{Model: newModel(t, addThenFinish()...), Hooks: panics})
	if res.Status != loop.Failed || !strings.Contains(res.Reason, "the before_model hook failed: panicked: boom") {
		t.Errorf("panicked: %s: %s", res.Status, res.Reason)
	}
}

// TestOnEntry sees every entry in order; one that panics is recorded and
// not called again.
func TestOnEntry(t *testing.T) {
	var seqs []int64
	hooks := runner.Hooks{OnEntry: func(e observe.Entry) {
		seqs = append(seqs, e.Seq)
		if len(seqs) == 3 {
			panic("telemetry bug")
		}
	}}
	res, recs, err := runLogged(t, addTask(), runner.Config{Model: newModel(t, addThenFinish()...), Hooks: hooks})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
	}
	if len(seqs) != 3 || seqs[0] != 1 || seqs[2] != 3 {
		t.Errorf("OnEntry saw %v, want 1 2 3 then no more", seqs)
	}
	if got := hookEntries(recs); len(got) != 1 || got[0] != "on_entry:panic" {
		t.Errorf("hook entries %v", got)
	}
}

// pii trips on requests or replies that hold an @.
func pii(escalate bool) runner.Guardrail {
	judge := func(s string) (runner.Verdict, error) {
		if strings.Contains(s, "@") {
			return runner.Verdict{Trip: true, Reason: "holds an email address"}, nil
		}
		return runner.Verdict{}, nil
	}
	return runner.Guardrail{Name: "pii", Escalate: escalate,
		Input: func(_ context.Context, req *model.Request) (runner.Verdict, error) {
			b, _ := json.Marshal(req.Messages)
			return judge(string(b))
		},
		Output: func(_ context.Context, r *model.Response) (runner.Verdict, error) {
			b, _ := json.Marshal(r.Content)
			return judge(string(b))
		},
	}
}

// TestGuardrails: an input trip and an output trip end the run with the
// guardrail's status; an output trip's reply is not logged; with escalate,
// a person's continue lets the call through; an error fails closed.
func TestGuardrails(t *testing.T) {
	task := addTask()
	task.Goal = "Mail ada@example.com the sum of 2+3."
	res, _, err := runLogged(t, task, runner.Config{Model: newModel(t, addThenFinish()...), Guardrails: []runner.Guardrail{pii(false)}})
	if err != nil || res.Status != "guardrail:pii" || res.Reason != "guardrail pii tripped on the model's input: holds an email address" {
		t.Errorf("input: %v %s: %s", err, res.Status, res.Reason)
	}

	turns := addThenFinish()
	turns[1].Text = "I will mail root@example.com"
	res, recs, err := runLogged(t, addTask(), runner.Config{Model: newModel(t, turns...), Guardrails: []runner.Guardrail{pii(false)}})
	if err != nil || res.Status != "guardrail:pii" || !strings.Contains(res.Reason, "model's output") || res.Usage.OutputTokens == 0 {
		t.Errorf("output: %v %s: %s, %d output tokens", err, res.Status, res.Reason, res.Usage.OutputTokens)
	}
	for _, r := range recs {
		if r.Kind == observe.KindEvent && strings.Contains(toJSON(r.Event), "root@") {
			t.Errorf("the tripped reply is in the log: %s", toJSON(r.Event))
		}
	}

	person := &answers{"continue"}
	res, _, err = runLogged(t, task, runner.Config{Model: newModel(t, addThenFinish()...), Human: person, Guardrails: []runner.Guardrail{pii(true)}})
	if err != nil || res.Status != loop.Done || res.Asked != 1 || res.Answered != 1 {
		t.Errorf("escalated: %v %s: %s, asked %d", err, res.Status, res.Reason, res.Asked)
	}

	broken := runner.Guardrail{Name: "broken", Input: func(context.Context, *model.Request) (runner.Verdict, error) {
		return runner.Verdict{}, errors.New("classifier down")
	}}
	res, _, _ = runLogged(t, addTask(), runner.Config{Model: newModel(t, addThenFinish()...), Guardrails: []runner.Guardrail{broken}})
	if res.Status != loop.Failed || !strings.Contains(res.Reason, "guardrail broken failed: classifier down") {
		t.Errorf("broken: %s: %s", res.Status, res.Reason)
	}

	_, err = runner.Run(context.Background(), addTask(), runner.Config{Model: newModel(t), Guardrails: []runner.Guardrail{{Name: "a b"}, {Name: "before_model", Input: broken.Input}}})
	if err == nil || !strings.Contains(err.Error(), `name "a b"`) || !strings.Contains(err.Error(), `"before_model" is taken`) {
		t.Errorf("bad guardrails: %v", err)
	}
}

// TestAfterToolDurable: with a Store a turn's calls are made durable one
// by one as they end; AfterTool still runs on each before anything is
// kept, so the stored log never holds what it removed, and replays.
func TestAfterToolDurable(t *testing.T) {
	st := memory.New()
	turns := []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}, {Name: "add", Args: map[string]int{"a": 1, "b": 4}}}},
		{Expect: []string{"[masked]"}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	}
	var rewrites atomic.Int32
	hooks := runner.Hooks{AfterTool: func(_ context.Context, _ runner.ToolCall, out runner.ToolOutput) (runner.ToolOutput, error) {
		rewrites.Add(1)
		return runner.ToolOutput{Output: strings.ReplaceAll(out.Output, "5", "[masked]")}, nil
	}}
	res, err := runner.Run(context.Background(), addTask(), runner.Config{Model: newModel(t, turns...), Store: st, RunID: "d", Hooks: hooks})
	if err != nil || res.Status != loop.Done || rewrites.Load() != 2 {
		t.Fatalf("%v %s: %s; %d rewrites", err, res.Status, res.Reason, rewrites.Load())
	}
	recs, err := runner.LoadLog(context.Background(), st, "d")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == observe.KindEvent && r.Event.Tool != nil && strings.Contains(r.Event.Tool.Output, "5") {
			t.Errorf("the stored log holds the unmasked output %q", r.Event.Tool.Output)
		}
	}
	if got := strings.Join(hookEntries(recs), ","); got != "after_tool:rewrite,after_tool:rewrite" {
		t.Errorf("hook entries %s", got)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("the stored log does not replay: %v", err)
	}
}

// TestGuardrailAnsweredLater: a guardrail with Escalate and a person who
// answers later leaves the run awaiting input; the answer continue carries
// it on past the guardrail, in another process.
func TestGuardrailAnsweredLater(t *testing.T) {
	st := memory.New()
	task := addTask()
	task.Goal = "Mail ada@example.com the sum of 2+3."
	cfg := runner.Config{Model: newModel(t, addThenFinish()...), Store: st, RunID: "g", Human: runner.Later, Guardrails: []runner.Guardrail{pii(true)}}
	_, err := runner.Run(context.Background(), task, cfg)
	var aw *runner.AwaitingError
	if !errors.As(err, &aw) || !strings.Contains(aw.Question, "guardrail pii tripped on the model's input") {
		t.Fatalf("want the run awaiting a person about the guardrail, got %v", err)
	}
	cfg.Model = newModel(t, addThenFinish()...)
	answer := "continue"
	res, err := runner.Resume(context.Background(), task, cfg, runner.ResumeOptions{Answer: &answer})
	if err != nil || res.Status != loop.Done || res.Answered != 1 {
		t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
	}
	recs, err := runner.LoadLog(context.Background(), st, "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("the stored log does not replay: %v", err)
	}
}

// TestGuardrailAmongSamples: a guardrail that trips on sampled
// alternatives, run in parallel, stops the batch with one trip: the other
// alternatives' answers are dropped, and the person's stop ends the run
// with the guardrail's status (not a protocol failure), every
// alternative's usage charged.
func TestGuardrailAmongSamples(t *testing.T) {
	task := addTask()
	task.Policy.ConfidenceThreshold, task.Policy.Samples = 0.95, 2
	turns := []scripted.Turn{
		{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.5)}, Usage: &scripted.Usage{OutputTokens: 1}},
		{Text: "ask me at x@example.com", Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.5)}, Usage: &scripted.Usage{OutputTokens: 10}},
		{Text: "ask me at y@example.com", Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.5)}, Usage: &scripted.Usage{OutputTokens: 100}},
	}
	res, _, err := runLogged(t, task, runner.Config{Model: newModel(t, turns...), Human: &answers{"stop"}, Guardrails: []runner.Guardrail{pii(true)}})
	if err != nil || res.Status != "guardrail:pii" || res.Asked != 1 {
		t.Fatalf("%v %s: %s (asked %d)", err, res.Status, res.Reason, res.Asked)
	}
	// Both alternatives were made: what each used is charged.
	if res.Usage.OutputTokens != 111 || res.Usage.ModelCalls != 3 {
		t.Errorf("usage %d output tokens in %d model calls, want 111 in 3", res.Usage.OutputTokens, res.Usage.ModelCalls)
	}
}

// TestGuardrailReasonRedacted: a guardrail's reason is text from outside
// the core, redacted like any other before the core or the log see it.
func TestGuardrailReasonRedacted(t *testing.T) {
	leaky := runner.Guardrail{Name: "leaky", Input: func(context.Context, *model.Request) (runner.Verdict, error) {
		return runner.Verdict{Trip: true, Reason: "found the key sk-secret-123"}, nil
	}}
	res, recs, err := runLogged(t, addTask(), runner.Config{Model: newModel(t), Guardrails: []runner.Guardrail{leaky}, Redactor: redact.New("sk-secret-123")})
	if err != nil || strings.Contains(res.Reason, "sk-secret") || !strings.Contains(res.Reason, "[redacted]") {
		t.Errorf("%v: %s", err, res.Reason)
	}
	for _, r := range recs {
		if strings.Contains(toJSON(r), "sk-secret") {
			t.Errorf("the log holds the secret: %s", toJSON(r))
		}
	}
}

// TestGuardrailsReachSubagents: a run's guardrails apply to its
// sub-agents: a child whose reply trips one ends with the guardrail's
// status, which its parent sees.
func TestGuardrailsReachSubagents(t *testing.T) {
	parent := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{spawn("Fetch part one.", nil)}},
		scripted.Turn{Expect: []string{"Sub-agent c1 ended guardrail:words"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	)
	kids := newChildren(0, map[string][]scripted.Turn{
		"Fetch part one.": {{Text: "a forbidden word", Finish: &scripted.Finish{Answer: "part-1", Confidence: conf(0.9)}}},
	})
	words := runner.Guardrail{Name: "words", Output: func(_ context.Context, r *model.Response) (runner.Verdict, error) {
		b, _ := json.Marshal(r.Content)
		return runner.Verdict{Trip: strings.Contains(string(b), "forbidden"), Reason: "a forbidden word"}, nil
	}}
	res, err := runner.Run(context.Background(), partTask(), runner.Config{Model: parent, ChildModel: kids.model, Guardrails: []runner.Guardrail{words}})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
	}
}
