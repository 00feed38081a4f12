package otel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	otelobs "github.com/ratchetloop/ratchet/observe/otel"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// telemetry is an SDK pipeline that keeps everything in memory.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans), sdktrace.WithIDGenerator(otelobs.IDGenerator()))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) observer(t *testing.T, cfg otelobs.Config) *otelobs.Observer {
	t.Helper()
	cfg.TracerProvider, cfg.MeterProvider = tel.tp, tel.mp
	o, err := otelobs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// ended returns the ended spans by name, in the order they ended.
func (tel *telemetry) ended() map[string][]sdktrace.ReadOnlySpan {
	out := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range tel.spans.Ended() {
		out[s.Name()] = append(out[s.Name()], s)
	}
	return out
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// wantAttrs reports the attributes of what that differ from want.
func wantAttrs(t *testing.T, what string, kvs []attribute.KeyValue, want map[string]string) {
	t.Helper()
	got := attrs(kvs)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func events(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// clock returns times a second apart, as the runner's clock.
func clock() func() time.Time {
	var mu sync.Mutex
	at := time.Now().Truncate(time.Second) // deadlines derived from it are real
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(time.Second)
		return at
	}
}

type addIn struct{ A, B int }

var add = tool.Func("add", "Add two integers.", func(_ context.Context, in addIn) (int, error) {
	return in.A + in.B, nil
}, tool.Idempotent())

func conf(f float64) *float64 { return &f }

// retrying reports one transport retry before the first reply, and says
// which model it is.
type retrying struct {
	*scripted.Model
	once sync.Once
}

func (m *retrying) Name() string { return "anthropic:claude-test" }

func (m *retrying) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	m.once.Do(func() {
		if h := model.HooksFrom(ctx); h.OnRetry != nil {
			h.OnRetry(model.Retry{Attempt: 2, Status: 529, Wait: 500 * time.Millisecond, Reason: "529 overloaded"})
		}
	})
	resp, err := m.Model.Generate(ctx, req)
	resp.Usage = model.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 30}
	return resp, err
}

