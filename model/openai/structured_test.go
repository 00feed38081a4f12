package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// Chat Completions' native structured output, as recorded: the output
// schema goes out as a json_schema response_format, not strict since the
// schema is outside strict mode's subset (no additionalProperties false),
// and the answer comes back as JSON text after the tool loop.
func TestCassetteStructuredOutput(t *testing.T) {
	rec := cassette(t, "test_openai_native_output")
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "gpt-4o", false, false)
	schema := json.RawMessage(modeltest.Field(t, rec[0].Request, "response_format", "json_schema", "schema"))
	req := model.Request{
		Messages:     []model.Message{user("What is the largest city in the user country?")},
		Tools:        []model.ToolSpec{{Name: "get_user_country", InputSchema: json.RawMessage(modeltest.Field(t, rec[0].Request, "tools", "0", "function", "parameters")), Strict: true}},
		OutputSchema: schema,
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Bodies()[0]
	for _, f := range [][]string{{"type"}, {"json_schema", "schema"}, {"json_schema", "strict"}} {
		path := append([]string{"response_format"}, f...)
		if got, want := modeltest.Field(t, sent, path...), modeltest.Field(t, rec[0].Request, path...); got != want {
			t.Errorf("%v = %s, recorded %s", path, got, want)
		}
	}
	// The tool asked to be strict, with a schema in the subset, is.
	if got := modeltest.Field(t, sent, "tools", "0", "function", "strict"); got != "true" {
		t.Errorf("strict tool: strict = %s, want true", got)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Content: resp.Content},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: resp.Content[0].ID, Text: "Mexico"}}})
	resp, err = m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text != `{"city":"Mexico City","country":"Mexico"}` {
		t.Errorf("reply %+v, want the JSON answer", resp.Content)
	}
}

// The strict subset: every object forbids other properties and requires
// all its own, at any depth.
func TestStrictSchema(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"number"}}}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{},"additionalProperties":false}}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/d"}},"required":["a"],"additionalProperties":false,"$defs":{"d":{"type":"object","properties":{"x":{"type":"number"}}}}}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"x":{"type":"number"}}}}},"required":["a"],"additionalProperties":false}`, false},
		{`not json`, false},
	} {
		if got := model.StrictSchema(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("StrictSchema(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}
