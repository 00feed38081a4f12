package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// FuzzParseFinish: finish arguments are model output. The parser never
// panics, accepts only an object with a string answer and a confidence in
// [0, 1], and round-trips what it accepts.
func FuzzParseFinish(f *testing.F) {
	for _, s := range []string{
		`{"answer":"5","confidence":0.9}`, `{"answer":"5"}`, `{"answer":5,"confidence":1}`,
		`{"answer":"x","confidence":2}`, `["5"]`, `{"answer":"a","confidence":0.5,"extra":1}`,
		`{"answer":"\u00e9","confidence":1e-3}`, ``, `null`, `{"answer":"a","confidence":NaN}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		answer, conf, err := parseFinish(raw, false)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if !(conf >= 0 && conf <= 1) {
			t.Fatalf("accepted confidence %v", conf)
		}
		var back struct {
			Answer     string  `json:"answer"`
			Confidence float64 `json:"confidence"`
		}
		if json.Unmarshal(raw, &back) != nil || back.Answer != answer || back.Confidence != conf {
			t.Fatalf("accepted %q as (%q, %v) but it decodes as %+v", raw, answer, conf, back)
		}
	})
}

// FuzzParseTypedFinish: a typed finish answer (output.go) is model output
// too. The parser never panics, and what it accepts is one compact JSON
// value, the one given or the one a string held.
func FuzzParseTypedFinish(f *testing.F) {
	for _, s := range []string{
		`{"answer":{"items":[{"price":-1}]},"confidence":0.9}`, `{"answer":"{\"a\":1}","confidence":1}`,
		`{"answer":"plain","confidence":0.5}`, `{"answer":[1, 2 ,3],"confidence":0}`, `{"answer":null,"confidence":1}`,
		`{"answer":{"a":},"confidence":1}`, `{"answer":"[1,","confidence":1}`, `{"confidence":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		answer, conf, err := parseFinish(raw, true)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if !(conf >= 0 && conf <= 1) {
			t.Fatalf("accepted confidence %v", conf)
		}
		var v any
		if err := json.Unmarshal([]byte(answer), &v); err != nil {
			t.Fatalf("accepted %q as the answer %q, which is not JSON: %v", raw, answer, err)
		}
		var b bytes.Buffer
		if json.Compact(&b, []byte(answer)); b.String() != answer {
			t.Fatalf("answer %q is not compact", answer)
		}
	})
}

