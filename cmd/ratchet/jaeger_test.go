package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
)

// jaeger is a Jaeger all-in-one (v2) started for one test, on ports of
// its own so that parallel test runs do not collide.
type jaeger struct {
	otlpHTTP, otlpGRPC, query string // host:port
}

// freePort returns a TCP port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// jaegerConfig is all-in-one's configuration cut to what the tests use:
// OTLP in, memory storage, the query API.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memory
    http:
      endpoint: %[1]s
    grpc:
      endpoint: 127.0.0.1:%[4]d
  jaeger_storage:
    backends:
      memory:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[2]s
      http:
        endpoint: %[3]s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memory
`

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := testenv.Jaeger(t)
	// The ports are free when picked, but another test may take one before
	// Jaeger binds it: a Jaeger that exits while starting is started again
	// on new ports.
	var logs []string
	for range 3 {
		j, log := tryJaeger(t, bin)
		if j != nil {
			return j
		}
		logs = append(logs, log)
	}
	t.Fatalf("jaeger exited while starting, 3 times:\n%s", strings.Join(logs, "\n---\n"))
	return nil
}

// tryJaeger starts Jaeger on fresh ports and waits for its query API; when
// it exits first, it returns its log instead.
func tryJaeger(t *testing.T, bin string) (*jaeger, string) {
	t.Helper()
	j := &jaeger{
		query:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		otlpGRPC: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		otlpHTTP: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, j.query, j.otlpGRPC, j.otlpHTTP, freePort(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close() // Jaeger keeps its own descriptor
	cmd := exec.Command(bin, "--config=file:"+cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once Wait returns, so that both the wait below and
	// the cleanup can see it (a value sent once would be taken by one).
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Sprintf("%v\n%s", waitErr, log)
		default:
		}
		if resp, err := http.Get("http://" + j.query + "/api/services"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j, ""
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("jaeger's query API did not come up within 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jaegerTrace is a trace as Jaeger's query API returns it.
type jaegerTrace struct {
	Spans []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags      []jaegerTag                    `json:"tags"`
		Logs      []struct{ Fields []jaegerTag } `json:"logs"`
		ProcessID string                         `json:"processID"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string      `json:"serviceName"`
		Tags        []jaegerTag `json:"tags"`
	} `json:"processes"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func tags(ts []jaegerTag) map[string]string {
	out := map[string]string{}
	for _, t := range ts {
		out[t.Key] = fmt.Sprint(t.Value)
	}
	return out
}

// trace waits for the trace with spans spans to be stored and returns it.
func (j *jaeger) trace(t *testing.T, id string, spans int) jaegerTrace {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + j.query + "/api/traces/" + id)
		if err != nil {
			last = err.Error()
			continue
		}
		var body struct {
			Data []jaegerTrace `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			last = err.Error()
			continue
		}
		if len(body.Data) == 1 && len(body.Data[0].Spans) >= spans {
			return body.Data[0]
		}
		last = fmt.Sprintf("status %d, %d traces", resp.StatusCode, len(body.Data))
		if len(body.Data) > 0 {
			last += fmt.Sprintf(", %d spans", len(body.Data[0].Spans))
		}
	}
	t.Fatalf("trace %s with %d spans not in Jaeger after 20s: %s", id, spans, last)
	return jaegerTrace{}
}

var runIDLine = regexp.MustCompile(`run: (run-\S+) \(ratchet show`)

