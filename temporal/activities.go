package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

// Entry is a store entry in an activity's payload: Data is the entry's
// JSON, kept as JSON rather than base64.
type Entry struct {
	Seq  int64           `json:"seq"`
	Kind string          `json:"kind"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data"`
}

// Save is what an activity writes to the store before its own work: the
// entries recorded since the last save and changes to the run's row.
type Save struct {
	Entries []Entry `json:"entries,omitempty"`
	// Status, when set, becomes the row's status (running after an
	// answer, awaiting_input before a question).
	Status string `json:"status,omitempty"`
	// Question is the question an awaiting_input row shows.
	Question *string `json:"question,omitempty"`
	// Usage says Steps and CostMicros are to be written to the row.
	Usage      bool  `json:"usage,omitempty"`
	Steps      int64 `json:"steps,omitempty"`
	CostMicros int64 `json:"cost_micros,omitempty"`
}

// ModelInput is a model call: the CallModel command's request.
type ModelInput struct {
	Run  string `json:"run"`
	Save *Save  `json:"save,omitempty"`
	Call string `json:"call"`
	// Overridden names the guardrails a person let this call pass
	// (loop.Command.Overridden).
	Overridden []string `json:"overridden,omitempty"`
	// Calls is how many of the run's model calls were answered before
	// this one: a scripted model plays the turn after them.
	Calls   int         `json:"calls"`
	Request WireRequest `json:"request"`
}

// ToolInput is one tool call of a RunTools command.
type ToolInput struct {
	Run  string        `json:"run"`
	Save *Save         `json:"save,omitempty"`
	Call loop.ToolCall `json:"call"`
}

// CheckInput is one check of a Verify command.
type CheckInput struct {
	Run       string           `json:"run"`
	Save      *Save            `json:"save,omitempty"`
	Call      string           `json:"call"`
	Check     string           `json:"check"`
	Candidate verify.Candidate `json:"candidate"`
}

// SaveInput writes entries and row changes, nothing else.
type SaveInput struct {
	Run  string `json:"run"`
	Save *Save  `json:"save"`
}

// FinishInput ends a run: the last entries and the Result on its row.
type FinishInput struct {
	Run    string      `json:"run"`
	Save   *Save       `json:"save,omitempty"`
	Result loop.Result `json:"result"`
}

// Live is a run's live task as a worker builds it: the tools, verifiers
// and model that carry out its commands, and the hooks and guardrails
// they go through (runner.Config's; they apply to the run's sub-agents
// too). Close, if set, releases it.
type Live struct {
	Task       runner.Task
	Model      model.Model
	Exec       tool.ExecConfig
	Hooks      runner.Hooks
	Guardrails []runner.Guardrail
	// Patch, when set, takes the patch of the run's workspace as it
	// finishes (runner.Config.Patch): the worker that records the run's
	// Result takes it, from the workspace its live task works in.
	Patch func(ctx context.Context) *loop.Patch
	// Redactor knows the secrets the run holds (runner.Config.Redactor):
	// every reply, tool output, verdict and error is admitted with it
	// (runner.Admit) before it leaves the worker, so that no secret
	// reaches the workflow's history or the store, and the spec is
	// compared and sent to the model redacted, as StartOptions.Redactor
	// recorded it.
	Redactor *redact.Redactor
	Close    func()
}

// Opener builds a run's live task from its row (Task holds what Start
// was given as TaskInfo). It must build the task the run started with:
// the worker checks that it compiles to the recorded spec.
type Opener func(ctx context.Context, run store.Run) (Live, error)

// Activities carry out a run's commands in a worker: they hold the
// store every run's entries go to and the live tasks of the runs the
// worker has seen.
type Activities struct {
	store store.Store
	open  Opener
	mu    sync.Mutex
	runs  map[string]*liveRun
}

// NewActivities returns the activities of a worker whose runs are kept
// in s and whose tasks open builds.
func NewActivities(s store.Store, open Opener) *Activities {
	return &Activities{store: s, open: open, runs: map[string]*liveRun{}}
}

type liveRun struct {
	// active counts the activities using it; last is when one last did
	// (both under Activities.mu).
	active int
	last   time.Time
	ready  chan struct{}
	err    error
	live   Live
	// x carries out the run's commands, as in a local run.
	x *runner.Executor
	// seek keeps a scripted model's seek and call together: the run's own
	// lock, or its parent's for a sub-agent, which shares the model.
	seek *sync.Mutex
	// base is the run's first step's request; outputs caches the tool
	// outputs read from the store, by seq.
	base      model.Request
	outputsMu sync.Mutex
	outputs   map[int64]string
}

