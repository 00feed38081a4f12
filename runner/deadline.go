package runner

import (
	"context"
	"time"
)

// deadlines hands each command a context bounded by its deadline. A run's
// commands share few deadlines (the end of the time budget, less a reserve
// for the closing turn), so the context of the latest deadline is kept and
// handed to every command with the same one, rather than a timer armed and
// a context built for each command. A context is cancelled once no command
// can still be using it: after the batch that replaced it, and for the last
// one when the drive ends.
type deadlines struct {
	parent context.Context
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc
	// stale are the cancel functions of contexts replaced during the
	// current batch, whose commands may still be running.
	stale []context.CancelFunc
}

// bound returns parent bounded by deadline; a zero deadline means none.
func (d *deadlines) bound(deadline time.Time) context.Context {
	if deadline.IsZero() {
		return d.parent
	}
	if d.ctx == nil || !deadline.Equal(d.at) {
		if d.cancel != nil {
			d.stale = append(d.stale, d.cancel)
		}
		d.at = deadline
		d.ctx, d.cancel = context.WithDeadline(d.parent, deadline)
	}
	return d.ctx
}

// batchDone cancels the contexts replaced during the batch just carried out.
func (d *deadlines) batchDone() {
	for _, cancel := range d.stale {
		cancel()
	}
	d.stale = d.stale[:0]
}

// stop cancels every context handed out.
func (d *deadlines) stop() {
	d.batchDone()
	if d.cancel != nil {
		d.cancel()
	}
}
