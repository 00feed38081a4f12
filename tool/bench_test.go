package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ratchetloop/ratchet/tool"
)

// BenchmarkExecutorInline is one call of an Inline add tool, as the
// runner's benchmarks make it every step: checking the arguments against
// the schema, decoding them, running the tool and trimming its output.
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
// the libraries' own work for the same arguments, with no ratchet code in
// it. The schema is resolved once, outside the loop, as the registry does;
// each iteration decodes the arguments into any (what jsonschema-go
// validates), validates them, and decodes them into the tool's struct (what
// tool.Func hands its function).
func BenchmarkArgsFloor(b *testing.B) {
	var s jsonschema.Schema
	if err := json.Unmarshal(tool.Func("add", "adds two integers", add).Info().Schema, &s); err != nil {
		b.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"a":1,"b":2}`)
	b.Run("decode+validate+decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(args, &v); err != nil {
				b.Fatal(err)
			}
			if err := rs.Validate(v); err != nil {
				b.Fatal(err)
			}
			var in addArgs
			if err := json.Unmarshal(args, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The parts, to see which one costs what.
	b.Run("decode-any", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(args, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := rs.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in addArgs
			if err := json.Unmarshal(args, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
