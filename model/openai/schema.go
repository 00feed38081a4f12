package openai

import (
	"encoding/json"
	"slices"
)

// Native structured output: OpenAI's strict mode (strict functions, and a
// json_schema response format) constrains the model's output to a schema,
// but accepts only a subset of JSON Schema: every object lists all its
// properties as required and forbids others. A schema outside it is sent
// as it is, not strict, and a typed answer's schema check stays the gate.

// strictable reports whether schema is within strict mode's subset: each
// object schema in it, at any depth, has additionalProperties false and
// every property required.
func strictable(schema json.RawMessage) bool {
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return false
	}
	return strictValue(v)
}

func strictValue(v any) bool {
	switch x := v.(type) {
	case []any:
		return !slices.ContainsFunc(x, func(e any) bool { return !strictValue(e) })
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok || x["type"] == "object" {
			if x["additionalProperties"] != false {
				return false
			}
			req, _ := x["required"].([]any)
			for k := range props {
				if !slices.Contains(req, any(k)) {
					return false
				}
			}
		}
		for _, k := range []string{"properties", "$defs", "definitions"} {
			if m, ok := x[k].(map[string]any); ok {
				for _, s := range m {
					if !strictValue(s) {
						return false
					}
				}
			}
		}
		for _, k := range []string{"items", "anyOf", "allOf", "oneOf"} {
			if s, ok := x[k]; ok && !strictValue(s) {
				return false
			}
		}
	}
	return true
}

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
	}{"json_schema", "answer", schema, strictable(schema)})
	return format, true
}

// responseFormat is Chat Completions' response_format for an output
// schema; ok as for jsonSchemaFormat.
func responseFormat(schema json.RawMessage) (json.RawMessage, bool) {
	if !objectRoot(schema) {
		return nil, false
	}
	raw, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": schema, "strict": strictable(schema)}})
	return raw, true
}
