package loop

import (
	"encoding/json"
	"strings"
	"testing"
)

// An approval asks about one call, and reads a person's reply: approve
// words or Approved approve; anything else refuses, with the reason given.
func TestApproval(t *testing.T) {
	c := pendingCall{ID: "c1", Name: "rm", Args: json.RawMessage(`{"path":"/"}`)}
	a := newApproval(&c, &Permission{Tool: "rm", Action: Ask})
	if a.Call != "c1" || !strings.Contains(a.Question, `rm with {"path":"/"}? (rule: ask rm)`) {
		t.Fatalf("approval %+v", a)
	}
	cmd := a.command(3, c)
	if cmd.Type != AskHuman || cmd.ID != "h3.c1" || cmd.Approval == nil || cmd.Approval.Name != "rm" || cmd.Question != a.Question {
		t.Errorf("command %+v", cmd)
	}
	yes, no := true, false
	for _, tc := range []struct {
		ev      Event
		ok      bool
		refused string
	}{
		{Event{Type: EventHumanReply, Text: "Approve"}, true, ""},
		{Event{Type: EventHumanReply, Text: "yes, go ahead"}, true, ""},
		{Event{Type: EventHumanReply, Text: "yesterday"}, false, "a person refused this call: yesterday"},
		{Event{Type: EventHumanReply, Text: "deny"}, false, "a person refused this call"},
		{Event{Type: EventHumanReply, Text: "no: too risky"}, false, "a person refused this call: no: too risky"},
		{Event{Type: EventHumanReply, Approved: &yes, Text: "deny"}, true, ""},
		{Event{Type: EventHumanReply, Approved: &no, Text: "not now"}, false, "a person refused this call: not now"},
		{Event{Type: EventHumanUnavailable}, false, "nobody could approve it now"},
	} {
		ok, refused := a.answer(&tc.ev)
		if ok != tc.ok || refused != tc.refused {
			t.Errorf("%+v: answer = %v %q, want %v %q", tc.ev, ok, refused, tc.ok, tc.refused)
		}
	}
}
