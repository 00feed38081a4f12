package temporal

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// WorkflowName is the name the run workflow is registered under.
const WorkflowName = "ratchet.run"

// UpdateAnswer is the name of the Update that answers the question a run
// asks (ratchet answer/approve/deny).
const UpdateAnswer = "answer"

// UpdateSay is the name of the Update that gives a running run a message
// for its next model turn (ratchet say): its argument is a [Say].
const UpdateSay = "say"

// DefaultHistoryLimit is how many history events a workflow run may reach
// before it continues as new with the core's snapshot.
const DefaultHistoryLimit = 2000

// Input is the run workflow's argument: the run to drive, as Start made it.
type Input struct {
	// Run is the run's ID in the store, and the workflow's ID.
	Run string `json:"run"`
	// Spec is what the core runs (the store's first entry records it).
	Spec loop.Spec `json:"spec"`
	// Human says a person may answer the run's questions (by Update);
	// false answers every question with human_unavailable.
	Human bool `json:"human,omitempty"`
	// Once names the tools that are not safe to run twice: their calls get
	// one attempt, and one whose outcome is unknown is answered unknown.
	Once []string `json:"once,omitempty"`
	// Pure names the checks that do no I/O (validation checks): they run as
	// local activities, in the worker that runs the workflow.
	Pure []string `json:"pure,omitempty"`
	// Attempts bounds the attempts of a model call, a check or an idempotent
	// tool call (default 3). Retries run inside the command's deadline.
	Attempts int `json:"attempts,omitempty"`
	// HistoryLimit is how many history events a workflow run may reach
	// before it continues as new (default DefaultHistoryLimit).
	HistoryLimit int `json:"history_limit,omitempty"`
	// Calls is how many model calls the run tree had made when a
	// sub-agent's run started: a scripted model it shares with its parent
	// plays on from there.
	Calls int `json:"calls,omitempty"`
	// Carry is set when a workflow run continues an earlier one.
	Carry *Carry `json:"carry,omitempty"`
}

// Carry is what a workflow run hands to the next when it continues as
// new: the core's snapshot and what the shell held beside it.
type Carry struct {
	Snapshot []byte `json:"snapshot"`
	// Seq is the sequence number of the last entry recorded.
	Seq int64 `json:"seq"`
	// Unsaved are recorded entries the store has not yet been given.
	Unsaved []Entry `json:"unsaved,omitempty"`
	// Queue holds the events not yet fed to the core.
	Queue []WireEvent `json:"queue,omitempty"`
	// Calls counts the model calls answered (a scripted model seeks to it).
	Calls int `json:"calls"`
	// RowSeq is the entry seq at which the run's row was last updated.
	RowSeq int64 `json:"row_seq"`
	// Outputs maps the ID of a tool call with a large output to the seq
	// of its result's entry (see WireRequest.shrink).
	Outputs map[string]OutputRef `json:"outputs,omitempty"`
	// Inbox holds the messages said (UpdateSay) not yet fed to the core.
	Inbox []string `json:"inbox,omitempty"`
}

// Answer is the Update's argument: a person's reply to the question a
// run is awaiting, with ratchet answer's and approve/deny's semantics.
type Answer struct {
	// Text is the answer, or the reason for an approval or a refusal.
	Text string `json:"text,omitempty"`
	// Approved answers an approval question; nil for an ordinary question.
	Approved *bool `json:"approved,omitempty"`
}

// Say is UpdateSay's argument: a message a person sends the running run,
// with runner.Say's limits.
type Say struct {
	Text string `json:"text"`
}

// driver is a workflow run's shell state around the machine.
type driver struct {
	in      Input
	m       *loop.Machine
	seq     int64
	unsaved []Entry
	calls   int
	rowSeq  int64
	once    map[string]bool
	pure    map[string]bool
	// asking is the AskHuman command waiting for an Update; answer is the
	// reply the Update brought.
	asking *loop.Command
	answer *Answer
	// awaited says the row says awaiting_input: the next save sets it
	// running again.
	awaited bool
	// base is the first step's request and outputs the entries of large
	// tool outputs: model requests refer to them (WireRequest.shrink).
	base    model.Request
	outputs map[string]OutputRef
	// inbox holds the messages said (UpdateSay) that the core has not
	// yet been given: they are fed to it before the next batch.
	inbox []string
}

