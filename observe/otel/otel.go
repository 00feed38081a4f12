// Package otel derives OpenTelemetry traces and metrics from a run's log,
// as the GenAI semantic conventions name them, plus what is ratchet's own:
// checks, budgets and the progress monitor. It is an observe.Observer: it
// reads the entries the runner records and changes nothing, so the loop
// core stays pure and replay is unaffected. docs/observability.md lists
// every span, attribute, event and metric.
//
// Spans are timed by the entries' timestamps, not by a clock read here: a
// chat span runs from its call_model command to the model_reply (or
// model_error) that answers it, an execute_tool span from its run_tools
// command to its tool_result, a check span from its verify command to its
// verdict. A run is one invoke_agent span; a sub-agent's run is an
// invoke_agent span under its parent's.
//
// Trace and span IDs of a run's invoke_agent span are derived from the run
// ID when the TracerProvider uses IDGenerator, so a resumed run (a new
// process carrying it on) lands in the same trace, its invoke_agent span
// linked to the first one's.
package otel

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/verify"
)

// The span kinds, as options made once.
var (
	clientKind   = trace.WithSpanKind(trace.SpanKindClient)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// ScopeName is the instrumentation scope of every span and metric.
const ScopeName = "github.com/ratchetloop/ratchet/observe/otel"

// CaptureContentVar is the GenAI conventions' variable that opts in to
// recording message content (prompts, replies, tool arguments and
// results, check feedback) on spans.
const CaptureContentVar = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// CaptureContentFromEnv reports whether CaptureContentVar asks for message
// content: "true", or a mode that records it on spans ("span_only",
// "span_and_event"), in any case. Anything else, unset included, means no.
func CaptureContentFromEnv(getenv func(string) string) bool {
	switch strings.ToLower(strings.TrimSpace(getenv(CaptureContentVar))) {
	case "true", "1", "span_only", "span_and_event":
		return true
	}
	return false
}

// Config says where telemetry goes. The zero value records nothing.
type Config struct {
	// TracerProvider receives the spans; nil means no spans. Give it
	// IDGenerator (sdktrace.WithIDGenerator) for trace IDs derived from
	// run IDs.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the metrics; nil means no metrics.
	MeterProvider metric.MeterProvider
	// Model is the model's name as model.Named gives it, "provider:model"
	// (e.g. anthropic:claude-sonnet-4-5): it sets gen_ai.provider.name and
	// gen_ai.request.model.
	Model string
	// AgentName is gen_ai.agent.name of a run; default "ratchet". A
	// sub-agent's is AgentName + ".subagent".
	AgentName string
	// CaptureContent records message content on spans: the goal, prompts,
	// replies, tool arguments and results, check feedback, questions. Off
	// by default (see CaptureContentFromEnv); content passes through
	// Redactor first.
	CaptureContent bool
	// Redactor replaces secrets in every text recorded: content, error
	// messages, reasons. Nil knows no secrets.
	Redactor *redact.Redactor
}

// Observer turns runs' entries into spans and metrics. One Observer can
// serve many runs at once (a run and its sub-agents, say): it is safe for
// concurrent use, and entries of one run must arrive in order.
type Observer struct {
	cfg      Config
	tracer   trace.Tracer
	provider string
	model    string
	inst     instruments
	// chatName is every chat span's name. chatStart and toolStart are the
	// attributes chat and execute_tool spans start with: those a sampler
	// may use, the same for every span, made once. The rest are set only
	// when the SDK records the span, so that a run the sampler leaves out
	// costs little more than its metrics.
	chatName  string
	chatStart trace.SpanStartOption
	toolStart trace.SpanStartOption

	mu       sync.Mutex
	runs     map[string]*runState
	chatSets map[string]*chatMetricAttrs
	// reasons holds gen_ai.response.finish_reasons by stop reason: a
	// slice attribute costs two allocations to build.
	reasons map[string]attribute.KeyValue
}

// finishReasons is the finish_reasons attribute of one stop reason. The
// caller holds o.mu.
func (o *Observer) finishReasons(stop string) attribute.KeyValue {
	if kv, ok := o.reasons[stop]; ok {
		return kv
	}
	kv := attrFinishReasons.StringSlice([]string{stop})
	if len(o.reasons) < 16 { // stop reasons are few; bound the cache regardless
		o.reasons[stop] = kv
	}
	return kv
}

// runState is what the Observer holds of a run in progress.
type runState struct {
	id    string
	span  trace.Span
	ctx   context.Context // carries span, for its children
	child bool
	trace trace.TraceID // the run tree's: its top-level run's TraceID
	tiers map[string]verify.Tier
	// toolSpans names the execute_tool span of each tool the spec lists,
	// made once a run.
	toolSpans map[string]string
	// Operations under way, by what answers them: a call_model command's
	// ID, a tool call's ID, a verify command's ID and a check's name. Their
	// spans are made when they end, with every attribute at once: a span
	// is exported only when it ends anyway, and attributes added to a span
	// that has some cost the SDK another copy of them.
	chats  map[string]pendingChat
	tools  map[string]pendingTool
	checks map[checkKey]pendingCheck
	// approval is the tool call an ask_human command asks about, until it
	// is answered.
	approval *loop.ToolCall
}

type pendingChat struct {
	start time.Time
	cmd   *loop.Command
	// shell holds the call's retries, fallbacks and waits, the chat
	// span's events once it is made.
	shell []observe.Entry
}

type pendingTool struct {
	start time.Time
	call  *loop.ToolCall
}

type checkKey struct{ verify, check string }

type pendingCheck struct {
	start   time.Time
	tier    verify.Tier
	attempt int
}

// New returns an Observer for cfg.
func New(cfg Config) (*Observer, error) {
	if cfg.AgentName == "" {
		cfg.AgentName = "ratchet"
	}
	o := &Observer{cfg: cfg, runs: map[string]*runState{}, reasons: map[string]attribute.KeyValue{}}
	o.provider, o.model = splitModel(cfg.Model)
	o.chatName = "chat " + o.model
	o.chatStart = trace.WithAttributes(attrOperation.String("chat"), attrProvider.String(o.provider), attrRequestModel.String(o.model))
	o.toolStart = trace.WithAttributes(attrOperation.String("execute_tool"))
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	o.tracer = tp.Tracer(ScopeName)
	if cfg.MeterProvider != nil {
		inst, err := newInstruments(cfg.MeterProvider.Meter(ScopeName))
		if err != nil {
			return nil, err
		}
		o.inst = inst
	}
	return o, nil
}

// splitModel reads "provider:model" (openai-compatible:URL#model too),
// naming the provider by the GenAI conventions' well-known values: the
// Responses API and compatible servers speak OpenAI's API, and Gemini is
// gcp.gemini.
func splitModel(name string) (provider, mdl string) {
	p, m, ok := strings.Cut(name, ":")
	if !ok {
		return "ratchet", name
	}
	switch p {
	case "openai-compatible":
		if i := strings.LastIndexByte(m, '#'); i >= 0 {
			m = m[i+1:]
		}
		p = "openai"
	case "openai-responses":
		p = "openai"
	case "gemini":
		p = "gcp.gemini"
	}
	return p, m
}

// Observe records e.
func (o *Observer) Observe(e observe.Entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.runs[e.Run]
	if r == nil {
		r = o.begin(e)
	}
	switch e.Kind {
	case observe.KindRun:
		// begin has used the spec.
	case observe.KindEvent:
		o.event(r, e.At, e.Event)
	case observe.KindCommand:
		o.command(r, e.At, e.Command)
	case observe.KindNote:
		o.note(r, e.At, e.Note)
	case observe.KindRetry, observe.KindFallback, observe.KindWait:
		o.shell(r, e)
	}
}

// begin starts the invoke_agent span of a run whose first entry here is e:
// its spec when the run starts, else (a resumed run, in a new process)
// whatever comes first, and then the span is linked to the run's first one.
func (o *Observer) begin(e observe.Entry) *runState {
	r := &runState{id: e.Run, chats: map[string]pendingChat{}, tools: map[string]pendingTool{}, checks: map[checkKey]pendingCheck{}, tiers: map[string]verify.Tier{}}
	// A sub-agent's ID extends its parent's ("parent/child"), and its
	// parent is a run this observer has begun. Other IDs with a "/" (an
	// eval's "label/case/r0") are top-level runs of their own traces.
	parentID, _, _ := cutLast(e.Run, "/")
	parent := o.runs[parentID]
	isChild := parent != nil
	r.child = isChild
	ctx := context.Background()
	r.trace = TraceID(e.Run)
	if isChild {
		ctx, r.trace = parent.ctx, parent.trace
	}
	name := o.cfg.AgentName
	if isChild {
		name += ".subagent"
	}
	attrs := []attribute.KeyValue{
		attrOperation.String("invoke_agent"),
		attrProvider.String(o.provider),
		attrAgentName.String(name),
		attrConversation.String(e.Run),
		attrRequestModel.String(o.model),
		attribute.String("ratchet.run.id", e.Run),
	}
	if isChild {
		attrs = append(attrs, attribute.String("ratchet.run.parent", parentID))
	}
	opts := []trace.SpanStartOption{internalKind, trace.WithTimestamp(e.At)}
	resumed := e.Kind != observe.KindRun
	if resumed {
		// The first process's span has (or had) the derived IDs: this one
		// takes fresh ones in the same trace and links to it.
		ctx = withIDs(ctx, runIDs{trace: r.trace})
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: runSpanContext(r.trace, e.Run), Attributes: []attribute.KeyValue{attribute.String("ratchet.link", "resumed")}}))
		attrs = append(attrs, attribute.Bool("ratchet.run.resumed", true))
	} else {
		ctx = withIDs(ctx, runIDs{trace: r.trace, span: SpanID(e.Run)})
		spec := e.Spec
		for _, c := range spec.Checks {
			r.tiers[c.Name] = c.Tier
		}
		r.toolSpans = make(map[string]string, len(spec.Tools))
		for _, t := range spec.Tools {
			r.toolSpans[t.Name] = "execute_tool " + t.Name
		}
		attrs = append(attrs, attribute.String("ratchet.run.mode", string(modeOf(spec))))
		attrs = append(attrs, limitAttrs("ratchet.limit.", spec.Budget)...)
		if o.cfg.CaptureContent {
			attrs = append(attrs, attrInputMessages.String(o.messagesJSON([]model.Message{{Role: model.User, Content: []model.Block{model.TextBlock(spec.Goal)}}})))
		}
	}
	opts = append(opts, trace.WithAttributes(attrs...))
	ctx, r.span = o.tracer.Start(ctx, "invoke_agent "+name, opts...)
	r.ctx = withIDs(ctx, runIDs{}) // the run's other spans take fresh IDs
	o.runs[e.Run] = r
	return r
}

