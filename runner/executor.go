package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

// Executor carries out the loop core's commands with every feature of the
// shell: a model call through the hooks, the guardrails and the model's
// own hooks (retries, fallbacks, waits for shared limits, streamed text),
// a tool batch through the hooks, the permission-checked registry and the
// output caps (answering the calls of a resumed batch that must not run
// twice), and a check. It returns the events that answer a command; what
// happened on a command's way that the core never sees (a retry, a
// fallback, a wait, a hook's decision) it hands to the Sink it is given.
//
// An Executor is the one place a command's work is written. A driver only
// decides where and when a command runs and how the entries are kept: this
// package's run carries out commands on its goroutine and records the
// sink's entries into its log; Temporal's activities carry out each one in
// a worker and return the sink's entries to the workflow, which records
// them. Its methods are safe for concurrent use.
type Executor struct {
	model      model.Model
	hooks      Hooks
	guardrails []Guardrail
	red        *redact.Redactor
	reg        *tool.Registry
	tools      *tool.Executor
	checks     map[string]verify.Verifier
	// text are the observers that show a model's text as it streams, and
	// runID the run they are told it is of.
	text  []observe.TextObserver
	runID string
}

// Sink takes an entry recorded on a command's way: it stamps it with the
// time and puts it in the run's log. Calls of one batch run in parallel,
// so a sink may be called from several goroutines at once.
type Sink func(observe.Entry)

// NewExecutor compiles task and returns the executor of its commands as
// cfg configures them (its Model, Hooks, Guardrails, Redactor, Exec and
// the Observers that show streamed text), with the spec the core runs,
// redacted.
func NewExecutor(task *Task, cfg *Config) (*Executor, loop.Spec, error) {
	x := new(Executor)
	spec, err := x.init(task, cfg)
	if err != nil {
		return nil, loop.Spec{}, err
	}
	return x, spec, nil
}

// init is NewExecutor on x, which a run holds by value.
func (x *Executor) init(task *Task, cfg *Config) (loop.Spec, error) {
	if cfg.Redactor == nil && !cfg.NoRedaction {
		cfg.Redactor = redact.New(redact.FromEnviron(os.Environ())...)
	}
	if cfg.Model == nil {
		return loop.Spec{}, errors.New("runner: no model configured")
	}
	if err := checkGuardrails(cfg.Guardrails); err != nil {
		return loop.Spec{}, err
	}
	spec, reg, checks, err := task.compile()
	if err != nil {
		return loop.Spec{}, err
	}
	RedactSpec(cfg.Redactor, &spec)
	*x = Executor{model: cfg.Model, hooks: cfg.Hooks, guardrails: cfg.Guardrails, red: cfg.Redactor,
		reg: reg, tools: tool.NewExecutor(cfg.Exec), checks: checks, runID: cfg.RunID}
	for _, o := range cfg.Observers {
		if to, ok := o.(observe.TextObserver); ok {
			x.text = append(x.text, to)
		}
	}
	return spec, nil
}

// CallModel carries out the model call c. err is the model's error when
// the event is the model_error it ended with, for a driver that retries
// some failures itself; it is nil for every other event.
func (x *Executor) CallModel(ctx context.Context, c *loop.Command, sink Sink) (ev loop.Event, err error) {
	defer func() {
		if p := recover(); p != nil { // a bug in the model: infrastructure, not the run's end
			ev, err = loop.Event{Type: loop.EventModelError, Call: c.ID, Error: &loop.Failure{Kind: "panic", Message: fmt.Sprint("model panicked: ", p)}}, nil
		}
	}()
	req, answered := x.beforeModel(ctx, c, sink)
	if answered != nil {
		return *answered, nil
	}
	ch := x.hooksFor(c, sink)
	hctx, endText := ch.attach(ctx)
	resp, err := x.model.Generate(hctx, *req)
	endText()
	billed := ch.release()
	// Every path to a model (a fallback's members, each retry, a sub-agent's
	// own executor) passes here: what its failed attempts were billed goes
	// into what the call charges, so that the run's cost cap holds.
	if err != nil {
		f := failure(ctx, err)
		if billed != (model.Usage{}) {
			spent := billed // its own variable: taking billed's address would put it on the heap on every call
			f.Billed = &spent
		}
		return loop.Event{Type: loop.EventModelError, Call: c.ID, Error: f}, err
	}
	resp.Usage = model.AddBilled(resp.Usage, billed)
	if tripped := x.afterModel(ctx, c, &resp); tripped != nil {
		return *tripped, nil
	}
	return loop.Event{Type: loop.EventModelReply, Call: c.ID, Reply: &resp}, nil
}

