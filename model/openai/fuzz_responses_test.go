package openai

import (
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// FuzzAssembleResponses feeds arbitrary Responses API streams (server-sent,
// untrusted) through the SDK's decoder to the stream reader and the
// reading of the response: no panic, every tool call has an id and
// arguments, and what it returns can be sent back.
func FuzzAssembleResponses(f *testing.F) {
	for _, name := range []string{"test_openai_responses_stream", "test_openai_responses_streaming_usage"} {
		f.Add(modeltest.LoadCassette(f, "testdata/cassettes/responses/"+name+".yaml")[0].Body)
	}
	_, b := responsesWire{}.Reply(modeltest.Reply{Thinking: "hm", Signature: "enc", Text: "héllo", Calls: []modeltest.Call{{ID: "a", Name: "x", Args: `{"q": 1,`}}}, true)
	f.Add(b)
	_, b = responsesWire{}.ErrorEvent(503)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := decodeEvents(data)
		if err != nil {
			return
		}
		resp, err := assembleEvents(evs, false)
		if err != nil {
			return
		}
		for _, b := range resp.Content {
			if b.Type == model.ToolUse && len(b.Input) == 0 {
				t.Errorf("tool call without arguments: %+v", b)
			}
		}
		if _, err := json.Marshal(responsesInput([]model.Message{{Role: model.Assistant, Content: resp.Content}})); err != nil {
			t.Errorf("the reply cannot be sent back: %v", err)
		}
	})
}