// Workflow drives one run's loop core: it feeds it events and carries out
// its commands as activities, as runner.Run does in one process. The run's
// entries go to the store through the activities, written ahead of the
// commands they lead to; the Result is the workflow's result.
func Workflow(ctx workflow.Context, in Input) (loop.Result, error) {
	d := &driver{in: in, once: set(in.Once), pure: set(in.Pure), outputs: map[string]OutputRef{}}
	base, err := baseRequest(in.Spec)
	if err != nil {
		return loop.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "spec", err)
	}
	d.base = base
	var queue []loop.Event
	if c := in.Carry; c != nil {
		m, err := loop.Restore(c.Snapshot, nil)
		if err != nil {
			return loop.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "restore", err)
		}
		d.m, d.seq, d.unsaved, d.calls, d.rowSeq = m, c.Seq, c.Unsaved, c.Calls, c.RowSeq
		if c.Outputs != nil {
			d.outputs = c.Outputs
		}
		d.inbox = c.Inbox
		for _, w := range c.Queue {
			queue = append(queue, w.event())
		}
	} else {
		m, err := loop.New(in.Spec)
		if err != nil {
			return loop.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "spec", err)
		}
		// The starter recorded the spec as entry 1.
		d.m, d.seq, d.rowSeq, d.calls = m, 1, 1, in.Calls
		queue = []loop.Event{{Type: loop.EventStart, At: now(ctx)}}
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAnswer, d.onAnswer, workflow.UpdateHandlerOptions{Validator: d.validAnswer}); err != nil {
		return loop.Result{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateSay, d.onSay, workflow.UpdateHandlerOptions{Validator: validSay}); err != nil {
		return loop.Result{}, err
	}
	return d.drive(ctx, queue)
}

func set(names []string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// now is the workflow's clock without a monotonic reading, as the local
// runner stamps events: replay from the log must compute the same times.
func now(ctx workflow.Context) time.Time { return workflow.Now(ctx).Round(0) }

func (d *driver) record(e observe.Entry) {
	d.seq++
	e.Seq, e.Run = d.seq, d.in.Run
	data, err := observe.Encode(e)
	if err != nil {
		// Encoding a core value cannot fail but for a NaN; keep the run
		// going with the failure said in the log rather than a gap.
		data, _ = observe.Encode(observe.Entry{Seq: e.Seq, Run: e.Run, At: e.At, Kind: observe.KindNote,
			Note: &loop.Note{Type: loop.NoteObservation, Text: "temporal: entry could not be encoded: " + err.Error()}})
	}
	d.unsaved = append(d.unsaved, Entry{Seq: e.Seq, Kind: string(e.Kind), At: e.At, Data: data})
}

// drive is runner.drive's loop: step each event, record what the core
// decided, carry out its commands, feed their answers back.
func (d *driver) drive(ctx workflow.Context, queue []loop.Event) (loop.Result, error) {
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		d.record(observe.Entry{At: ev.At, Kind: observe.KindEvent, Event: &ev})
		if ev.Type == loop.EventToolResult && len(ev.Tool.Output) >= refMin {
			d.outputs[ev.Call] = outputRef(d.seq, ev.Tool.Output)
		}
		switch ev.Type {
		case loop.EventModelReply, loop.EventModelError:
			d.calls++
		case loop.EventChildResult:
			d.calls += ev.Child.Usage.ModelCalls // a shared script played them
		}
		if err := d.m.Step(ev); err != nil {
			d.m.Advance()
			return d.abort(ctx, "temporal: "+err.Error())
		}
		rd := d.m.Ready()
		d.m.Advance()
		for i := range rd.Notes {
			d.record(observe.Entry{At: ev.At, Kind: observe.KindNote, Note: &rd.Notes[i]})
		}
		for i := range rd.Commands {
			c := &rd.Commands[i]
			d.record(observe.Entry{At: ev.At, Kind: observe.KindCommand, Command: c})
			if c.Type == loop.Finish {
				return d.finish(ctx, *c.Result)
			}
		}
		if len(rd.Commands) == 0 {
			continue
		}
		if err := d.takeMessages(now(ctx)); err != nil {
			return d.abort(ctx, "temporal: "+err.Error())
		}
		evs, err := d.carryOut(ctx, rd.Commands)
		if err != nil {
			if ctx.Err() == nil {
				return d.abort(ctx, "temporal: "+err.Error())
			}
			evs = nil
		}
		if ctx.Err() != nil {
			// A cancelled run ends cancelled, whatever the interrupted
			// work says.
			evs = []loop.Event{{Type: loop.EventCancel, Text: "the workflow was cancelled"}}
		}
		at := now(ctx)
		for i := range evs {
			evs[i].At = at
		}
		queue = append(queue, evs...)
		if d.tooLong(ctx) && len(queue) > 0 {
			return d.continueAsNew(ctx, queue)
		}
	}
	return d.abort(ctx, "temporal: the loop core stopped issuing commands before finishing")
}

// tooLong says the workflow's history has grown past its bound.
func (d *driver) tooLong(ctx workflow.Context) bool {
	limit := d.in.HistoryLimit
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	info := workflow.GetInfo(ctx)
	return info.GetCurrentHistoryLength() >= limit || info.GetContinueAsNewSuggested()
}