func script(t *testing.T, turns ...scripted.Turn) *scripted.Model {
	t.Helper()
	m, err := scripted.New(scripted.Script{Name: "test", Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func shape(t *testing.T) verify.Verifier {
	v, err := check.Regex(`^\d+$`)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRunSpans runs a task through the real runner with its telemetry
// configured (runner.Config's providers): a tool call, a rejected attempt
// and an accepted one. Every span is a child of the run's invoke_agent
// span, whose IDs derive from the run ID, and carries the conventions'
// attributes; each verdict is a check span and an evaluation event.
func TestRunSpans(t *testing.T) {
	tel := newTelemetry(t)
	m := &retrying{Model: script(t,
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"A": 2, "B": 3}}}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.9)}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}},
	)}
	task := runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Cheap: []verify.Verifier{shape(t)}, Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 10, Time: time.Minute},
	}
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m, RunID: "r1", Now: clock(), TracerProvider: tel.tp, MeterProvider: tel.mp})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %v %+v", err, res)
	}
	spans := tel.ended()
	counts := map[string]int{}
	for name, ss := range spans {
		counts[name] = len(ss)
	}
	want := map[string]int{"invoke_agent ratchet": 1, "chat claude-test": 3, "execute_tool add": 1, "check regex": 2, "check equals": 2}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Fatalf("spans (-want +got):\n%s", diff)
	}
	root := spans["invoke_agent ratchet"][0]
	if root.SpanContext().TraceID() != otelobs.TraceID("r1") || root.SpanContext().SpanID() != otelobs.SpanID("r1") || root.Parent().IsValid() {
		t.Errorf("root span %v (parent %v): want the IDs derived from r1 and no parent", root.SpanContext(), root.Parent())
	}
	if root.SpanKind() != trace.SpanKindInternal {
		t.Errorf("root kind %v", root.SpanKind())
	}
	for _, s := range tel.spans.Ended() {
		if s != root && s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("%s: parent %v, want the run's span", s.Name(), s.Parent().SpanID())
		}
		if s.SpanContext().TraceID() != otelobs.TraceID("r1") {
			t.Errorf("%s: trace %v", s.Name(), s.SpanContext().TraceID())
		}
	}
	wantAttrs(t, "root", root.Attributes(), map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ratchet", "gen_ai.conversation.id": "r1",
		"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test",
		"ratchet.run.status": "done", "ratchet.usage.steps": "3", "ratchet.usage.model_calls": "3", "ratchet.usage.tool_calls": "1",
		"ratchet.usage.input_tokens": "390", "ratchet.usage.output_tokens": "60", "ratchet.limit.steps": "10", "ratchet.run.attempts": "2",
		"ratchet.best.accepted": "true",
	})
	if _, ok := attrs(root.Attributes())["gen_ai.input.messages"]; ok {
		t.Error("the goal is recorded without content capture")
	}
	chat := spans["chat claude-test"][0]
	if chat.SpanKind() != trace.SpanKindClient {
		t.Errorf("chat kind %v", chat.SpanKind())
	}
	wantAttrs(t, "chat", chat.Attributes(), map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test",
		"gen_ai.response.model": "test", "gen_ai.usage.input_tokens": "130", "gen_ai.usage.output_tokens": "20",
		"gen_ai.usage.cache_read.input_tokens": "30", "gen_ai.response.finish_reasons": `["tool_use"]`,
		"ratchet.model.purpose": "step",
	})
	// The runner's clock, not the observer's, times the span.
	if got := chat.EndTime().Sub(chat.StartTime()); got <= 0 || got%time.Second != 0 {
		t.Errorf("chat span lasts %v, want the whole seconds of the test's clock between its command and its reply", got)
	}
	retries := events(chat, "ratchet.retry")
	if len(retries) != 1 {
		t.Fatalf("first chat span: %d retry events, want 1", len(retries))
	}
	wantAttrs(t, "retry", retries[0].Attributes, map[string]string{"ratchet.retry.attempt": "2", "http.response.status_code": "529", "ratchet.retry.wait_ms": "500", "ratchet.retry.reason": "529 overloaded"})
	tl := spans["execute_tool add"][0]
	wantAttrs(t, "execute_tool", tl.Attributes(), map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.type": "function", "ratchet.tool.outcome": "ok",
	})
	if attrs(tl.Attributes())["gen_ai.tool.call.id"] == "" {
		t.Error("execute_tool without gen_ai.tool.call.id")
	}
	eq := spans["check equals"]
	wantAttrs(t, "check equals 1", eq[0].Attributes(), map[string]string{"ratchet.check.name": "equals", "ratchet.check.tier": "expensive", "ratchet.check.outcome": "fail", "ratchet.check.ok": "false", "ratchet.check.provenance": "validation", "ratchet.attempt": "1"})
	wantAttrs(t, "check equals 2", eq[1].Attributes(), map[string]string{"ratchet.check.outcome": "pass", "ratchet.attempt": "2"})
	wantAttrs(t, "check regex", spans["check regex"][0].Attributes(), map[string]string{"ratchet.check.tier": "cheap", "ratchet.check.outcome": "pass"})

	evals := events(root, "gen_ai.evaluation.result")
	var got []string
	for _, e := range evals {
		a := attrs(e.Attributes)
		got = append(got, a["gen_ai.evaluation.name"]+" "+a["ratchet.check.tier"]+" "+a["gen_ai.evaluation.score.label"]+" "+a["gen_ai.evaluation.score.value"]+" attempt "+a["ratchet.attempt"])
	}
	wantEvals := []string{"regex cheap pass 1 attempt 1", "equals expensive fail 0 attempt 1", "regex cheap pass 1 attempt 2", "equals expensive pass 1 attempt 2"}
	if diff := cmp.Diff(wantEvals, got); diff != "" {
		t.Errorf("evaluation events (-want +got):\n%s", diff)
	}
	if n := len(events(root, "ratchet.attempt.rejected")); n != 1 {
		t.Errorf("%d rejected events, want 1", n)
	}

	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	ms := metrics(rm)
	if diff := cmp.Diff(map[string]int64{"chat anthropic claude-test test input": 390, "chat anthropic claude-test test output": 60}, histSums(ms["gen_ai.client.token.usage"], "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.token.type")); diff != "" {
		t.Errorf("gen_ai.client.token.usage sums (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"chat": 3}, histCounts(ms["gen_ai.client.operation.duration"], "gen_ai.operation.name")); diff != "" {
		t.Errorf("gen_ai.client.operation.duration counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"done run": 1}, sums(ms["ratchet.runs"], "ratchet.run.status", "ratchet.run.kind")); diff != "" {
		t.Errorf("ratchet.runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"done": 1}, histCounts(ms["ratchet.run.duration"], "ratchet.run.status")); diff != "" {
		t.Errorf("ratchet.run.duration (-want +got):\n%s", diff)
	}
	used := histSums(ms["ratchet.budget.used"], "ratchet.budget.dimension")
	for dim, want := range map[string]int64{"steps": 3, "model_calls": 3, "tool_calls": 1, "input_tokens": 390, "output_tokens": 60} {
		if used[dim] != want {
			t.Errorf("ratchet.budget.used %s = %d, want %d", dim, used[dim], want)
		}
	}
	if diff := cmp.Diff(map[string]int64{"equals expensive fail": 1, "equals expensive pass": 1, "regex cheap pass": 2},
		sums(ms["ratchet.check.verdicts"], "ratchet.check.name", "ratchet.check.tier", "ratchet.check.outcome")); diff != "" {
		t.Errorf("ratchet.check.verdicts (-want +got):\n%s", diff)
	}
}

func metrics(rm metricdata.ResourceMetrics) map[string]metricdata.Metrics {
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func key(set attribute.Set, keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, _ := set.Value(attribute.Key(k))
		parts[i] = v.String()
	}
	return strings.Join(parts, " ")
}

func sums(m metricdata.Metrics, keys ...string) map[string]int64 {
	out := map[string]int64{}
	if s, ok := m.Data.(metricdata.Sum[int64]); ok {
		for _, dp := range s.DataPoints {
			out[key(dp.Attributes, keys)] += dp.Value
		}
	}
	return out
}

func histSums(m metricdata.Metrics, keys ...string) map[string]int64 {
	out := map[string]int64{}
	if h, ok := m.Data.(metricdata.Histogram[int64]); ok {
		for _, dp := range h.DataPoints {
			out[key(dp.Attributes, keys)] += dp.Sum
		}
	}
	return out
}

func histCounts(m metricdata.Metrics, keys ...string) map[string]int64 {
	out := map[string]int64{}
	switch h := m.Data.(type) {
	case metricdata.Histogram[int64]:
		for _, dp := range h.DataPoints {
			out[key(dp.Attributes, keys)] += int64(dp.Count)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range h.DataPoints {
			out[key(dp.Attributes, keys)] += int64(dp.Count)
		}
	}
	return out
}

// TestSubagentSpans: a sub-agent's invoke_agent span is a child of its
// parent's, in the parent's trace, with the span ID its run ID derives.
func TestSubagentSpans(t *testing.T) {
	tel := newTelemetry(t)
	m := script(t,
		scripted.Turn{Tools: []scripted.ToolCall{{Name: loop.SpawnTool, Args: map[string]any{"goal": "Add 2 and 3."}}}},
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"A": 2, "B": 3}}}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	)
	task := runner.Task{
		Goal:      "What is 2+3? Ask a sub-agent.",
		Tools:     []tool.Tool{add},
		Checks:    verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
		Budget:    budget.Limits{Steps: 10, Time: time.Minute},
		Subagents: &runner.Subagents{Checks: verify.Tiers{Cheap: []verify.Verifier{shape(t)}}, Budget: budget.Limits{Steps: 4}},
	}
	res, err := runner.Run(context.Background(), task, runner.Config{Model: m, RunID: "p", Now: clock(), TracerProvider: tel.tp})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %v %+v", err, res)
	}
	spans := tel.ended()
	if len(spans["invoke_agent ratchet"]) != 1 || len(spans["invoke_agent ratchet.subagent"]) != 1 {
		t.Fatalf("spans: %v", slices.Collect(func(yield func(string) bool) {
			for n := range spans {
				yield(n)
			}
		}))
	}
	parent, child := spans["invoke_agent ratchet"][0], spans["invoke_agent ratchet.subagent"][0]
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("sub-agent span: parent %v trace %v, want the parent run's span %v", child.Parent(), child.SpanContext().TraceID(), parent.SpanContext())
	}
	if child.SpanContext().SpanID() != otelobs.SpanID("p/c1") {
		t.Errorf("sub-agent span ID %v, want the one p/c1 derives", child.SpanContext().SpanID())
	}
	wantAttrs(t, "sub-agent", child.Attributes(), map[string]string{"gen_ai.conversation.id": "p/c1", "ratchet.run.parent": "p", "ratchet.run.status": "done", "ratchet.usage.steps": "2"})
	tl := spans["execute_tool add"][0]
	if tl.Parent().SpanID() != child.SpanContext().SpanID() {
		t.Errorf("the sub-agent's tool call is not under its span")
	}
	if n := len(events(parent, "ratchet.subagent.started")) + len(events(parent, "ratchet.subagent.ended")); n != 2 {
		t.Errorf("parent has %d sub-agent events, want 2", n)
	}
	wantAttrs(t, "parent", parent.Attributes(), map[string]string{"ratchet.usage.steps": "4"})
}

