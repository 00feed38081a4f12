package loop_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/loop/looptest"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// FuzzSteer: whatever a person says, whenever, and whatever budget a fork
// brings, the machine takes it or refuses it with ErrUnexpected or
// ErrStopped, never panics, and every request it builds pairs its tool
// calls and results as providers require. ops picks, byte by byte, the
// next event: a message, a fork, or the answer to what is in flight.
func FuzzSteer(f *testing.F) {
	f.Add("stop and think", []byte{0, 2, 1, 2, 2, 2}, int64(5))
	f.Add("", []byte{1, 0, 2, 1, 2}, int64(-7))
	f.Add("\x00\xff", []byte{2, 0, 0, 1, 1, 2, 2, 0, 2}, int64(1))
	f.Fuzz(func(t *testing.T, text string, ops []byte, steps int64) {
		m, err := loop.New(loop.Spec{Goal: "fuzz", Checks: []loop.Check{{Name: "equals", Tier: verify.Cheap}},
			Tools: []model.ToolSpec{{Name: "add", Description: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(0, 0)
		pending := []loop.Event{{Type: loop.EventStart, At: at}}
		for i, op := range ops {
			if i > 64 {
				break
			}
			var ev loop.Event
			switch op % 3 {
			case 0:
				ev = loop.Event{Type: loop.EventUserMessage, Text: text}
			case 1:
				l := budget.Limits{Steps: int(steps)}
				ev = loop.Event{Type: loop.EventFork, Text: text, Limits: &l}
			default:
				if len(pending) == 0 {
					continue
				}
				ev, pending = pending[0], pending[1:]
			}
			ev.At = at.Add(time.Duration(i) * time.Second)
			if err := m.Step(ev); err != nil {
				if !errors.Is(err, loop.ErrUnexpected) && !errors.Is(err, loop.ErrStopped) {
					t.Fatalf("Step(%s): %v", ev.Type, err)
				}
				continue
			}
			for _, c := range m.Ready().Commands {
				pending = append(pending, answer(c)...)
				if c.Request != nil {
					if err := looptest.CheckPairing(c.Request.Messages); err != nil {
						t.Fatalf("request after %s: %v", ev.Type, err)
					}
				}
			}
			m.Advance()
		}
	})
}

// answer is one answer to each part of c: a tool call to add, a failing
// verdict, a finish-free reply.
func answer(c loop.Command) []loop.Event {
	switch c.Type {
	case loop.CallModel:
		return []loop.Event{{Type: loop.EventModelReply, Call: c.ID, Reply: &model.Response{Content: []model.Block{
			{Type: model.ToolUse, ID: "u" + c.ID, Name: "add", Input: json.RawMessage(`{}`)}}}}}
	case loop.RunTools:
		var out []loop.Event
		for _, call := range c.Calls {
			out = append(out, loop.Event{Type: loop.EventToolResult, Call: call.ID, Tool: &loop.ToolOutcome{Output: "1"}})
		}
		return out
	case loop.Verify:
		var out []loop.Event
		for _, name := range c.Checks {
			out = append(out, loop.Event{Type: loop.EventVerdict, Call: c.ID, Verdict: &verify.Verdict{Check: name}})
		}
		return out
	case loop.AskHuman:
		return []loop.Event{{Type: loop.EventHumanUnavailable, Call: c.ID}}
	}
	return nil
}
