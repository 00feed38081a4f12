package otel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
)

// BenchmarkObserveStep is the Observer's own cost for one step of a run
// (a model call answered with a tool call, and the tool's result: two
// spans, three metric records), with the SDK's span processing itself
// left out (a processor that does nothing): what deriving the telemetry
// adds to a step on the runner's goroutine.
//
//	go test ./observe/otel -run '^$' -bench BenchmarkObserveStep -count 6
func BenchmarkObserveStep(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{}), sdktrace.WithIDGenerator(otelobs.IDGenerator()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	}()
	o, err := otelobs.New(otelobs.Config{TracerProvider: tp, MeterProvider: mp, Model: "anthropic:claude-test"})
	if err != nil {
		b.Fatal(err)
	}
	f := &feed{o: o, run: "bench", at: time.Now()}
	f.add(observe.Entry{Spec: &spec}, ev(loop.Event{Type: loop.EventStart}))
	req := &model.Request{MaxOutputTokens: 4096, Purpose: model.PurposeStep}
	reply := &model.Response{StopReason: "tool_use", Model: "claude-test", Usage: model.Usage{InputTokens: 100, OutputTokens: 20}}
	calls := []loop.ToolCall{{ID: "t", Name: "add", Args: []byte(`{"a":1}`)}}
	entries := []observe.Entry{
		cmd(loop.Command{Type: loop.CallModel, ID: "m", Request: req}),
		ev(loop.Event{Type: loop.EventModelReply, Call: "m", Reply: reply}),
		cmd(loop.Command{Type: loop.RunTools, ID: "r", Calls: calls}),
		ev(loop.Event{Type: loop.EventToolResult, Call: "t", Tool: &loop.ToolOutcome{Output: "2", Outcome: "ok"}}),
	}
	b.ReportAllocs()
	for b.Loop() {
		f.add(entries...)
	}
}

type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }
