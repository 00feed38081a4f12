package check

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/verify"
)

const personSchema = `{
  "type": "object",
  "required": ["name", "tags"],
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 2, "uniqueItems": true},
    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
    "x": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["k"]}]},
    "kind": {"enum": ["a", "b"]},
    "code": {"type": "string", "pattern": "^[a-z]+$"},
    "odd key": {"type": "boolean"},
    "meta": {"type": "object", "additionalProperties": {"type": "string"}},
    "list": {"type": "array", "prefixItems": [{"type": "string"}], "items": false}
  },
  "$defs": {"tag": {"type": "object", "properties": {"v": {"type": "string", "minLength": 2}}}},
  "additionalProperties": false
}`

func TestJSONSchema(t *testing.T) {
	v := mustNew(t)(JSONSchema(json.RawMessage(personSchema)))
	if v.Name() != "json_schema" || v.Provenance() != verify.Validation {
		t.Errorf("name %q, provenance %q", v.Name(), v.Provenance())
	}
	const prefix = "the answer does not match the JSON schema at "
	runVerdicts(t, v, []verdictCase{
		{name: "valid", answer: `{"name": "Ada", "tags": [{"v": "xy"}], "age": 36}`, ok: true, conf: 1, detail: "the answer matches the JSON schema"},
		{name: "wrong type", answer: `{"name": 1, "tags": []}`, conf: 1, detail: prefix + "$.name: is an integer, but the schema wants a string", where: "$.name"},
		{name: "missing property", answer: `{"name": "Ada"}`, conf: 1, detail: prefix + `$: is missing the required property "tags"`, where: "$"},
		{name: "missing properties", answer: `{}`, conf: 1, detail: prefix + `$: is missing the required properties "name", "tags"`, where: "$"},
		{name: "extra property", answer: `{"name": "Ada", "tags": [], "nick": "A"}`, conf: 1, detail: prefix + `$: has properties the schema does not allow: "nick"`, where: "$"},
		{name: "through items and a ref", answer: `{"name": "Ada", "tags": [{"v": "xy"}, {"v": "x"}]}`, conf: 1, detail: prefix + "$.tags[1].v: has 1 character, fewer than the minimum 2", where: "$.tags[1].v"},
		{name: "prefix item", answer: `{"name": "Ada", "tags": [], "pair": ["a", "b"]}`, conf: 1, detail: prefix + "$.pair[1]: is a string, but the schema wants a number", where: "$.pair[1]"},
		{name: "below minimum", answer: `{"name": "Ada", "tags": [], "age": -1}`, conf: 1, detail: prefix + "$.age: is -1, below the minimum 0", where: "$.age"},
		{name: "above maximum", answer: `{"name": "Ada", "tags": [], "age": 200}`, conf: 1, detail: prefix + "$.age: is 200, above the maximum 150", where: "$.age"},
		{name: "not an integer", answer: `{"name": "Ada", "tags": [], "age": 1.5}`, conf: 1, detail: prefix + "$.age: is a number, but the schema wants an integer", where: "$.age"},
		{name: "too many items", answer: `{"name": "Ada", "tags": [{}, {"v": "ab"}, {"v": "cd"}]}`, conf: 1, detail: prefix + "$.tags: has 3 items, more than the maximum 2", where: "$.tags"},
		{name: "duplicate items", answer: `{"name": "Ada", "tags": [{"v": "ab"}, {"v": "ab"}]}`, conf: 1, detail: prefix + "$.tags: has equal items [0] and [1]; the items must be unique", where: "$.tags"},
		{name: "enum", answer: `{"name": "Ada", "tags": [], "kind": "c"}`, conf: 1, detail: prefix + `$.kind: is not one of the allowed values ["a","b"]`, where: "$.kind"},
		{name: "pattern", answer: `{"name": "Ada", "tags": [], "code": "A1"}`, conf: 1, detail: prefix + `$.code: "A1" does not match the pattern "^[a-z]+$"`, where: "$.code"},
		{name: "anyOf", answer: `{"name": "Ada", "tags": [], "x": {}}`, conf: 1,
			detail: prefix + `$.x: matches none of the alternatives (anyOf): (1) is an object, but the schema wants a string; (2) is missing the required property "k"`, where: "$.x"},
		{name: "odd member name", answer: `{"name": "Ada", "tags": [], "odd key": "yes"}`, conf: 1, detail: prefix + `$["odd key"]: is a string, but the schema wants a boolean`, where: `$["odd key"]`},
		{name: "additional properties", answer: `{"name": "Ada", "tags": [], "meta": {"a": 1}}`, conf: 1, detail: prefix + "$.meta.*: is an integer, but the schema wants a string", where: "$.meta.*"},
		{name: "false items", answer: `{"name": "Ada", "tags": [], "list": ["a", "b"]}`, conf: 1, detail: prefix + "$.list[*]: is not allowed here (the schema is false)", where: "$.list[*]"},
		{name: "top level", answer: `[1]`, conf: 1, detail: prefix + "$: is an array, but the schema wants an object", where: "$"},
		{name: "number out of range", answer: "{\"name\": \"Ada\",\n \"age\": 1e999}", conf: 1, detail: "the answer's number 1e999 at line 2, column 9 is out of range (beyond a 64-bit float)", where: "line 2, column 9"},
		{name: "not JSON", answer: "{\"name\":", conf: 1, detail: "the answer is not valid JSON: unexpected end of JSON input at line 1, column 9", where: "line 1, column 9"},
		{name: "fenced", answer: "```json\n{}\n```", conf: 1, detail: "the answer is not valid JSON: invalid character '`' looking for beginning of value at line 1, column 1 (give the bare JSON, without a ``` fence)", where: "line 1, column 1"},
	})
}

