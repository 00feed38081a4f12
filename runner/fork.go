package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/store"
)

// ForkOptions say where a fork starts and what it changes.
type ForkOptions struct {
	// From is the run to fork; At is the entry of its log to carry on
	// after, which must be a step's model call (ForkPoints lists them).
	From string
	At   int64
	// Model, when set, makes the fork's model calls from its first one
	// (Config.Model may then be nil). Without it Config.Model carries on
	// where the parent's calls ended (a Seeker is told how many there
	// were, as on Resume).
	Model model.Model
	// Budget, when set, is the fork's budget instead of the run's; it is
	// checked as a task's budget is.
	Budget *budget.Limits
	// Message, when set, is a user message the fork's first model call
	// carries, at most MaxMessageBytes.
	Message string
}

// ForkPoint is an entry of a run's log a fork may start from: a step's
// model call, with the state every entry up to it left.
type ForkPoint struct {
	Seq  int64
	Step int
}

// ForkPoints lists the entries of the log recs a fork may start from, in
// order: each call_model command of a step. There the model's next turn is
// all that is in flight, so nothing the prefix did is done again: no tool
// in it runs twice, no check is judged again, no person is asked again. A
// re-issued call (after a resume) is a point of the same step.
func ForkPoints(recs []observe.Record) []ForkPoint {
	var out []ForkPoint
	seen := map[string]int{} // step call ID → step
	for _, rec := range recs {
		if rec.Kind != observe.KindCommand {
			continue
		}
		var c struct {
			Type    loop.CommandType `json:"type"`
			ID      string           `json:"id"`
			Request *struct {
				Purpose model.Purpose `json:"purpose"`
			} `json:"request"`
		}
		if json.Unmarshal(rec.Command, &c) != nil || c.Type != loop.CallModel || c.Request == nil || c.Request.Purpose != model.PurposeStep {
			continue
		}
		step, ok := seen[c.ID]
		if !ok {
			step = len(seen) + 1
			seen[c.ID] = step
		}
		out = append(out, ForkPoint{Seq: rec.Seq, Step: step})
	}
	return out
}

// ErrNotForkPoint is wrapped by Fork's error when ForkOptions.At is not
// an entry a fork may start from; the error names the nearest that are.
var ErrNotForkPoint = errors.New("not a point a fork can start from")

// forkPoint checks that at is one of the fork points of run id's log recs.
func forkPoint(id string, recs []observe.Record, at int64) error {
	last := recs[len(recs)-1].Seq
	points := ForkPoints(recs)
	if len(points) == 0 {
		return fmt.Errorf("run %s: %w: its log (entries 1–%d) has no step's model call to fork from", id, ErrNotForkPoint, last)
	}
	var before, after *ForkPoint
	for i := range points {
		switch p := &points[i]; {
		case p.Seq == at:
			return nil
		case p.Seq < at:
			before = p
		case after == nil:
			after = p
		}
	}
	var near []string
	for _, p := range []*ForkPoint{before, after} {
		if p != nil {
			near = append(near, fmt.Sprintf("entry %d (step %d's model call)", p.Seq, p.Step))
		}
	}
	what := "outside its log (entries 1–" + strconv.FormatInt(last, 10) + ")"
	if at >= 1 && at <= last {
		what = describeEntry(recs[at-1])
		if strings.ContainsRune("aeiou", rune(what[0])) {
			what = "an " + what
		} else {
			what = "a " + what
		}
		if before != nil {
			what += fmt.Sprintf(", after step %d's model call", before.Step)
		}
	}
	return fmt.Errorf("run %s: entry %d is %s: %w: a fork starts from a step's model call (nothing after it is carried over, so no tool or check runs twice and no half-finished turn is copied); nearest: %s; 'ratchet show --events %s' lists the entries",
		id, at, what, ErrNotForkPoint, strings.Join(near, " or "), id)
}

// describeEntry names what a log entry is, for an error.
func describeEntry(rec observe.Record) string {
	var v struct {
		Type     string          `json:"type"`
		Approval json.RawMessage `json:"approval"`
	}
	switch rec.Kind {
	case observe.KindEvent:
		if rec.Event != nil {
			return string(rec.Event.Type) + " event"
		}
	case observe.KindCommand:
		if json.Unmarshal(rec.Command, &v) == nil && len(v.Approval) > 0 {
			return v.Type + " command (a pending approval)"
		}
		if json.Unmarshal(rec.Command, &v) == nil && v.Type == string(loop.CallModel) {
			return "call_model command of a compaction, a sample or the closing turn"
		}
		return v.Type + " command"
	case observe.KindNote:
		if json.Unmarshal(rec.Note, &v) == nil {
			return v.Type + " note"
		}
	}
	return string(rec.Kind) + " entry"
}

