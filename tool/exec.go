package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Call is one tool call requested by the model.
type Call struct {
	// ID correlates the call with its Result.
	ID   string
	Name string
	// Args are the arguments exactly as the model produced them; they may be
	// invalid JSON. Empty Args mean an empty object, since some providers
	// omit the arguments of a call that takes none.
	Args json.RawMessage
}

// Outcome classifies a Result. Its values are stable: they are recorded in
// run logs.
type Outcome string

const (
	OutcomeOK          Outcome = "ok"           // the tool returned output
	OutcomeToolError   Outcome = "tool_error"   // the tool returned an error
	OutcomeInvalidArgs Outcome = "invalid_args" // not JSON, failing the schema, or ErrInvalidArgs from the tool
	OutcomeUnknownTool Outcome = "unknown_tool" // no tool has that name
	OutcomePanic       Outcome = "panic"        // the tool panicked or called runtime.Goexit
	OutcomeTimeout     Outcome = "timeout"      // the tool's timeout passed
	OutcomeCancelled   Outcome = "cancelled"    // the caller's context was cancelled or expired
)

// Result is the outcome of one Call, ready to show to the model.
type Result struct {
	ID, Name string
	// Output is what the model sees: the tool's output, or a message naming
	// the tool and saying what went wrong. It has been trimmed (see [Trim]).
	Output string
	// IsError is true for every Outcome but OutcomeOK.
	IsError bool
	Outcome Outcome
}

// ExecConfig configures an Executor. Zero or negative fields take the
// defaults.
type ExecConfig struct {
	// MaxParallel bounds how many calls of one batch run at once (default 8).
	MaxParallel int
	// Timeout bounds a call of a tool that sets no Timeout (default 60s).
	Timeout time.Duration
	// MaxOutputBytes and MaxOutputLines bound the output of a tool that sets
	// no limits of its own (default 16384 bytes, 200 lines).
	MaxOutputBytes int
	MaxOutputLines int
	// Output overrides, by tool name, the output bounds of the tool and
	// of the defaults above (a task file's tool_output: section).
	Output map[string]OutputCaps
}

// Executor runs tool calls. It is safe for concurrent use.
type Executor struct {
	cfg ExecConfig
}

// NewExecutor returns an Executor; the zero ExecConfig gives the defaults.
func NewExecutor(cfg ExecConfig) *Executor {
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = 16384
	}
	if cfg.MaxOutputLines <= 0 {
		cfg.MaxOutputLines = 200
	}
	return &Executor{cfg: cfg}
}

// Run runs calls in parallel, at most MaxParallel at once, and returns one
// Result per call in the same order. Every failure, including ctx being
// done, is reported in a Result rather than as an error, because the model
// must see one result for every call it made. Calls not yet started when ctx
// is done are reported as cancelled without running.
func (e *Executor) Run(ctx context.Context, reg *Registry, calls []Call) []Result {
	if len(calls) == 1 {
		// The common case: no workers to coordinate.
		return []Result{e.RunOne(ctx, reg, calls[0])}
	}
	results := make([]Result, len(calls))
	e.RunEach(ctx, reg, calls, func(i int, r Result) { results[i] = r })
	return results
}

// RunEach runs calls like Run and hands each result to done as soon as its
// call ends, with the call's index. done may be called from several
// goroutines at once; RunEach returns once every call has ended and every
// done has returned.
func (e *Executor) RunEach(ctx context.Context, reg *Registry, calls []Call, done func(i int, r Result)) {
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(calls) {
				return
			}
			done(i, e.RunOne(ctx, reg, calls[i]))
		}
	}
	// The calling goroutine is one of the workers.
	var wg sync.WaitGroup
	for range min(len(calls), e.cfg.MaxParallel) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// RunOne runs one call and returns its Result.
//
// The arguments are checked before the tool runs: they must be valid JSON
// and match the tool's schema. The tool then runs in its own goroutine under
// a context whose deadline is the earlier of ctx's and the tool's timeout.
// RunOne returns as soon as that context is done, even if the tool ignores
// it; such a tool's goroutine leaks until the tool's Run returns, and its
// output is discarded.
func (e *Executor) RunOne(ctx context.Context, reg *Registry, call Call) Result {
	res := Result{ID: call.ID, Name: call.Name}
	maxBytes, maxLines := e.cfg.MaxOutputBytes, e.cfg.MaxOutputLines
	hint := DefaultMoreHint
	if ent, ok := reg.entry(call.Name); ok {
		if ent.info.MaxOutputBytes > 0 {
			maxBytes = ent.info.MaxOutputBytes
		}
		if ent.info.MaxOutputLines > 0 {
			maxLines = ent.info.MaxOutputLines
		}
		if ent.info.MoreHint != "" {
			hint = ent.info.MoreHint
		}
		res.Outcome, res.Output = e.invoke(ctx, ent, call.Args)
	} else {
		res.Outcome, res.Output = OutcomeUnknownTool, unknownTool(reg, call.Name)
	}
	res.IsError = res.Outcome != OutcomeOK
	if c, ok := e.cfg.Output[call.Name]; ok {
		maxBytes, maxLines = cmp.Or(c.MaxBytes, maxBytes), cmp.Or(c.MaxLines, maxLines)
	}
	res.Output = TrimHint(res.Output, maxBytes, maxLines, hint)
	return res
}