// continueAsNew hands the core's snapshot and the events not yet fed to it
// to a fresh workflow run. It happens between commands, never while one
// is in flight, so the next run feeds those events as this one would have.
func (d *driver) continueAsNew(ctx workflow.Context, queue []loop.Event) (loop.Result, error) {
	snap, err := d.m.Snapshot()
	if err != nil {
		return d.abort(ctx, "temporal: snapshot: "+err.Error())
	}
	in := d.in
	in.Carry = &Carry{Snapshot: snap, Seq: d.seq, Unsaved: d.unsaved, Queue: toWireEvents(queue), Calls: d.calls, RowSeq: d.rowSeq, Outputs: d.outputs, Inbox: d.inbox}
	return loop.Result{}, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
}

// abort ends the run failed, as runner does when its shell cannot go on.
func (d *driver) abort(ctx workflow.Context, reason string) (loop.Result, error) {
	d.m.Abort(reason)
	res, _ := d.m.Result()
	// The core records nothing on Abort; the Result on the row says why.
	return d.finish(ctx, res)
}

// finish makes the rest of the log durable and records the Result on the
// run's row. It runs even when the workflow was cancelled.
func (d *driver) finish(ctx workflow.Context, res loop.Result) (loop.Result, error) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var patch *loop.Patch
	err := workflow.ExecuteActivity(d.storeOptions(dctx), activityFinish, FinishInput{Run: d.in.Run, Save: d.save(), Result: res}).Get(dctx, &patch)
	if err != nil {
		return res, fmt.Errorf("temporal: recording the result of run %s: %w", d.in.Run, err)
	}
	res.Patch = patch
	return res, nil
}

// save takes what the store has not yet been given, for the activity
// that writes it ahead of its work. The entries stay in d.unsaved until
// that activity succeeds (see saved): appending is idempotent.
func (d *driver) save() *Save {
	s := &Save{Entries: d.unsaved}
	if d.awaited {
		s.Status = store.StatusRunning
	}
	if d.seq-d.rowSeq >= rowEvery {
		u := d.m.Usage()
		s.Steps, s.CostMicros = int64(u.Steps), int64(u.Cost)
		s.Usage = true
	}
	return s
}

// rowEvery is how many entries may follow the last update of the row's
// steps and cost (the local runner updates them with each snapshot).
const rowEvery = 200

// saved says the activity that carried s succeeded.
func (d *driver) saved(s *Save) {
	if s == nil {
		return
	}
	n := len(s.Entries)
	d.unsaved = d.unsaved[n:len(d.unsaved):len(d.unsaved)]
	if len(d.unsaved) == 0 {
		d.unsaved = nil
	}
	if s.Status == store.StatusRunning {
		d.awaited = false
	}
	if s.Usage {
		d.rowSeq = s.Entries[max(n-1, 0)].Seq
	}
}

// validAnswer refuses an Update the run cannot take, with the messages
// ratchet answer/approve/deny give for a local run.
func (d *driver) validAnswer(a Answer) error {
	ask := d.asking
	if ask == nil || d.answer != nil {
		return fmt.Errorf("run %s is not awaiting input", d.in.Run)
	}
	if (a.Approved != nil) != (ask.Approval != nil) {
		if ask.Approval != nil {
			return fmt.Errorf("run %s asks for an approval (approve or deny), not an answer: %s", d.in.Run, ask.Question)
		}
		return fmt.Errorf("run %s asks a question (answer it), not for an approval: %s", d.in.Run, ask.Question)
	}
	return nil
}

func (d *driver) onAnswer(ctx workflow.Context, a Answer) error {
	if err := d.validAnswer(a); err != nil {
		return err
	}
	d.answer = &a
	return nil
}

// validSay refuses a message runner.Say would refuse.
func validSay(s Say) error {
	switch {
	case s.Text == "":
		return errors.New("the message is empty")
	case len(s.Text) > runner.MaxMessageBytes:
		return fmt.Errorf("the message is %d bytes, over the limit of %d", len(s.Text), runner.MaxMessageBytes)
	case !utf8.ValidString(s.Text):
		return errors.New("the message is not UTF-8 text")
	}
	return nil
}

// onSay queues a message for the core; drive feeds it before the next
// batch of commands, as the local runner takes the store's queue.
func (d *driver) onSay(_ workflow.Context, s Say) error {
	if err := validSay(s); err != nil {
		return err
	}
	d.inbox = append(d.inbox, s.Text)
	return nil
}

// takeMessages feeds the queued messages to the core as user_message
// events at time at, recorded with the entries the next batch writes
// ahead of its work.
func (d *driver) takeMessages(at time.Time) error {
	for _, text := range d.inbox {
		ev := loop.Event{Type: loop.EventUserMessage, At: at, Text: text}
		d.record(observe.Entry{At: at, Kind: observe.KindEvent, Event: &ev})
		if err := d.m.Step(ev); err != nil {
			return err
		}
		d.m.Advance()
	}
	d.inbox = nil
	return nil
}