// feed hands an Observer a run's entries, numbered and a second apart.
type feed struct {
	o   observe.Observer
	run string
	seq int64
	at  time.Time
}

func (f *feed) add(entries ...observe.Entry) {
	for _, e := range entries {
		f.seq++
		f.at = f.at.Add(time.Second)
		e.Seq, e.Run, e.At = f.seq, f.run, f.at
		switch {
		case e.Spec != nil:
			e.Kind = observe.KindRun
		case e.Event != nil:
			e.Kind = observe.KindEvent
		case e.Command != nil:
			e.Kind = observe.KindCommand
		case e.Note != nil:
			e.Kind = observe.KindNote
		case e.Retry != nil:
			e.Kind = observe.KindRetry
		case e.Fallback != nil:
			e.Kind = observe.KindFallback
		case e.Wait != nil:
			e.Kind = observe.KindWait
		}
		f.o.Observe(e)
	}
}

func ev(e loop.Event) observe.Entry    { return observe.Entry{Event: &e} }
func cmd(c loop.Command) observe.Entry { return observe.Entry{Command: &c} }
func note(n loop.Note) observe.Entry   { return observe.Entry{Note: &n} }

func finish(status loop.Status, question string) observe.Entry {
	return cmd(loop.Command{Type: loop.Finish, ID: "f", Result: &loop.Result{Status: status, Reason: "why", Question: question}})
}