func TestJSONSchemaDraft07(t *testing.T) {
	v := mustNew(t)(JSONSchema(json.RawMessage(`{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}, {"type": "integer", "exclusiveMinimum": 3}]}`)))
	runVerdicts(t, v, []verdictCase{
		{name: "valid", answer: `["a", 4]`, ok: true, conf: 1, detail: "the answer matches the JSON schema"},
		{name: "tuple item", answer: `[1]`, conf: 1, detail: "the answer does not match the JSON schema at $[0]: is an integer, but the schema wants a string", where: "$[0]"},
		{name: "exclusive minimum", answer: `["a", 3]`, conf: 1, detail: "the answer does not match the JSON schema at $[1]: is 3, not above the exclusive minimum 3", where: "$[1]"},
	})
}

func TestJSONSchemaBoolean(t *testing.T) {
	runVerdicts(t, mustNew(t)(JSONSchema(json.RawMessage(`true`))), []verdictCase{
		{name: "true accepts", answer: `{"any": "thing"}`, ok: true, conf: 1, detail: "the answer matches the JSON schema"},
	})
	runVerdicts(t, mustNew(t)(JSONSchema(json.RawMessage(`false`))), []verdictCase{
		{name: "false rejects", answer: `1`, conf: 1, detail: "the answer does not match the JSON schema at $: is not allowed here (the schema is false)", where: "$"},
	})
}

func TestJSONSchemaConfig(t *testing.T) {
	tests := []struct{ name, schema, msg string }{
		{"empty", " ", "json_schema check: the schema is empty"},
		{"not JSON", "{", "json_schema check: the schema is not JSON: unexpected end of JSON input"},
		{"not an object", `"x"`, `json_schema check: the schema must be a JSON object (or true or false), got "x"`},
		{"wrong keyword type", `{"minLength": "2"}`, "json_schema check: the schema is not a JSON Schema: cannot be unmarshaled into an int"},
		{"remote ref", `{"$ref": "https://example.com/s.json"}`, "json_schema check: the schema does not resolve: loading https://example.com/s.json: cannot resolve remote schemas: no loader passed to Schema.Resolve"},
		{"bad pattern", `{"pattern": "("}`, "json_schema check: the schema does not resolve: jsonschema.Schema: <anonymous schema>: pattern: error parsing regexp: missing closing ): `(`"},
		{"old draft", `{"$schema": "http://json-schema.org/draft-04/schema#"}`, "json_schema check: cannot validate version http://json-schema.org/draft-04/schema#, supported versions: draft-07 and draft 2020-12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := JSONSchema(json.RawMessage(tt.schema))
			wantConfigError(t, v, err, tt.msg)
		})
	}
}

