package loop

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/verify"
)

// A typed answer asks the provider for native structured output: in agent
// mode the finish tool is strict (and only it), in generate mode the
// request carries the schema; without a schema, neither.
func TestTypedAnswerRequest(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	first := func(mode Mode, schema json.RawMessage) Command {
		t.Helper()
		spec := Spec{Goal: "g", Mode: mode, OutputSchema: schema, Checks: []Check{{Name: OutputCheck, Tier: verify.Cheap}},
			Budget: budget.Limits{Steps: 5, ModelCalls: 10, TotalTokens: 100000, Time: time.Minute}}
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Step(Event{Type: EventStart, At: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Pending() {
			if c.Type == CallModel {
				return c
			}
		}
		t.Fatal("no model call")
		return Command{}
	}
	req := first(ModeAgent, schema).Request
	for _, tl := range req.Tools {
		if tl.Strict != (tl.Name == FinishTool) {
			t.Errorf("tool %s strict = %v; want only the typed finish strict", tl.Name, tl.Strict)
		}
	}
	if len(req.OutputSchema) != 0 {
		t.Errorf("agent mode request carries an output schema: the finish tool holds it")
	}
	if req := first(ModeGenerate, schema).Request; string(req.OutputSchema) != string(schema) {
		t.Errorf("generate request output schema = %s, want %s", req.OutputSchema, schema)
	}
	for _, tl := range first(ModeAgent, nil).Request.Tools {
		if tl.Strict {
			t.Errorf("untyped tool %s is strict", tl.Name)
		}
	}
}
