package anthropic

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// Native structured output on claude-sonnet-4-5, as recorded: the output
// schema goes out as output_config.format, and the reply is the JSON.
func TestCassetteStructuredOutput(t *testing.T) {
	rec := cassette(t, "test_anthropic_native_output_decimal_strict")
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "claude-sonnet-4-5", false, nil)
	schema := json.RawMessage(modeltest.Field(t, rec[0].Request, "output_config", "format", "schema"))
	resp, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("Return exactly this payment amount: 12.34")}}}, OutputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := modeltest.Field(t, srv.Bodies()[0], "output_config", "format"), modeltest.Field(t, rec[0].Request, "output_config", "format"); got != want {
		t.Errorf("output_config.format = %s, recorded %s", got, want)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text != `{"amount":12.34}` {
		t.Errorf("reply %+v, want the JSON", resp.Content)
	}
	// A model without structured outputs is sent no format.
	srv = modeltest.ServeCassette(t, rec)
	if _, err := replayModel(t, srv, "claude-sonnet-4-0", false, nil).Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("x")}}}, OutputSchema: schema}); err != nil {
		t.Fatal(err)
	}
	if got := modeltest.Field(t, srv.Bodies()[0], "output_config"); got != "" {
		t.Errorf("claude-sonnet-4-0 was sent output_config %s", got)
	}
}

// A strict tool beside one that is not, as recorded in a real tool loop:
// each tool's strict flag and schema go out as the real client sent them.
func TestCassetteStrictTool(t *testing.T) {
	rec := cassette(t, "test_anthropic_mixed_strict_tool_run")
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "claude-sonnet-4-5", false, nil)
	var tools []model.ToolSpec
	for i := range 2 {
		f := func(k string) string { return modeltest.Field(t, rec[0].Request, "tools", string(rune('0'+i)), k) }
		var name string
		json.Unmarshal([]byte(f("name")), &name)
		tools = append(tools, model.ToolSpec{Name: name, InputSchema: json.RawMessage(f("input_schema")), Strict: f("strict") == "true"})
	}
	resp, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("Use the registered tools and respond exactly as `Capital: <city>`.")}}}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for _, k := range []string{"name", "input_schema", "strict"} {
			idx := string(rune('0' + i))
			if got, want := modeltest.Field(t, srv.Bodies()[0], "tools", idx, k), modeltest.Field(t, rec[0].Request, "tools", idx, k); got != want {
				t.Errorf("tools[%d].%s = %s, recorded %s", i, k, got, want)
			}
		}
	}
	if n := len(resp.Content); n == 0 || resp.Content[n-1].Name != "country_source" {
		t.Errorf("reply %+v, want the country_source call", resp.Content)
	}
}