// Fork starts run cfg.RunID in cfg.Store from the state after entry
// opts.At of run opts.From: the entries up to it are copied into the new
// run's log (not carried out again), then a fork event (loop.EventFork)
// carries it on with opts' budget and message, issuing again the model
// call that was in flight. The parent run is only read. The new run's row
// records ForkOf and ForkSeq; its log replays as any run's does, and its
// usage counts the copied prefix's, as if it had run it. task must
// compile to the spec the parent ran.
func Fork(ctx context.Context, task Task, cfg Config, opts ForkOptions) (_ loop.Result, err error) {
	defer func() { err = cfg.Redactor.Error(err) }()
	if cfg.Store == nil || opts.From == "" {
		return loop.Result{}, errors.New("runner: fork needs a store and the run to fork")
	}
	if len(opts.Message) > MaxMessageBytes {
		return loop.Result{}, fmt.Errorf("runner: fork: the message is %d bytes, over the limit of %d", len(opts.Message), MaxMessageBytes)
	}
	seek := opts.Model == nil
	if !seek {
		cfg.Model = opts.Model
	}
	parent, err := cfg.Store.Entries(ctx, opts.From, 0)
	if err != nil {
		return loop.Result{}, fmt.Errorf("runner: fork: %w", err)
	}
	recs, err := decodeLog(opts.From, parent)
	if err != nil {
		return loop.Result{}, err
	}
	if err := forkPoint(opts.From, recs, opts.At); err != nil {
		return loop.Result{}, fmt.Errorf("runner: fork: %w", err)
	}
	r, err := newRun(&task, &cfg)
	if err != nil {
		return loop.Result{}, err
	}
	if err := sameSpec(recs[0].Spec, r.m.Spec()); err != nil {
		return loop.Result{}, fmt.Errorf("runner: fork of run %s: %w", opts.From, err)
	}
	if opts.Budget != nil {
		if err := opts.Budget.Validate(r.m.Spec().Policy.Reserve); err != nil {
			return loop.Result{}, fmt.Errorf("runner: fork: %w", err)
		}
	}
	start := r.log.now()
	if r.cfg.RunID == "" {
		r.cfg.RunID = "run-" + strconv.FormatInt(start.UnixNano(), 10)
		r.x.runID = r.cfg.RunID
	}
	prefix, err := retag(parent[:opts.At], opts.From, r.cfg.RunID)
	if err != nil {
		return loop.Result{}, fmt.Errorf("runner: fork of run %s: %w", opts.From, err)
	}
	if err := r.rebuildFork(ctx, recs[:opts.At], task.Policy.Key, opts, seek); err != nil {
		return loop.Result{}, err
	}
	if err := r.createFork(ctx, start, opts, prefix); err != nil {
		return loop.Result{}, err
	}
	release, err := r.holdLease(ctx)
	if err != nil {
		return loop.Result{}, err
	}
	defer release()
	return r.drive(ctx, []loop.Event{{Type: loop.EventFork, At: r.log.now(), Limits: opts.Budget, Text: opts.Message}})
}

// createFork inserts the fork's row and its copied log.
func (r *run) createFork(ctx context.Context, start time.Time, opts ForkOptions, prefix []store.Entry) error {
	row := store.Run{ID: r.cfg.RunID, Parent: r.cfg.Parent, Goal: r.m.Spec().Goal, Labels: r.cfg.Labels,
		Status: store.StatusRunning, Task: r.cfg.TaskInfo, Created: start, Updated: start, ForkOf: opts.From, ForkSeq: opts.At}
	if err := r.cfg.Store.CreateRun(ctx, row); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if err := r.cfg.Store.Append(ctx, r.cfg.RunID, prefix); err != nil {
		return fmt.Errorf("runner: fork: copy the log: %w", err)
	}
	return nil
}

// rebuildFork rebuilds the machine from the copied prefix, and refuses a
// budget of the fork's that the prefix has already spent.
func (r *run) rebuildFork(ctx context.Context, prefix []observe.Record, key progress.KeyFunc, opts ForkOptions, seek bool) error {
	model := r.cfg.Model
	if !seek {
		r.cfg.Model = nil // rebuild seeks only a model that carries on
	}
	err := r.rebuild(ctx, prefix, key)
	r.cfg.Model = model
	if err != nil {
		return err
	}
	if opts.Budget != nil {
		l, used := opts.Budget.WithDefaults(), r.m.Usage()
		if d, spent := budget.Exhausted(l, used); spent {
			return fmt.Errorf("runner: fork: the copied steps of run %s have already spent the fork's %s budget (%s of %s): give the fork more", opts.From, d, budget.Format(d, used.Get(d)), budget.Format(d, l.Limit(d)))
		}
	}
	return nil
}

// retag returns entries with their run ID from changed to to: each is the
// log form observe.Encode writes, which begins with its seq and run.
func retag(entries []store.Entry, from, to string) ([]store.Entry, error) {
	old, err := json.Marshal(from)
	if err != nil {
		return nil, err
	}
	tag, err := json.Marshal(to)
	if err != nil {
		return nil, err
	}
	out := make([]store.Entry, len(entries))
	for i, e := range entries {
		head := fmt.Appendf(nil, `{"seq":%d,"run":%s`, e.Seq, old)
		if !bytes.HasPrefix(e.Data, head) {
			return nil, fmt.Errorf("entry %d is not in the log form this build writes (it does not begin %s)", e.Seq, head)
		}
		e.Data = append(fmt.Appendf(nil, `{"seq":%d,"run":%s`, e.Seq, tag), e.Data[len(head):]...)
		out[i] = e
	}
	return out, nil
}
