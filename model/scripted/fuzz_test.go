package scripted_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
)

// FuzzParse checks that Parse never panics, that it reports problems with
// positions in the named file, and that every script it accepts can be played
// to the end.
func FuzzParse(f *testing.F) {
	demo, err := os.ReadFile(demoPath)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(demo),
		"",
		"turns: []",
		"name: x\nturns:\n  - {}\n  - error: boom\n",
		"turns:\n  - tools: [{name: t, args: {a: [1, {b: ~}], c: 2024-01-01}}, {name: u, raw_args: '{'}]\n",
		"turns:\n  - finish: {answer: a, confidence: 7}\n    expect: [x]\n    delay: 1h\n",
		"turns: [&t {text: a}, *t, {tools: [{name: t, args: &a {x: *a}}]}]",
		"turns:\n  - {<<: {text: a}}\n---\nturns: []\n",
		"turns:\n  - usage: {input_tokens: 1, output_tokens: 99999999999999999999}\n",
		"- a\n- b\n",
		"{turns: [{text: [",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scripted.Parse(data, "f.yaml")
		if err != nil {
			var se *scripted.ScriptError
			if !errors.As(err, &se) || len(se.Problems) == 0 {
				t.Fatalf("Parse error %v (%T) is not a *ScriptError with problems", err, err)
			}
			for _, p := range se.Problems {
				if !strings.HasPrefix(p.String(), "f.yaml") || p.Line < 0 || p.Msg == "" {
					t.Fatalf("badly formed problem %+v", p)
				}
			}
			return
		}
		// Play every turn, without waiting for delays.
		turns := make([]scripted.Turn, len(s.Turns))
		for i, turn := range s.Turns {
			turn.Delay = 0
			turns[i] = turn
		}
		s.Turns = turns
		m, err := scripted.New(s, scripted.Config{Quiet: true})
		if err != nil {
			t.Fatalf("Parse accepted a script that New rejects: %v", err)
		}
		req := model.Request{Messages: []model.Message{userText("hello")}}
		for i := range s.Turns {
			resp, err := m.Generate(context.Background(), req)
			var te *scripted.TurnError
			switch {
			case err == nil:
				if resp.StopReason != "tool_use" && resp.StopReason != "end_turn" && resp.StopReason != "max_tokens" {
					t.Fatalf("turn %d: StopReason %q", i+1, resp.StopReason)
				}
			case errors.Is(err, scripted.ErrExpect), errors.As(err, &te):
			default:
				t.Fatalf("turn %d: unexpected error %v", i+1, err)
			}
		}
		if _, err := m.Generate(context.Background(), req); !errors.Is(err, scripted.ErrExhausted) {
			t.Fatalf("after %d turns: err = %v, want ErrExhausted", len(s.Turns), err)
		}
	})
}