func TestExplainSchemaError(t *testing.T) {
	// Messages the way jsonschema-go writes them, including a $ref jump to
	// the root and a $id'd root.
	tests := []struct{ msg, path, reason string }{
		{"validating root: validating /properties/a: validating /properties/a/items: validating root: validating /properties/b: type: 1 has type \"integer\", want \"string\"", "$.a[*].b", "is an integer, but the schema wants a string"},
		{"validating https://x/s.json: validating /properties/a: type: 1 has type \"integer\", want one of \"string, null\"", "$.a", "is an integer, but the schema wants one of: string, null"},
		{"validating root: validating /properties/a~1b: not: validated against <anonymous schema>", `$["a/b"]`, "matches a schema it must not match (not)"},
		{"validating root: validating /propertyNames: pattern: \"B\" does not match regular expression \"^[a-z]+$\"", "$ (a property name)", `"B" does not match the pattern "^[a-z]+$"`},
		{"validating root: oneOf: validated against both <anonymous schema> and <anonymous schema>", "$", "matches more than one of the alternatives (oneOf); it must match exactly one"},
		{"validating root: some future message\nwith two lines", "$", "some future message with two lines"},
	}
	for _, tt := range tests {
		path, reason := explainSchemaError(tt.msg, nil)
		if path != tt.path || reason != tt.reason {
			t.Errorf("explainSchemaError(%q) = %q, %q; want %q, %q", tt.msg, path, reason, tt.path, tt.reason)
		}
	}
}

// TestOutput: the typed answer's check says the path in Where and the
// rule in Detail, names the failing item, and gives decode's error (or
// panic) as the failure.
func TestOutput(t *testing.T) {
	schema := `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"price":{"type":"number","minimum":0}}}}},"required":["items"]}`
	decode := func(b []byte) error {
		var v struct{ Items []struct{ Price float64 } }
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		if len(v.Items) > 3 {
			return errors.New("$.items: at most 3 items")
		}
		if len(v.Items) == 3 {
			panic("three")
		}
		return nil
	}
	v := mustNew(t)(Output(json.RawMessage(schema), decode))
	if v.Name() != "output_schema" {
		t.Errorf("name %q", v.Name())
	}
	runVerdicts(t, v, []verdictCase{
		{name: "valid", answer: `{"items":[{"price":0}]}`, ok: true, conf: 1, detail: "the answer matches the output schema"},
		{name: "third item below minimum", answer: `{"items":[{"price":1},{"price":2},{"price":-1}]}`, conf: 1, detail: "is -1, below the minimum 0", where: "$.items[2].price"},
		{name: "decode rule", answer: `{"items":[{},{},{},{}]}`, conf: 1, detail: "$.items: at most 3 items"},
		{name: "decode panics", answer: `{"items":[{},{},{}]}`, conf: 1, detail: "decoding the answer failed: three"},
		{name: "not JSON", answer: `{"items":`, conf: 1, detail: "the answer is not valid JSON: unexpected end of JSON input at line 1, column 10", where: "line 1, column 10"},
	})
	if _, err := Output(json.RawMessage(`[1]`), nil); err == nil || !strings.HasPrefix(err.Error(), "output_schema check:") {
		t.Errorf("a schema that is not an object: %v", err)
	}
}
