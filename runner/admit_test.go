package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// playModel replies with its turns in order, streaming each text in the
// given pieces, and keeps every request it got.
type playModel struct {
	mu    sync.Mutex
	turns []playTurn
	reqs  []model.Request
}

type playTurn struct {
	pieces []string // the text, streamed piece by piece
	calls  []model.Block
	err    error
}

func (m *playModel) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	if len(m.reqs) > len(m.turns) {
		return model.Response{}, errors.New("no turn left")
	}
	t := m.turns[len(m.reqs)-1]
	if t.err != nil {
		return model.Response{}, t.err
	}
	onText := model.HooksFrom(ctx).OnText
	var text strings.Builder
	for _, p := range t.pieces {
		text.WriteString(p)
		if onText != nil {
			onText(p)
		}
	}
	resp := model.Response{StopReason: "end_turn", Usage: model.Usage{InputTokens: 10, OutputTokens: 5, CostKnown: true}}
	if text.Len() > 0 {
		resp.Content = append(resp.Content, model.TextBlock(text.String()))
	}
	resp.Content = append(resp.Content, t.calls...)
	return resp, nil
}

func finishCall(id, answer string) model.Block {
	in, _ := json.Marshal(map[string]any{"answer": answer, "confidence": 0.9})
	return model.Block{Type: model.ToolUse, ID: id, Name: loop.FinishTool, Input: in}
}

// textLog keeps streamed text.
type textLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *textLog) Observe(observe.Entry) {}
func (l *textLog) ObserveText(_, _, d string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(d)
}

const canary = "sk-canary-7d41c0ffee99"

// TestSecretsNeverLeave: a secret that a model writes, a tool prints, a
// check echoes and an error carries reaches neither the model's next
// request, nor the observers, nor the streamed text, nor the store, nor
// the Result, nor the error Run returns.
func TestSecretsNeverLeave(t *testing.T) {
	env := tool.Func("env", "Print the environment.", func(context.Context, struct{}) (string, error) {
		return "HOME=/root\nANTHROPIC_API_KEY=" + canary + "\n", nil
	})
	m := &playModel{turns: []playTurn{
		{pieces: []string{"Let me look; the key might be sk-can", "ary-7d41c0ffee99 here."}, calls: []model.Block{{Type: model.ToolUse, ID: "c1", Name: "env", Input: json.RawMessage(`{}`)}}},
		{pieces: []string{"Done."}, calls: []model.Block{finishCall("c2", "the key is "+canary)}},
		{err: errors.New("401: invalid key " + canary)},
	}}
	echo := verify.Func{CheckName: "echo", Prov: verify.Validation, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		return verify.Verdict{OK: false, Detail: "you said " + c.Answer + " and " + canary}, nil
	}}
	task := runner.Task{
		Goal:   "Find the key (not " + canary + ").",
		Tools:  []tool.Tool{env},
		Checks: verify.Tiers{Expensive: []verify.Verifier{echo}},
		Budget: budget.Limits{Steps: 5, Time: 10 * time.Second},
	}
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	var text textLog
	db := memory.New()
	res, err := runner.Run(context.Background(), task, runner.Config{
		Model: m, RunID: "r1", Store: db, Observers: []observe.Observer{jl, &text},
		Redactor: redact.New(canary),
	})
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Failed || err == nil {
		t.Fatalf("status %s, err %v: want the model's error to end the run failed", res.Status, err)
	}
	result, _ := json.Marshal(res)
	entries, serr := db.Entries(context.Background(), "r1", 0)
	if serr != nil {
		t.Fatal(serr)
	}
	row, _ := db.Run(context.Background(), "r1")
	var stored strings.Builder
	for _, e := range entries {
		stored.Write(e.Data)
	}
	stored.Write(row.Result)
	stored.WriteString(row.Goal)
	reqs, _ := json.Marshal(m.reqs[1:])
	for what, s := range map[string]string{
		"the log": log.String(), "the streamed text": text.b.String(), "the store": stored.String(),
		"the Result": string(result), "the error": err.Error(), "the model's later requests": string(reqs),
	} {
		if strings.Contains(s, canary) || strings.Contains(s, "7d41c0ffee99") {
			t.Errorf("%s shows the secret: %s", what, s)
		}
	}
	if !strings.Contains(string(reqs), "ANTHROPIC_API_KEY=[redacted]") {
		t.Errorf("the tool's output did not reach the model redacted: %s", reqs)
	}
	if got := text.b.String(); got != "Let me look; the key might be [redacted] here.Done." {
		t.Errorf("streamed %q", got)
	}
}

