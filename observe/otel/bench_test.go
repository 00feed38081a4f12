package otel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
)

// BenchmarkObserveStep is the Observer's cost for one step of a run (a
// model call answered with a tool call, and the tool's result: two spans,
// three metric records). With processor=nop the SDK's span processing is
// left out (a processor that does nothing): what deriving the telemetry
// adds to a step on the runner's goroutine. With processor=batch the spans
// go through the SDK's batch processor to an exporter that drops them, as
// in BenchmarkSpanFloor, which does the same SDK work with no ratchet code.
//
//	go test ./observe/otel -run '^$' -bench 'BenchmarkObserveStep|BenchmarkSpanFloor' -count 6
func BenchmarkObserveStep(b *testing.B) {
	for _, proc := range []string{"nop", "batch"} {
		b.Run("processor="+proc, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{}), sdktrace.WithIDGenerator(otelobs.IDGenerator()))
			if proc == "batch" {
				tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithIDGenerator(otelobs.IDGenerator()))
			}
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
			f.add(observe.Entry{Spec: &loop.Spec{Goal: "add", Tools: []model.ToolSpec{{Name: "add"}}}}, ev(loop.Event{Type: loop.EventStart}))
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
		})
	}
}

// BenchmarkSpanFloor is what the OpenTelemetry SDK itself costs for the
// telemetry of one step, with no ratchet code in it: a chat span and an
// execute_tool span with the attributes the Observer gives them, started
// and ended with explicit timestamps under a parent span, through the
// batch processor to an exporter that drops them, and the chat call's
// three histogram records with attribute sets made once. spans=only
// leaves the metrics out.
func BenchmarkSpanFloor(b *testing.B) {
	for _, metrics := range []bool{false, true} {
		name := "spans=only"
		if metrics {
			name = "spans+metrics"
		}
		b.Run(name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer func() {
				_ = tp.Shutdown(context.Background())
				_ = mp.Shutdown(context.Background())
			}()
			tracer := tp.Tracer("floor")
			meter := mp.Meter("floor")
			tokens, err := meter.Int64Histogram("gen_ai.client.token.usage")
			if err != nil {
				b.Fatal(err)
			}
			duration, err := meter.Float64Histogram("gen_ai.client.operation.duration")
			if err != nil {
				b.Fatal(err)
			}
			chatSet := []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.provider.name", "anthropic"),
				attribute.String("gen_ai.request.model", "claude-test"),
				attribute.String("gen_ai.response.model", "claude-test"),
			}
			durationOpt := metric.WithAttributeSet(attribute.NewSet(chatSet...))
			inputOpt := metric.WithAttributeSet(attribute.NewSet(append(chatSet[:4:4], attribute.String("gen_ai.token.type", "input"))...))
			outputOpt := metric.WithAttributeSet(attribute.NewSet(append(chatSet[:4:4], attribute.String("gen_ai.token.type", "output"))...))
			reasons := attribute.StringSlice("gen_ai.response.finish_reasons", []string{"tool_use"})
			clientKind, internalKind := trace.WithSpanKind(trace.SpanKindClient), trace.WithSpanKind(trace.SpanKindInternal)
			ctx, root := tracer.Start(context.Background(), "invoke_agent ratchet")
			defer root.End()
			at := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				start, end := at, at.Add(time.Millisecond)
				at = end
				_, chat := tracer.Start(ctx, "chat claude-test", clientKind, trace.WithTimestamp(start), trace.WithAttributes(
					attribute.String("gen_ai.operation.name", "chat"),
					attribute.String("gen_ai.provider.name", "anthropic"),
					attribute.String("gen_ai.request.model", "claude-test"),
					attribute.String("ratchet.call.id", "m"),
					attribute.String("ratchet.model.purpose", "step"),
					attribute.Int64("ratchet.request.input_estimate", 100),
					attribute.Int("gen_ai.request.max_tokens", 4096),
					attribute.Int64("gen_ai.usage.input_tokens", 100),
					attribute.Int64("gen_ai.usage.output_tokens", 20),
					attribute.String("gen_ai.response.model", "claude-test"),
					reasons,
				))
				chat.End(trace.WithTimestamp(end))
				if metrics {
					duration.Record(ctx, end.Sub(start).Seconds(), durationOpt)
					tokens.Record(ctx, 100, inputOpt)
					tokens.Record(ctx, 20, outputOpt)
				}
				_, tool := tracer.Start(ctx, "execute_tool add", internalKind, trace.WithTimestamp(end), trace.WithAttributes(
					attribute.String("gen_ai.operation.name", "execute_tool"),
					attribute.String("gen_ai.tool.name", "add"),
					attribute.String("gen_ai.tool.call.id", "t"),
					attribute.String("gen_ai.tool.type", "function"),
					attribute.String("ratchet.tool.outcome", "ok"),
				))
				tool.End(trace.WithTimestamp(end))
			}
		})
	}
}

type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }
