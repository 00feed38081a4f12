package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/store"
)

// UnknownOutcome is the output a model is shown for a call of a tool that
// is not safe to run twice when a resumed run cannot tell whether it ran.
const UnknownOutcome = "The outcome of this call is unknown: the run was interrupted while it was being carried out, and this tool is not safe to run twice, so it was not run again. Check whether it took effect before calling it again."

// OutcomeUnknown classifies such a call's result.
const OutcomeUnknown = "unknown"

const defaultSnapshotEvery = 200

// create inserts the run's row.
func (r *run) create(ctx context.Context, start time.Time) error {
	if r.cfg.Store == nil {
		return nil
	}
	err := r.cfg.Store.CreateRun(ctx, store.Run{
		ID: r.cfg.RunID, Parent: r.cfg.Parent, Goal: r.m.Spec().Goal, Labels: r.cfg.Labels,
		Status: store.StatusRunning, Task: r.cfg.TaskInfo, Created: start, Updated: start,
	})
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}

// save makes the recorded entries durable and takes a snapshot when enough
// entries have followed the last one. It outlives ctx's cancellation: a
// cancelled run still keeps what happened.
func (r *run) save(ctx context.Context) error {
	if r.cfg.Store == nil {
		return nil
	}
	if err := r.log.flush(ctx); err != nil {
		return err
	}
	u := r.m.Usage()
	r.steps.Store(int64(u.Steps))
	r.cost.Store(int64(u.Cost))
	ctx = context.WithoutCancel(ctx)
	every := int64(r.cfg.SnapshotEvery)
	if every <= 0 {
		every = defaultSnapshotEvery
	}
	if r.log.seq-r.snapSeq < every {
		return nil
	}
	data, err := r.m.Snapshot()
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := r.cfg.Store.SaveSnapshot(ctx, r.cfg.RunID, store.Snapshot{Seq: r.log.seq, Data: data}); err != nil {
		return fmt.Errorf("store: snapshot: %w", err)
	}
	r.snapSeq = r.log.seq
	steps, cost := int64(u.Steps), int64(u.Cost)
	return r.cfg.Store.UpdateRun(ctx, r.cfg.RunID, store.Update{Steps: &steps, CostMicros: &cost, Updated: r.log.now()})
}

// finish records the final Result on the run's row.
func (r *run) finish(ctx context.Context, final *loop.Result) (loop.Result, error) {
	res := *final
	var err error
	if res.Status == loop.Failed {
		err = errors.New(res.Reason)
	}
	if r.cfg.Patch != nil {
		res.Patch = RedactPatch(r.cfg.Redactor, r.cfg.Patch(context.WithoutCancel(ctx)))
	}
	if r.cfg.Store == nil {
		return res, err
	}
	if serr := r.save(ctx); serr != nil {
		return res, errors.Join(err, serr)
	}
	data, jerr := json.Marshal(res)
	if jerr != nil {
		return res, errors.Join(err, jerr)
	}
	status, steps, cost, empty := string(res.Status), int64(res.Usage.Steps), int64(res.Usage.Cost), ""
	if uerr := r.cfg.Store.UpdateRun(context.WithoutCancel(ctx), r.cfg.RunID, store.Update{
		Status: &status, Question: &empty, Result: data, Steps: &steps, CostMicros: &cost, Updated: r.log.now(),
	}); uerr != nil {
		err = errors.Join(err, fmt.Errorf("store: %w", uerr))
	}
	return res, err
}

// RedactPatch redacts p's texts. A diff with a secret in it is kept
// redacted, like every other stored text, and marked so: applying it would
// write the redaction marks, so 'ratchet apply' refuses it.
func RedactPatch(red *redact.Redactor, p *loop.Patch) *loop.Patch {
	if p == nil {
		return nil
	}
	q := *p
	q.Diff = red.String(p.Diff)
	q.Redacted = p.Redacted || q.Diff != p.Diff
	q.Problem = red.String(p.Problem)
	q.Files, q.Binary = redactAll(red, p.Files), redactAll(red, p.Binary)
	return &q
}

func redactAll(red *redact.Redactor, ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = red.String(s)
	}
	return out
}

// abort ends the run failed because the store broke: what could not be
// written is lost, so the run must not go on.
func (r *run) abort(err error) (loop.Result, error) {
	r.m.Abort("runner: " + r.cfg.Redactor.String(err.Error()))
	res, _ := r.m.Result()
	return res, fmt.Errorf("runner: %w", err)
}