// TestInvalidUTF8IsRepairedOnTheWayIn: bytes that are not UTF-8 in a
// model's text and tool arguments, a tool's output and a verdict are
// replaced where they enter, each event's repair recorded once; every log
// line is valid UTF-8 JSON, and the log replays exactly.
func TestInvalidUTF8IsRepairedOnTheWayIn(t *testing.T) {
	echo := tool.Func("echo", "Echo s.", func(_ context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return "got \xc3\x28 and " + in.S + " \xff\xfe", nil
	})
	m := &playModel{turns: []playTurn{
		{pieces: []string{"bad \xff bytes"}, calls: []model.Block{{Type: model.ToolUse, ID: "c1", Name: "echo", Input: json.RawMessage("{\"s\":\"x\xffy\"}")}}},
		{calls: []model.Block{finishCall("c2", "done")}},
		{calls: []model.Block{finishCall("c3", "done")}},
	}}
	picky := verify.Func{CheckName: "picky", Prov: verify.Validation, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		return verify.Verdict{OK: false, Detail: "no \xed\xa0\x80 good"}, nil
	}}
	task := runner.Task{Goal: "Echo.", Tools: []tool.Tool{echo}, Checks: verify.Tiers{Expensive: []verify.Verifier{picky}}, Budget: budget.Limits{Steps: 3, Time: 10 * time.Second}}
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	db := memory.New()
	if _, err := runner.Run(context.Background(), task, runner.Config{Model: m, RunID: "r1", Store: db, Observers: []observe.Observer{jl}}); err != nil {
		t.Fatal(err)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	repairs := 0
	for i, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if !utf8.ValidString(line) || !json.Valid([]byte(line)) {
			t.Errorf("line %d is not valid UTF-8 JSON: %q", i+1, line)
		}
		if strings.Contains(line, `"kind":"repair"`) {
			repairs++
		}
	}
	entries, _ := db.Entries(context.Background(), "r1", 0)
	for _, e := range entries {
		if !utf8.Valid(e.Data) || !json.Valid(e.Data) {
			t.Errorf("stored entry %d is not valid UTF-8 JSON: %q", e.Seq, e.Data)
		}
	}
	// The reply (text and arguments), the tool result, two verdicts.
	if repairs != 4 {
		t.Errorf("%d repair entries, want 4 (one per event with bad bytes):\n%s", repairs, log.String())
	}
	// The tool saw the repaired arguments, and the model the repaired output.
	if last := m.reqs[1].Messages; !strings.Contains(toJSON(last), "got \ufffd( and x\ufffdy \ufffd") {
		t.Errorf("the model saw %s", toJSON(last))
	}
	recs, err := observe.ReadJSONL(&log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("replay: %v", err)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSelfJudgedResult: a run accepted on self-judged checks alone says so
// in its Result; one independent check among them makes it an ordinary done.
func TestSelfJudgedResult(t *testing.T) {
	self := verify.Func{CheckName: "vote", Prov: verify.Self, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
		return verify.Verdict{OK: true, Confidence: 1}, nil
	}}
	for _, tc := range []struct {
		checks []verify.Verifier
		self   bool
	}{
		{[]verify.Verifier{self}, true},
		{[]verify.Verifier{self, check.Equals("5")}, false},
	} {
		m := &playModel{turns: []playTurn{{calls: []model.Block{finishCall("c1", "5")}}}}
		task := runner.Task{Goal: "g", Checks: verify.Tiers{Expensive: tc.checks}, Budget: budget.Limits{Steps: 3, Time: 10 * time.Second}}
		res, err := runner.Run(context.Background(), task, runner.Config{Model: m})
		if err != nil || res.Status != loop.Done {
			t.Fatalf("%s, %v", res.Status, err)
		}
		words := strings.Contains(res.Reason, "accepted on self-judged checks alone (vote)")
		if res.SelfJudged != tc.self || words != tc.self {
			t.Errorf("%d checks: self_judged %v, reason %q; want self-judged %v, said in words", len(tc.checks), res.SelfJudged, res.Reason, tc.self)
		}
		if b, _ := json.Marshal(res); strings.Contains(string(b), `"self_judged":true`) != tc.self {
			t.Errorf("result JSON %s", b)
		}
	}
}

