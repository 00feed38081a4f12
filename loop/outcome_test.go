package loop_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// TestStepCopiesToolOutcome: a driver may reuse one ToolOutcome variable
// for a turn's results (a common Go pattern); the core must copy it.
func TestStepCopiesToolOutcome(t *testing.T) {
	spec := loop.Spec{
		Goal:   "g",
		Tools:  []model.ToolSpec{{Name: "t", Description: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Checks: []loop.Check{{Name: "c", Tier: verify.Cheap}},
	}
	m, err := loop.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	step := driver(t, m)
	rd := step(loop.Event{Type: loop.EventStart, At: t0})
	reply := model.Response{Content: []model.Block{
		{Type: model.ToolUse, ID: "a", Name: "t", Input: json.RawMessage(`{}`)},
		{Type: model.ToolUse, ID: "b", Name: "t", Input: json.RawMessage(`{"x":1}`)},
	}}
	rd = step(loop.Event{Type: loop.EventModelReply, At: t0, Call: rd.Commands[0].ID, Reply: &reply})
	var out loop.ToolOutcome
	for _, c := range rd.Commands[0].Calls {
		out = loop.ToolOutcome{Output: "result of " + c.ID, Outcome: "ok"}
		rd = step(loop.Event{Type: loop.EventToolResult, At: t0, Call: c.ID, Tool: &out})
	}
	msgs := rd.Commands[0].Request.Messages
	last := msgs[len(msgs)-1]
	for _, b := range last.Content {
		if b.Type == model.ToolResult && b.Text != "result of "+b.ID {
			t.Errorf("tool result for %s = %q, want %q", b.ID, b.Text, "result of "+b.ID)
		}
	}
}

// TestRequestLargerThanBudget: a first request larger than the token budget
// ends the run at once, with a reason that says the request does not fit,
// not that the budget was spent.
func TestRequestLargerThanBudget(t *testing.T) {
	spec := loop.Spec{
		Goal:   strings.Repeat("a long goal ", 4000), // about 12,000 tokens
		Checks: []loop.Check{{Name: "c", Tier: verify.Cheap}},
		Budget: budget.Limits{TotalTokens: 5000},
	}
	m, err := loop.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	driver(t, m)(loop.Event{Type: loop.EventStart, At: time.Unix(0, 0)})
	res, ok := m.Result()
	if !ok || res.Status != loop.Exhausted(budget.TotalTokens) {
		t.Fatalf("result %v %+v", ok, res)
	}
	if !strings.Contains(res.Reason, "the next request (about ") || !strings.Contains(res.Reason, "does not fit in the 5000 left of the total_tokens budget") {
		t.Errorf("reason %q", res.Reason)
	}
}
