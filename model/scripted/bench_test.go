package scripted_test

import (
	"context"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
)

var benchScript = scripted.Repeat(9,
	scripted.Turn{Text: "thinking", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
	scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: new(0.9)}},
)

func benchRequest() model.Request {
	return model.Request{
		System: "You are a calculator.",
		Messages: []model.Message{
			{Role: model.User, Content: []model.Block{model.TextBlock("What is 2+3?")}},
			{Role: model.Assistant, Content: []model.Block{{Type: model.ToolUse, ID: "call_1_1", Name: "add", Input: []byte(`{"a":2,"b":3}`)}}},
			{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "call_1_1", Text: "5"}}},
		},
	}
}

// BenchmarkRun makes a Model and plays a 10-turn script, as each loop in
// the loop's benchmarks does.
func BenchmarkRun(b *testing.B) {
	ctx, req := context.Background(), benchRequest()
	turns := 0
	for b.Loop() {
		m, err := scripted.New(benchScript, scripted.Config{Quiet: true})
		if err != nil {
			b.Fatal(err)
		}
		for range m.Turns() {
			if _, err := m.Generate(ctx, req); err != nil {
				b.Fatal(err)
			}
			turns++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns), "ns/turn")
}

// BenchmarkRunParallel is BenchmarkRun with many Models at once over one
// shared Script.
func BenchmarkRunParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		ctx, req := context.Background(), benchRequest()
		for pb.Next() {
			m, err := scripted.New(benchScript, scripted.Config{Quiet: true})
			if err != nil {
				b.Fatal(err)
			}
			for range m.Turns() {
				if _, err := m.Generate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	data := []byte(`name: bench
turns:
  - text: "I'll add the numbers first."
    tools:
      - {name: add, args: {a: 2, b: 3}}
  - finish: {answer: "5", confidence: 0.9}
`)
	for b.Loop() {
		if _, err := scripted.Parse(data, "bench.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
