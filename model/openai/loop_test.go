package openai

import (
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// TestLoop30 replays a 30-step tool loop through the local server;
// modeltest.Loop checks one request per step and the history encoded once
// per request. OpenAI caches a repeated prefix on its own: nothing to mark.
func TestLoop30(t *testing.T) {
	const steps = 30
	srv := modeltest.Serve(t, wire{}, modeltest.LoopTurns(steps))
	modeltest.Loop(t, newTest(t, srv, modeltest.Options{APIKey: "k"}, false), srv, steps)
}

// TestLoop30Responses: the same loop through the Responses API, each call
// id in its function_call and its function_call_output.
func TestLoop30Responses(t *testing.T) {
	const steps = 30
	srv := modeltest.Serve(t, responsesWire{}, modeltest.LoopTurns(steps))
	m, err := New(Config{Model: testModel, APIKey: "k", BaseURL: srv.URL + "/v1", Responses: true})
	if err != nil {
		t.Fatal(err)
	}
	modeltest.Loop(t, m, srv, steps)
}

// BenchmarkRequest30 measures building and encoding the request of a loop's
// 30th step (61 messages).
func BenchmarkRequest30(b *testing.B) {
	m := &Model{cfg: Config{Model: testModel}}
	msgs := []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("Add up the numbers 1 to 30.")}}}
	for i := range 30 {
		id := "call_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		msgs = append(msgs,
			model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock("Adding the next number."), {Type: model.ToolUse, ID: id, Name: "add", Input: json.RawMessage(`{"a":10,"b":5}`)}}},
			model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: id, Text: "15"}}})
	}
	req := model.Request{System: "You are a careful agent.", Messages: msgs, Tools: []model.ToolSpec{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	b.ReportAllocs()
	for b.Loop() {
		p, err := m.params(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}