// idleAfter is how long a live task may go unused before the worker
// closes it: a run that moved to other workers, or waits for a person,
// should not hold a workspace or MCP servers here. It is built again if
// the run comes back.
const idleAfter = 10 * time.Minute

// run returns the live task of run id, building it on first use; call
// done when the activity no longer uses it.
func (a *Activities) run(ctx context.Context, id string) (lr *liveRun, done func(), err error) {
	now := time.Now()
	a.mu.Lock()
	var idle []*liveRun
	for rid, r := range a.runs {
		if r.active == 0 && now.Sub(r.last) > idleAfter {
			delete(a.runs, rid)
			idle = append(idle, r)
		}
	}
	lr, ok := a.runs[id]
	if !ok {
		lr = &liveRun{ready: make(chan struct{})}
		a.runs[id] = lr
	}
	lr.active++
	lr.last = now
	a.mu.Unlock()
	for _, r := range idle {
		r.close()
	}
	done = func() {
		a.mu.Lock()
		lr.active--
		lr.last = time.Now()
		a.mu.Unlock()
	}
	if !ok {
		lr.err = lr.build(ctx, a, id)
		if lr.err != nil {
			a.mu.Lock()
			delete(a.runs, id)
			a.mu.Unlock()
		}
		close(lr.ready)
	}
	select {
	case <-lr.ready:
	case <-ctx.Done():
		done()
		return nil, nil, ctx.Err()
	}
	if lr.err != nil {
		done()
		return nil, nil, temporal.NewNonRetryableApplicationError(lr.err.Error(), errTypeOpen, nil)
	}
	return lr, done, nil
}

// close releases a live task once it is built.
func (lr *liveRun) close() {
	<-lr.ready
	if lr.err == nil && lr.live.Close != nil {
		lr.live.Close()
	}
}

func (lr *liveRun) build(ctx context.Context, a *Activities, id string) error {
	row, err := a.store.Run(ctx, id)
	if err != nil {
		return err
	}
	lr.seek = new(sync.Mutex)
	var live Live
	if row.Parent != "" {
		live, err = a.openChild(ctx, lr, row)
	} else {
		live, err = a.open(ctx, row)
	}
	if err != nil {
		return fmt.Errorf("run %s: building its task: %w", id, err)
	}
	fail := func(err error) error {
		if live.Close != nil {
			live.Close()
		}
		return fmt.Errorf("run %s: %w", id, err)
	}
	x, spec, err := runner.NewExecutor(&live.Task, &runner.Config{RunID: id, Model: live.Model, Exec: live.Exec,
		Hooks: live.Hooks, Guardrails: live.Guardrails, Redactor: live.Redactor})
	if err != nil {
		return fail(err)
	}
	if err := sameSpec(ctx, a.store, id, spec); err != nil {
		return fail(err)
	}
	base, err := baseRequest(spec)
	if err != nil {
		return fail(err)
	}
	lr.live, lr.x, lr.base = live, x, base
	lr.outputs = map[int64]string{}
	return nil
}

// sameSpec checks that the task a worker built is the one the run
// started with, as runner.Resume does.
func sameSpec(ctx context.Context, s store.Store, id string, spec loop.Spec) error {
	m, err := loop.New(spec)
	if err != nil {
		return err
	}
	entries, err := s.Entries(ctx, id, 0)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return errors.New("its log is empty: Start records the spec first")
	}
	rec, err := observe.Decode(entries[0].Data)
	if err != nil || rec.Spec == nil {
		return fmt.Errorf("its log does not begin with its spec (%v)", err)
	}
	a, err := json.Marshal(rec.Spec)
	if err != nil {
		return err
	}
	b, err := json.Marshal(m.Spec())
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return errors.New("the task has changed since the run started (the worker's task compiles to another spec than the recorded one)")
	}
	return nil
}

// release closes a finished run's live task.
func (a *Activities) release(id string) {
	a.mu.Lock()
	lr, ok := a.runs[id]
	delete(a.runs, id)
	a.mu.Unlock()
	if ok {
		lr.close()
	}
}