// wait leaves the run awaiting a person's answer.
func (r *run) wait(ctx context.Context) (loop.Result, error) {
	if err := r.save(ctx); err != nil {
		return r.abort(err)
	}
	// The row says how far the run got, for ls and show while it waits.
	status, q := store.StatusAwaitingInput, r.awaiting
	steps, cost := r.steps.Load(), r.cost.Load()
	if err := r.cfg.Store.UpdateRun(context.WithoutCancel(ctx), r.cfg.RunID, store.Update{Status: &status, Question: &q, Steps: &steps, CostMicros: &cost, Updated: r.log.now()}); err != nil {
		return loop.Result{}, fmt.Errorf("runner: store: %w", err)
	}
	return loop.Result{}, &AwaitingError{Run: r.cfg.RunID, Question: q}
}

// ResumeOptions say how to carry on a stored run.
type ResumeOptions struct {
	// Answer, when set, is a person's reply to the question the run is
	// awaiting.
	Answer *string
	// Approved, when set, answers an approval question (a tool call a
	// permission rule said to ask about); Answer may then give a reason.
	Approved *bool
}

// Seeker is implemented by models whose replies depend on how many calls
// came before (the scripted model plays turn n on call n). Resume tells
// such a model how many calls the run has had answered, so that a new
// process carries on where the old one stopped.
type Seeker interface {
	Seek(calls int)
}

// ErrFinished is wrapped by Resume's error for a run that has ended with a
// status other than cancelled.
var ErrFinished = errors.New("run has finished")

// Resume carries on the run cfg.RunID from cfg.Store after its process
// stopped (a crash, a cancellation, or waiting for a person). It rebuilds
// the loop core from the latest snapshot and the events after it, then
// carries out what was in flight: a recorded tool result is reused, a call
// of an idempotent tool without a recorded result runs again, a call of a
// non-idempotent one is answered UnknownOutcome, and model calls in flight
// are made again (and charged). task must compile to the spec the run
// started with.
func Resume(ctx context.Context, task Task, cfg Config, opts ResumeOptions) (_ loop.Result, err error) {
	defer func() { err = cfg.Redactor.Error(err) }()
	if cfg.Store == nil || cfg.RunID == "" {
		return loop.Result{}, errors.New("runner: resume needs a store and a run ID")
	}
	row, err := cfg.Store.Run(ctx, cfg.RunID)
	if err != nil {
		return loop.Result{}, fmt.Errorf("runner: %w", err)
	}
	switch row.Status {
	case store.StatusRunning, store.StatusAwaitingInput, string(loop.Cancelled):
	default:
		return loop.Result{}, fmt.Errorf("runner: run %s: %w (%s)", cfg.RunID, ErrFinished, row.Status)
	}
	// Only another process's lease stands in the way: in this one, the
	// caller decides (a run that failed here is resumed here).
	if live, holder := LeaseState(row, time.Now()); live && row.Holder != thisHolder {
		return loop.Result{}, fmt.Errorf("runner: run %s: %w: %s is carrying it out", cfg.RunID, ErrHeld, holder)
	}
	r, err := newRun(&task, &cfg)
	if err != nil {
		return loop.Result{}, err
	}
	release, err := r.holdLease(ctx)
	if err != nil {
		return loop.Result{}, err
	}
	defer release()
	recs, err := load(ctx, cfg.Store, cfg.RunID)
	if errors.Is(err, errNoLog) {
		// The process died before it recorded anything: start afresh.
		start := r.log.now()
		spec := r.m.Spec()
		r.log.record(observe.Entry{At: start, Kind: observe.KindRun, Spec: &spec})
		return r.drive(ctx, []loop.Event{{Type: loop.EventStart, At: start}})
	}
	if err != nil {
		return loop.Result{}, err
	}
	if err := sameSpec(recs[0].Spec, r.m.Spec()); err != nil {
		return loop.Result{}, fmt.Errorf("runner: run %s: %w", cfg.RunID, err)
	}
	if err := r.rebuild(ctx, recs, task.Policy.Key); err != nil {
		return loop.Result{}, err
	}
	if res, ok := r.m.Result(); ok && res.Status != loop.Cancelled {
		// The run finished, but its process died before the row said so.
		return r.finish(ctx, &res)
	}
	at := r.log.now()
	queue, err := r.resumeEvents(at, opts)
	if err != nil {
		return loop.Result{}, err
	}
	if row.Status != store.StatusRunning {
		status, empty := store.StatusRunning, ""
		if err := cfg.Store.UpdateRun(ctx, cfg.RunID, store.Update{Status: &status, Question: &empty, Updated: at}); err != nil {
			return loop.Result{}, fmt.Errorf("runner: %w", err)
		}
	}
	return r.drive(ctx, queue)
}

