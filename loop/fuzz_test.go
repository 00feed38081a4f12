package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model"
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
		answer, conf, err := parseFinish(raw)
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
		// Every tool_use in the history has an object input and one result.
		uses, results := map[string]int{}, map[string]int{}
		for _, msg := range m.st.History {
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
