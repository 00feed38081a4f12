package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ratchetloop/ratchet/model"
)

// Loop plays a tool loop of steps turns through m against srv, as the loop
// core would: each reply's tool calls are answered in a user message,
// followed by a second user message of feedback (consecutive same-role
// messages, as the core sends them). It returns the request bodies the
// server received and checks what every provider must do in a long loop:
// one request per step, and the history encoded once per request (each
// call id appears exactly twice in each body: its call and its result), so
// each body grows by about one step's messages, not by the whole history.
func Loop(t *testing.T, m model.Model, srv *Server, steps int) [][]byte {
	t.Helper()
	msgs := []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("Add up the numbers 1 to 30, one add call per step.")}}}
	var ids []string
	for step := 1; step <= steps; step++ {
		req := request(msgs...)
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		msgs = append(msgs, model.Message{Role: model.Assistant, Content: resp.Content})
		var results []model.Block
		for _, b := range resp.Content {
			if b.Type == model.ToolUse {
				ids = append(ids, b.ID)
				results = append(results, model.Block{Type: model.ToolResult, ID: b.ID, Text: fmt.Sprint(step * (step + 1) / 2)})
			}
		}
		msgs = append(msgs,
			model.Message{Role: model.User, Content: results},
			model.Message{Role: model.User, Content: []model.Block{model.TextBlock(fmt.Sprintf("Step %d of %d done.", step, steps))}})
	}
	bodies := srv.Bodies()
	if len(bodies) != steps {
		t.Fatalf("%d requests for %d steps", len(bodies), steps)
	}
	for i, body := range bodies {
		for _, id := range ids[:i] { // the calls made before request i
			if n := bytes.Count(body, []byte(`"`+id+`"`)); n != 2 {
				t.Errorf("request %d: call id %s appears %d times, want 2 (its call and its result)", i+1, id, n)
			}
		}
	}
	var incs []int
	for i := 2; i < len(bodies); i++ {
		incs = append(incs, len(bodies[i])-len(bodies[i-1]))
	}
	if len(incs) > 0 {
		lo, hi := slices.Min(incs), slices.Max(incs)
		if hi > lo+lo/5 {
			t.Errorf("request growth per step ranges %d..%d bytes: the history is not encoded once per request", lo, hi)
		}
		t.Logf("%d steps: first request %d bytes, last %d, growth %d..%d bytes per step", steps, len(bodies[0]), len(bodies[len(bodies)-1]), lo, hi)
	}
	return bodies
}

// LoopTurns returns steps turns, each one add call with call id
// call_<step>, as Loop expects a server to play.
func LoopTurns(steps int) []Turn {
	turns := make([]Turn, steps)
	for i := range turns {
		args, _ := json.Marshal(map[string]int{"a": i * (i + 1) / 2, "b": i + 1})
		turns[i] = Turn{Reply: Reply{Text: "Adding the next number.", Calls: []Call{{ID: fmt.Sprintf("call_%d", i+1), Name: "add", Args: string(args)}}, Usage: model.Usage{InputTokens: 100, OutputTokens: 20}}}
	}
	return turns
}
