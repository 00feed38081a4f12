package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/tool"
)

// Hooks let the caller take part in a run. Every field may be nil. Hooks
// run in the shell, never in the core: what a decision changes reaches the
// core as the events it already takes (a denied call is a tool result
// saying so, a rewritten result is the result), and each decision that
// changes anything is recorded as a hook entry (docs/events.md), so that
// the log alone replays the run and a replay never calls a hook.
//
// A hook's error or panic never crashes the run: before a tool call or
// after one it is an error result the model sees (the call's result is
// withheld); before a model call it ends the run failed with the reason.
// BeforeModel and the tool hooks may be called concurrently (sampled
// alternatives, a turn's parallel tool calls): they must be safe for that.
type Hooks struct {
	// BeforeModel is called before each model call. It may add context to
	// the call (ModelDecision.Context: a user text block at the end of the
	// request, for this call only) or refuse it (ModelDecision.Refuse: the
	// run ends with status guardrail:before_model and that reason).
	BeforeModel func(ctx context.Context, call ModelCall) (ModelDecision, error)
	// BeforeTool is called before each tool call the core dispatches. It
	// may let it run (the zero ToolDecision), deny it (the model is told
	// the reason as the call's error result) or run it with other
	// arguments.
	BeforeTool func(ctx context.Context, call ToolCall) (ToolDecision, error)
	// AfterTool is called with each tool call's output (trimmed, before the
	// run's redaction) and returns the output the model and the log see:
	// out itself, or a rewrite (say, with personal data masked).
	AfterTool func(ctx context.Context, call ToolCall, out ToolOutput) (ToolOutput, error)
	// OnEntry sees every entry of the run's log, in order, one at a time,
	// as the Observers do: read-only, for the caller's own telemetry. One
	// that panics is not called again.
	OnEntry func(observe.Entry)
}

// ModelCall is a model call about to be made. Request is the core's:
// read-only.
type ModelCall struct {
	ID      string
	Request *model.Request
}

// ModelDecision is BeforeModel's answer; the zero value makes the call as
// it is.
type ModelDecision struct {
	Context string
	Refuse  string
}

// ToolCall is a tool call about to run (or that ran). Args is read-only.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolDecision is BeforeTool's answer; the zero value runs the call as it
// is. Deny, when set, refuses it with that reason; Args, when set, are
// the arguments it runs with instead (checked against the tool's schema
// like the model's).
type ToolDecision struct {
	Deny string
	Args json.RawMessage
}

// ToolOutput is what a tool call produced.
type ToolOutput struct {
	Output  string
	IsError bool
}

// Guardrail is a hook with a verdict: Input judges each request before it
// goes to the model, Output each reply before the core sees it (either may
// be nil). A trip ends the run with status guardrail:<Name> and the
// verdict's reason; with Escalate a person is asked first, through the
// Asker (Config.Human), and may let the run go on without the guardrail
// ("continue") or stop it. A guardrail's error or panic ends the run failed: it fails
// closed. Guardrails apply to the run's sub-agents too, and may be called
// concurrently (sampled alternatives).
type Guardrail struct {
	// Name names the guardrail in the status; letters, digits, _ and -.
	Name     string
	Input    func(ctx context.Context, req *model.Request) (Verdict, error)
	Output   func(ctx context.Context, reply *model.Response) (Verdict, error)
	Escalate bool
}

// Verdict is a guardrail's judgement: Trip stops the run, for Reason.
type Verdict struct {
	Trip   bool
	Reason string
}

var guardrailName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkGuardrails reports every guardrail that cannot be used.
func checkGuardrails(gs []Guardrail) error {
	var errs []error
	seen := map[string]bool{beforeModel: true}
	for i, g := range gs {
		switch {
		case !guardrailName.MatchString(g.Name):
			errs = append(errs, fmt.Errorf("runner: guardrails[%d]: name %q must be 1 to 64 letters, digits, _ or -", i, g.Name))
		case seen[g.Name]:
			errs = append(errs, fmt.Errorf("runner: guardrails[%d]: the name %q is taken", i, g.Name))
		case g.Input == nil && g.Output == nil:
			errs = append(errs, fmt.Errorf("runner: guardrails[%d] %q: neither Input nor Output is set", i, g.Name))
		}
		seen[g.Name] = true
	}
	return errors.Join(errs...)
}

