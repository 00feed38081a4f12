package tool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/tool"
)

type orderItem struct {
	Name  string  `json:"name"`
	Price float64 `json:"price"`
}

type order struct {
	Items []orderItem `json:"items"`
	Note  string      `json:"note,omitempty"`
}

// orderSchema is a schema written by hand, as an MCP server or a task file
// sends one: it says more than a Go type can (an enum, bounds).
const orderSchema = `{
	"type": "object",
	"properties": {
		"items": {"type": "array", "items": {
			"type": "object",
			"properties": {"name": {"type": "string"}, "price": {"type": "number", "minimum": 0}},
			"required": ["name", "price"],
			"additionalProperties": false
		}},
		"color": {"enum": ["red", "green"]},
		"n": {"type": "integer", "minimum": 1, "maximum": 10},
		"2": {"type": "string"},
		"m": {"allOf": [{"minimum": 0}, {"minimum": 0}]}
	},
	"required": ["items"],
	"additionalProperties": false
}`

// TestArgumentErrors pins what the model reads for each kind of bad
// arguments, for a tool.Func tool (checked by its type, then by the
// schema for the message) and a tool with a raw schema: the place in the
// arguments as a path from $, and the rule.
func TestArgumentErrors(t *testing.T) {
	reg := mustRegistry(t,
		tool.Func("order", "takes an order", func(_ context.Context, in order) (int, error) { return len(in.Items), nil }, tool.Inline()),
		&fixed{
			info: tool.Info{Name: "raw", Description: "takes an order", Schema: json.RawMessage(orderSchema)},
			run:  func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
		},
	)
	const prefix = `: arguments do not match the schema: `
	tests := []struct{ name, tool, args, want string }{
		{"unknown member", "order", `{"items":[],"x":1}`, `$: additional properties 'x' not allowed`},
		{"unknown nested member", "order", `{"items":[{"name":"a","price":1,"qty":2}]}`, `$.items[0]: additional properties 'qty' not allowed`},
		{"wrong type with path", "order", `{"items":[{"name":"a","price":1},{"name":"b","price":"x"}]}`, `$.items[1].price: got string, want number`},
		{"missing required", "order", `{"note":"n"}`, `$: missing property 'items'`},
		{"missing required nested", "order", `{"items":[{"name":"a"}]}`, `$.items[0]: missing property 'price'`},
		{"null for a non-null member", "order", `{"items":[{"name":null,"price":1}]}`, `$.items[0].name: got null, want string`},
		{"several problems, sorted by place", "order", `{"items":[{"name":1,"price":"x"}],"y":0}`,
			`$.items[0].name: got number, want string; $.items[0].price: got string, want number; $: additional properties 'y' not allowed`},
		{"raw: minimum with path", "raw", `{"items":[{"name":"a","price":1},{"name":"b","price":2},{"name":"c","price":-1}]}`, `$.items[2].price: minimum: got -1, want 0`},
		{"raw: maximum", "raw", `{"items":[],"n":11}`, `$.n: maximum: got 11, want 10`},
		{"raw: enum", "raw", `{"items":[],"color":"blue"}`, `$.color: value must be one of 'red', 'green'`},
		{"raw: a member named like an index", "raw", `{"items":[],"2":3}`, `$["2"]: got number, want string`},
		{"raw: missing required", "raw", `{}`, `$: missing property 'items'`},
		{"raw: one problem found twice, said once", "raw", `{"items":[],"m":-1}`, `$.m: minimum: got -1, want 0`},
		{"raw: unknown member", "raw", `{"items":[],"z":true}`, `$: additional properties 'z' not allowed`},
	}
	e := tool.NewExecutor(tool.ExecConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.RunOne(context.Background(), reg, tool.Call{ID: "1", Name: tt.tool, Args: json.RawMessage(tt.args)})
			want := `tool "` + tt.tool + `"` + prefix + tt.want
			if r.Outcome != tool.OutcomeInvalidArgs || r.Output != want {
				t.Errorf("%s(%s) = %s %q\nwant invalid_args %q", tt.tool, tt.args, r.Outcome, r.Output, want)
			}
		})
	}
}

// TestArgumentErrorsAreBounded: arguments with many problems get a
// message that names the first few and counts the rest.
func TestArgumentErrorsAreBounded(t *testing.T) {
	reg := mustRegistry(t, tool.Func("order", "takes an order", func(_ context.Context, in order) (int, error) { return 0, nil }))
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":1,"price":1}`)
	}
	b.WriteString(`]}`)
	r := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{ID: "1", Name: "order", Args: json.RawMessage(b.String())})
	if !strings.HasSuffix(r.Output, "; and 35 more") || strings.Count(r.Output, "got number, want string") != 5 {
		t.Errorf("Output = %q, want 5 problems and the count of the rest", r.Output)
	}
}

// TestSchemaRefinedByOption: an Option that replaces a Func tool's
// schema makes the schema, not the type, decide.
func TestSchemaRefinedByOption(t *testing.T) {
	small := func(i *tool.Info) {
		i.Schema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer","maximum":3},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`)
	}
	reg := mustRegistry(t, tool.Func("add", "adds two integers", add, small, tool.Inline()))
	r := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":5,"b":1}`)})
	if want := `tool "add": arguments do not match the schema: $.a: maximum: got 5, want 3`; r.Output != want {
		t.Errorf("Output = %q, want %q", r.Output, want)
	}
}

// TestSchemaRefsLoadNothing: a schema from an untrusted source cannot make
// the registry read a file or fetch a URL through $ref, even one that
// holds a schema.
func TestSchemaRefsLoadNothing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + file, "http://127.0.0.1:1/schema.json"} {
		_, err := tool.NewRegistry(withInfo("r", "d", `{"type":"object","properties":{"p":{"$ref":"`+ref+`"}}}`))
		if err == nil || !strings.Contains(err.Error(), "schema is not valid") {
			t.Errorf("$ref %s: NewRegistry error %v, want the schema refused", ref, err)
		}
	}
}

// TestFormatByDraft: a schema's "format" is checked as its draft says: an
// assertion up to draft-07, an annotation from 2019-09 on (and so with no
// $schema, which means 2020-12).
func TestFormatByDraft(t *testing.T) {
	for _, tt := range []struct {
		draft, want string
	}{
		{`"$schema":"http://json-schema.org/draft-07/schema#",`, `tool "f": arguments do not match the schema: $.to: 'x' is not valid email: missing @`},
		{``, `ok`},
	} {
		schema := `{` + tt.draft + `"type":"object","properties":{"to":{"type":"string","format":"email"}}}`
		reg := mustRegistry(t, &fixed{
			info: tool.Info{Name: "f", Description: "d", Schema: json.RawMessage(schema)},
			run:  func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
		})
		r := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{ID: "1", Name: "f", Args: json.RawMessage(`{"to":"x"}`)})
		if r.Output != tt.want {
			t.Errorf("schema %s: output %q, want %q", schema, r.Output, tt.want)
		}
	}
}
