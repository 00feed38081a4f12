package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	otelobs "github.com/ratchetloop/ratchet/observe/otel"

	"github.com/google/go-cmp/cmp"
)

// TestTelemetryOffByDefault: without OTEL_* variables asking, no pipeline
// is built; an endpoint alone turns on both signals over OTLP.
func TestTelemetryOffByDefault(t *testing.T) {
	for _, tc := range []struct {
		env             map[string]string
		traces, metrics bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, traces: true, metrics: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, traces: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, metrics: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, traces: true},
	} {
		m := &Main{Getenv: func(k string) string { return tc.env[k] }, Stderr: &strings.Builder{}}
		tel, err := m.startTelemetry(context.Background())
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		traces, metrics := tel != nil && tel.tp != nil, tel != nil && tel.mp != nil
		if traces != tc.traces || metrics != tc.metrics {
			t.Errorf("%v: traces %v metrics %v, want %v %v", tc.env, traces, metrics, tc.traces, tc.metrics)
		}
		tel.shutdown()
	}
}

// TestTelemetryConfigProblems: bad OTEL_* values stop the run before it
// starts, every problem named with its variable, and a header's value
// (a secret) never shown.
func TestTelemetryConfigProblems(t *testing.T) {
	c := run(t, map[string]string{
		"OTEL_TRACES_EXPORTER":        "zipkin",
		"OTEL_METRICS_EXPORTER":       "prometheus",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
		"OTEL_EXPORTER_OTLP_HEADERS":  "api-key=sk-secret-value%zz,novalue",
		"OTEL_RESOURCE_ATTRIBUTES":    "team",
	}, "run", quickstart)
	c.wantCode(t, exitUsage)
	for _, want := range []string{`OTEL_TRACES_EXPORTER="zipkin"`, `OTEL_METRICS_EXPORTER="prometheus"`, `OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`,
		"OTEL_EXPORTER_OTLP_HEADERS: the value of api-key is not percent-encoded", `"novalue" is not key=value`, `OTEL_RESOURCE_ATTRIBUTES: "team" is not key=value`} {
		if !strings.Contains(c.stderr, want) {
			t.Errorf("stderr lacks %s:\n%s", want, c.stderr)
		}
	}
	if strings.Count(c.stderr, "OTEL_EXPORTER_OTLP_PROTOCOL") != 1 {
		t.Errorf("the protocol's problem is named more than once:\n%s", c.stderr)
	}
	if strings.Contains(c.stderr, "sk-secret") {
		t.Errorf("a header value is shown:\n%s", c.stderr)
	}
}

func TestOTLPEndpoints(t *testing.T) {
	for _, tc := range []struct {
		env                 map[string]string
		signal, proto, want string
	}{
		{nil, "TRACES", "http/protobuf", "http://localhost:4318/v1/traces"},
		{nil, "METRICS", "grpc", "http://localhost:4317"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com:4318/"}, "TRACES", "http/protobuf", "https://otel.example.com:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com:4318"}, "METRICS", "http/protobuf", "https://otel.example.com:4318/v1/metrics"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, "TRACES", "grpc", "http://c:4317"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/custom"}, "TRACES", "http/protobuf", "http://t:9/custom"},
	} {
		if got := endpoint(func(k string) string { return tc.env[k] }, tc.signal, tc.proto); got != tc.want {
			t.Errorf("%v %s %s: %s, want %s", tc.env, tc.signal, tc.proto, got, tc.want)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := parseList(" api-key = a%2Cb%3Dc , x-tenant=acme,,")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"api-key": "a,b=c", "x-tenant": "acme"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestHeadersAreSecrets: the OTLP header values are what the CLI must
// never print or store.
func TestHeadersAreSecrets(t *testing.T) {
	m := &Main{Getenv: func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20tok-0123456789"}[k]
	}, Stderr: &strings.Builder{}}
	tel, err := m.startTelemetry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tel.shutdown()
	if diff := cmp.Diff([]string{"Bearer tok-0123456789"}, tel.Secrets); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if got := tel.warn.redactor.String("401: Bearer tok-0123456789 refused"); strings.Contains(got, "tok-0123456789") {
		t.Errorf("the warning's redactor leaves the header: %s", got)
	}
}

// TestConsoleTraces: OTEL_TRACES_EXPORTER=console writes the spans to
// stderr, leaving stdout to --json.
func TestConsoleTraces(t *testing.T) {
	c := run(t, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "run", "--json", "--db", filepath.Join(t.TempDir(), "runs.db"), quickstart)
	c.wantCode(t, exitDone)
	c.result(t) // stdout holds the Result alone
	for _, want := range []string{`"Name":"invoke_agent ratchet"`, `"Name":"execute_tool read_file"`, `"Name":"check equals"`} {
		if !strings.Contains(c.stderr, want) {
			t.Errorf("stderr lacks %s", want)
		}
	}
}

// TestEvalRunTraces: eval run traces each run as ratchet run does, each
// in a trace of its own although eval run IDs hold "/" as sub-agents' do.
func TestEvalRunTraces(t *testing.T) {
	env := map[string]string{"OTEL_TRACES_EXPORTER": "console", "RATCHET_EVAL_DIR": t.TempDir()}
	c := run(t, env, "eval", "run", evalSuite(t, 0.9), "--label", "traced", "--quiet", "--db", filepath.Join(t.TempDir(), "runs.db"))
	c.wantCode(t, exitDone)
	// The quickstart three times, always-wrong once, 40 simulated cases.
	if n := strings.Count(c.stderr, `"Name":"invoke_agent ratchet"`); n != 44 {
		t.Errorf("%d top-level invoke_agent spans on stderr, want 44", n)
	}
	if strings.Contains(c.stderr, "ratchet.subagent") {
		t.Error("an eval run is traced as a sub-agent")
	}
	for _, id := range []string{"traced/always-wrong/r0", "traced/" + filepath.Base(filepath.Dir(quickstart)) + "/r2"} {
		if want := otelobs.TraceID(id).String(); !strings.Contains(c.stderr, want) {
			t.Errorf("no span in run %s's own trace %s", id, want)
		}
	}
}

// TestTracesSampler: the SDK's own OTEL_TRACES_SAMPLER is honoured (the
// CLI sets no sampler of its own), so a run it leaves out exports no span.
func TestTracesSampler(t *testing.T) {
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0")
	c := run(t, map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "run", "--json", "--db", filepath.Join(t.TempDir(), "runs.db"), quickstart)
	c.wantCode(t, exitDone)
	c.result(t)
	if strings.Contains(c.stderr, `"Name":"`) {
		t.Errorf("a run the sampler leaves out exported spans:\n%s", c.stderr)
	}
}