// callHooks are the hooks of one model call. Their closures are built
// once per pooled value and read the call they serve from its fields, so
// that a call with no text observer allocates no closure.
type callHooks struct {
	x      *Executor
	id     string
	sink   Sink
	stream bool       // whether the call's text goes to text observers
	mu     sync.Mutex // a model may bill attempts from several goroutines
	billed model.Usage
	hooks  model.Hooks
}

var callHooksPool = sync.Pool{New: func() any {
	ch := &callHooks{}
	ch.hooks = model.Hooks{
		OnBilled: func(u model.Usage) {
			ch.mu.Lock()
			ch.billed = model.AddBilled(ch.billed, u)
			ch.mu.Unlock()
		},
		OnRetry: func(rt model.Retry) {
			ch.sink(observe.Entry{Kind: observe.KindRetry, Retry: &observe.Retry{Call: ch.id, Retry: rt}})
		},
		OnFallback: func(f model.Fallback) {
			f.Reason = ch.x.red.String(f.Reason) // a server's error text may echo a secret
			ch.sink(observe.Entry{Kind: observe.KindFallback, Fallback: &observe.Fallback{Call: ch.id, Fallback: f}})
		},
		OnWait: func(w model.Wait) {
			ch.sink(observe.Entry{Kind: observe.KindWait, Wait: &observe.Wait{Call: ch.id, Wait: w}})
		},
	}
	return ch
}}

// hooksFor returns the hooks of call c: its transport retries, fallbacks
// and waits go to sink. The caller hands them back with release once the
// model's Generate has returned (hooks are only called during it).
func (x *Executor) hooksFor(c *loop.Command, sink Sink) *callHooks {
	ch := callHooksPool.Get().(*callHooks)
	ch.x, ch.id, ch.sink, ch.billed = x, c.ID, sink, model.Usage{}
	ch.stream = c.Request.Purpose != model.PurposeSample && len(x.text) > 0
	return ch
}

// attach returns ctx carrying the call's hooks, with its streamed text
// going to the observers that show text, redacted as it streams (what
// could be the start of a secret waits for the next piece). endText shows
// what was held back once the call is over. Sampled alternatives run in
// parallel: their text is not streamed.
func (ch *callHooks) attach(ctx context.Context) (_ context.Context, endText func()) {
	x, id := ch.x, ch.id
	if !ch.stream {
		return model.WithHooks(ctx, &ch.hooks), func() {}
	}
	h := ch.hooks
	stream := &redact.Stream{Redactor: x.red}
	show := func(d string) {
		for _, to := range x.text {
			to.ObserveText(x.runID, id, d)
		}
	}
	h.OnText = func(d string) {
		if d = stream.Next(d); d != "" {
			show(d)
		}
	}
	return model.WithHooks(ctx, &h), func() {
		if rest := stream.Flush(); rest != "" {
			show(rest)
		}
	}
}

// release returns what the call's failed attempts were billed and puts
// the hooks back in the pool.
func (ch *callHooks) release() model.Usage {
	billed := ch.billed
	ch.x, ch.sink, ch.billed = nil, nil, model.Usage{} // drop references the pool would keep alive
	callHooksPool.Put(ch)
	return billed
}

// failure classifies err, naming the time budget when the command's
// deadline (not the caller) cut the work off.
func failure(ctx context.Context, err error) *loop.Failure {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &loop.Failure{Kind: loop.FailDeadline, Message: err.Error()}
	}
	return &loop.Failure{Kind: "error", Message: err.Error()}
}

// toolCalls are calls as the tool executor takes a batch of them. A
// command's calls are never written to: the log holds them.
func toolCalls(calls []loop.ToolCall) []tool.Call {
	out := make([]tool.Call, len(calls))
	for i, c := range calls {
		out[i] = tool.Call(c)
	}
	return out
}

// DecideTools decides which of a batch's calls run: resumed says the batch
// was in flight when its run stopped, so a call of a tool that is not safe
// to run twice is answered UnknownOutcome; then BeforeTool may deny a call
// or rewrite its arguments. It returns the calls to run and the events that
// answer the others.
func (x *Executor) DecideTools(ctx context.Context, calls []loop.ToolCall, resumed bool, sink Sink) (run []loop.ToolCall, answered []loop.Event) {
	if resumed {
		calls = x.settleUnknown(&answered, calls)
	}
	return x.beforeTools(ctx, &answered, calls, sink), answered
}

