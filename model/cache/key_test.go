package cache_test

import (
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/cache"
)

func withInput(in string) model.Request {
	r := req("q")
	r.Messages = append(r.Messages, model.Message{Role: model.Assistant, Content: []model.Block{{Type: model.ToolUse, ID: "t1", Name: "f", Input: json.RawMessage(in)}}})
	return r
}

// What the provider is sent is the key, in canonical form; ratchet's own
// notes are not.
func TestKey(t *testing.T) {
	base := cache.Key("m", withInput(`{"a":1,"b":[1,2]}`))
	same := map[string]model.Request{
		"object keys in another order and spacing": withInput(` { "b" : [1, 2], "a" : 1 } `),
		"another purpose": func() model.Request {
			r := withInput(`{"a":1,"b":[1,2]}`)
			r.Purpose = model.PurposeSample
			return r
		}(),
	}
	for name, r := range same {
		if got := cache.Key("m", r); got != base {
			t.Errorf("%s: another key", name)
		}
	}
	schema := func(s string) model.Request {
		r := req("q")
		r.Tools = []model.ToolSpec{{Name: "f", Description: "d", InputSchema: json.RawMessage(s)}}
		return r
	}
	if cache.Key("m", schema(`{"type":"object","required":["x"]}`)) != cache.Key("m", schema(`{"required":["x"],"type":"object"}`)) {
		t.Error("a tool schema's key order changed the key")
	}
	differ := map[string]string{
		"another model":       cache.Key("n", withInput(`{"a":1,"b":[1,2]}`)),
		"another value":       cache.Key("m", withInput(`{"a":2,"b":[1,2]}`)),
		"another array order": cache.Key("m", withInput(`{"a":1,"b":[2,1]}`)),
		"a number as written": cache.Key("m", withInput(`{"a":1.0,"b":[1,2]}`)),
		"malformed input":     cache.Key("m", withInput(`{"a":1,"b":[1,2]`)),
		"another system":      func() string { r := withInput(`{"a":1,"b":[1,2]}`); r.System = "x"; return cache.Key("m", r) }(),
		"another output cap":  func() string { r := withInput(`{"a":1,"b":[1,2]}`); r.MaxOutputTokens = 5; return cache.Key("m", r) }(),
		"a reasoning setting": func() string {
			r := withInput(`{"a":1,"b":[1,2]}`)
			r.Reasoning = &model.Reasoning{Effort: model.EffortLow}
			return cache.Key("m", r)
		}(),
		"a thinking signature": cache.Key("m", func() model.Request {
			r := withInput(`{"a":1,"b":[1,2]}`)
			r.Messages[1].Content[0].Signature = "sig"
			return r
		}()),
		"another tool call id": cache.Key("m", func() model.Request {
			r := withInput(`{"a":1,"b":[1,2]}`)
			r.Messages[1].Content[0].ID = "t2"
			return r
		}()),
	}
	for name, k := range differ {
		if k == base {
			t.Errorf("%s: the same key", name)
		}
	}
	if cache.Key("m", withInput(`{"a":`)) == cache.Key("m", withInput(`{"b":`)) {
		t.Error("two malformed inputs share a key")
	}
	// Malformed input is not confused with a valid input that spells it.
	if cache.Key("m", withInput(`x`)) == cache.Key("m", withInput(`"x"`)) {
		t.Error("malformed x and the string \"x\" share a key")
	}
}