// Close releases every live task the worker holds.
func (a *Activities) Close() {
	a.mu.Lock()
	ids := make([]string, 0, len(a.runs))
	for id := range a.runs {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.release(id)
	}
}

// write makes s durable. Appending is idempotent: entries an earlier
// attempt already wrote are skipped.
func (a *Activities) write(ctx context.Context, run string, s *Save) error {
	if s == nil {
		return nil
	}
	if err := a.append(ctx, run, s.Entries); err != nil {
		return temporal.NewApplicationError(err.Error(), errTypeStore)
	}
	var u store.Update
	if s.Status != "" {
		u.Status = &s.Status
		if s.Question == nil {
			empty := ""
			u.Question = &empty
		}
	}
	u.Question = cmpOr(s.Question, u.Question)
	if s.Usage {
		u.Steps, u.CostMicros = &s.Steps, &s.CostMicros
	}
	if u.Status == nil && u.Question == nil && u.Steps == nil {
		return nil
	}
	u.Updated = time.Now().UTC()
	if err := a.store.UpdateRun(ctx, run, u); err != nil {
		return temporal.NewApplicationError(err.Error(), errTypeStore)
	}
	return nil
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func (a *Activities) append(ctx context.Context, run string, es []Entry) error {
	if len(es) == 0 {
		return nil
	}
	entries := make([]store.Entry, len(es))
	for i, e := range es {
		entries[i] = store.Entry{Seq: e.Seq, Kind: e.Kind, At: e.At, Data: e.Data}
	}
	err := a.store.Append(ctx, run, entries)
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	// An attempt before this one may have written some or all of them.
	last, lerr := a.store.LastSeq(ctx, run)
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Seq > last })
	if i == len(entries) {
		return nil
	}
	if entries[i].Seq != last+1 {
		return fmt.Errorf("run %s: the store's log ends at entry %d but the workflow's next entry is %d: %w", run, last, entries[i].Seq, err)
	}
	return a.store.Append(ctx, run, entries[i:])
}

// heartbeat reports the activity alive until stop is called, so that a
// worker that dies mid-call is noticed within heartbeatTimeout; details
// are what a later attempt reads of this one if it dies.
func heartbeat(ctx context.Context, details ...any) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatTimeout / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details...)
			}
		}
	}()
	return func() { close(done) }
}

// Model carries out a model call. A temporary failure (a 429, a 5xx, a
// connection error) fails the activity so that Temporal retries it within
// the command's deadline; any other failure is the call's answer, a
// model_error, as in a local run.
func (a *Activities) Model(ctx context.Context, in ModelInput) (WireEvent, error) {
	var shell shellLog
	ev, repair, err := a.model(ctx, in, &shell)
	w := toWireEvent(ev)
	w.Repair, w.Shell = repair, shell.entries
	return w, err
}

func (a *Activities) model(ctx context.Context, in ModelInput, shell *shellLog) (ev loop.Event, repair *loop.Note, err error) {
	lr, done, err := a.run(ctx, in.Run)
	if err != nil {
		return loop.Event{}, nil, err
	}
	defer done()
	shell.red = lr.live.Redactor
	defer func() {
		if err == nil {
			repair = runner.Admit(&ev, lr.live.Redactor)
		}
	}()
	if err := a.write(ctx, in.Run, in.Save); err != nil {
		return loop.Event{}, nil, err
	}
	prior := shell.retried(ctx, in.Call)
	defer heartbeat(ctx, attemptLog{Billed: prior})()
	req, err := in.Request.request(lr.base, func(seq int64) (string, error) { return a.output(ctx, in.Run, lr, seq) })
	if err != nil {
		return loop.Event{}, nil, temporal.NewApplicationError(err.Error(), errTypeStore)
	}
	ev, gerr := lr.callModel(ctx, in, &req, shell.add)
	// What the attempts before this one were billed (a stream cut after
	// output) is charged with this one's answer, as a local run charges
	// its transport's billed retries.
	billed := prior
	if ev.Error != nil && ev.Error.Billed != nil {
		billed = model.AddBilled(billed, *ev.Error.Billed)
	}
	var t interface{ Temporary() bool }
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.As(gerr, &t) && t.Temporary() {
		// The failure is kept in the history: admitted as an event's text.
		msg := lr.live.Redactor.String(strings.ToValidUTF8(gerr.Error(), "\uFFFD"))
		shell.failed(ctx, attemptLog{Why: msg, Billed: billed})
		return loop.Event{}, nil, temporal.NewApplicationError(msg, errTypeModel, billed)
	}
	switch {
	case ev.Reply != nil:
		ev.Reply.Usage = model.AddBilled(ev.Reply.Usage, prior)
	case ev.Error != nil && billed != (model.Usage{}):
		ev.Error.Billed = &billed
	}
	return ev, nil, nil
}