var spec = loop.Spec{Goal: "the goal", Checks: []loop.Check{{Name: "exec", Tier: verify.Expensive}}, Budget: budget.Limits{Steps: 5}}

// TestResumeContinuesTheTrace: a process that carries a run on (its first
// entry is a resume, not the spec) starts an invoke_agent span in the
// run's trace, linked to the span of the process that started it.
func TestResumeContinuesTheTrace(t *testing.T) {
	first, second := newTelemetry(t), newTelemetry(t)
	f := &feed{o: first.observer(t, otelobs.Config{}), run: "r9"}
	f.add(observe.Entry{Spec: &spec}, ev(loop.Event{Type: loop.EventStart}), cmd(loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{}}),
		ev(loop.Event{Type: loop.EventCancel, Text: "interrupt"}), finish(loop.Cancelled, ""))
	f.o = second.observer(t, otelobs.Config{})
	f.add(ev(loop.Event{Type: loop.EventResume}), cmd(loop.Command{Type: loop.CallModel, ID: "m2", Request: &model.Request{}}),
		ev(loop.Event{Type: loop.EventModelReply, Call: "m2", Reply: &model.Response{}}), finish(loop.Done, ""))

	a, b := first.ended()["invoke_agent ratchet"], second.ended()["invoke_agent ratchet"]
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("invoke_agent spans: %d then %d", len(a), len(b))
	}
	if a[0].SpanContext().SpanID() != otelobs.SpanID("r9") {
		t.Errorf("first span ID %v", a[0].SpanContext().SpanID())
	}
	if b[0].SpanContext().TraceID() != a[0].SpanContext().TraceID() || b[0].SpanContext().SpanID() == a[0].SpanContext().SpanID() {
		t.Errorf("resumed span %v: want the first's trace %v and a span ID of its own", b[0].SpanContext(), a[0].SpanContext())
	}
	links := b[0].Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != a[0].SpanContext().SpanID() || links[0].SpanContext.TraceID() != a[0].SpanContext().TraceID() {
		t.Errorf("resumed span links %+v, want one to the first span", links)
	}
	wantAttrs(t, "resumed", b[0].Attributes(), map[string]string{"ratchet.run.resumed": "true", "ratchet.run.status": "done"})
	if n := len(events(a[0], "ratchet.cancelled")); n != 1 {
		t.Errorf("first span: %d cancelled events", n)
	}
	// The chat call cut off by the cancel ends with the run.
	if n := len(first.ended()["chat "]); n != 1 {
		t.Errorf("first process: %d chat spans ended, want 1", n)
	}
}