// beforeModel is the name of BeforeModel's refusals, as a guardrail.
const beforeModel = "before_model"

// safely calls fn, turning a panic into an error.
func safely[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return fn()
}

// hookEntry is the entry of a hook decision that changed something.
func (x *Executor) hookEntry(call, problem, text string) observe.Entry {
	return observe.Entry{Kind: observe.KindHook, Note: &loop.Note{
		Type: loop.NoteObservation, Problem: problem, Text: call + ": " + x.red.String(text)}}
}

// beforeModel runs BeforeModel and the input guardrails on c: the request
// to send, or the event that answers c instead (a refusal, a trip, a
// failure).
func (x *Executor) beforeModel(ctx context.Context, c *loop.Command, sink Sink) (*model.Request, *loop.Event) {
	req := c.Request
	if h := x.hooks.BeforeModel; h != nil {
		d, err := safely(func() (ModelDecision, error) { return h(ctx, ModelCall{ID: c.ID, Request: req}) })
		switch {
		case err != nil:
			return nil, &loop.Event{Type: loop.EventModelError, Call: c.ID, Error: &loop.Failure{Kind: "hook", Message: "the before_model hook failed: " + err.Error()}}
		case d.Refuse != "":
			return nil, tripEvent(c.ID, beforeModel, loop.GuardInput, d.Refuse, false)
		case d.Context != "":
			req = withContext(req, d.Context)
			sink(x.hookEntry(c.ID, "before_model:context", d.Context))
		}
	}
	for _, g := range x.guardrails {
		if g.Input == nil || slices.Contains(c.Overridden, g.Name) {
			continue
		}
		v, err := safely(func() (Verdict, error) { return g.Input(ctx, req) })
		if err != nil {
			return nil, &loop.Event{Type: loop.EventModelError, Call: c.ID, Error: &loop.Failure{Kind: "guardrail", Message: "guardrail " + g.Name + " failed: " + err.Error()}}
		}
		if v.Trip {
			return nil, tripEvent(c.ID, g.Name, loop.GuardInput, v.Reason, g.Escalate)
		}
	}
	return req, nil
}

// afterModel runs the output guardrails on the reply to c: nil, or the
// event that answers c instead. A tripped reply's content is not kept:
// the event carries its usage only.
func (x *Executor) afterModel(ctx context.Context, c *loop.Command, resp *model.Response) *loop.Event {
	for _, g := range x.guardrails {
		if g.Output == nil || slices.Contains(c.Overridden, g.Name) {
			continue
		}
		v, err := safely(func() (Verdict, error) { return g.Output(ctx, resp) })
		if err != nil {
			return &loop.Event{Type: loop.EventModelError, Call: c.ID, Error: &loop.Failure{Kind: "guardrail", Message: "guardrail " + g.Name + " failed: " + err.Error()}}
		}
		if v.Trip {
			ev := tripEvent(c.ID, g.Name, loop.GuardOutput, v.Reason, g.Escalate)
			ev.Reply = &model.Response{Usage: resp.Usage, Model: resp.Model}
			return ev
		}
	}
	return nil
}

func tripEvent(call, name, stage, reason string, escalate bool) *loop.Event {
	return &loop.Event{Type: loop.EventGuardrail, Call: call, Guardrail: &loop.GuardrailTrip{Name: name, Stage: stage, Reason: reason, Escalate: escalate}}
}

