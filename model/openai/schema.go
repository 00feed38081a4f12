package openai

import (
	"encoding/json"

	"github.com/ratchetloop/ratchet/model"
)

// Native structured output: a schema within strict mode's subset
// (model.StrictSchema) is sent strict; any other as it is, not strict, and
// a typed answer's schema check stays the gate.

// objectRoot reports whether schema's root is an object schema, which the
// json_schema response format requires.
func objectRoot(schema json.RawMessage) bool {
	var root struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &root) == nil && root.Type == "object"
}

// jsonSchemaFormat is the Responses API's text.format for an output
// schema; ok is false for a schema whose root is not an object, which is
// left to the prompt.
func jsonSchemaFormat(schema json.RawMessage) (format json.RawMessage, ok bool) {
	if !objectRoot(schema) {
		return nil, false
	}
	format, _ = json.Marshal(struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	}{"json_schema", "answer", schema, model.StrictSchema(schema)})
	return format, true
}

// responseFormat is Chat Completions' response_format for an output
// schema; ok as for jsonSchemaFormat.
func responseFormat(schema json.RawMessage) (json.RawMessage, bool) {
	if !objectRoot(schema) {
		return nil, false
	}
	raw, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": schema, "strict": model.StrictSchema(schema)}})
	return raw, true
}