// TestSpanEvents: what the loop decides and how a run ends are span
// events and attributes of its invoke_agent span.
func TestSpanEvents(t *testing.T) {
	approval := &loop.ToolCall{ID: "t7", Name: "deploy"}
	yes := true
	cases := []struct {
		name    string
		entries []observe.Entry
		events  map[string]map[string]string // event name → attributes it must have
		root    map[string]string
		check   map[string]string // attributes of the check span, if any
	}{{
		name: "interventions then a stall",
		entries: []observe.Entry{
			note(loop.Note{Type: loop.NoteIntervention, Step: 3, Pattern: "repeating", Rung: "reflect"}),
			note(loop.Note{Type: loop.NoteIntervention, Step: 5, Pattern: "repeating", Rung: "widen"}),
			finish(loop.Stalled("repeating"), ""),
		},
		events: map[string]map[string]string{
			"ratchet.intervention": {"ratchet.progress.pattern": "repeating", "ratchet.intervention.rung": "widen", "ratchet.step": "5"},
			"ratchet.stalled":      {"ratchet.progress.pattern": "repeating"},
		},
		root: map[string]string{"ratchet.run.status": "stalled:repeating"},
	}, {
		name: "budget exhausted",
		entries: []observe.Entry{
			note(loop.Note{Type: loop.NoteClosing, Step: 5, Problem: "steps"}),
			finish(loop.Exhausted(budget.Steps), ""),
		},
		events: map[string]map[string]string{
			"ratchet.budget.closing":   {"ratchet.budget.dimension": "steps"},
			"ratchet.budget.exhausted": {"ratchet.budget.dimension": "steps"},
		},
		root: map[string]string{"ratchet.run.status": "exhausted:steps"},
	}, {
		name: "approval",
		entries: []observe.Entry{
			cmd(loop.Command{Type: loop.AskHuman, ID: "h1", Question: "May I deploy?", Approval: approval}),
			ev(loop.Event{Type: loop.EventHumanReply, Call: "h1", Approved: &yes}),
			finish(loop.Done, ""),
		},
		events: map[string]map[string]string{
			"ratchet.approval.requested": {"ratchet.tool.name": "deploy", "ratchet.tool.call.id": "t7"},
			"ratchet.approval.decided":   {"ratchet.tool.name": "deploy", "ratchet.approval.approved": "true"},
		},
	}, {
		name: "escalation",
		entries: []observe.Entry{
			cmd(loop.Command{Type: loop.AskHuman, ID: "h1", Question: "Which file?"}),
			ev(loop.Event{Type: loop.EventHumanUnavailable, Call: "h1"}),
			finish(loop.Escalated, "Which file?"),
		},
		events: map[string]map[string]string{
			"ratchet.escalation":        {"ratchet.ask.id": "h1"},
			"ratchet.human.unavailable": {},
			"ratchet.escalated":         {},
		},
		root: map[string]string{"ratchet.run.status": "escalated"},
	}, {
		name: "a check that could not run",
		entries: []observe.Entry{
			cmd(loop.Command{Type: loop.Verify, ID: "v1.expensive", Candidate: &verify.Candidate{Answer: "x", Attempt: 1}, Checks: []string{"exec"}}),
			ev(loop.Event{Type: loop.EventCheckError, Call: "v1.expensive", Error: &loop.Failure{Kind: "error", Message: "check exec: no sandbox"}}),
			finish(loop.Failed, ""),
		},
		root:  map[string]string{"ratchet.run.status": "failed", "error.type": "failed"},
		check: map[string]string{"ratchet.check.outcome": "error", "ratchet.check.tier": "expensive", "error.type": "check_error"},
	}, {
		name: "a retry of a call this process did not see start",
		entries: []observe.Entry{
			{Retry: &observe.Retry{Call: "m9", Retry: model.Retry{Attempt: 3, Status: 429, Reason: "429 rate_limited"}}},
			finish(loop.Done, ""),
		},
		events: map[string]map[string]string{
			"ratchet.retry": {"ratchet.call.id": "m9", "ratchet.retry.attempt": "3", "http.response.status_code": "429"},
		},
	}, {
		name: "a fallback and a wait for the provider's limits",
		entries: []observe.Entry{
			{Wait: &observe.Wait{Call: "m9", Wait: model.Wait{Provider: "anthropic", For: 1500 * time.Millisecond, Reason: "requests per minute (50) reached"}}},
			{Fallback: &observe.Fallback{Call: "m9", Fallback: model.Fallback{From: "anthropic:claude-sonnet-4-5", To: "openai:gpt-4.1", Reason: "529 overloaded"}}},
			finish(loop.Done, ""),
		},
		events: map[string]map[string]string{
			"ratchet.wait":     {"ratchet.call.id": "m9", "ratchet.wait.provider": "anthropic", "ratchet.wait.max_ms": "1500", "ratchet.wait.reason": "requests per minute (50) reached"},
			"ratchet.fallback": {"ratchet.call.id": "m9", "ratchet.fallback.from": "anthropic:claude-sonnet-4-5", "ratchet.fallback.to": "openai:gpt-4.1", "ratchet.fallback.reason": "529 overloaded"},
		},
	}, {
		name: "observations, attempts and context",
		entries: []observe.Entry{
			note(loop.Note{Type: loop.NoteObservation, Step: 1, Problem: "unknown_tool"}),
			note(loop.Note{Type: loop.NoteAttempt, Step: 2, Attempt: 1}),
			note(loop.Note{Type: loop.NoteContext, Step: 3, Problem: "compacted", TokensBefore: 900, TokensAfter: 300}),
			finish(loop.Done, ""),
		},
		events: map[string]map[string]string{
			"ratchet.observation": {"ratchet.problem": "unknown_tool"},
			"ratchet.attempt":     {"ratchet.attempt": "1"},
			"ratchet.context":     {"ratchet.problem": "compacted", "ratchet.context.tokens_before": "900", "ratchet.context.tokens_after": "300"},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			f := &feed{o: tel.observer(t, otelobs.Config{}), run: "r"}
			f.add(observe.Entry{Spec: &spec}, ev(loop.Event{Type: loop.EventStart}))
			f.add(tc.entries...)
			spans := tel.ended()
			roots := spans["invoke_agent ratchet"]
			if len(roots) != 1 {
				t.Fatalf("%d invoke_agent spans ended", len(roots))
			}
			root := roots[0]
			for name, want := range tc.events {
				got := events(root, name)
				if len(got) == 0 {
					t.Errorf("no %s event", name)
					continue
				}
				wantAttrs(t, name, got[len(got)-1].Attributes, want)
			}
			wantAttrs(t, "root", root.Attributes(), tc.root)
			if tc.check != nil {
				cs := spans["check exec"]
				if len(cs) != 1 {
					t.Fatalf("%d check spans", len(cs))
				}
				wantAttrs(t, "check", cs[0].Attributes(), tc.check)
			}
		})
	}
}