// withContext is req with text added at its end, in a copy: the core's
// messages are read-only.
func withContext(req *model.Request, text string) *model.Request {
	out := *req
	out.Messages = slices.Clone(req.Messages)
	block := model.TextBlock(text)
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == model.User {
		last := out.Messages[n-1]
		last.Content = append(slices.Clip(last.Content), block)
		out.Messages[n-1] = last
	} else {
		out.Messages = append(out.Messages, model.Message{Role: model.User, Content: []model.Block{block}})
	}
	return &out
}

// beforeTools runs BeforeTool on each call: the calls to run (arguments
// rewritten where it said so), the others answered in events.
func (x *Executor) beforeTools(ctx context.Context, events *[]loop.Event, calls []loop.ToolCall, sink Sink) []loop.ToolCall {
	h := x.hooks.BeforeTool
	if h == nil {
		return calls
	}
	run := calls[:0:0]
	for _, c := range calls {
		d, err := safely(func() (ToolDecision, error) {
			return h(ctx, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		})
		switch {
		case err != nil:
			*events = append(*events, hookResult(c.ID, "hook_error", fmt.Sprintf("tool %q not run: the before_tool hook failed: %v", c.Name, err)))
		case d.Deny != "":
			sink(x.hookEntry(c.ID, "before_tool:deny", d.Deny))
			*events = append(*events, hookResult(c.ID, "denied", fmt.Sprintf("tool %q not run: %s", c.Name, d.Deny)))
		case d.Args != nil:
			sink(x.hookEntry(c.ID, "before_tool:args", string(d.Args)))
			c.Args = d.Args
			run = append(run, c)
		default:
			run = append(run, c)
		}
	}
	return run
}

func hookResult(call, outcome, text string) loop.Event {
	return loop.Event{Type: loop.EventToolResult, Call: call, Tool: &loop.ToolOutcome{Output: text, IsError: true, Outcome: outcome}}
}

// afterTool runs AfterTool on res, the result of call.
func (x *Executor) afterTool(ctx context.Context, call loop.ToolCall, res tool.Result, sink Sink) tool.Result {
	h := x.hooks.AfterTool
	if h == nil {
		return res
	}
	out, err := safely(func() (ToolOutput, error) {
		return h(ctx, ToolCall{ID: call.ID, Name: call.Name, Args: call.Args}, ToolOutput{Output: res.Output, IsError: res.IsError})
	})
	switch {
	case err != nil:
		// The result may hold what the hook was to remove: it is withheld.
		res.Output, res.IsError, res.Outcome = fmt.Sprintf("the result of tool %q is withheld: the after_tool hook failed: %v", call.Name, err), true, "hook_error"
	case out.Output != res.Output || out.IsError != res.IsError:
		sink(x.hookEntry(call.ID, "after_tool:rewrite", fmt.Sprintf("the result was rewritten (%d bytes to %d)", len(res.Output), len(out.Output))))
		res.Output, res.IsError = out.Output, out.IsError
	}
	return res
}

// firstTrip keeps, of a batch's events, only a guardrail's trip if there
// is one: it ends or holds the run, and the other calls' answers are
// dropped (issued again if a person lets the calls through). What those
// calls used is charged with the trip, so the budget still sees it.
func firstTrip(events []loop.Event) []loop.Event {
	i := slices.IndexFunc(events, func(e loop.Event) bool { return e.Type == loop.EventGuardrail })
	if i < 0 {
		return events
	}
	trip := events[i]
	var used *model.Usage // the batch's replies', the stopped one's included
	for _, e := range events {
		switch {
		case e.Reply == nil:
		case used == nil:
			u := e.Reply.Usage
			used = &u
		default:
			*used = addUsage(*used, e.Reply.Usage)
		}
	}
	if used != nil {
		trip.Reply = &model.Response{Usage: *used}
	}
	return []loop.Event{trip}
}

// addUsage is what two model calls used.
func addUsage(a, b model.Usage) model.Usage {
	return model.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		CacheReadTokens: a.CacheReadTokens + b.CacheReadTokens, CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens,
		Cost: a.Cost + b.Cost, CostKnown: a.CostKnown && b.CostKnown}
}
