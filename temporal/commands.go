package temporal

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// Activity names, as Register registers them.
const (
	activityModel  = "ratchet.model"
	activityTool   = "ratchet.tool"
	activityCheck  = "ratchet.check"
	activitySave   = "ratchet.save"
	activityFinish = "ratchet.finish"
)

// job is one answer the workflow must get for a batch of commands.
type job struct {
	// launch starts the activity, writing s ahead of its work when s is
	// not nil; nil for an answer the workflow gives itself.
	launch func(ctx workflow.Context, s *Save) workflow.Future
	// answer turns the activity's outcome (f is nil when launch is) into
	// the event that answers the command. An error says the store could
	// not be written.
	answer func(ctx workflow.Context, f workflow.Future) (loop.Event, error)
}

// carryOut does the work of one batch of commands, the activities of a
// batch running in parallel, and returns their answers in command order.
// An error means the store could not be written: the run cannot go on.
func (d *driver) carryOut(ctx workflow.Context, cmds []loop.Command) ([]loop.Event, error) {
	var jobs []job
	calls := d.calls // a batch's model calls play the turns that follow
	for i := range cmds {
		c := &cmds[i]
		switch c.Type {
		case loop.CallModel:
			jobs = append(jobs, d.callModel(c, calls))
			calls++
		case loop.RunTools:
			for _, call := range c.Calls {
				jobs = append(jobs, d.runTool(c, call))
			}
		case loop.Verify:
			for _, name := range c.Checks {
				jobs = append(jobs, d.check(c, name))
			}
		case loop.RunChild:
			jobs = append(jobs, d.runChild(c, calls))
		case loop.AskHuman:
			jobs = append(jobs, job{answer: func(ctx workflow.Context, _ workflow.Future) (loop.Event, error) {
				return d.ask(ctx, c)
			}})
		}
	}
	// Write-ahead: what led to these commands is durable before any of
	// them is carried out. When one activity does the batch's work, it
	// writes the entries first; otherwise a save of its own comes first.
	s := d.save()
	if s.empty() {
		s = nil
	}
	launched := 0
	for _, j := range jobs {
		if j.launch != nil {
			launched++
		}
	}
	if launched != 1 && s != nil {
		if err := d.saveNow(ctx, s); err != nil {
			return nil, err
		}
		s = nil
	}
	futures := make([]workflow.Future, len(jobs))
	for i, j := range jobs {
		if j.launch != nil {
			futures[i] = j.launch(ctx, s)
		}
	}
	evs := make([]loop.Event, 0, len(jobs))
	var failed error
	for i, j := range jobs {
		ev, err := j.answer(ctx, futures[i])
		if err != nil {
			failed = errors.Join(failed, err)
			continue
		}
		if futures[i] != nil && s != nil && futures[i].Get(ctx, nil) == nil {
			d.saved(s) // the activity that carried it succeeded
		}
		evs = append(evs, ev)
	}
	return evs, failed
}

func (s *Save) empty() bool {
	return s == nil || len(s.Entries) == 0 && s.Status == "" && !s.Usage
}

// saveNow writes s by an activity of its own.
func (d *driver) saveNow(ctx workflow.Context, s *Save) error {
	if err := workflow.ExecuteActivity(d.storeOptions(ctx), activitySave, SaveInput{Run: d.in.Run, Save: s}).Get(ctx, nil); err != nil {
		return storeFailure(err)
	}
	d.saved(s)
	return nil
}

// storeFailure names an activity's failure to write the store.
func storeFailure(err error) error {
	return errors.New("the worker could not carry out the run's commands: " + cause(err))
}

// cause is the message of the error an activity failed with, without
// Temporal's wrapping.
// billedOf is what the failed attempts of a model activity were billed:
// the last attempt's error says it (Activities.Model), or, if it timed
// out, its last heartbeat. nil when nothing was billed.
func billedOf(err error) *model.Usage {
	var u model.Usage
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &app) && app.HasDetails():
		if app.Details(&u) != nil {
			return nil
		}
	case errors.As(err, &timeout) && timeout.HasLastHeartbeatDetails():
		var l attemptLog
		if timeout.LastHeartbeatDetails(&l) != nil {
			return nil
		}
		u = l.Billed
	}
	if u == (model.Usage{}) {
		return nil
	}
	return &u
}