// TestModelError: a failed model call ends its chat span with error.type.
func TestModelError(t *testing.T) {
	tel := newTelemetry(t)
	f := &feed{o: tel.observer(t, otelobs.Config{Model: "openai-compatible:http://localhost:11434/v1#llama3"}), run: "r"}
	f.add(observe.Entry{Spec: &spec}, ev(loop.Event{Type: loop.EventStart}),
		cmd(loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{MaxOutputTokens: 512}}),
		ev(loop.Event{Type: loop.EventModelError, Call: "m1", Error: &loop.Failure{Kind: "deadline", Message: "time budget"}}),
		finish(loop.Exhausted(budget.Time), ""))
	chats := tel.ended()["chat llama3"]
	if len(chats) != 1 {
		t.Fatalf("%d chat spans", len(chats))
	}
	wantAttrs(t, "chat", chats[0].Attributes(), map[string]string{"error.type": "deadline", "gen_ai.provider.name": "openai", "gen_ai.request.model": "llama3", "gen_ai.request.max_tokens": "512"})
	if chats[0].Status().Code.String() != "Error" {
		t.Errorf("chat status %v", chats[0].Status())
	}
}

// TestProviderNames: gen_ai.provider.name is the conventions' well-known
// value for each of ratchet's model prefixes.
func TestProviderNames(t *testing.T) {
	for name, want := range map[string]string{
		"anthropic:claude-sonnet-4-5":        "anthropic",
		"openai:gpt-4.1":                     "openai",
		"openai-responses:gpt-5":             "openai",
		"openai-compatible:http://h/v1#qwen": "openai",
		"gemini:gemini-2.5-flash":            "gcp.gemini",
	} {
		tel := newTelemetry(t)
		f := &feed{o: tel.observer(t, otelobs.Config{Model: name}), run: "r"}
		f.add(observe.Entry{Spec: &spec}, ev(loop.Event{Type: loop.EventStart}),
			cmd(loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{}}),
			ev(loop.Event{Type: loop.EventModelReply, Call: "m1", Reply: &model.Response{StopReason: "end_turn"}}),
			finish(loop.Done, ""))
		chats := 0
		for span, spans := range tel.ended() {
			if strings.HasPrefix(span, "chat ") {
				chats++
				wantAttrs(t, name, spans[0].Attributes(), map[string]string{"gen_ai.provider.name": want})
			}
		}
		if chats != 1 {
			t.Errorf("%s: %d chat spans", name, chats)
		}
	}
}

