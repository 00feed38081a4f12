package runner_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
	"github.com/ratchetloop/ratchet/runner"
)

// BenchmarkStepTelemetry is BenchmarkStep's 50-step run with telemetry
// off; on, with the SDK batching spans to an exporter that drops them
// (the cost in the run's goroutine); and on, exporting them as OTLP over
// HTTP to a local server (marshalling and sending too, on the same
// cores); and on with a sampler that samples no run (spans not recorded,
// metrics still are). telemetry=floor is the run with telemetry off plus
// what the SDK alone costs for the same spans and metrics (sdkFloor): the
// least any observer could add. Metrics go to a manual reader. It reports the time per step and
// the spans a run makes, with a model that answers at once (the engine's
// own cost, against which a span or two per step is large), one that
// takes a millisecond (still faster than any real model) and one that
// takes 50 ms (a fast real model; one run is then 2.5 s).
//
//	go test ./runner -run '^$' -bench BenchmarkStepTelemetry -count 10 | tee /tmp/tel.txt; benchstat -col /telemetry /tmp/tel.txt
func BenchmarkStepTelemetry(b *testing.B) {
	const n = 50
	task := stepsTask(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	run := func(b *testing.B, s scripted.Script, cfg runner.Config) {
		m, err := scripted.New(s, scripted.Config{Quiet: true})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Model, cfg.RunID, cfg.Observers = m, "bench", []observe.Observer{&observe.Memory{}}
		if res, err := runner.Run(context.Background(), task, cfg); err != nil || res.Status != loop.Done {
			b.Fatalf("status %s err %v", res.Status, err)
		}
	}
	for _, latency := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond} {
		s := stepsScript(b, n, latency)
		for _, mode := range []string{"off", "floor", "batch", "unsampled", "otlp"} {
			b.Run(fmt.Sprintf("latency=%v/telemetry=%s", latency, mode), func(b *testing.B) {
				var cfg runner.Config
				var floor *sdkFloor
				if mode == "floor" {
					floor = newSDKFloor(b)
					defer floor.shutdown()
				} else if mode != "off" {
					var exp sdktrace.SpanExporter = tracetest.NewNoopExporter()
					if mode == "otlp" {
						var err error
						if exp, err = otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces")); err != nil {
							b.Fatal(err)
						}
					}
					opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithIDGenerator(otelobs.IDGenerator())}
					if mode == "unsampled" {
						// What a run costs that a ratio sampler
						// (OTEL_TRACES_SAMPLER=parentbased_traceidratio) leaves out.
						opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))))
					}
					tp := sdktrace.NewTracerProvider(opts...)
					mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
					defer func() {
						_ = tp.Shutdown(context.Background())
						_ = mp.Shutdown(context.Background())
					}()
					cfg.TracerProvider, cfg.MeterProvider = tp, mp
				}
				b.ReportAllocs()
				b.ResetTimer()
				before := processCPU()
				for b.Loop() {
					run(b, s, cfg)
					if floor != nil {
						floor.run(n)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/step")
				reportCPU(b, processCPU()-before, b.N*(n+1))
				if mode != "off" && mode != "floor" {
					rec := tracetest.NewSpanRecorder()
					run(b, s, runner.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
					b.ReportMetric(float64(len(rec.Ended())), "spans/run")
				}
			})
		}
	}
}

// sdkFloor makes with the OpenTelemetry SDK alone, no ratchet code, what
// the observer makes of a run of n tool steps: an invoke_agent span; n+1
// chat spans with the observer's attributes, each with its three histogram
// records (attribute sets made once); n execute_tool spans; a check span.
// The spans are batched to an exporter that drops them.
type sdkFloor struct {
	tp                         *sdktrace.TracerProvider
	mp                         *sdkmetric.MeterProvider
	tracer                     trace.Tracer
	tokens                     metric.Int64Histogram
	duration                   metric.Float64Histogram
	durationSet, input, output metric.MeasurementOption
}

func newSDKFloor(b *testing.B) *sdkFloor {
	f := &sdkFloor{
		tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
	}
	f.tracer = f.tp.Tracer("floor")
	meter := f.mp.Meter("floor")
	var err error
	if f.tokens, err = meter.Int64Histogram("gen_ai.client.token.usage"); err != nil {
		b.Fatal(err)
	}
	if f.duration, err = meter.Float64Histogram("gen_ai.client.operation.duration"); err != nil {
		b.Fatal(err)
	}
	set := func(kv ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "scripted"),
			attribute.String("gen_ai.request.model", "scripted"), attribute.String("gen_ai.response.model", "scripted"),
		}, kv...)...))
	}
	f.durationSet, f.input, f.output = set(), set(attribute.String("gen_ai.token.type", "input")), set(attribute.String("gen_ai.token.type", "output"))
	return f
}

func (f *sdkFloor) shutdown() {
	_ = f.tp.Shutdown(context.Background())
	_ = f.mp.Shutdown(context.Background())
}

func (f *sdkFloor) run(n int) {
	at := time.Now()
	ctx, root := f.tracer.Start(context.Background(), "invoke_agent ratchet", trace.WithTimestamp(at), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "ratchet"),
		attribute.String("gen_ai.conversation.id", "bench"), attribute.String("ratchet.run.id", "bench")))
	client, internal := trace.WithSpanKind(trace.SpanKindClient), trace.WithSpanKind(trace.SpanKindInternal)
	reasons := attribute.StringSlice("gen_ai.response.finish_reasons", []string{"tool_use"})
	for i := range n + 1 {
		start, end := at, at.Add(time.Microsecond)
		at = end
		_, chat := f.tracer.Start(ctx, "chat scripted", client, trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "scripted"),
			attribute.String("gen_ai.request.model", "scripted"), attribute.String("ratchet.call.id", "m"),
			attribute.String("ratchet.model.purpose", "step"), attribute.Int64("ratchet.request.input_estimate", 100),
			attribute.Int64("gen_ai.usage.input_tokens", 10), attribute.Int64("gen_ai.usage.output_tokens", 5),
			attribute.String("gen_ai.response.model", "scripted"), reasons))
		chat.End(trace.WithTimestamp(end))
		f.duration.Record(ctx, end.Sub(start).Seconds(), f.durationSet)
		f.tokens.Record(ctx, 10, f.input)
		f.tokens.Record(ctx, 5, f.output)
		name, attrs := "check equals", []attribute.KeyValue{attribute.String("ratchet.check.name", "equals"), attribute.String("ratchet.check.outcome", "pass")}
		if i < n {
			name, attrs = "execute_tool add", []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "add"),
				attribute.String("gen_ai.tool.call.id", "t"), attribute.String("gen_ai.tool.type", "function"),
				attribute.String("ratchet.tool.outcome", "ok")}
		}
		_, span := f.tracer.Start(ctx, name, internal, trace.WithTimestamp(end), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(end))
	}
	root.End(trace.WithTimestamp(at))
}
