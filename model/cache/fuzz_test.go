package cache_test

import (
	"bytes"
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
	f.Add([]byte(`{"content":[{"type":"tool_use","id":"t","name":"f","invalid_input":"{\"a\": 1,"}]}`))
	f.Add([]byte(`{"content":[{"type":"tool_use","input":{},"invalid_input":"x"}]}`))
	f.Add([]byte(`{"content":[{"type":"tool_use","input":{ "a" : 1 }}]}`))
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
		// What was decoded is stored again unchanged.
		enc, err := cache.EncodeReply(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := cache.DecodeReply(enc)
		if err != nil {
			t.Fatalf("%s does not decode again: %v", enc, err)
		}
		// Valid tool arguments are kept compacted (and HTML-escaped) as the
		// event log keeps them; everything else comes back as it was, and
		// storing again changes nothing.
		if len(again.Content) != len(r.Content) {
			t.Fatalf("%d blocks became %d", len(r.Content), len(again.Content))
		}
		for i, b := range r.Content {
			a := again.Content[i]
			if a.Type != b.Type || a.Text != b.Text || a.ID != b.ID || a.Name != b.Name || json.Valid(b.Input) != json.Valid(a.Input) {
				t.Fatalf("block %d changed: %+v → %+v", i, b, a)
			}
			if !json.Valid(b.Input) && !bytes.Equal(a.Input, b.Input) {
				t.Fatalf("block %d's malformed input changed: %q → %q", i, b.Input, a.Input)
			}
		}
		if enc2, err := cache.EncodeReply(again); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("stored again: %s → %s (%v)", enc, enc2, err)
		}
	})
}