// callModel carries out the model call in, as the executor does for a
// local run.
func (lr *liveRun) callModel(ctx context.Context, in ModelInput, req *model.Request, sink runner.Sink) (loop.Event, error) {
	if s, ok := lr.live.Model.(runner.Seeker); ok {
		// A scripted model plays turn n on call n: which call this is
		// comes from the workflow, whichever worker made the ones before.
		lr.seek.Lock()
		defer lr.seek.Unlock()
		s.Seek(in.Calls)
	}
	return lr.x.CallModel(ctx, &loop.Command{Type: loop.CallModel, ID: in.Call, Request: req, Overridden: in.Overridden}, sink)
}

// shellLog collects what an executor records on a command's way in an
// activity (retries, fallbacks, waits, hook decisions), for the workflow,
// which keeps the run's log, to record before the command's answer.
type shellLog struct {
	red     *redact.Redactor
	mu      sync.Mutex
	entries []observe.Entry
}

// add is the executor's sink. What leaves the worker is redacted.
func (s *shellLog) add(e observe.Entry) {
	e.At = nowUTC().Round(0)
	if e.Retry != nil {
		e.Retry.Reason = s.red.String(e.Retry.Reason)
	}
	if e.Wait != nil {
		e.Wait.Reason = s.red.String(e.Wait.Reason)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
}

// attemptLog is what an attempt of a model call leaves the next, as its
// last heartbeat's details: why it failed ("" while it runs) and what the
// attempts so far were billed.
type attemptLog struct {
	Why    string      `json:"why,omitempty"`
	Billed model.Usage `json:"billed"`
}

// failed keeps why this attempt of a model call failed, and what the
// attempts so far were billed, as its last heartbeat's details: the next
// attempt records the retry and charges the billing (retried).
func (s *shellLog) failed(ctx context.Context, l attemptLog) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, l)
	}
}

// retried records, in a later attempt of model call id, the retry that
// Temporal's retry policy made after the attempt before failed, as a local
// run records its transport's retries, and returns what the attempts
// before were billed.
func (s *shellLog) retried(ctx context.Context, id string) model.Usage {
	if !activity.IsActivity(ctx) || !activity.HasHeartbeatDetails(ctx) {
		return model.Usage{}
	}
	var l attemptLog
	if activity.GetHeartbeatDetails(ctx, &l) != nil {
		return model.Usage{}
	}
	if l.Why != "" {
		n := int(activity.GetInfo(ctx).Attempt)
		s.add(observe.Entry{Kind: observe.KindRetry, Retry: &observe.Retry{Call: id, Retry: model.Retry{Attempt: n, Wait: retryWait(n), Reason: l.Why}}})
	}
	return l.Billed
}

// output returns the tool output recorded at entry seq of run, reading
// the store once for every output at or after it that it has not read.
func (a *Activities) output(ctx context.Context, run string, lr *liveRun, seq int64) (string, error) {
	lr.outputsMu.Lock()
	defer lr.outputsMu.Unlock()
	if out, ok := lr.outputs[seq]; ok {
		return out, nil
	}
	entries, err := a.store.Entries(ctx, run, seq-1)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Kind != string(observe.KindEvent) {
			continue
		}
		rec, err := observe.Decode(e.Data)
		if err != nil {
			return "", fmt.Errorf("run %s entry %d: %w", run, e.Seq, err)
		}
		if ev := rec.Event; ev != nil && ev.Type == loop.EventToolResult && len(ev.Tool.Output) >= refMin {
			lr.outputs[e.Seq] = ev.Tool.Output
		}
	}
	out, ok := lr.outputs[seq]
	if !ok {
		return "", fmt.Errorf("run %s: entry %d holds no tool output the request refers to", run, seq)
	}
	return out, nil
}