func cause(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out (" + timeout.TimeoutType().String() + ")"
	}
	var cancelled *temporal.CanceledError
	if errors.As(err, &cancelled) {
		return "cancelled"
	}
	return err.Error()
}

// isStoreError says the activity failed before its work, writing the
// store ahead of it or building the run's task: infrastructure.
func isStoreError(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && (app.Type() == errTypeStore || app.Type() == errTypeOpen)
}

// isTimeout says the activity ran out of time: the command's deadline.
func isTimeout(err error) bool {
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout)
}

// Error types that activities fail with.
const (
	errTypeStore = "store" // writing the run's entries or row failed
	errTypeModel = "model" // a model error worth another attempt
	errTypeOpen  = "open"  // the worker could not build the run's task
	errTypeChild = "child" // a sub-agent's task could not be built
)

// remaining is how long an activity for a command with deadline dl may
// take, all attempts together; ok is false when the deadline has passed.
func remaining(ctx workflow.Context, dl time.Time) (time.Duration, bool) {
	if dl.IsZero() {
		return defaultActivityTimeout, true
	}
	left := dl.Sub(workflow.Now(ctx))
	return left, left > 0
}

// defaultActivityTimeout bounds a command that has no deadline.
const defaultActivityTimeout = 24 * time.Hour

// heartbeatTimeout is how soon a worker that died is noticed in an
// activity: the activities heartbeat well within it.
const heartbeatTimeout = 10 * time.Second

func (d *driver) retry(attempts int) *temporal.RetryPolicy {
	if attempts <= 0 {
		attempts = 3
	}
	return &temporal.RetryPolicy{InitialInterval: retryInitial, BackoffCoefficient: 2, MaximumInterval: retryMax,
		MaximumAttempts: int32(attempts), NonRetryableErrorTypes: []string{errTypeOpen}}
}

// The activities' retry policy's waits: the first, doubled after each
// attempt up to the most.
const retryInitial, retryMax = time.Second, 10 * time.Second

// retryWait is how long the retry policy waited before attempt n (2 for
// the first retry).
func retryWait(n int) time.Duration {
	return min(retryInitial<<max(n-2, 0), retryMax)
}

func (d *driver) options(ctx workflow.Context, timeout time.Duration, attempts int) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: timeout, StartToCloseTimeout: timeout,
		HeartbeatTimeout: heartbeatTimeout, RetryPolicy: d.retry(attempts),
	})
}

// storeOptions are for the activities that only write the store: they
// retry for longer, since the run's record depends on them.
func (d *driver) storeOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: []string{errTypeOpen}},
	})
}

func (d *driver) callModel(c *loop.Command, calls int) job {
	fail := func(kind, msg string) loop.Event {
		return loop.Event{Type: loop.EventModelError, Call: c.ID, Error: &loop.Failure{Kind: kind, Message: msg}}
	}
	var late bool
	return job{
		launch: func(ctx workflow.Context, s *Save) workflow.Future {
			left, ok := remaining(ctx, c.Deadline)
			if !ok {
				late = true
				return nil
			}
			req := toWireRequest(*c.Request)
			req.shrink(d.base, d.outputs)
			return workflow.ExecuteActivity(d.options(ctx, left, d.in.Attempts), activityModel,
				ModelInput{Run: d.in.Run, Save: s, Call: c.ID, Overridden: c.Overridden, Calls: calls, Request: req})
		},
		answer: func(ctx workflow.Context, f workflow.Future) (loop.Event, error) {
			if late || f == nil {
				return fail(loop.FailDeadline, "the time budget ran out before the call was made"), nil
			}
			var ev WireEvent
			err := f.Get(ctx, &ev)
			switch {
			case err == nil:
				d.aside(ctx, ev.Shell, ev.Repair)
				return ev.event(), nil
			case isStoreError(err):
				return loop.Event{}, storeFailure(err)
			case isTimeout(err):
				failed := fail(loop.FailDeadline, "model call: "+cause(err))
				failed.Error.Billed = billedOf(err)
				return failed, nil
			}
			failed := fail("error", cause(err))
			failed.Error.Billed = billedOf(err)
			return failed, nil
		},
	}
}

