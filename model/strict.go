package model

import (
	"encoding/json"
	"slices"
)

// StrictSchema reports whether schema is within the subset of JSON Schema
// that the providers' strict modes accept (OpenAI's strict functions and
// json_schema format, Anthropic's strict tools and output format): each
// object schema in it, at any depth, forbids other properties
// (additionalProperties false) and requires all its own. A provider sends
// a schema outside it as it is, not strict.
func StrictSchema(schema json.RawMessage) bool {
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
