package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratchetloop/ratchet/tool"
)

// BenchmarkExecutorInline is one call of an Inline add tool, as the
// runner's benchmarks make it every step: checking and decoding the
// arguments (one strict decode into the tool's type), running the tool
// and trimming its output.
//
//	go test ./tool -run '^$' -bench 'BenchmarkExecutorInline|BenchmarkArgsFloor' -count 6
func BenchmarkExecutorInline(b *testing.B) {
	reg := mustRegistry(b, tool.Func("add", "adds two integers", add, tool.Inline()))
	e := tool.NewExecutor(tool.ExecConfig{})
	call := tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := e.RunOne(ctx, reg, call); r.Output != "3" {
			b.Fatalf("RunOne = %+v", r)
		}
	}
}

// BenchmarkArgsFloor is what BenchmarkExecutorInline cannot do without:
// the library's own work for the same arguments, with no ratchet code in
// it: one strict decode into the tool's struct, which checks them and
// gives the tool its value.
func BenchmarkArgsFloor(b *testing.B) {
	args := []byte(`{"a":1,"b":2}`)
	b.ReportAllocs()
	for b.Loop() {
		var in addArgs
		if err := jsonv2.Unmarshal(args, &in, jsonv2.RejectUnknownMembers(true)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawSchema compares the two maintained validators on the check
// of a raw schema's arguments (an MCP tool's, say): decoding into any and
// validating, against add's flat schema and a nested one with an array of
// objects. santhosh-tekuri/jsonschema, the faster, is the one the executor
// uses; it also names the place of a problem in the arguments, where
// google/jsonschema-go names the schema's.
//
//	go test ./tool -run '^$' -bench BenchmarkRawSchema -count 6
func BenchmarkRawSchema(b *testing.B) {
	for _, c := range []struct{ name, schema, args string }{
		{"add", string(tool.Func("add", "adds two integers", add).Info().Schema), `{"a":1,"b":2}`},
		{"nested", orderSchema, `{"items":[{"name":"a","price":1},{"name":"b","price":2},{"name":"c","price":3}],"n":3}`},
	} {
		var gs jsonschema.Schema
		if err := json.Unmarshal([]byte(c.schema), &gs); err != nil {
			b.Fatal(err)
		}
		g, err := gs.Resolve(nil)
		if err != nil {
			b.Fatal(err)
		}
		doc, err := santhosh.UnmarshalJSON(strings.NewReader(c.schema))
		if err != nil {
			b.Fatal(err)
		}
		comp := santhosh.NewCompiler()
		if err := comp.AddResource("urn:args", doc); err != nil {
			b.Fatal(err)
		}
		s, err := comp.Compile("urn:args")
		if err != nil {
			b.Fatal(err)
		}
		args := []byte(c.args)
		for _, v := range []struct {
			lib      string
			validate func(any) error
		}{{"jsonschema-go", g.Validate}, {"santhosh-tekuri", s.Validate}} {
			b.Run(c.name+"/"+v.lib, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var x any
					if err := json.Unmarshal(args, &x); err != nil {
						b.Fatal(err)
					}
					if err := v.validate(x); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