// Tool runs one tool call. Its failures are observations, as in a local
// run; the activity fails only when the store or the task could not be
// had, before the call ran.
func (a *Activities) Tool(ctx context.Context, in ToolInput) (ToolResult, error) {
	lr, done, err := a.run(ctx, in.Run)
	if err != nil {
		return ToolResult{}, err
	}
	defer done()
	if err := a.write(ctx, in.Run, in.Save); err != nil {
		return ToolResult{}, err
	}
	defer heartbeat(ctx)()
	shell := shellLog{red: lr.live.Redactor}
	calls, answered := lr.x.DecideTools(ctx, []loop.ToolCall{in.Call}, false, shell.add)
	if len(answered) == 0 {
		answered = lr.x.RunTools(ctx, calls, shell.add)
	}
	ev := answered[0]
	out := ToolResult{Repair: runner.Admit(&ev, lr.live.Redactor), Shell: shell.entries}
	out.ToolOutcome = *ev.Tool
	return out, nil
}

// ToolResult is a tool call's outcome, admitted (runner.Admit), with the
// repair entry its admission calls for, if any.
type ToolResult struct {
	loop.ToolOutcome
	Repair *loop.Note `json:"repair,omitempty"`
	// Shell are the entries recorded on the call's way (hook decisions).
	Shell []observe.Entry `json:"shell,omitempty"`
}

// Check runs one check on a candidate, as the local runner does.
func (a *Activities) Check(ctx context.Context, in CheckInput) (WireEvent, error) {
	ev, repair, err := a.check(ctx, in)
	w := toWireEvent(ev)
	w.Repair = repair
	return w, err
}

func (a *Activities) check(ctx context.Context, in CheckInput) (ev loop.Event, repair *loop.Note, err error) {
	lr, done, err := a.run(ctx, in.Run)
	if err != nil {
		return loop.Event{}, nil, err
	}
	defer done()
	defer func() {
		if err == nil {
			repair = runner.Admit(&ev, lr.live.Redactor)
		}
	}()
	if err := a.write(ctx, in.Run, in.Save); err != nil {
		return loop.Event{}, nil, err
	}
	defer heartbeat(ctx)()
	if !lr.x.HasCheck(in.Check) {
		return loop.Event{}, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s has no check %q", in.Run, in.Check), errTypeOpen, nil)
	}
	return lr.x.Check(ctx, in.Call, in.Check, &in.Candidate), nil, nil
}

// Save writes entries and row changes.
func (a *Activities) Save(ctx context.Context, in SaveInput) error {
	return a.write(ctx, in.Run, in.Save)
}

// Finish writes the last entries and the Result on the run's row, with
// the patch of its workspace when the worker holds its live task and that
// takes one (Live.Patch), and releases the live task. It returns the
// patch, for the workflow's Result.
func (a *Activities) Finish(ctx context.Context, in FinishInput) (*loop.Patch, error) {
	if err := a.write(ctx, in.Run, in.Save); err != nil {
		return nil, err
	}
	in.Result.Patch = a.patch(ctx, in.Run)
	data, err := json.Marshal(in.Result)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errTypeStore, err)
	}
	status, steps, cost, empty := string(in.Result.Status), int64(in.Result.Usage.Steps), int64(in.Result.Usage.Cost), ""
	if err := a.store.UpdateRun(ctx, in.Run, store.Update{Status: &status, Question: &empty, Result: data, Steps: &steps, CostMicros: &cost, Updated: time.Now().UTC()}); err != nil {
		return nil, temporal.NewApplicationError(err.Error(), errTypeStore)
	}
	a.release(in.Run)
	return in.Result.Patch, nil
}

// patch takes the patch of run id's workspace, as a local run does as it
// finishes, when this worker holds its live task: nil otherwise.
func (a *Activities) patch(ctx context.Context, id string) *loop.Patch {
	a.mu.Lock()
	lr, ok := a.runs[id]
	a.mu.Unlock()
	if !ok {
		return nil
	}
	<-lr.ready
	if lr.err != nil || lr.live.Patch == nil {
		return nil
	}
	return runner.RedactPatch(lr.live.Redactor, lr.live.Patch(ctx))
}

// Registry is where Register registers the workflow and activities: a
// worker.Worker, or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the run workflow and a's activities with r.
func Register(r Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterWorkflowWithOptions(SuiteWorkflow, workflow.RegisterOptions{Name: SuiteWorkflowName})
	for name, fn := range map[string]any{
		activityModel: a.Model, activityTool: a.Tool, activityCheck: a.Check,
		activitySave: a.Save, activityFinish: a.Finish, activityChild: a.Child,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