// FuzzReply: whatever a model replies, the machine answers with a command or
// a result, never a panic or a Go error, and every tool_use it keeps in the
// history gets exactly one tool_result with an object input.
func FuzzReply(f *testing.F) {
	f.Add("add", `{"a":1}`, "finish", `{"answer":"5","confidence":0.5}`, "thinking", uint8(3), "a", "a")
	f.Add("", `{`, "", ``, "", uint8(0), "", "")
	f.Add("finish", `{"answer":"5","confidence":0.9}`, "", "", "", uint8(1), "x", "")
	f.Add("nope", `[1]`, "add", `{"a":"x"}`, strings.Repeat("x", 70000), uint8(7), "s1_2", "")
	f.Add("add", `{}`, "add", ``, "", uint8(6), "s1_2", "")
	f.Fuzz(func(t *testing.T, name1, args1, name2, args2, text string, shape uint8, id1, id2 string) {
		spec := Spec{
			Goal:   "fuzz",
			Tools:  []model.ToolSpec{{Name: "add", Description: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Checks: []Check{{Name: "equals", Tier: verify.Cheap}},
			Policy: Policy{Samples: -1}, // one candidate per reply: this test is about reply handling
		}
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(0, 0)
		if err := m.Step(Event{Type: EventStart, At: at}); err != nil {
			t.Fatal(err)
		}
		call := m.Ready().Commands[0]
		m.Advance()
		var content []model.Block
		if shape&1 != 0 {
			content = append(content, model.TextBlock(text))
		}
		if shape&2 != 0 {
			content = append(content, model.Block{Type: model.ToolUse, ID: id1, Name: name1, Input: json.RawMessage(args1)})
		}
		if shape&4 != 0 {
			content = append(content, model.Block{Type: model.ToolUse, ID: id2, Name: name2, Input: json.RawMessage(args2)})
		}
		if err := m.Step(Event{Type: EventModelReply, At: at, Call: call.ID, Reply: &model.Response{Content: content}}); err != nil {
			t.Fatalf("Step: %v", err)
		}
		rd := m.Ready()
		if len(rd.Commands) != 1 {
			t.Fatalf("want one command, got %d", len(rd.Commands))
		}
		// Answer whatever is outstanding so the turn completes.
		switch c := rd.Commands[0]; c.Type {
		case RunTools:
			m.Advance()
			for _, tc := range c.Calls {
				if err := m.Step(Event{Type: EventToolResult, At: at, Call: tc.ID, Tool: &ToolOutcome{Output: "ok"}}); err != nil {
					t.Fatalf("tool result: %v", err)
				}
			}
		case Verify:
			m.Advance()
			if err := m.Step(Event{Type: EventVerdict, At: at, Call: c.ID, Verdict: &verify.Verdict{Check: "equals", OK: false}}); err != nil {
				t.Fatalf("verdict: %v", err)
			}
		case CallModel:
		default:
			t.Fatalf("unexpected command %s", c.Type)
		}
		if m.Phase() != PhaseModel && m.Phase() != PhaseStopped {
			t.Fatalf("phase %s after a full turn", m.Phase())
		}
		if _, err := m.Snapshot(); err != nil {
			t.Fatalf("snapshot after the turn: %v", err)
		}
		checkPairs(t, m)
	})
}

// FuzzExtractCandidate: generate-mode replies are model output. Extraction
// never panics, a stated confidence is in [0, 1], and the answer never
// carries the confidence line when there is no fence.
func FuzzExtractCandidate(f *testing.F) {
	for _, s := range []string{
		"```python\ndef f(): pass\n```\nCONFIDENCE: 0.9", "x = 1\nconfidence: 40%", "```\n```", "CONFIDENCE: 2",
		"**Confidence:** 0.75", "no fence at all", "```go\npackage main\n", "CONFIDENCE: .5\nCONFIDENCE: 0.25",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		answer, conf, stated := ExtractCandidate(text)
		if stated && !(conf >= 0 && conf <= 1) {
			t.Fatalf("stated confidence %v out of range", conf)
		}
		if !stated && conf != 0 {
			t.Fatalf("unstated confidence is %v, want 0", conf)
		}
		if !strings.Contains(text, "```") && confidenceLine.MatchString(answer) {
			t.Fatalf("answer %q still holds a confidence line", answer)
		}
		if len(answer) > len(text) {
			t.Fatalf("answer longer than the reply")
		}
	})
}

func TestExtractCandidate(t *testing.T) {
	for _, tc := range []struct {
		text, answer string
		conf         float64
		stated       bool
	}{
		{"Here:\n```python\ndef f():\n    return 1\n```\nCONFIDENCE: 0.9", "def f():\n    return 1", 0.9, true},
		{"x = 1\nconfidence: 40%", "x = 1", 0.4, true},
		{"**Confidence:** 0.75\n```\nA\n```", "A", 0.75, true},
		{"just text", "just text", 0, false},
		{"CONFIDENCE: 1.5\nanswer", "answer", 0, false},
		{"CONFIDENCE: 0.2\nCONFIDENCE: 0.6\nz", "z", 0.6, true},
	} {
		answer, conf, stated := ExtractCandidate(tc.text)
		if answer != tc.answer || conf != tc.conf || stated != tc.stated {
			t.Errorf("ExtractCandidate(%q) = (%q, %v, %v), want (%q, %v, %v)", tc.text, answer, conf, stated, tc.answer, tc.conf, tc.stated)
		}
	}
}

// FuzzParseScratchpad: update_scratchpad arguments are model output. The
// parser never panics, accepts only an object of known string sections,
// and what it accepts round-trips.
func FuzzParseScratchpad(f *testing.F) {
	for _, s := range []string{
		`{"plan":"a"}`, `{"findings":"b","open_questions":"c"}`, `{}`, `{"plan":1}`, `{"notes":"x"}`,
		`[]`, ``, `null`, `{"plan":null}`, `{"plan":"` + strings.Repeat("x", 4001) + `"}`, `{"plan":"a","plan":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		old := Scratchpad{Plan: "old plan", Findings: "old findings"}
		got, err := parseScratchpad(raw, old)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		var back map[string]*string
		if json.Unmarshal(raw, &back) != nil {
			t.Fatalf("accepted %q, which is not a JSON object of strings", raw)
		}
		want := old
		folded := map[string]bool{}
		for k := range back {
			if folded[strings.ToLower(k)] {
				return // keys differing only in case: which wins depends on order
			}
			folded[strings.ToLower(k)] = true
		}
		for k, v := range back {
			if v == nil {
				t.Fatalf("accepted null section %q in %q", k, raw)
			}
			// encoding/json matches field names without regard to case.
			switch strings.ToLower(k) {
			case "plan":
				want.Plan = strings.TrimSpace(*v)
			case "findings":
				want.Findings = strings.TrimSpace(*v)
			case "open_questions":
				want.OpenQuestions = strings.TrimSpace(*v)
			default:
				t.Fatalf("accepted unknown section %q", k)
			}
		}
		// Duplicate keys: encoding/json keeps the last, as the parser does.
		if got != want {
			t.Fatalf("parsed %q as %+v, want %+v", raw, got, want)
		}
		for _, s := range []string{got.Plan, got.Findings, got.OpenQuestions} {
			if len(s) > maxScratchpadSection {
				t.Fatalf("accepted a section of %d bytes", len(s))
			}
		}
	})
}

// FuzzParsePlan: submit_plan and step_done arguments are model output. The
// parsers never panic; an accepted plan has 1 to maxPlanSteps steps, each
// with something to do and a known check, exactly as sent.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		`{"steps":[{"do":"a","check":"none"}]}`, `{"steps":[{"do":"a","check":"tests"},{"do":"b","check":"lint"}]}`,
		`{"steps":[]}`, `{"steps":[{"do":"","check":"none"}]}`, `{"steps":[{"do":"a"}]}`, `{"steps":"a"}`,
		`{"steps":[{"do":"a","check":"none","x":1}]}`, `[]`, ``, `{"result":"r"}`, `{"result":1}`,
	} {
		f.Add([]byte(s))
	}
	checks := []string{"tests", "format"}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if r, err := parseStepDone(raw); err == nil {
			var back struct{ Result *string }
			if json.Unmarshal(raw, &back) != nil || back.Result == nil || *back.Result != r {
				t.Fatalf("step_done accepted %q as %q", raw, r)
			}
		}
		steps, err := parsePlan(raw, checks)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(steps) == 0 || len(steps) > maxPlanSteps {
			t.Fatalf("accepted %d steps", len(steps))
		}
		var back struct {
			Steps []struct{ Do, Check string }
		}
		if json.Unmarshal(raw, &back) != nil || len(back.Steps) != len(steps) {
			t.Fatalf("accepted %q, which does not decode to %d steps", raw, len(steps))
		}
		for i, s := range steps {
			if s.Do == "" || (s.Check != "none" && !slices.Contains(checks, s.Check)) {
				t.Fatalf("step %d accepted: %+v", i, s)
			}
			if s.Do != strings.TrimSpace(back.Steps[i].Do) || s.Check != strings.TrimSpace(back.Steps[i].Check) {
				t.Fatalf("step %d parsed as %+v, sent as %+v", i, s, back.Steps[i])
			}
		}
	})
}

// FuzzCoreTools: a plan-mode machine with a scratchpad, fed two calls of
// the core's own tools (or others) with any arguments, answers every one,
// keeps the history paired and always asks for something next.
func FuzzCoreTools(f *testing.F) {
	f.Add("submit_plan", `{"steps":[{"do":"a","check":"equals"}]}`, "step_done", `{"result":"r"}`, "update_scratchpad", `{"plan":"p"}`)
	f.Add("update_scratchpad", `{"plan":"p"}`, "add", `{}`, "step_done", `{"result":"r"}`)
	f.Add("submit_plan", `{"steps":[{"do":"a","check":"none"}]}`, "finish", `{"answer":"a","confidence":1}`, "add", `{}`)
	f.Fuzz(func(t *testing.T, name1, args1, name2, args2, name3, args3 string) {
		spec := Spec{
			Goal:   "fuzz",
			Tools:  []model.ToolSpec{{Name: "add", Description: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Checks: []Check{{Name: "equals", Tier: verify.Cheap}},
			Policy: Policy{Samples: -1, Scratchpad: true, Plan: true},
		}
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		step := stepper(t, m)
		rd := step(Event{Type: EventStart})
		turns := [][2]string{{name1, args1}, {name2, args2}, {name3, args3}}
		for i := 0; i < 2 && m.Phase() != PhaseStopped; i++ {
			if len(rd.Commands) != 1 || rd.Commands[0].Type != CallModel {
				got, _ := json.Marshal(rd.Commands) // %+v would print the detail's address
				t.Fatalf("turn %d: want one call_model, got %s", i, got)
			}
			var content []model.Block
			for k, c := range turns[i : i+2] {
				content = append(content, model.Block{Type: model.ToolUse, ID: fmt.Sprintf("t%d_%d", i, k), Name: c[0], Input: json.RawMessage(c[1])})
			}
			rd = step(Event{Type: EventModelReply, Call: rd.Commands[0].ID, Reply: &model.Response{Content: content}})
			for len(rd.Commands) == 1 && rd.Commands[0].Type != CallModel && rd.Commands[0].Type != Finish {
				switch c := rd.Commands[0]; c.Type {
				case RunTools:
					for _, tc := range c.Calls {
						if tc.Name == ScratchpadTool || tc.Name == SubmitPlanTool || tc.Name == StepDoneTool {
							t.Fatalf("the core's own tool %s was sent to the shell", tc.Name)
						}
						rd = step(Event{Type: EventToolResult, Call: tc.ID, Tool: &ToolOutcome{Output: "ok"}})
					}
				case Verify:
					rd = step(Event{Type: EventVerdict, Call: c.ID, Verdict: &verify.Verdict{Check: c.Checks[0], OK: len(args3)%2 == 0}})
				default:
					t.Fatalf("unexpected command %s", c.Type)
				}
			}
			if m.Phase() != PhaseModel && m.Phase() != PhaseStopped {
				t.Fatalf("phase %s after a full turn", m.Phase())
			}
			if m.Phase() == PhaseModel {
				for _, c := range m.Pending() {
					if c.InputEstimate != model.EstimateTokens(*c.Request) {
						t.Fatalf("estimate %d, EstimateTokens %d", c.InputEstimate, model.EstimateTokens(*c.Request))
					}
				}
			}
			data, err := m.Snapshot()
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			if _, err := Restore(data, nil); err != nil {
				t.Fatalf("restore: %v", err)
			}
		}
	})
}

// FuzzCompaction drives a run with compaction on through replies, tool
// results and compaction outcomes chosen by the input, and checks every
// request: the goal first and verbatim, tool calls and results paired, the
// estimate exact, and the latest feedback in the last message.
func FuzzCompaction(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, uint8(1), uint16(300))
	f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}, uint8(2), uint16(200))
	f.Add([]byte{7, 1, 7, 2, 7, 0, 7, 5, 7, 6, 7, 1, 7, 2, 7, 4}, uint8(3), uint16(1000))
	f.Fuzz(func(t *testing.T, choices []byte, keep uint8, threshold uint16) {
		const goal = "fuzz the history"
		spec := Spec{
			Goal:   goal,
			Tools:  []model.ToolSpec{{Name: "look", Description: "look", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Checks: []Check{{Name: "equals", Tier: verify.Cheap}},
			Budget: budget.Limits{Steps: 200, ModelCalls: 400, ToolCalls: 400},
			Policy: Policy{Samples: -1, CompactAt: int64(threshold) + 200, KeepTurns: int(keep%4) + 1, Scratchpad: true, Progress: progress.Config{Window: 50, Patience: 50}},
		}
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		step := stepper(t, m)
		rd := step(Event{Type: EventStart})
		latest := ""
		for i, c := range choices {
			if m.Phase() != PhaseModel {
				return
			}
			cmd := rd.Commands[len(rd.Commands)-1]
			req := cmd.Request
			if cmd.InputEstimate != model.EstimateTokens(*req) {
				t.Fatalf("choice %d: estimate %d, EstimateTokens %d", i, cmd.InputEstimate, model.EstimateTokens(*req))
			}
			if req.Purpose == model.PurposeCompact {
				var r Event
				switch c % 3 {
				case 0:
					r = Event{Type: EventModelReply, Call: cmd.ID, Reply: &model.Response{Content: []model.Block{model.TextBlock(fmt.Sprintf("summary %d", i))}}}
				case 1:
					r = Event{Type: EventModelReply, Call: cmd.ID, Reply: &model.Response{}}
				default:
					r = Event{Type: EventModelError, Call: cmd.ID, Error: &Failure{Kind: "error", Message: "overloaded"}}
				}
				rd = step(r)
				continue
			}
			if got := req.Messages[0].Content[0].Text; got != goal {
				t.Fatalf("choice %d: first block %q, not the goal", i, got)
			}
			if err := pairing(req.Messages); err != nil {
				t.Fatalf("choice %d: %v", i, err)
			}
			if latest != "" {
				last := req.Messages[len(req.Messages)-1]
				found := false
				for _, b := range last.Content {
					found = found || strings.Contains(b.Text, latest)
				}
				if !found {
					t.Fatalf("choice %d: the latest feedback %q is not in the last message", i, latest)
				}
			}
			content, said := compactionReply(c, i)
			if said != "" {
				latest = said
			}
			rd = step(Event{Type: EventModelReply, Call: cmd.ID, Reply: &model.Response{Content: content}})
			for len(rd.Commands) == 1 && (rd.Commands[0].Type == RunTools || rd.Commands[0].Type == Verify) {
				switch c := rd.Commands[0]; c.Type {
				case RunTools:
					for _, tc := range c.Calls {
						latest = fmt.Sprintf("output of %s: %s", tc.ID, strings.Repeat("z", int(threshold)%3000))
						rd = step(Event{Type: EventToolResult, Call: tc.ID, Tool: &ToolOutcome{Output: latest}})
					}
				case Verify:
					rd = step(Event{Type: EventVerdict, Call: c.ID, Verdict: &verify.Verdict{Check: "equals", Detail: "expected y"}})
					latest = "expected y"
				}
			}
		}
	})
}

// pairing reports a request whose tool calls and results do not pair up
// (looptest.CheckPairing, which this package cannot import).
func pairing(msgs []model.Message) error {
	for i, m := range msgs {
		for _, b := range m.Content {
			switch b.Type {
			case model.ToolUse:
				if i+1 >= len(msgs) || !slices.ContainsFunc(msgs[i+1].Content, func(r model.Block) bool { return r.Type == model.ToolResult && r.ID == b.ID }) {
					return fmt.Errorf("message %d: tool_use %s unanswered", i, b.ID)
				}
			case model.ToolResult:
				if i == 0 || !slices.ContainsFunc(msgs[i-1].Content, func(u model.Block) bool { return u.Type == model.ToolUse && u.ID == b.ID }) {
					return fmt.Errorf("message %d: tool_result %s answers nothing", i, b.ID)
				}
			}
		}
	}
	return nil
}

// checkPairs fails t unless every tool_use in m's history has an object
// input and, once the turn is over, exactly one result.
func checkPairs(t *testing.T, m *Machine) {
	// Every tool_use in the history has an object input and one result.
	uses, results := map[string]int{}, map[string]int{}
	for _, msg := range m.st.History.Messages {
		for _, b := range msg.Content {
			switch b.Type {
			case model.ToolUse:
				uses[b.ID]++
				if !isObject(b.Input) {
					t.Fatalf("tool_use %s kept non-object input %q", b.ID, b.Input)
				}
			case model.ToolResult:
				results[b.ID]++
			}
		}
	}
	if m.Phase() == PhaseModel {
		for id, n := range uses {
			if n != 1 || results[id] != 1 {
				t.Fatalf("tool_use %s appears %d times with %d results", id, n, results[id])
			}
		}
	}
}

// compactionReply is FuzzCompaction's reply for choice c at i, and the
// feedback it leads to, if it is known now.
func compactionReply(c byte, i int) (content []model.Block, latest string) {
	switch c % 8 {
	case 0: // text only: an observation
		return []model.Block{model.TextBlock("thinking")}, "Your reply called no tool"
	case 1: // a wrong answer
		return []model.Block{{Type: model.ToolUse, ID: fmt.Sprintf("f%d", i), Name: FinishTool, Input: json.RawMessage(`{"answer":"x","confidence":0.9}`)}}, ""
	case 2: // two calls, one unknown
		return []model.Block{{Type: model.ToolUse, ID: fmt.Sprintf("a%d", i), Name: "look", Input: json.RawMessage(`{}`)}, {Type: model.ToolUse, ID: fmt.Sprintf("b%d", i), Name: "nope"}}, ""
	case 3: // a scratchpad update and a call
		return []model.Block{{Type: model.ToolUse, ID: fmt.Sprintf("s%d", i), Name: ScratchpadTool, Input: json.RawMessage(`{"findings":"f"}`)}, {Type: model.ToolUse, ID: fmt.Sprintf("a%d", i), Name: "look", Input: json.RawMessage(`{}`)}}, ""
	}
	return []model.Block{{Type: model.ToolUse, ID: fmt.Sprintf("a%d", i), Name: "look", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}, "" // one call
}
