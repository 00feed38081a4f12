package tool_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/tool"
)

// fixed is a Tool with a hand-written Info whose Run calls run.
type fixed struct {
	info tool.Info
	run  func(ctx context.Context, args json.RawMessage) (string, error)
}

func (f *fixed) Info() tool.Info { return f.info }

func (f *fixed) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return f.run(ctx, args)
}

const objectSchema = `{"type":"object"}`

// newFixed returns a tool that accepts any object and returns out, err.
func newFixed(name string, out string, err error) *fixed {
	return &fixed{
		info: tool.Info{Name: name, Description: "test tool " + name, Schema: json.RawMessage(objectSchema)},
		run:  func(context.Context, json.RawMessage) (string, error) { return out, err },
	}
}

func withInfo(name, desc, schema string) *fixed {
	f := newFixed(name, "", nil)
	f.info.Description = desc
	f.info.Schema = json.RawMessage(schema)
	return f
}

func TestNewRegistryReportsEveryProblem(t *testing.T) {
	_, err := tool.NewRegistry(
		newFixed("ok", "", nil),
		newFixed("ok", "", nil),
		nil,
		newFixed("finish", "", nil),
		withInfo("bad name", "", `{"type":"array"}`),
		withInfo(strings.Repeat("x", 65), "d", objectSchema),
		withInfo("", "d", objectSchema),
		withInfo("noschema", "d", ""),
		withInfo("truncated", "d", `{"type":"object",`),
		withInfo("badpattern", "d", `{"type":"object","properties":{"p":{"type":"string","pattern":"("}}}`),
		withInfo("blankdesc", " \n", objectSchema),
		withInfo("50%d", "d", objectSchema),
	)
	if err == nil {
		t.Fatal("NewRegistry succeeded, want an error")
	}
	x65 := `"` + strings.Repeat("x", 65) + `"`
	want := []string{
		`tool[1] "ok": duplicate name (also tool[0])`,
		`tool[2]: nil Tool`,
		`tool[3] "finish": name is reserved for the loop's own tool`,
		`tool[4] "bad name": name must match ^[a-zA-Z0-9_-]{1,64}$`,
		`tool[4] "bad name": description is empty`,
		`tool[4] "bad name": schema must have "type": "object"`,
		`tool[5] ` + x65 + `: name must match ^[a-zA-Z0-9_-]{1,64}$`,
		`tool[6] "": name must match ^[a-zA-Z0-9_-]{1,64}$`,
		`tool[7] "noschema": schema is missing`,
		`tool[8] "truncated": schema is not valid: unexpected end of JSON input`,
		`tool[10] "blankdesc": description is empty`,
		`tool[11] "50%d": name must match ^[a-zA-Z0-9_-]{1,64}$`,
	}
	got := strings.Split(err.Error(), "\n")
	// The pattern error comes from regexp via jsonschema-go; check only that
	// it is reported against the right tool.
	var pattern []string
	got = slices.DeleteFunc(got, func(line string) bool {
		if strings.HasPrefix(line, `tool[9] "badpattern": schema is not valid: `) {
			pattern = append(pattern, line)
			return true
		}
		return false
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewRegistry error lines (-want +got):\n%s", diff)
	}
	if len(pattern) != 1 || !strings.Contains(pattern[0], "missing closing )") {
		t.Errorf("NewRegistry reported %q for the bad pattern, want one line about the missing )", pattern)
	}
}

func TestRegistryAcceptsValidNames(t *testing.T) {
	names := []string{"a", "Z", "0", "read_file", "git-diff", strings.Repeat("n", 64), "Finish"}
	var tools []tool.Tool
	for _, n := range names {
		tools = append(tools, newFixed(n, "", nil))
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	if diff := cmp.Diff(names, reg.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestRegistryLookupNamesSpecs(t *testing.T) {
	b := newFixed("b", "", nil)
	a := withInfo("a", "adds things", `{"type":"object","properties":{"x":{"type":"integer"}}}`)
	reg, err := tool.NewRegistry(b, a)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	if got, ok := reg.Lookup("a"); !ok || got != tool.Tool(a) {
		t.Errorf("Lookup(a) = %v, %v; want the registered tool", got, ok)
	}
	if got, ok := reg.Lookup("c"); ok || got != nil {
		t.Errorf("Lookup(c) = %v, %v; want nil, false", got, ok)
	}
	if diff := cmp.Diff([]string{"b", "a"}, reg.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	want := []model.ToolSpec{
		{Name: "b", Description: "test tool b", InputSchema: json.RawMessage(objectSchema)},
		{Name: "a", Description: "adds things", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)},
	}
	if diff := cmp.Diff(want, reg.Specs()); diff != "" {
		t.Errorf("Specs (-want +got):\n%s", diff)
	}
	// Callers own the returned slices.
	reg.Names()[0] = "changed"
	reg.Specs()[0].Name = "changed"
	if got := reg.Names()[0]; got != "b" {
		t.Errorf("after modifying a returned slice, Names()[0] = %q, want b", got)
	}
	if got := reg.Specs()[0].Name; got != "b" {
		t.Errorf("after modifying a returned slice, Specs()[0].Name = %q, want b", got)
	}
}

func TestEmptyRegistry(t *testing.T) {
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatalf("NewRegistry(): %v", err)
	}
	if n, s := reg.Names(), reg.Specs(); len(n) != 0 || len(s) != 0 {
		t.Errorf("empty registry: Names = %v, Specs = %v; want both empty", n, s)
	}
}