// RunTools runs calls that DecideTools let through, in parallel within the
// output caps and timeouts of the executor's config, and returns their
// results (after AfterTool) in call order.
func (x *Executor) RunTools(ctx context.Context, calls []loop.ToolCall, sink Sink) []loop.Event {
	if len(calls) == 1 { // the common case, without a slice of one result
		return []loop.Event{toolEvent(x.afterTool(ctx, calls[0], x.tools.RunOne(ctx, x.reg, tool.Call(calls[0])), sink))}
	}
	events := make([]loop.Event, 0, len(calls))
	for i, res := range x.tools.Run(ctx, x.reg, toolCalls(calls)) {
		events = append(events, toolEvent(x.afterTool(ctx, calls[i], res, sink)))
	}
	return events
}

// RunToolsEach runs calls like RunTools and hands each result to done as
// soon as its call ends, in the order they end: a driver makes each
// durable at once. done may be called from several goroutines at once.
func (x *Executor) RunToolsEach(ctx context.Context, calls []loop.ToolCall, sink Sink, done func(loop.Event)) {
	x.tools.RunEach(ctx, x.reg, toolCalls(calls), func(i int, res tool.Result) {
		done(toolEvent(x.afterTool(ctx, calls[i], res, sink)))
	})
}

func toolEvent(res tool.Result) loop.Event {
	return loop.Event{Type: loop.EventToolResult, Call: res.ID, Tool: &loop.ToolOutcome{
		Output: res.Output, IsError: res.IsError, Outcome: string(res.Outcome),
	}}
}

// settleUnknown answers, without running them, the calls of a resumed
// RunTools command whose tools are not idempotent: they may have run
// before the crash. It returns the calls that may run again.
func (x *Executor) settleUnknown(queue *[]loop.Event, calls []loop.ToolCall) []loop.ToolCall {
	again := calls[:0:0]
	for _, c := range calls {
		if t, ok := x.reg.Lookup(c.Name); !ok || t.Info().Idempotent {
			again = append(again, c)
			continue
		}
		*queue = append(*queue, loop.Event{Type: loop.EventToolResult, Call: c.ID, Tool: &loop.ToolOutcome{
			Output: UnknownOutcome, IsError: true, Outcome: OutcomeUnknown,
		}})
	}
	return again
}

// Verify runs the checks of the Verify command c in parallel; a lone check
// runs on the caller's goroutine, since starting another costs as much as
// a step.
func (x *Executor) Verify(ctx context.Context, c *loop.Command) []loop.Event {
	if len(c.Checks) == 1 {
		return []loop.Event{x.Check(ctx, c.ID, c.Checks[0], c.Candidate)}
	}
	events := make([]loop.Event, len(c.Checks))
	var wg sync.WaitGroup
	for i, name := range c.Checks {
		wg.Go(func() { events[i] = x.Check(ctx, c.ID, name, c.Candidate) })
	}
	wg.Wait()
	return events
}

// ChildTask builds the Task of the sub-agent ch from the run's live tools
// and checks (see ChildTask).
func (x *Executor) ChildTask(ch loop.Child) (Task, error) { return ChildTask(ch, x.reg, x.checks) }

// HasCheck says the task has a check of that name.
func (x *Executor) HasCheck(name string) bool { return x.checks[name] != nil }

// Check runs the check name of the Verify command call on cand.
func (x *Executor) Check(ctx context.Context, call, name string, cand *verify.Candidate) (ev loop.Event) {
	defer func() {
		if p := recover(); p != nil {
			ev = loop.Event{Type: loop.EventCheckError, Call: call, Error: &loop.Failure{Kind: "panic", Message: fmt.Sprintf("check %s panicked: %v", name, p)}}
		}
	}()
	v, err := x.checks[name].Check(ctx, *cand)
	if err != nil {
		f := failure(ctx, err)
		f.Message = fmt.Sprintf("check %s: %s", name, f.Message)
		return loop.Event{Type: loop.EventCheckError, Call: call, Error: f}
	}
	v.Check = name
	// A verifier's own confidence must be a number in [0, 1]: it is logged as
	// JSON (which has no NaN) and used in calibration.
	if !(v.Confidence >= 0) {
		v.Confidence = 0
	}
	v.Confidence = min(v.Confidence, 1)
	return loop.Event{Type: loop.EventVerdict, Call: call, Verdict: &v}
}
