package runner_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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
// metrics still are). Metrics go to a manual reader. It reports the time per step and
// the spans a run makes, with a model that answers at once (the engine's
// own cost, against which a span or two per step is large) and one that
// takes a millisecond (still faster than any real model).
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
	for _, latency := range []time.Duration{0, time.Millisecond} {
		s := stepsScript(b, n, latency)
		for _, mode := range []string{"off", "batch", "unsampled", "otlp"} {
			b.Run(fmt.Sprintf("latency=%v/telemetry=%s", latency, mode), func(b *testing.B) {
				var cfg runner.Config
				if mode != "off" {
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
				for b.Loop() {
					run(b, s, cfg)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/step")
				if mode != "off" {
					rec := tracetest.NewSpanRecorder()
					run(b, s, runner.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
					b.ReportMetric(float64(len(rec.Ended())), "spans/run")
				}
			})
		}
	}
}
