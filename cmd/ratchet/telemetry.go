package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	otelobs "github.com/ratchetloop/ratchet/observe/otel"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
)

// flushWait bounds how long the CLI waits, as it exits, for the last spans
// and metrics to reach the collector; an unreachable one costs no more.
const flushWait = 3 * time.Second

// telemetry is the CLI's OpenTelemetry pipeline, configured by the
// standard OTEL_* variables (docs/observability.md). Off unless they ask:
// an OTLP endpoint is set, or OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER
// name an exporter.
type telemetry struct {
	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
	// Secrets are the OTLP header values (API keys, tokens): never to be
	// printed or stored.
	Secrets []string
	warn    *warnOnce
}

// otelEnv reads one OTEL_ variable: the signal's own (OTEL_EXPORTER_OTLP_
// TRACES_ENDPOINT), else the general one.
func otelEnv(getenv func(string) string, signal, name string) string {
	if v := getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + name); v != "" {
		return v
	}
	return getenv("OTEL_EXPORTER_OTLP_" + name)
}

// startTelemetry builds the pipeline the environment asks for, or returns
// nil when it asks for none. Problems name the variable.
func (m *Main) startTelemetry(ctx context.Context) (*telemetry, error) {
	getenv := m.Getenv
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	var errs []error
	headers, err := parseHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	if err != nil {
		errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %w", err))
	}
	tel := &telemetry{}
	for _, v := range headers {
		tel.Secrets = append(tel.Secrets, v)
	}
	tel.warn = &warnOnce{w: m.Stderr, redactor: redact.New(tel.Secrets...)}
	res, err := m.resource(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	traces, err := chooseExporter(getenv, "TRACES")
	if err != nil {
		errs = append(errs, err)
	}
	metrics, err := chooseExporter(getenv, "METRICS")
	if err != nil {
		errs = append(errs, err)
	}
	for _, signal := range []string{"TRACES", "METRICS"} {
		// Both signals fall back to one variable: name its problem once.
		if _, err := protocol(getenv, signal); err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	switch traces {
	case "otlp":
		exp, err := otlpTraceExporter(ctx, getenv, headers)
		if err != nil {
			return nil, err
		}
		tel.tp = newTracerProvider(res, &warnedSpans{exp, tel.warn, exporterWhere(getenv, "TRACES")})
	case "console":
		exp, err := stdouttrace.New(stdouttrace.WithWriter(m.Stderr))
		if err != nil {
			return nil, err
		}
		tel.tp = newTracerProvider(res, exp)
	}
	switch metrics {
	case "otlp":
		exp, err := otlpMetricExporter(ctx, getenv, headers)
		if err != nil {
			return nil, err
		}
		tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&warnedMetrics{exp, tel.warn, exporterWhere(getenv, "METRICS")})))
	case "console":
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(m.Stderr))
		if err != nil {
			return nil, err
		}
		tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if tel.tp == nil && tel.mp == nil {
		return nil, nil
	}
	return tel, nil
}

func newTracerProvider(res *resource.Resource, exp sdktrace.SpanExporter) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp), sdktrace.WithIDGenerator(otelobs.IDGenerator()))
}

// chooseExporter is the exporter OTEL_<SIGNAL>_EXPORTER names: otlp,
// console or none. Unset, it is otlp when an OTLP endpoint is set and none
// otherwise: nothing is exported unless asked.
func chooseExporter(getenv func(string) string, signal string) (string, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
	case "":
		if otelEnv(getenv, signal, "ENDPOINT") != "" {
			return "otlp", nil
		}
		return "none", nil
	case "otlp", "console", "none":
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: want otlp, console or none", name, v)
	}
}

// protocol is the OTLP protocol for signal: grpc or http/protobuf (the
// default).
func protocol(getenv func(string) string, signal string) (string, error) {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	v := getenv(name)
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		v = getenv(name)
	}
	switch v {
	case "":
		return "http/protobuf", nil
	case "grpc", "http/protobuf":
		return v, nil
	}
	return "", fmt.Errorf("%s=%q: want grpc or http/protobuf", name, v)
}

// endpoint is signal's OTLP URL: the signal's own variable as it is, or
// the general one with the signal's path for HTTP.
func endpoint(getenv func(string) string, signal, proto string) string {
	if v := getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"); v != "" {
		return v
	}
	base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if base == "" {
		if proto == "grpc" {
			return "http://localhost:4317"
		}
		base = "http://localhost:4318"
	}
	if proto == "grpc" {
		return base
	}
	return strings.TrimRight(base, "/") + "/v1/" + strings.ToLower(signal)
}

// exporterWhere names the collector in the warning an unreachable one
// gets.
func exporterWhere(getenv func(string) string, signal string) string {
	proto, _ := protocol(getenv, signal)
	return endpoint(getenv, signal, proto) + " (" + proto + ")"
}