// TestAdmitLeavesSharedRepliesAlone: a scripted model's replies are shared
// by every model playing the script; redacting one run's reply must not
// change what the next run is given.
func TestAdmitLeavesSharedRepliesAlone(t *testing.T) {
	const key = "sk-shared-reply-123456"
	script, err := scripted.Prepare(scripted.Script{Turns: []scripted.Turn{
		{Text: "the key is " + key, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	task := runner.Task{Goal: "answer 5", Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}}, Budget: budget.Limits{Steps: 3, Time: time.Minute}}
	first, _ := scripted.New(script, scripted.Config{Quiet: true})
	if _, err := runner.Run(context.Background(), task, runner.Config{Model: first, Redactor: redact.New(key)}); err != nil {
		t.Fatal(err)
	}
	second, _ := scripted.New(script, scripted.Config{Quiet: true})
	resp, err := second.Generate(context.Background(), model.Request{})
	if err != nil || len(resp.Content) == 0 || !strings.Contains(resp.Content[0].Text, key) {
		t.Fatalf("the script's shared reply was changed by the first run's redaction: %+v %v", resp.Content, err)
	}
}

// TestAdmitCompactsArguments: a model's tool arguments with whitespace
// (providers pass them on as the model wrote them) are kept compact, as
// the log encodes them: else a replay of the log sizes the history
// differently and its input estimates diverge.
func TestAdmitCompactsArguments(t *testing.T) {
	spaced := `{"a": 2,
  "b": 3}`
	finish := `{"answer": "5", "confidence": 0.9}`
	m := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "add", RawArgs: &spaced}}},
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "finish", RawArgs: &finish}}},
	)
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	res, err := runner.Run(context.Background(), addTask(), runner.Config{Model: m, Observers: []observe.Observer{jl}})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := observe.ReadJSONL(&log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("replay: %v", err)
	}
}

// TestDefaultRedactorKnowsTheEnvironment: with no Redactor, a run knows the
// secrets of the process's environment, so a model that echoes a provider
// key stores [redacted]; NoRedaction opts out.
func TestDefaultRedactorKnowsTheEnvironment(t *testing.T) {
	t.Setenv("ACME_API_KEY", canary)
	stored := func(cfg runner.Config) string {
		m := &playModel{turns: []playTurn{{pieces: []string{"my key: " + canary}, calls: []model.Block{finishCall("c1", "done")}}}}
		db := memory.New()
		cfg.Model, cfg.RunID, cfg.Store = m, "r1", db
		task := runner.Task{Goal: "g", Checks: verify.Tiers{Cheap: []verify.Verifier{verify.Func{CheckName: "ok", Prov: verify.Validation, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
			return verify.Verdict{OK: true}, nil
		}}}}, Budget: budget.Limits{Steps: 3, Time: 10 * time.Second}}
		if _, err := runner.Run(context.Background(), task, cfg); err != nil {
			t.Fatal(err)
		}
		entries, err := db.Entries(context.Background(), "r1", 0)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range entries {
			b.Write(e.Data)
		}
		return b.String()
	}
	if s := stored(runner.Config{}); strings.Contains(s, canary) || !strings.Contains(s, "my key: [redacted]") {
		t.Errorf("with the default redactor the store holds %s", s)
	}
	if s := stored(runner.Config{NoRedaction: true}); !strings.Contains(s, "my key: "+canary) {
		t.Errorf("with NoRedaction the store holds %s", s)
	}
}
