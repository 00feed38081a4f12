package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/store"
)

// journal is a run's log as this process keeps it: it numbers each entry,
// shows it to the observers and Hooks.OnEntry, and holds it for the store
// until flush makes it durable.
type journal struct {
	cfg *Config // the run's
	seq int64
	// unsaved is what the store has not yet been given; saveErr the
	// failure that stopped giving it.
	unsaved []store.Entry
	saveErr error
	// mu serializes entries recorded from the calls of a batch running in
	// parallel (sampled alternatives, a turn's tools): retries, hook
	// decisions, results. The driving goroutine waits for those calls, so
	// it never records at the same time.
	mu sync.Mutex
	// entryHookFailed says Hooks.OnEntry panicked: it is not called again.
	entryHookFailed bool
}

// record numbers e as the run's next entry, shows it, and keeps it for
// the store.
func (j *journal) record(e observe.Entry) {
	j.seq++
	e.Seq, e.Run = j.seq, j.cfg.RunID
	for _, o := range j.cfg.Observers {
		o.Observe(e)
	}
	if j.cfg.Hooks.OnEntry != nil && !j.entryHookFailed {
		j.onEntry(e)
	}
	if j.cfg.Store != nil && j.saveErr == nil {
		data, err := observe.Encode(e)
		if err != nil {
			j.saveErr = fmt.Errorf("encode entry %d: %w", e.Seq, err)
			return
		}
		// Every event was redacted on its way in; this catches what was not.
		data = j.cfg.Redactor.Bytes(data)
		j.unsaved = append(j.unsaved, store.Entry{Seq: e.Seq, Kind: string(e.Kind), At: e.At, Data: data})
	}
}

// now reads the clock without its monotonic reading: the core computes
// elapsed time from event timestamps, and a replay from the log (which
// keeps only wall-clock time) must compute exactly the same.
func (j *journal) now() time.Time { return j.cfg.Now().Round(0) }

// shell records, stamped now, what happened to a command on its way (a
// retry, a fallback, a wait for shared limits, a hook's decision): the
// core never sees it. The calls of a batch record from their own
// goroutines.
func (j *journal) shell(e observe.Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.At = j.now()
	j.record(e)
}

// onEntry passes e to Hooks.OnEntry; one that panics is recorded and not
// called again.
func (j *journal) onEntry(e observe.Entry) {
	defer func() {
		if p := recover(); p != nil {
			j.entryHookFailed = true
			j.record(observe.Entry{At: e.At, Kind: observe.KindHook, Note: &loop.Note{Type: loop.NoteObservation, Problem: "on_entry:panic",
				Text: j.cfg.Redactor.String(fmt.Sprintf("the on_entry hook panicked at entry %d and is not called again: %v", e.Seq, p))}})
		}
	}()
	j.cfg.Hooks.OnEntry(e)
}

// flush makes the recorded entries durable. A failure is kept: the run
// must not carry out another command.
func (j *journal) flush(ctx context.Context) error {
	if j.saveErr != nil || len(j.unsaved) == 0 {
		return j.saveErr
	}
	if err := j.cfg.Store.Append(context.WithoutCancel(ctx), j.cfg.RunID, j.unsaved); err != nil {
		j.saveErr = fmt.Errorf("store: %w", err)
		return j.saveErr
	}
	clear(j.unsaved)
	j.unsaved = j.unsaved[:0]
	return nil
}

// admit makes an event from outside the core fit to be kept and shown
// (Admit), recording the repair entry it may need before the event.
func (j *journal) admit(ev *loop.Event) {
	if repair := Admit(ev, j.cfg.Redactor); repair != nil {
		j.record(observe.Entry{At: ev.At, Kind: observe.KindRepair, Note: repair})
	}
}
