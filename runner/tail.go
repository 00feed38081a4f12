package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/store"
)

// A Tail shows a run that other processes carry out (a Temporal run, whose
// workers record its log) to a Config's observers as Run shows a run it
// carries out itself: every entry once and in order, the entries of the
// run's sub-agents to ChildObservers, and the spans and metrics of
// TracerProvider and MeterProvider, made by the same observer from the same
// entries. It reads the run's log in Config.Store; Poll takes in what the
// log has gained. A model call's request is stored as its summary, so the
// observers see the request's purpose and output cap, not its messages.
type Tail struct {
	cfg  Config
	runs []*tailed // the run, then its sub-agents as their commands appear
}

// tailed is one run's log as a Tail reads it.
type tailed struct {
	id  string
	seq int64 // the last entry shown
	obs []observe.Observer
	// children says whether the run's sub-agents are tailed too: the
	// run's and its children's, as Run's ChildObservers see them; the
	// telemetry observer sees every depth.
	children bool
}

// NewTail returns a Tail of the log of cfg.RunID in cfg.Store (Model is
// used only for its name, as the telemetry's request model). With atEnd,
// what the log holds already is not shown: the run is shown from here on
// as Resume shows a run it carries on (one answered, say), its
// ResumeObservers told its usage so far and its spans linked to the first
// process's. Otherwise Poll shows the whole log.
func NewTail(ctx context.Context, cfg Config, atEnd bool) (*Tail, error) {
	if cfg.Store == nil || cfg.RunID == "" {
		return nil, errors.New("runner: a tail needs the run's Store and RunID")
	}
	if err := cfg.startTelemetry(); err != nil {
		return nil, err
	}
	if _, err := cfg.Store.Run(ctx, cfg.RunID); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	t := &Tail{cfg: cfg}
	root := &tailed{id: cfg.RunID, obs: cfg.Observers, children: true}
	t.runs = append(t.runs, root)
	if !atEnd {
		return t, nil
	}
	recs, err := load(ctx, cfg.Store, cfg.RunID)
	switch {
	case errors.Is(err, errNoLog):
		return t, nil
	case err != nil:
		return nil, err
	}
	root.seq = recs[len(recs)-1].Seq
	// The sub-agents already started are shown from their ends too.
	for _, rec := range recs {
		if c := childCommand(rec); c != "" {
			if err := t.addChild(ctx, root, c, true); err != nil {
				return nil, err
			}
		}
	}
	used, err := usageOf(recs)
	if err != nil {
		return nil, fmt.Errorf("runner: run %s: %w", cfg.RunID, err)
	}
	for _, o := range cfg.Observers {
		if ro, ok := o.(observe.ResumeObserver); ok {
			ro.Resumed(cfg.RunID, used)
		}
	}
	return t, nil
}

// usageOf is what the run whose log is recs has used: the core's count,
// stepped through the log's events.
func usageOf(recs []observe.Record) (used budget.Usage, err error) {
	m, err := loop.New(*recs[0].Spec)
	if err != nil {
		return used, err
	}
	for _, rec := range recs {
		if rec.Event == nil {
			continue
		}
		if err := m.Step(*rec.Event); err != nil {
			return used, fmt.Errorf("entry %d does not replay: %w", rec.Seq, err)
		}
		m.Advance()
	}
	return m.Usage(), nil
}

// childCommand is the ID of the sub-agent whose run rec's command starts,
// or "".
func childCommand(rec observe.Record) string {
	if rec.Kind != observe.KindCommand {
		return ""
	}
	e, err := rec.Entry()
	if err != nil || e.Command.Type != loop.RunChild {
		return ""
	}
	return e.Command.ID
}

// addChild tails the sub-agent of parent's command call; atEnd shows it
// from the end of its log.
func (t *Tail) addChild(ctx context.Context, parent *tailed, call string, atEnd bool) error {
	c := &tailed{id: parent.id + "/" + call}
	for _, r := range t.runs {
		if r.id == c.id {
			return nil
		}
	}
	if parent.children {
		c.obs = t.cfg.ChildObservers
	}
	if t.cfg.telemetry != nil {
		c.obs = append(c.obs[:len(c.obs):len(c.obs)], t.cfg.telemetry)
	}
	if atEnd {
		last, err := t.cfg.Store.LastSeq(ctx, c.id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		c.seq = last
	}
	t.runs = append(t.runs, c)
	return nil
}

// Poll shows the entries the logs gained since the last Poll, the run's
// and its sub-agents' merged in time order (each log's own order kept), as
// the run's processes recorded them: a sub-agent's entries come after the
// command that started it and before the result its parent then records.
func (t *Tail) Poll(ctx context.Context) error {
	// t.runs grows as the commands read start sub-agents.
	var gained [][]observe.Entry
	for i := 0; i < len(t.runs); i++ {
		r := t.runs[i]
		stored, err := t.cfg.Store.Entries(ctx, r.id, r.seq)
		if err != nil && !errors.Is(err, store.ErrNotFound) { // a sub-agent whose row is not made yet
			return err
		}
		es := make([]observe.Entry, 0, len(stored))
		for _, se := range stored {
			rec, err := observe.Decode(se.Data)
			if err != nil {
				return fmt.Errorf("runner: run %s: entry %d: %w", r.id, se.Seq, err)
			}
			e, err := rec.Entry()
			if err != nil {
				return fmt.Errorf("runner: run %s: %w", r.id, err)
			}
			es = append(es, e)
			if e.Kind == observe.KindCommand && e.Command.Type == loop.RunChild {
				if err := t.addChild(ctx, r, e.Command.ID, false); err != nil {
					return err
				}
			}
		}
		gained = append(gained, es)
	}
	for {
		next := -1
		for i, es := range gained {
			if len(es) > 0 && (next < 0 || es[0].At.Before(gained[next][0].At)) {
				next = i
			}
		}
		if next < 0 {
			return nil
		}
		e, r := gained[next][0], t.runs[next]
		gained[next] = gained[next][1:]
		for _, o := range r.obs {
			o.Observe(e)
		}
		r.seq = e.Seq
	}
}

// Stop says that this process no longer shows the run: the spans of what
// is under way end at at, as a local run's do when its process stops
// driving it.
func (t *Tail) Stop(at time.Time) {
	for _, r := range t.runs {
		t.cfg.telemetry.Stopped(r.id, at)
	}
}