// rebuild brings the machine to where the log recs ends: from the latest
// snapshot, if any, then by stepping the events after it.
func (r *run) rebuild(ctx context.Context, recs []observe.Record, key progress.KeyFunc) error {
	id := r.cfg.RunID
	from := int64(0)
	if snap, err := r.cfg.Store.LatestSnapshot(ctx, id); err == nil {
		// A snapshot of another build's format is only a cache: the
		// machine is rebuilt from every entry instead.
		switch m, err := loop.Restore(snap.Data, key); {
		case err == nil:
			r.m, from, r.snapSeq = m, snap.Seq, snap.Seq
		case !errors.Is(err, loop.ErrSnapshotVersion):
			return fmt.Errorf("runner: run %s: %w", id, err)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("runner: %w", err)
	}
	answered := 0
	for _, rec := range recs {
		if rec.Event == nil {
			continue
		}
		if t := rec.Event.Type; t == loop.EventModelReply || t == loop.EventModelError {
			answered++
		}
		if rec.Seq <= from {
			continue
		}
		if err := r.m.Step(*rec.Event); err != nil {
			return fmt.Errorf("runner: run %s: entry %d does not replay: %w", id, rec.Seq, err)
		}
		r.m.Advance()
	}
	if s, ok := r.cfg.Model.(Seeker); ok {
		s.Seek(answered)
	}
	r.log.seq = recs[len(recs)-1].Seq
	for _, o := range r.cfg.Observers {
		if ro, ok := o.(observe.ResumeObserver); ok {
			ro.Resumed(id, r.m.Usage())
		}
	}
	return nil
}

// resumeEvents are the events a resumed run begins with at time at: a
// resume, or the person's answer that opts carry.
func (r *run) resumeEvents(at time.Time, opts ResumeOptions) ([]loop.Event, error) {
	if opts.Answer == nil && opts.Approved == nil {
		return []loop.Event{{Type: loop.EventResume, At: at}}, nil
	}
	id := r.cfg.RunID
	if r.m.Phase() != loop.PhaseHuman {
		return nil, fmt.Errorf("runner: run %s is not awaiting input", id)
	}
	ask := r.m.Pending()[0]
	if (opts.Approved != nil) != (ask.Approval != nil) {
		if ask.Approval != nil {
			return nil, fmt.Errorf("runner: run %s asks for an approval (approve or deny), not an answer: %s", id, ask.Question)
		}
		return nil, fmt.Errorf("runner: run %s asks a question (answer it), not for an approval: %s", id, ask.Question)
	}
	ev := loop.Event{Type: loop.EventHumanReply, At: at, Call: ask.ID, Approved: opts.Approved}
	if opts.Answer != nil {
		ev.Text = *opts.Answer
	}
	return []loop.Event{ev}, nil
}

var errNoLog = errors.New("the run has no log")

// load reads a run's whole log.
func load(ctx context.Context, s store.Store, id string) ([]observe.Record, error) {
	entries, err := s.Entries(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	return decodeLog(id, entries)
}

// decodeLog decodes the entries of run id's whole log.
func decodeLog(id string, entries []store.Entry) ([]observe.Record, error) {
	var err error
	if len(entries) == 0 {
		return nil, fmt.Errorf("runner: run %s: %w", id, errNoLog)
	}
	recs := make([]observe.Record, len(entries))
	for i, e := range entries {
		if recs[i], err = observe.Decode(e.Data); err != nil {
			return nil, fmt.Errorf("runner: run %s entry %d: %w", id, e.Seq, err)
		}
		recs[i].Seq = e.Seq
	}
	if recs[0].Kind != observe.KindRun || recs[0].Spec == nil {
		return nil, fmt.Errorf("runner: run %s: the log does not begin with the run's spec", id)
	}
	return recs, nil
}

// sameSpec checks that the task being resumed is the one that was run.
func sameSpec(recorded *loop.Spec, now loop.Spec) error {
	a, err := json.Marshal(recorded)
	if err != nil {
		return err
	}
	b, err := json.Marshal(now)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return errors.New("the task has changed since the run started (its spec differs from the recorded one); resume needs the same task")
	}
	return nil
}

// LoadLog reads a stored run's log, for inspection and replay.
func LoadLog(ctx context.Context, s store.Store, id string) ([]observe.Record, error) {
	return load(ctx, s, id)
}
