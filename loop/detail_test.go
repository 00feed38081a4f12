package loop_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/verify"
)

// The log keeps every event and command, so their size is the log's: the
// rarer fields live behind one pointer. A new field belongs there unless
// model replies or tool results need it.
func TestLogRecordsStaySmall(t *testing.T) {
	if n := unsafe.Sizeof(loop.Event{}); n > 80 {
		t.Errorf("loop.Event is %d bytes, want at most 80: put rare fields in EventDetail", n)
	}
	if n := unsafe.Sizeof(loop.Command{}); n > 112 {
		t.Errorf("loop.Command is %d bytes, want at most 112: put rare fields in CommandDetail", n)
	}
}

// The detail structs are embedded, so the JSON form stays flat: decoding
// sets the detail only when one of its fields is present, and encoding
// gives the same object back.
func TestDetailJSONIsFlat(t *testing.T) {
	events := []struct {
		json       string
		wantDetail *loop.EventDetail
	}{
		{`{"type":"tool_result","at":"2026-11-30T00:00:00Z","call":"c1","tool":{"output":"3"}}`, nil},
		{`{"type":"cancel","at":"2026-11-30T00:00:00Z"}`, nil},
		{`{"type":"cancel","at":"2026-11-30T00:00:00Z","text":"stop"}`, &loop.EventDetail{Text: "stop"}},
		{`{"type":"verdict","at":"2026-11-30T00:00:00Z","call":"v1","verdict":{"check":"equals","ok":true,"confidence":1,"provenance":"validation"}}`,
			&loop.EventDetail{Verdict: &verify.Verdict{Check: "equals", OK: true, Confidence: 1, Provenance: verify.Validation}}},
	}
	for _, tc := range events {
		var ev loop.Event
		if err := json.Unmarshal([]byte(tc.json), &ev); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.wantDetail, ev.EventDetail); diff != "" {
			t.Errorf("%s: detail (-want +got):\n%s", tc.json, diff)
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
		if (c.CommandDetail != nil) != (c.Type != loop.RunTools) {
			t.Errorf("%s: detail set = %v", s, c.CommandDetail != nil)
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