// runTraced runs a task file with telemetry pointed at j and returns the
// run's trace ID.
func runTraced(t *testing.T, env map[string]string, task string) string {
	t.Helper()
	env["OTEL_SERVICE_NAME"] = "ratchet-e2e"
	env["OTEL_METRICS_EXPORTER"] = "none" // Jaeger takes traces only
	env["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment.name=e2e,team=agents%20platform"
	c := run(t, env, "run", "--json", "--db", filepath.Join(t.TempDir(), "runs.db"), task)
	c.wantCode(t, exitDone)
	if strings.Contains(c.stderr, "telemetry") {
		t.Errorf("a warning about telemetry: %s", c.stderr)
	}
	id := runIDLine.FindStringSubmatch(c.stderr)
	if id == nil {
		t.Fatalf("no run ID in %v", c)
	}
	return id[1]
}

// TestJaegerQuickstart runs the quickstart with OTLP over HTTP to a real
// Jaeger and reads the trace back through its query API: one
// invoke_agent span with a chat span per model call, an execute_tool span
// per tool call and a check span per check run under it, the run's exit
// and usage on it, and an evaluation event per verdict.
func TestJaegerQuickstart(t *testing.T) {
	j := startJaeger(t)
	runID := runTraced(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpHTTP}, quickstart)
	traceID := otelobs.TraceID(runID).String()
	tr := j.trace(t, traceID, 10)

	byName := map[string]int{}
	rootID := otelobs.SpanID(runID).String()
	var root map[string]string
	var rootEvents []map[string]string
	for _, s := range tr.Spans {
		byName[s.OperationName]++
		if s.SpanID == rootID {
			root = tags(s.Tags)
			for _, l := range s.Logs {
				rootEvents = append(rootEvents, tags(l.Fields))
			}
			if len(s.References) != 0 {
				t.Errorf("the root span has references %+v", s.References)
			}
			p := tr.Processes[s.ProcessID]
			pt := tags(p.Tags)
			if p.ServiceName != "ratchet-e2e" || pt["deployment.environment.name"] != "e2e" || pt["team"] != "agents platform" {
				t.Errorf("process %+v: want OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES", p)
			}
			continue
		}
		if len(s.References) != 1 || s.References[0].RefType != "CHILD_OF" || s.References[0].SpanID != rootID {
			t.Errorf("%s: references %+v, want CHILD_OF the run's span %s", s.OperationName, s.References, rootID)
		}
		tg := tags(s.Tags)
		switch {
		case strings.HasPrefix(s.OperationName, "chat "):
			if tg["gen_ai.operation.name"] != "chat" || tg["gen_ai.usage.input_tokens"] == "" || tg["gen_ai.usage.output_tokens"] == "" || tg["gen_ai.response.model"] != "quickstart-recording" || tg["span.kind"] != "client" {
				t.Errorf("%s: tags %v", s.OperationName, tg)
			}
		case strings.HasPrefix(s.OperationName, "execute_tool "):
			if tg["gen_ai.operation.name"] != "execute_tool" || "execute_tool "+tg["gen_ai.tool.name"] != s.OperationName || tg["gen_ai.tool.call.id"] == "" {
				t.Errorf("%s: tags %v", s.OperationName, tg)
			}
		case strings.HasPrefix(s.OperationName, "check "):
			if "check "+tg["ratchet.check.name"] != s.OperationName || tg["ratchet.check.tier"] == "" || tg["ratchet.check.provenance"] != "validation" || tg["ratchet.check.outcome"] == "" {
				t.Errorf("%s: tags %v", s.OperationName, tg)
			}
		}
	}
	want := map[string]int{"invoke_agent ratchet": 1, "chat quickstart-recording": 4, "execute_tool list_files": 1, "execute_tool read_file": 1, "check regex": 2, "check equals": 1}
	if fmt.Sprint(byName) != fmt.Sprint(want) {
		t.Errorf("spans %v, want %v", byName, want)
	}
	if root == nil {
		t.Fatalf("no span %s (the ID derived from %s)", rootID, runID)
	}
	for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ratchet", "gen_ai.conversation.id": runID,
		"ratchet.run.status": "done", "ratchet.usage.steps": "4", "ratchet.usage.tool_calls": "2", "ratchet.limit.steps": "8"} {
		if root[k] != v {
			t.Errorf("root span: %s = %q, want %q", k, root[k], v)
		}
	}
	var evals []string
	for _, e := range rootEvents {
		if e["event"] == "gen_ai.evaluation.result" {
			evals = append(evals, e["gen_ai.evaluation.name"]+" "+e["gen_ai.evaluation.score.label"])
		}
	}
	if got := strings.Join(evals, ", "); got != "regex fail, regex pass, equals pass" {
		t.Errorf("evaluation events: %s", got)
	}
}

// TestJaegerSubagents runs the sub-agents example with OTLP over gRPC: the
// sub-agent's invoke_agent span is a child of its parent's, in the same
// trace, and its tool call is under it.
func TestJaegerSubagents(t *testing.T) {
	j := startJaeger(t)
	runID := runTraced(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		filepath.Join("..", "..", "examples", "subagents", "task.yaml"))
	tr := j.trace(t, otelobs.TraceID(runID).String(), 8)
	parentID, childID := otelobs.SpanID(runID).String(), otelobs.SpanID(runID+"/c1").String()
	parentOf := map[string]string{}
	names := map[string]string{}
	var child map[string]string
	for _, s := range tr.Spans {
		names[s.SpanID] = s.OperationName
		if len(s.References) > 0 {
			parentOf[s.SpanID] = s.References[0].SpanID
		}
		if s.SpanID == childID {
			child = tags(s.Tags)
		}
	}
	if names[parentID] != "invoke_agent ratchet" || names[childID] != "invoke_agent ratchet.subagent" || parentOf[childID] != parentID {
		t.Fatalf("parent span %q, sub-agent span %q under %q: want the sub-agent's under the parent's %s", names[parentID], names[childID], parentOf[childID], parentID)
	}
	for k, v := range map[string]string{"gen_ai.conversation.id": runID + "/c1", "ratchet.run.parent": runID, "ratchet.run.status": "done", "ratchet.usage.steps": "2"} {
		if child[k] != v {
			t.Errorf("sub-agent span: %s = %q, want %q", k, child[k], v)
		}
	}
	tools := 0
	for id, name := range names {
		if name == "execute_tool read_file" {
			tools++
			if parentOf[id] != childID {
				t.Errorf("the sub-agent's read_file is under %s", names[parentOf[id]])
			}
		}
	}
	if tools != 1 {
		t.Errorf("%d read_file spans, want 1", tools)
	}
}

// TestUnreachableCollector: with nobody listening at the OTLP endpoint a
// run still ends done, promptly, with one warning.
func TestUnreachableCollector(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			start := time.Now()
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), "OTEL_EXPORTER_OTLP_PROTOCOL": proto}
			c := run(t, env, "run", "--db", filepath.Join(t.TempDir(), "runs.db"), quickstart)
			c.wantCode(t, exitDone)
			if n := strings.Count(c.stderr, "telemetry cannot reach"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, c.stderr)
			}
			if took := time.Since(start); took > flushWait+2*time.Second {
				t.Errorf("the run took %v with an unreachable collector", took)
			}
		})
	}
}
