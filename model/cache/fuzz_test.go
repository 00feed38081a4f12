package cache_test

import (
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model/cache"
)

// A cache file is outside ratchet's control: whatever a row holds,
// DecodeReply returns an error or a cached, free reply of known blocks,
// and never panics.
func FuzzDecodeReply(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"finish","input":{"answer":"x"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2,"cost_micros":5,"cost_known":true}}`))
	f.Add([]byte(`{"content":[{"type":"tool_result","text":"x"}]}`))
	f.Add([]byte(`{"usage":{"input_tokens":-1}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"content":null}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := cache.DecodeReply(data)
		if err != nil {
			return
		}
		if !r.Cached || r.Usage.Cost != 0 || !r.Usage.CostKnown {
			t.Fatalf("decoded %+v", r)
		}
		if r.Usage.InputTokens < 0 || r.Usage.OutputTokens < 0 {
			t.Fatalf("negative tokens %+v", r.Usage)
		}
		for _, b := range r.Content {
			if b.Type != "text" && b.Type != "tool_use" {
				t.Fatalf("block of type %q", b.Type)
			}
		}
		// What was decoded encodes again (the loop logs it).
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