func (d *driver) runTool(c *loop.Command, call loop.ToolCall) job {
	once := d.once[call.Name]
	attempts := d.in.Attempts
	if once {
		attempts = 1
	}
	return job{
		launch: func(ctx workflow.Context, s *Save) workflow.Future {
			left, _ := remaining(ctx, c.Deadline)
			// A tool call past its deadline still runs: the executor cuts
			// it off at once and says so, as in a local run.
			left = max(left, time.Second)
			return workflow.ExecuteActivity(d.options(ctx, left, attempts), activityTool,
				ToolInput{Run: d.in.Run, Save: s, Call: call})
		},
		answer: func(ctx workflow.Context, f workflow.Future) (loop.Event, error) {
			var out ToolResult
			err := f.Get(ctx, &out)
			switch {
			case err == nil:
				d.aside(ctx, out.Shell, out.Repair)
				return loop.Event{Type: loop.EventToolResult, Call: call.ID, Tool: &out.ToolOutcome}, nil
			case isStoreError(err):
				return loop.Event{}, storeFailure(err)
			case once:
				// One attempt, and its outcome is unknown (its worker died,
				// or it failed before saying): never run it again.
				return loop.Event{Type: loop.EventToolResult, Call: call.ID, Tool: &loop.ToolOutcome{
					Output: runner.UnknownOutcome, IsError: true, Outcome: runner.OutcomeUnknown}}, nil
			}
			return loop.Event{Type: loop.EventToolResult, Call: call.ID, Tool: &loop.ToolOutcome{
				Output: "the tool could not be run: " + cause(err), IsError: true, Outcome: "error"}}, nil
		},
	}
}

func (d *driver) check(c *loop.Command, name string) job {
	in := CheckInput{Run: d.in.Run, Call: c.ID, Check: name, Candidate: *c.Candidate}
	pure := d.pure[name]
	return job{
		launch: func(ctx workflow.Context, s *Save) workflow.Future {
			in.Save = s
			left, _ := remaining(ctx, c.Deadline)
			left = max(left, time.Second)
			if pure {
				lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
					ScheduleToCloseTimeout: min(left, time.Minute), RetryPolicy: d.retry(d.in.Attempts)})
				return workflow.ExecuteLocalActivity(lctx, activityCheck, in)
			}
			return workflow.ExecuteActivity(d.options(ctx, left, d.in.Attempts), activityCheck, in)
		},
		answer: func(ctx workflow.Context, f workflow.Future) (loop.Event, error) {
			var ev WireEvent
			err := f.Get(ctx, &ev)
			switch {
			case err == nil:
				d.aside(ctx, ev.Shell, ev.Repair)
				return ev.event(), nil
			case isStoreError(err):
				return loop.Event{}, storeFailure(err)
			}
			kind := "error"
			if isTimeout(err) {
				kind = loop.FailDeadline
			}
			return loop.Event{Type: loop.EventCheckError, Call: c.ID,
				Error: &loop.Failure{Kind: kind, Message: "check " + name + ": " + cause(err)}}, nil
		},
	}
}

// ask puts the question to whoever sends the answer Update: the row says
// awaiting_input with the question until one comes.
func (d *driver) ask(ctx workflow.Context, c *loop.Command) (loop.Event, error) {
	if !d.in.Human {
		return loop.Event{Type: loop.EventHumanUnavailable, Call: c.ID}, nil
	}
	// The Update is taken from now on: a person who reads the row's
	// question may answer before this workflow task ends.
	d.asking, d.answer = c, nil
	defer func() { d.asking, d.answer = nil, nil }()
	s := d.save()
	s.Status, s.Question = store.StatusAwaitingInput, &c.Question
	if err := d.saveNow(ctx, s); err != nil {
		return loop.Event{}, err
	}
	d.awaited = true
	if err := workflow.Await(ctx, func() bool { return d.answer != nil }); err != nil {
		return loop.Event{}, err // cancelled: the run ends cancelled
	}
	ev := loop.Event{Type: loop.EventHumanReply, Call: c.ID, Text: d.answer.Text, Approved: d.answer.Approved}
	return ev, nil
}

// aside records what an activity's executor recorded on the command's
// way, then the repair entry its admission of its event called for: the
// entries a local run records before the event, in the same order.
func (d *driver) aside(ctx workflow.Context, shell []observe.Entry, repair *loop.Note) {
	for _, e := range shell {
		d.record(e)
	}
	if repair != nil {
		d.record(observe.Entry{At: now(ctx), Kind: observe.KindRepair, Note: repair})
	}
}