// TestContentCapture: content is left out unless asked for, and what is
// recorded has its secrets redacted.
func TestContentCapture(t *testing.T) {
	const secret = "sk-live-0123456789"
	entries := []observe.Entry{
		observe.Entry{Spec: &loop.Spec{Goal: "use key " + secret}},
		ev(loop.Event{Type: loop.EventStart}),
		cmd(loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{System: "be brief", Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("use key " + secret)}}}}}),
		ev(loop.Event{Type: loop.EventModelReply, Call: "m1", Reply: &model.Response{StopReason: "tool_use", Content: []model.Block{{Type: model.ToolUse, ID: "t1", Name: "read_file", Input: []byte(`{"path":"` + secret + `"}`)}}}}),
		cmd(loop.Command{Type: loop.RunTools, ID: "r1", Calls: []loop.ToolCall{{ID: "t1", Name: "read_file", Args: []byte(`{"path":"` + secret + `"}`)}}}),
		ev(loop.Event{Type: loop.EventToolResult, Call: "t1", Tool: &loop.ToolOutcome{Output: "the key is " + secret}}),
		finish(loop.Done, ""),
	}
	content := []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
	for _, capture := range []bool{false, true} {
		tel := newTelemetry(t)
		f := &feed{o: tel.observer(t, otelobs.Config{CaptureContent: capture, Redactor: redact.New(secret)}), run: "r"}
		f.add(entries...)
		found := map[string]bool{}
		for _, s := range tel.spans.Ended() {
			for k, v := range attrs(s.Attributes()) {
				if slices.Contains(content, k) {
					found[k] = true
				}
				if strings.Contains(v, secret) {
					t.Errorf("capture %v: %s %s holds the secret: %s", capture, s.Name(), k, v)
				}
			}
		}
		for _, k := range content {
			if found[k] != capture {
				t.Errorf("capture %v: %s recorded: %v", capture, k, found[k])
			}
		}
	}
}

func TestCaptureContentFromEnv(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "no_content": false, "true": true, "TRUE": true, "span_only": true, "SPAN_AND_EVENT": true, "event_only": false} {
		if got := otelobs.CaptureContentFromEnv(func(string) string { return v }); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

// TestApprovalAcrossProcesses: a run that stops to wait for a person's
// approval ends its span, suspended, when Run returns; resumed with the
// approval (as ratchet approve does, in another process with other
// providers), it carries on in the same trace, linked to the first span.
func TestApprovalAcrossProcesses(t *testing.T) {
	db := memory.New()
	turns := []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"A": 2, "B": 3}}}},
		{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	}
	task := runner.Task{
		Goal:        "What is 2+3?",
		Tools:       []tool.Tool{add},
		Checks:      verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
		Permissions: []loop.Permission{{Tool: "add", Action: loop.Ask}},
		Budget:      budget.Limits{Steps: 10, Time: time.Minute},
	}
	first, second := newTelemetry(t), newTelemetry(t)
	_, err := runner.Run(context.Background(), task, runner.Config{Model: script(t, turns...), RunID: "a1", Store: db, Human: runner.Later, TracerProvider: first.tp})
	var awaiting *runner.AwaitingError
	if !errors.As(err, &awaiting) {
		t.Fatalf("run: %v, want it awaiting input", err)
	}
	spans := first.ended()["invoke_agent ratchet"]
	if len(spans) != 1 {
		t.Fatalf("%d invoke_agent spans ended while the run waits, want 1", len(spans))
	}
	wantAttrs(t, "waiting", spans[0].Attributes(), map[string]string{"ratchet.run.suspended": "true"})
	if len(events(spans[0], "ratchet.approval.requested")) != 1 {
		t.Error("no approval.requested event")
	}
	yes := true
	res, err := runner.Resume(context.Background(), task, runner.Config{Model: script(t, turns...), RunID: "a1", Store: db, TracerProvider: second.tp}, runner.ResumeOptions{Approved: &yes})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resume: %v %+v", err, res)
	}
	again := second.ended()["invoke_agent ratchet"]
	if len(again) != 1 {
		t.Fatalf("%d invoke_agent spans after the resume", len(again))
	}
	sc := again[0].SpanContext()
	if sc.TraceID() != spans[0].SpanContext().TraceID() || len(again[0].Links()) != 1 || again[0].Links()[0].SpanContext.SpanID() != spans[0].SpanContext().SpanID() {
		t.Errorf("resumed span %v links %+v: want the first's trace and a link to it", sc, again[0].Links())
	}
	wantAttrs(t, "resumed", again[0].Attributes(), map[string]string{"ratchet.run.status": "done", "ratchet.run.resumed": "true"})
	if d := events(again[0], "ratchet.approval.decided"); len(d) != 1 {
		t.Error("the resumed span has no approval.decided event")
	} else {
		wantAttrs(t, "approval.decided", d[0].Attributes, map[string]string{"ratchet.approval.approved": "true"})
	}
	if len(second.ended()["execute_tool add"]) != 1 {
		t.Error("the approved call has no execute_tool span")
	}
}

