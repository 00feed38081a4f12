package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// errClosed is returned by writes after Close.
var errClosed = errors.New("store is closed")

// writer owns the one connection that writes and commits the writes of many
// callers together (group commit). A caller hands its op over and waits for
// the commit of the transaction that carried it. The writer does not wait to
// fill a batch: ops queue up on their own while a commit's fsync runs, so a
// lone caller pays one commit and a hundred callers share one.
type writer struct {
	db       *sql.DB
	conn     *sql.Conn
	maxBatch int
	ops      chan *op
	closing  chan struct{}
	stopped  chan struct{}
}

// op is one caller's write. fn runs inside a savepoint of the batch's
// transaction: its error undoes only its own changes.
type op struct {
	ctx  context.Context
	fn   func(ctx context.Context, c *sql.Conn) error
	done chan error
}

func startWriter(db *sql.DB, conn *sql.Conn, maxBatch int) *writer {
	w := &writer{
		db:       db,
		conn:     conn,
		maxBatch: maxBatch,
		ops:      make(chan *op),
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	go w.loop()
	return w
}

// do runs fn in the writer's next transaction and returns once that
// transaction is committed (fn's error, or the commit's). If ctx ends before
// the writer takes the op, nothing is written.
func (w *writer) do(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case w.ops <- o:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.closing:
		return errClosed
	}
	return <-o.done
}

func (w *writer) close() error {
	select {
	case <-w.closing:
		return nil
	default:
	}
	close(w.closing)
	<-w.stopped
	return errors.Join(w.conn.Close(), w.db.Close())
}

func (w *writer) loop() {
	defer close(w.stopped)
	batch := make([]*op, 0, w.maxBatch)
	for {
		select {
		case o := <-w.ops:
			batch = append(batch[:0], o)
		case <-w.closing:
			return
		}
	fill:
		for len(batch) < w.maxBatch {
			select {
			case o := <-w.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

// commit runs batch in one transaction and tells each op its outcome. The
// statements run under a background context: an op whose caller gave up
// before it started is skipped, but once started it finishes, so a
// cancellation never interrupts the connection in the middle of another
// caller's write.
func (w *writer) commit(batch []*op) {
	ctx := context.Background()
	errs := make([]error, len(batch))
	fail := func(err error) {
		for _, o := range batch {
			o.done <- err
		}
	}
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		fail(err)
		return
	}
	ok := 0
	for i, o := range batch {
		if err := o.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, err := w.conn.ExecContext(ctx, "SAVEPOINT op"); err != nil {
			errs[i] = err
			continue
		}
		if errs[i] = o.fn(ctx, w.conn); errs[i] != nil {
			if _, err := w.conn.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
				w.rollback()
				fail(fmt.Errorf("undo a failed write: %w (after %w)", err, errs[i]))
				return
			}
		} else {
			ok++
		}
		if _, err := w.conn.ExecContext(ctx, "RELEASE op"); err != nil {
			w.rollback()
			fail(err)
			return
		}
	}
	if ok == 0 {
		w.rollback()
	} else if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		w.rollback()
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	for i, o := range batch {
		o.done <- errs[i]
	}
}

// rollback ends a failed transaction. Its own error is moot: either the
// transaction is gone or the connection is broken, and the next BEGIN says
// which.
func (w *writer) rollback() {
	w.conn.ExecContext(context.Background(), "ROLLBACK")
}
