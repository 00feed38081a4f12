package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// TestLoop30 replays a 30-step tool loop through the local server and reads
// every request body: the stable prefix (last tool, system) and the latest
// message carry cache breakpoints on every request, no more than the API's
// four, and modeltest.Loop checks the history is encoded once per request.
func TestLoop30(t *testing.T) {
	const steps = 30
	srv := modeltest.Serve(t, wire{}, modeltest.LoopTurns(steps))
	m := newTest(t, srv, modeltest.Options{APIKey: "k"})
	bodies := modeltest.Loop(t, m, srv, steps)
	for i, body := range bodies {
		var r wireRequest
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		marked := func(b wireBlock) bool { return b.CacheControl != nil && b.CacheControl.Type == "ephemeral" }
		last := r.Messages[len(r.Messages)-1].Content
		if !marked(r.Tools[len(r.Tools)-1]) || !marked(r.System[0]) || !marked(last[len(last)-1]) {
			t.Errorf("request %d: the stable prefix or the latest message is not marked for caching", i+1)
		}
		if n := bytes.Count(body, []byte(`"cache_control"`)); n != 3 {
			t.Errorf("request %d: %d cache breakpoints, want 3 (the API allows 4)", i+1, n)
		}
		for j := 1; j < len(r.Messages); j++ {
			if r.Messages[j].Role == r.Messages[j-1].Role {
				t.Fatalf("request %d: roles do not alternate at message %d", i+1, j)
			}
		}
	}
}

// BenchmarkRequest30 measures building and encoding the request of a loop's
// 30th step (61 messages): the work a step repeats.
func BenchmarkRequest30(b *testing.B) {
	m := &Model{cfg: Config{Model: testModel, MaxTokens: DefaultMaxTokens}}
	req := history30()
	b.ReportAllocs()
	for b.Loop() {
		p, _ := m.params(req)
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

func history30() model.Request {
	msgs := []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("Add up the numbers 1 to 30.")}}}
	for i := range 30 {
		id := "call_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		msgs = append(msgs,
			model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock("Adding the next number."), {Type: model.ToolUse, ID: id, Name: "add", Input: json.RawMessage(`{"a":10,"b":5}`)}}},
			model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: id, Text: "15"}}})
	}
	return model.Request{System: "You are a careful agent.", Messages: msgs, Tools: []model.ToolSpec{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
}