func unknownTool(reg *Registry, name string) string {
	names := reg.Names()
	if len(names) == 0 {
		return fmt.Sprintf("unknown tool %q: no tools are available", name)
	}
	return fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(names, ", "))
}

// reply is what running (or preparing) a tool produced.
type reply struct {
	out      string
	err      error
	panicked bool
	value    any // the panic value
}

var emptyObject = json.RawMessage(`{}`)

// invoke checks args and runs the tool, returning the untrimmed output.
func (e *Executor) invoke(ctx context.Context, ent *entry, args json.RawMessage) (Outcome, string) {
	name := ent.info.Name
	if ctx.Err() != nil {
		return OutcomeCancelled, fmt.Sprintf("tool %q was cancelled before it started: %v", name, context.Cause(ctx))
	}
	if len(args) == 0 {
		args = emptyObject
	}
	c := invocation{tool: ent.tool, args: args}
	if ent.typed != nil {
		c.typed = ent.typed.prepare(args)
	}
	if c.typed == nil {
		if msg := checkArgs(ent, args); msg != "" {
			return OutcomeInvalidArgs, msg
		}
	}
	if ent.info.Inline {
		r := runInline(ctx, c)
		if r.err != nil && ctx.Err() != nil {
			return OutcomeCancelled, fmt.Sprintf("tool %q was stopped: %v", name, context.Cause(ctx))
		}
		return describe(name, r)
	}
	return e.runApart(ctx, ent, c)
}

// typedTool is a tool whose argument type can check its arguments: a
// [Func] tool (see args.go).
type typedTool interface {
	// typedSchema reports whether schema is the one derived from the
	// argument type, and a strict decode into that type accepts only
	// what schema accepts.
	typedSchema(schema json.RawMessage) bool
	// prepare decodes args strictly into the argument type and returns
	// the call to make with them, or nil when the decode cannot vouch
	// for them: then the schema decides, and Run decodes them again.
	prepare(args json.RawMessage) preparedCall
}

// preparedCall is a typed tool's call with its arguments decoded.
type preparedCall interface {
	run(ctx context.Context) (string, error)
}

// invocation is a call ready to run: prepared by its typed tool, or its
// arguments as they came, for the tool's Run.
type invocation struct {
	typed preparedCall
	tool  Tool
	args  json.RawMessage
}

func (c invocation) run(ctx context.Context) (string, error) {
	if c.typed != nil {
		return c.typed.run(ctx)
	}
	return c.tool.Run(ctx, c.args)
}

// runApart runs a tool that is not Inline on its own goroutine, under its
// timeout.
func (e *Executor) runApart(ctx context.Context, ent *entry, c invocation) (Outcome, string) {
	name := ent.info.Name
	timeout := ent.info.Timeout
	if timeout <= 0 {
		timeout = e.cfg.Timeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Buffered so that a tool that outlives invoke can still hand back its
	// reply and let its goroutine end.
	done := make(chan reply, 1)
	go func() {
		returned := false
		defer func() {
			if !returned {
				done <- reply{panicked: true, value: recover()}
			}
		}()
		out, err := c.run(tctx)
		returned = true
		done <- reply{out: out, err: err}
	}()

	var r reply
	select {
	case r = <-done:
	case <-tctx.Done():
		// A reply that raced with the deadline still counts.
		select {
		case r = <-done:
		default:
			return stopped(ctx, name, timeout)
		}
	}
	if r.err != nil && tctx.Err() != nil {
		// The tool gave up because its context was done; say why.
		return stopped(ctx, name, timeout)
	}
	return describe(name, r)
}

// runInline runs an Inline tool on this goroutine, recovering a panic.
func runInline(ctx context.Context, c invocation) (r reply) {
	returned := false
	defer func() {
		if !returned {
			r = reply{panicked: true, value: recover()}
		}
	}()
	out, err := c.run(ctx)
	returned = true
	return reply{out: out, err: err}
}

// describe turns a tool's reply into what the model sees.
func describe(name string, r reply) (Outcome, string) {
	switch {
	case r.panicked && r.value == nil:
		// recover returns nil only after runtime.Goexit.
		return OutcomePanic, fmt.Sprintf("tool %q exited without returning", name)
	case r.panicked:
		return OutcomePanic, fmt.Sprintf("tool %q panicked: %v", name, r.value)
	case r.err == nil:
		return OutcomeOK, r.out
	}
	var msg string
	outcome := OutcomeToolError
	if errors.Is(r.err, ErrInvalidArgs) {
		outcome = OutcomeInvalidArgs
		msg = fmt.Sprintf("tool %q: %v", name, r.err)
	} else {
		msg = fmt.Sprintf("tool %q failed: %v", name, r.err)
	}
	if r.out != "" {
		msg += "\n" + r.out
	}
	return outcome, msg
}

// stopped explains why a tool was stopped: the caller's context or the
// tool's own timeout.
func stopped(ctx context.Context, name string, timeout time.Duration) (Outcome, string) {
	if ctx.Err() != nil {
		return OutcomeCancelled, fmt.Sprintf("tool %q was cancelled: %v", name, context.Cause(ctx))
	}
	return OutcomeTimeout, fmt.Sprintf("tool %q timed out after %v", name, timeout)
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	}
	return "an array"
}
