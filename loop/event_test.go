package loop_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/verify"
)

// The JSON form of events and commands is the log's: every optional field
// is omitted when unset, and decoding then encoding gives the same object.
func TestRecordJSONForm(t *testing.T) {
	events := []struct {
		json string
		want loop.Event
	}{
		{`{"type":"tool_result","at":"2026-11-30T00:00:00Z","call":"c1","tool":{"output":"3"}}`,
			loop.Event{Type: loop.EventToolResult, Call: "c1", Tool: &loop.ToolOutcome{Output: "3"}}},
		{`{"type":"cancel","at":"2026-11-30T00:00:00Z"}`, loop.Event{Type: loop.EventCancel}},
		{`{"type":"cancel","at":"2026-11-30T00:00:00Z","text":"stop"}`, loop.Event{Type: loop.EventCancel, Text: "stop"}},
		{`{"type":"verdict","at":"2026-11-30T00:00:00Z","call":"v1","verdict":{"check":"equals","ok":true,"confidence":1,"provenance":"validation"}}`,
			loop.Event{Type: loop.EventVerdict, Call: "v1", Verdict: &verify.Verdict{Check: "equals", OK: true, Confidence: 1, Provenance: verify.Validation}}},
	}
	for _, tc := range events {
		var ev loop.Event
		if err := json.Unmarshal([]byte(tc.json), &ev); err != nil {
			t.Fatal(err)
		}
		tc.want.At = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
		if diff := cmp.Diff(tc.want, ev); diff != "" {
			t.Errorf("%s: decoded (-want +got):\n%s", tc.json, diff)
		}
		if out, _ := json.Marshal(ev); string(out) != tc.json {
			t.Errorf("round trip of %s gave %s", tc.json, out)
		}
	}
	commands := []string{
		`{"type":"run_tools","id":"t1","calls":[{"id":"c1","name":"add","args":{"a":1}}]}`,
		`{"type":"verify","id":"v1","candidate":{"answer":"5","confidence":0.9,"attempt":1},"checks":["equals"]}`,
		`{"type":"ask_human","id":"h1","question":"Which file?"}`,
	}
	for _, s := range commands {
		var c loop.Command
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			t.Fatal(err)
		}
		if out, _ := json.Marshal(c); string(out) != s {
			t.Errorf("round trip of %s gave %s", s, out)
		}
	}
}

// An event whose type needs a payload but has no detail at all is refused,
// not dereferenced; one whose detail is optional reads as empty.
func TestStepWithoutDetail(t *testing.T) {
	t0 := time.Unix(0, 0)
	start := func(t *testing.T) (*loop.Machine, string) {
		m, err := loop.New(loop.Spec{Goal: "g", Checks: []loop.Check{{Name: "c", Tier: verify.Cheap}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Step(loop.Event{Type: loop.EventStart, At: t0}); err != nil {
			t.Fatal(err)
		}
		id := m.Ready().Commands[0].ID
		m.Advance()
		return m, id
	}
	t.Run("model error", func(t *testing.T) {
		m, id := start(t)
		err := m.Step(loop.Event{Type: loop.EventModelError, At: t0, Call: id})
		if !errors.Is(err, loop.ErrUnexpected) {
			t.Errorf("Step = %v, want ErrUnexpected", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		m, _ := start(t)
		if err := m.Step(loop.Event{Type: loop.EventCancel, At: t0}); err != nil {
			t.Fatal(err)
		}
		res := m.Ready().Commands[0].Result
		if res.Status != loop.Cancelled || res.Reason != "the run was cancelled" {
			t.Errorf("result %s %q, want cancelled with the default reason", res.Status, res.Reason)
		}
	})
}