// seenSampler records the attributes each span starts with, by span name,
// and samples only the spans sample says.
type seenSampler struct {
	mu     sync.Mutex
	seen   map[string]map[string]string
	sample func(name string) bool
}

func (s *seenSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[p.Name] = attrs(p.Attributes)
	d := sdktrace.Drop
	if s.sample(p.Name) {
		d = sdktrace.RecordAndSample
	}
	return sdktrace.SamplingResult{Decision: d, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (*seenSampler) Description() string { return "seen" }

// TestSampling: a sampler sees the conventions' sampling-relevant
// attributes when a span starts; a span it drops is not recorded, while
// the spans it keeps have all their attributes and the metrics are
// recorded whatever it decides.
func TestSampling(t *testing.T) {
	tel := newTelemetry(t)
	sampler := &seenSampler{seen: map[string]map[string]string{}, sample: func(name string) bool { return !strings.HasPrefix(name, "chat") }}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = tel.tp.Shutdown(context.Background()) })
	f := &feed{o: tel.observer(t, otelobs.Config{Model: "anthropic:claude-test"}), run: "r"}
	f.add(observe.Entry{Spec: &loop.Spec{Goal: "g", Tools: []model.ToolSpec{{Name: "add"}}}}, ev(loop.Event{Type: loop.EventStart}),
		cmd(loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{MaxOutputTokens: 512}}),
		ev(loop.Event{Type: loop.EventModelReply, Call: "m1", Reply: &model.Response{Model: "claude-test", Usage: model.Usage{InputTokens: 7, OutputTokens: 3}}}),
		cmd(loop.Command{Type: loop.RunTools, ID: "r1", Calls: []loop.ToolCall{{ID: "t1", Name: "add", Args: []byte(`{}`)}}}),
		ev(loop.Event{Type: loop.EventToolResult, Call: "t1", Tool: &loop.ToolOutcome{Output: "2", Outcome: "ok"}}),
		finish(loop.Done, ""))
	want := map[string]map[string]string{
		"chat claude-test": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test"},
		"execute_tool add": {"gen_ai.operation.name": "execute_tool"},
	}
	for name, kvs := range want {
		if diff := cmp.Diff(kvs, sampler.seen[name]); diff != "" {
			t.Errorf("the sampler saw %s start with (-want +got):\n%s", name, diff)
		}
	}
	spans := tel.ended()
	if len(spans["chat claude-test"]) != 0 {
		t.Errorf("a dropped chat span was recorded")
	}
	if tl := spans["execute_tool add"]; len(tl) != 1 {
		t.Errorf("%d execute_tool spans, want 1", len(tl))
	} else {
		wantAttrs(t, "execute_tool", tl[0].Attributes(), map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "t1", "ratchet.tool.outcome": "ok"})
	}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found = found || m.Name == "gen_ai.client.token.usage"
		}
	}
	if !found {
		t.Error("no gen_ai.client.token.usage for a call whose span was dropped")
	}
}

// TestStoppedEndsOpenCalls: a model call under way when the process stops
// driving its run ends its chat span then, with the request's attributes.
func TestStoppedEndsOpenCalls(t *testing.T) {
	tel := newTelemetry(t)
	o := tel.observer(t, otelobs.Config{Model: "anthropic:claude-test"})
	f := &feed{o: o, run: "r"}
	f.add(observe.Entry{Spec: &spec}, ev(loop.Event{Type: loop.EventStart}),
		cmd(loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{MaxOutputTokens: 512, Purpose: model.PurposeStep}}))
	o.Stopped("r", f.at.Add(time.Second))
	chats := tel.ended()["chat claude-test"]
	if len(chats) != 1 {
		t.Fatalf("%d chat spans", len(chats))
	}
	wantAttrs(t, "chat", chats[0].Attributes(), map[string]string{"gen_ai.operation.name": "chat", "ratchet.call.id": "m1", "ratchet.model.purpose": "step", "gen_ai.request.max_tokens": "512"})
}