func modeOf(spec *loop.Spec) loop.Mode {
	if spec.Mode == "" {
		return loop.ModeAgent
	}
	return spec.Mode
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

func (o *Observer) command(r *runState, at time.Time, c *loop.Command) {
	switch c.Type {
	case loop.CallModel:
		r.chats[c.ID] = pendingChat{start: at, cmd: c}
	case loop.RunTools:
		for i := range c.Calls {
			r.tools[c.Calls[i].ID] = pendingTool{start: at, call: &c.Calls[i]}
		}
	case loop.Verify:
		for _, name := range c.Checks {
			r.checks[checkKey{c.ID, name}] = pendingCheck{start: at, tier: r.tiers[name], attempt: c.Candidate.Attempt}
		}
	case loop.AskHuman:
		if c.Approval != nil {
			r.approval = c.Approval
			r.span.AddEvent("ratchet.approval.requested", trace.WithTimestamp(at), trace.WithAttributes(
				attribute.String("ratchet.tool.name", c.Approval.Name), attribute.String("ratchet.tool.call.id", c.Approval.ID)))
			return
		}
		attrs := []attribute.KeyValue{attribute.String("ratchet.ask.id", c.ID)}
		if o.cfg.CaptureContent {
			attrs = append(attrs, attribute.String("ratchet.question", o.redact(c.Question)))
		}
		r.span.AddEvent("ratchet.escalation", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	case loop.RunChild:
		attrs := append([]attribute.KeyValue{attribute.String("ratchet.run.id", r.id+"/"+c.ID)}, limitAttrs("ratchet.subagent.limit.", c.Child.Budget)...)
		r.span.AddEvent("ratchet.subagent.started", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	case loop.Finish:
		o.finish(r, at, c.Result)
	}
}

func (o *Observer) event(r *runState, at time.Time, ev *loop.Event) {
	switch ev.Type {
	case loop.EventModelReply:
		o.reply(r, at, ev.Call, ev.Reply)
	case loop.EventModelError:
		c, ok := r.chats[ev.Call]
		if !ok {
			return
		}
		delete(r.chats, ev.Call)
		kind, msg := "_OTHER", ""
		if f := ev.Error; f != nil {
			kind, msg = f.Kind, o.redact(f.Message)
		}
		span := o.chatSpan(r, &c)
		if span.IsRecording() {
			span.SetAttributes(append(o.requestAttrs(&c, 1), attrErrorType.String(kind))...)
		}
		span.SetStatus(codes.Error, msg)
		span.End(trace.WithTimestamp(at))
		o.chatDone(&c, at, kind, nil, 0)
	case loop.EventToolResult:
		pt, ok := r.tools[ev.Call]
		if !ok {
			return
		}
		delete(r.tools, ev.Call)
		o.toolSpan(r, pt, ev.Tool).End(trace.WithTimestamp(at))
	case loop.EventVerdict:
		o.verdict(r, at, ev.Call, ev.Verdict)
	case loop.EventCheckError:
		// A check_error answers its whole verify command.
		msg := ""
		if f := ev.Error; f != nil {
			msg = o.redact(f.Message)
		}
		for k, pc := range r.checks {
			if k.verify != ev.Call {
				continue
			}
			delete(r.checks, k)
			span := o.checkSpan(r, k, pc, attrErrorType.String("check_error"), attribute.String("ratchet.check.outcome", "error"))
			span.SetStatus(codes.Error, msg)
			span.End(trace.WithTimestamp(at))
			o.inst.verdict(k.check, pc.tier, "error")
		}
	case loop.EventHumanReply:
		attrs := []attribute.KeyValue{attribute.String("ratchet.ask.id", ev.Call)}
		name := "ratchet.human.reply"
		// An approval given to a resumed run was asked for by another
		// process: Approved says what it answers, without the tool.
		if d := ev; r.approval != nil || d.Approved != nil {
			name = "ratchet.approval.decided"
			if r.approval != nil {
				attrs = append(attrs, attribute.String("ratchet.tool.name", r.approval.Name), attribute.String("ratchet.tool.call.id", r.approval.ID))
			}
			attrs = append(attrs, attribute.Bool("ratchet.approval.approved", approved(d)))
			r.approval = nil
		} else if o.cfg.CaptureContent {
			attrs = append(attrs, attribute.String("ratchet.human.answer", o.redact(ev.Text)))
		}
		r.span.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	case loop.EventHumanUnavailable:
		r.span.AddEvent("ratchet.human.unavailable", trace.WithTimestamp(at))
	case loop.EventCancel:
		r.span.AddEvent("ratchet.cancelled", trace.WithTimestamp(at), trace.WithAttributes(attribute.String("ratchet.reason", o.redact(ev.Text))))
	case loop.EventResume:
		r.span.AddEvent("ratchet.resumed", trace.WithTimestamp(at))
	case loop.EventChildResult:
		if res := ev.Child; res != nil {
			r.span.AddEvent("ratchet.subagent.ended", trace.WithTimestamp(at), trace.WithAttributes(
				attribute.String("ratchet.run.id", r.id+"/"+ev.Call), attribute.String("ratchet.run.status", string(res.Status))))
		}
	}
}

// approved reads an approval's answer as the loop core does.
func approved(d *loop.Event) bool {
	if d.Approved != nil {
		return *d.Approved
	}
	t := strings.ToLower(strings.TrimSpace(d.Text))
	return t == "approve" || t == "yes"
}

// chatSpan starts the span of chat call c. The caller sets the rest of
// its attributes, requestAttrs first, if the span is recorded.
func (o *Observer) chatSpan(r *runState, c *pendingChat) trace.Span {
	_, span := o.tracer.Start(r.ctx, o.chatName, clientKind, trace.WithTimestamp(c.start), o.chatStart)
	if span.IsRecording() {
		for _, e := range c.shell {
			o.shellEvent(span, e)
		}
	}
	return span
}

// requestAttrs are chat call c's attributes but those it starts with,
// with room for n more.
func (o *Observer) requestAttrs(c *pendingChat, n int) []attribute.KeyValue {
	req := c.cmd.Request
	attrs := make([]attribute.KeyValue, 0, 6+n)
	attrs = append(attrs,
		attribute.String("ratchet.call.id", c.cmd.ID),
		attribute.String("ratchet.model.purpose", string(req.Purpose)),
		attribute.Int64("ratchet.request.input_estimate", c.cmd.InputEstimate),
	)
	if req.MaxOutputTokens > 0 {
		attrs = append(attrs, attrMaxTokens.Int(req.MaxOutputTokens))
	}
	if o.cfg.CaptureContent {
		attrs = append(attrs, attrInputMessages.String(o.messagesJSON(req.Messages)))
		if req.System != "" {
			attrs = append(attrs, attrSystemInstructions.String(o.partsJSON([]part{{Type: "text", Content: req.System}})))
		}
	}
	return attrs
}

func (o *Observer) reply(r *runState, at time.Time, call string, resp *model.Response) {
	c, ok := r.chats[call]
	if !ok || resp == nil {
		return
	}
	delete(r.chats, call)
	u := resp.Usage
	// The conventions count cached input in gen_ai.usage.input_tokens;
	// ratchet's InputTokens leaves it out.
	input := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	span := o.chatSpan(r, &c)
	if span.IsRecording() {
		span.SetAttributes(o.replyAttrs(&c, resp, input)...)
	}
	span.End(trace.WithTimestamp(at))
	o.chatDone(&c, at, "", resp, input)
}

// replyAttrs are the attributes of chat call c, answered by resp, but
// those it starts with.
func (o *Observer) replyAttrs(c *pendingChat, resp *model.Response, input int64) []attribute.KeyValue {
	u := resp.Usage
	attrs := o.requestAttrs(c, 8)
	attrs = append(attrs, attrUsageInput.Int64(input), attrUsageOutput.Int64(u.OutputTokens))
	if resp.Model != "" {
		attrs = append(attrs, attrResponseModel.String(resp.Model))
	}
	if resp.StopReason != "" {
		attrs = append(attrs, o.finishReasons(resp.StopReason))
	}
	if u.CacheReadTokens > 0 {
		attrs = append(attrs, attrCacheRead.Int64(u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		attrs = append(attrs, attrCacheWrite.Int64(u.CacheWriteTokens))
	}
	if u.CostKnown {
		attrs = append(attrs, attribute.Int64("ratchet.cost_micros", int64(u.Cost)))
	}
	if o.cfg.CaptureContent {
		attrs = append(attrs, attrOutputMessages.String(o.outputJSON(resp)))
	}
	return attrs
}

// toolSpan starts the span of tool call pt, with its outcome out when
// there is one.
func (o *Observer) toolSpan(r *runState, pt pendingTool, out *loop.ToolOutcome) trace.Span {
	name, ok := r.toolSpans[pt.call.Name]
	if !ok { // a tool the spec does not list, or a resumed run's
		name = "execute_tool " + pt.call.Name
	}
	_, span := o.tracer.Start(r.ctx, name, internalKind, trace.WithTimestamp(pt.start), o.toolStart)
	if !span.IsRecording() {
		return span
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		attrToolName.String(pt.call.Name),
		attrToolCallID.String(pt.call.ID),
		attrToolType.String("function"),
	)
	if o.cfg.CaptureContent {
		attrs = append(attrs, attrToolArgs.String(o.redact(string(pt.call.Args))))
	}
	kind := ""
	if out != nil {
		attrs = append(attrs, attribute.String("ratchet.tool.outcome", out.Outcome))
		if out.IsError {
			if kind = out.Outcome; kind == "" {
				kind = "tool_error"
			}
			attrs = append(attrs, attrErrorType.String(kind))
		}
		if o.cfg.CaptureContent {
			attrs = append(attrs, attrToolResult.String(o.redact(out.Output)))
		}
	}
	span.SetAttributes(attrs...)
	if kind != "" {
		span.SetStatus(codes.Error, kind)
	}
	return span
}

// checkSpan starts the span of check k, with end's attributes.
func (o *Observer) checkSpan(r *runState, k checkKey, pc pendingCheck, end ...attribute.KeyValue) trace.Span {
	attrs := make([]attribute.KeyValue, 0, 4+len(end))
	attrs = append(attrs, attrCheckName.String(k.check), attribute.String("ratchet.verify.id", k.verify), attribute.Int("ratchet.attempt", pc.attempt))
	if pc.tier != "" {
		attrs = append(attrs, attrCheckTier.String(string(pc.tier)))
	}
	attrs = append(attrs, end...)
	_, span := o.tracer.Start(r.ctx, "check "+k.check, internalKind, trace.WithTimestamp(pc.start), trace.WithAttributes(attrs...))
	return span
}

func (o *Observer) verdict(r *runState, at time.Time, call string, v *verify.Verdict) {
	if v == nil {
		return
	}
	k := checkKey{call, v.Check}
	cs, ok := r.checks[k]
	if !ok {
		return
	}
	delete(r.checks, k)
	outcome := "fail"
	if v.OK {
		outcome = "pass"
	}
	attrs := []attribute.KeyValue{
		attribute.Bool("ratchet.check.ok", v.OK),
		attribute.String("ratchet.check.outcome", outcome),
		attribute.Float64("ratchet.check.confidence", v.Confidence),
		attrCheckProvenance.String(string(v.Provenance)),
	}
	if v.Where != "" {
		attrs = append(attrs, attribute.String("ratchet.check.where", o.redact(v.Where)))
	}
	if v.Cost > 0 {
		attrs = append(attrs, attribute.Int64("ratchet.cost_micros", int64(v.Cost)))
	}
	o.checkSpan(r, k, cs, attrs...).End(trace.WithTimestamp(at))
	o.inst.verdict(v.Check, cs.tier, outcome)

	// The check judges the candidate, which is the agent's output: the
	// evaluation goes on the run's invoke_agent span.
	score := 0.0
	if v.OK {
		score = 1
	}
	eval := []attribute.KeyValue{
		attribute.String("gen_ai.evaluation.name", v.Check),
		attribute.String("gen_ai.evaluation.score.label", outcome),
		attribute.Float64("gen_ai.evaluation.score.value", score),
		attribute.Int("ratchet.attempt", cs.attempt),
		attrCheckProvenance.String(string(v.Provenance)),
	}
	if cs.tier != "" {
		eval = append(eval, attrCheckTier.String(string(cs.tier)))
	}
	if o.cfg.CaptureContent && v.Detail != "" {
		eval = append(eval, attribute.String("gen_ai.evaluation.explanation", o.redact(v.Detail)))
	}
	r.span.AddEvent("gen_ai.evaluation.result", trace.WithTimestamp(at), trace.WithAttributes(eval...))
}

func (o *Observer) note(r *runState, at time.Time, n *loop.Note) {
	attrs := []attribute.KeyValue{attribute.Int("ratchet.step", n.Step)}
	var name string
	switch n.Type {
	case loop.NoteIntervention:
		name = "ratchet.intervention"
		attrs = append(attrs, attribute.String("ratchet.progress.pattern", string(n.Pattern)), attribute.String("ratchet.intervention.rung", string(n.Rung)))
	case loop.NoteClosing:
		name = "ratchet.budget.closing"
		attrs = append(attrs, attribute.String("ratchet.budget.dimension", n.Problem))
	case loop.NoteAttempt:
		name = "ratchet.attempt"
		attrs = append(attrs, attribute.Int("ratchet.attempt", n.Attempt))
	case loop.NoteRejected:
		name = "ratchet.attempt.rejected"
		attrs = append(attrs, attribute.Int("ratchet.attempt", n.Attempt))
	case loop.NoteObservation:
		name = "ratchet.observation"
		attrs = append(attrs, attribute.String("ratchet.problem", n.Problem))
	case loop.NoteContext:
		name = "ratchet.context"
		attrs = append(attrs, attribute.String("ratchet.problem", n.Problem), attribute.Int64("ratchet.context.tokens_before", n.TokensBefore), attribute.Int64("ratchet.context.tokens_after", n.TokensAfter))
	case loop.NotePlan:
		name = "ratchet.plan"
		if n.Problem != "" {
			attrs = append(attrs, attribute.String("ratchet.problem", n.Problem))
		}
	default:
		return // subagent notes: the sub-agent's own span and ratchet.subagent.* events say it
	}
	if o.cfg.CaptureContent && n.Text != "" {
		attrs = append(attrs, attribute.String("ratchet.text", o.redact(n.Text)))
	}
	r.span.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

// retry records a transport retry on its call's span, made when the call
// ends; on the run's span if the call is not known.
// shell takes what the shell did to a model call (a retry, a fallback, a
// wait for its provider's limits): an event of the call's chat span, made
// as the call ends, or of the run's span if the call is not known.
func (o *Observer) shell(r *runState, e observe.Entry) {
	call := ""
	switch {
	case e.Retry != nil:
		call = e.Retry.Call
	case e.Fallback != nil:
		call = e.Fallback.Call
	case e.Wait != nil:
		call = e.Wait.Call
	default:
		return
	}
	if c, ok := r.chats[call]; ok {
		c.shell = append(c.shell, e)
		r.chats[call] = c
		return
	}
	o.shellEvent(r.span, e)
}

func (o *Observer) shellEvent(span trace.Span, e observe.Entry) {
	at := trace.WithTimestamp(e.At)
	switch {
	case e.Retry != nil:
		o.retryEvent(span, e.At, e.Retry)
	case e.Fallback != nil:
		f := e.Fallback
		span.AddEvent("ratchet.fallback", at, trace.WithAttributes(
			attribute.String("ratchet.call.id", f.Call),
			attribute.String("ratchet.fallback.from", f.From),
			attribute.String("ratchet.fallback.to", f.To),
			attribute.String("ratchet.fallback.reason", o.redact(f.Reason))))
	case e.Wait != nil:
		w := e.Wait
		span.AddEvent("ratchet.wait", at, trace.WithAttributes(
			attribute.String("ratchet.call.id", w.Call),
			attribute.String("ratchet.wait.provider", w.Provider),
			attribute.Int64("ratchet.wait.max_ms", w.For.Milliseconds()),
			attribute.String("ratchet.wait.reason", o.redact(w.Reason))))
	}
}

func (o *Observer) retryEvent(span trace.Span, at time.Time, rt *observe.Retry) {
	attrs := []attribute.KeyValue{
		attribute.String("ratchet.call.id", rt.Call),
		attribute.Int("ratchet.retry.attempt", rt.Attempt),
		attribute.Int64("ratchet.retry.wait_ms", rt.Wait.Milliseconds()),
		attribute.String("ratchet.retry.reason", o.redact(rt.Reason)),
	}
	if rt.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", rt.Status))
	}
	span.AddEvent("ratchet.retry", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

// finish ends the run's span with its exit and usage, and records the
// run's metrics.
func (o *Observer) finish(r *runState, at time.Time, res *loop.Result) {
	delete(o.runs, r.id)
	o.endOpen(r, at)
	status := res.Status
	switch status.Kind() {
	case "exhausted":
		_, dim, _ := strings.Cut(string(status), ":")
		r.span.AddEvent("ratchet.budget.exhausted", trace.WithTimestamp(at), trace.WithAttributes(attribute.String("ratchet.budget.dimension", dim)))
	case "stalled":
		_, pattern, _ := strings.Cut(string(status), ":")
		r.span.AddEvent("ratchet.stalled", trace.WithTimestamp(at), trace.WithAttributes(attribute.String("ratchet.progress.pattern", pattern)))
	case string(loop.Escalated):
		attrs := []attribute.KeyValue{}
		if o.cfg.CaptureContent {
			attrs = append(attrs, attribute.String("ratchet.question", o.redact(res.Question)))
		}
		r.span.AddEvent("ratchet.escalated", trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
	u := res.Usage
	attrs := []attribute.KeyValue{
		attribute.String("ratchet.run.status", string(status)),
		attribute.String("ratchet.run.reason", o.redact(res.Reason)),
		attribute.Int("ratchet.run.attempts", len(res.Attempts)),
		attrUsageInput.Int64(u.InputTokens),
		attrUsageOutput.Int64(u.OutputTokens),
	}
	for _, d := range usageDims(u) {
		attrs = append(attrs, attribute.Int64("ratchet.usage."+d.name, d.value))
	}
	if u.CostUnknown {
		attrs = append(attrs, attribute.Bool("ratchet.usage.cost_unknown", true))
	}
	if res.Best != nil {
		attrs = append(attrs, attribute.Int("ratchet.best.attempt", res.Best.N), attribute.Bool("ratchet.best.accepted", res.Best.Accepted))
		if o.cfg.CaptureContent {
			attrs = append(attrs, attrOutputMessages.String(o.outputJSON(&model.Response{Content: []model.Block{model.TextBlock(res.Best.Answer)}})))
		}
	}
	if status == loop.Failed {
		attrs = append(attrs, attrErrorType.String(string(loop.Failed)))
		r.span.SetStatus(codes.Error, o.redact(res.Reason))
	}
	r.span.SetAttributes(attrs...)
	r.span.End(trace.WithTimestamp(at))
	o.inst.runDone(r, res)
}

// Stopped says that this process no longer drives run: it finished, or
// waits for a person (ratchet answer carries it on in another process),
// or broke off. If the run has not finished, its open spans end at, the
// run's span with ratchet.run.suspended: a process that carries the run
// on starts a span of its own, linked to the first. Stopped is safe on a
// nil Observer.
func (o *Observer) Stopped(run string, at time.Time) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.runs[run]
	if r == nil {
		return
	}
	delete(o.runs, run)
	o.endOpen(r, at)
	r.span.AddEvent("ratchet.suspended", trace.WithTimestamp(at))
	r.span.SetAttributes(attribute.Bool("ratchet.run.suspended", true))
	r.span.End(trace.WithTimestamp(at))
}

// endOpen ends the spans of r's operations under way: nothing will answer
// them in this process.
func (o *Observer) endOpen(r *runState, at time.Time) {
	for _, c := range r.chats {
		span := o.chatSpan(r, &c)
		if span.IsRecording() {
			span.SetAttributes(o.requestAttrs(&c, 0)...)
		}
		span.End(trace.WithTimestamp(at))
	}
	for _, pt := range r.tools {
		o.toolSpan(r, pt, nil).End(trace.WithTimestamp(at))
	}
	for k, pc := range r.checks {
		o.checkSpan(r, k, pc).End(trace.WithTimestamp(at))
	}
}

// dim is one budget dimension's use, in the unit its name says.
type dim struct {
	name  string
	value int64
}

// usageDims is u per budget dimension: time in milliseconds, cost in
// micro-USD.
func usageDims(u budget.Usage) []dim {
	return []dim{
		{string(budget.Steps), int64(u.Steps)},
		{string(budget.ModelCalls), int64(u.ModelCalls)},
		{string(budget.ToolCalls), int64(u.ToolCalls)},
		{string(budget.InputTokens), u.InputTokens},
		{string(budget.OutputTokens), u.OutputTokens},
		{"cost_micros", int64(u.Cost)},
		{"time_ms", u.Time.Milliseconds()},
	}
}

// limitAttrs are limits l, one attribute per dimension that has one.
func limitAttrs(prefix string, l budget.Limits) []attribute.KeyValue {
	var out []attribute.KeyValue
	add := func(name string, v int64) {
		if v > 0 {
			out = append(out, attribute.Int64(prefix+name, v))
		}
	}
	add(string(budget.Steps), int64(l.Steps))
	add(string(budget.ModelCalls), int64(l.ModelCalls))
	add(string(budget.ToolCalls), int64(l.ToolCalls))
	add(string(budget.InputTokens), l.InputTokens)
	add(string(budget.OutputTokens), l.OutputTokens)
	add(string(budget.TotalTokens), l.TotalTokens)
	add("cost_micros", int64(l.Cost))
	add("time_ms", l.Time.Milliseconds())
	return out
}

func (o *Observer) redact(s string) string { return o.cfg.Redactor.String(s) }

// part is one part of a message in the conventions' JSON form.
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func parts(blocks []model.Block) []part {
	out := make([]part, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case model.Text:
			out = append(out, part{Type: "text", Content: b.Text})
		case model.ToolUse:
			p := part{Type: "tool_call", ID: b.ID, Name: b.Name}
			if json.Valid(b.Input) {
				p.Arguments = b.Input
			} else {
				p.Content = string(b.Input)
			}
			out = append(out, p)
		case model.ToolResult:
			out = append(out, part{Type: "tool_call_response", ID: b.ID, Response: b.Text})
		}
	}
	return out
}

// messagesJSON is msgs as gen_ai.input.messages holds them, redacted.
func (o *Observer) messagesJSON(msgs []model.Message) string {
	out := make([]message, len(msgs))
	for i, m := range msgs {
		out[i] = message{Role: string(m.Role), Parts: parts(m.Content)}
	}
	return o.marshal(out)
}

// outputJSON is a reply as gen_ai.output.messages holds it, redacted.
func (o *Observer) outputJSON(resp *model.Response) string {
	return o.marshal([]message{{Role: string(model.Assistant), Parts: parts(resp.Content), FinishReason: resp.StopReason}})
}

func (o *Observer) partsJSON(ps []part) string { return o.marshal(ps) }

func (o *Observer) marshal(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	// The redactor knows secrets' JSON-escaped forms too.
	return o.redact(string(data))
}