// Exports are retried briefly: an unreachable collector must not hold
// spans, or the process at exit, for long.
var (
	traceRetry  = otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 2 * time.Second}
	exportLimit = 2 * time.Second
)

func otlpTraceExporter(ctx context.Context, getenv func(string) string, headers map[string]string) (*otlptrace.Exporter, error) {
	proto, err := protocol(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	url := endpoint(getenv, "TRACES", proto)
	if proto == "grpc" {
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(url), otlptracegrpc.WithHeaders(headers),
			otlptracegrpc.WithTimeout(exportLimit), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig(traceRetry)))
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url), otlptracehttp.WithHeaders(headers),
		otlptracehttp.WithTimeout(exportLimit), otlptracehttp.WithRetry(traceRetry))
}

func otlpMetricExporter(ctx context.Context, getenv func(string) string, headers map[string]string) (sdkmetric.Exporter, error) {
	proto, err := protocol(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	url := endpoint(getenv, "METRICS", proto)
	if proto == "grpc" {
		return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(url), otlpmetricgrpc.WithHeaders(headers),
			otlpmetricgrpc.WithTimeout(exportLimit), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig(traceRetry)))
	}
	return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url), otlpmetrichttp.WithHeaders(headers),
		otlpmetrichttp.WithTimeout(exportLimit), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig(traceRetry)))
}

// resource describes this process: OTEL_SERVICE_NAME (default ratchet)
// and OTEL_RESOURCE_ATTRIBUTES, read through m.Getenv.
func (m *Main) resource(ctx context.Context) (*resource.Resource, error) {
	attrs, err := parseList(m.Getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	kvs := []attribute.KeyValue{attribute.String("service.name", "ratchet"), attribute.String("service.version", version())}
	for k, v := range attrs {
		kvs = append(kvs, attribute.String(k, v))
	}
	if name := m.Getenv("OTEL_SERVICE_NAME"); name != "" {
		kvs = append(kvs, attribute.String("service.name", name))
	}
	// Later attributes win: the service name over the resource attributes,
	// which win over the default.
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(kvs...))
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: key=value pairs,
// comma-separated, values percent-encoded.
func parseHeaders(s string) (map[string]string, error) { return parseList(s) }

// parseList reads the OTEL_* list form: key=value,key=value, with
// percent-encoded values. Every malformed item is named.
func parseList(s string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for item := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("%q is not key=value", redactedItem(k)))
			continue
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("the value of %s is not percent-encoded", k))
			continue
		}
		out[k] = dv
	}
	return out, errors.Join(errs...)
}

// redactedItem is what an error may show of a malformed header: its name
// only, since the rest may be a secret.
func redactedItem(k string) string {
	if len(k) > 20 {
		return k[:20] + "…"
	}
	return k
}

// configure gives cfg the pipeline's providers.
func (t *telemetry) configure(cfg *runner.Config) {
	cfg.TracerProvider, cfg.MeterProvider = t.providers()
}

// providers returns the pipeline's providers, each nil (a nil interface,
// not a typed nil) when its signal is off.
func (t *telemetry) providers() (tp trace.TracerProvider, mp metric.MeterProvider) {
	if t == nil {
		return nil, nil
	}
	if t.tp != nil {
		tp = t.tp
	}
	if t.mp != nil {
		mp = t.mp
	}
	return tp, mp
}

// shutdown flushes what is left, waiting flushWait at most: less when the
// collector has already failed.
func (t *telemetry) shutdown() {
	if t == nil {
		return
	}
	wait := flushWait
	if t.warn.warned() {
		wait = 200 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	if t.tp != nil {
		wg.Go(func() { _ = t.tp.Shutdown(ctx) })
	}
	if t.mp != nil {
		wg.Go(func() { _ = t.mp.Shutdown(ctx) })
	}
	wg.Wait()
}

// warnOnce prints one warning when exports fail, however many do; the run
// carries on regardless.
type warnOnce struct {
	w        io.Writer
	redactor *redact.Redactor
	once     sync.Once
	mu       sync.Mutex
	failed   bool
}

func (w *warnOnce) report(where string, err error) {
	w.mu.Lock()
	w.failed = true
	w.mu.Unlock()
	w.once.Do(func() {
		fmt.Fprintf(w.w, "ratchet: warning: telemetry cannot reach %s: %s (the run goes on; telemetry may be lost, and no further warnings are shown)\n",
			where, w.redactor.String(err.Error()))
	})
}

func (w *warnOnce) warned() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// warnedSpans reports export failures through warnOnce instead of the
// SDK's global error handler, which would print every one.
type warnedSpans struct {
	sdktrace.SpanExporter
	warn  *warnOnce
	where string
}

func (e *warnedSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.warn.report(e.where, err)
	}
	return nil
}

type warnedMetrics struct {
	sdkmetric.Exporter
	warn  *warnOnce
	where string
}

func (e *warnedMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.warn.report(e.where, err)
	}
	return nil
}
