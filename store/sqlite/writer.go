package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
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
	stmts    map[string]*sql.Stmt // owned by the writer goroutine
	once     sync.Once
	closeErr error
}

// op is one caller's write. fn runs inside a savepoint of the batch's
// transaction: its error undoes only its own changes.
type op struct {
	ctx  context.Context
	fn   func(tx) error
	done chan error
}

// tx is the writer's connection inside a transaction. Statements are
// prepared once and kept: parsing SQL is a good part of a small write's
// cost in SQLite.
type tx struct{ w *writer }

// maxStmts caps the prepared statements kept (multi-row INSERTs vary by row
// count).
const maxStmts = 64

func (t tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.w.stmts[query]; ok {
		return st, nil
	}
	if len(t.w.stmts) >= maxStmts {
		return nil, nil
	}
	st, err := t.w.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	t.w.stmts[query] = st
	return st, nil
}

func (t tx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return t.w.conn.ExecContext(context.Background(), query, args...)
	}
	return st.ExecContext(context.Background(), args...)
}

func (t tx) queryRow(query string, args ...any) *sql.Row {
	st, err := t.stmt(query)
	if err != nil || st == nil {
		return t.w.conn.QueryRowContext(context.Background(), query, args...)
	}
	return st.QueryRowContext(context.Background(), args...)
}

func startWriter(db *sql.DB, conn *sql.Conn, maxBatch int) *writer {
	w := &writer{
		db:       db,
		conn:     conn,
		maxBatch: maxBatch,
		ops:      make(chan *op),
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
		stmts:    map[string]*sql.Stmt{},
	}
	go w.loop()
	return w
}

// do runs fn in the writer's next transaction and returns once that
// transaction is committed (fn's error, or the commit's). If ctx ends before
// the writer takes the op, nothing is written.
func (w *writer) do(ctx context.Context, fn func(tx) error) error {
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

// close stops the writer once its batch in flight is committed and closes
// the connection.
func (w *writer) close() error {
	w.once.Do(func() {
		close(w.closing)
		<-w.stopped
		var errs []error
		for _, st := range w.stmts {
			errs = append(errs, st.Close())
		}
		w.closeErr = errors.Join(append(errs, w.conn.Close(), w.db.Close())...)
	})
	return w.closeErr
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
	t := tx{w}
	errs := make([]error, len(batch))
	live := 0
	for i, o := range batch {
		if errs[i] = o.ctx.Err(); errs[i] == nil {
			live++
		}
	}
	tell := func(err error) {
		for i, o := range batch {
			if errs[i] != nil {
				o.done <- errs[i]
			} else {
				o.done <- err
			}
		}
	}
	if live == 0 {
		tell(nil)
		return
	}
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		tell(err)
		return
	}
	ok := 0
	for i, o := range batch {
		if errs[i] != nil {
			continue
		}
		if live == 1 {
			// Alone in its transaction: no savepoint needed, a failure
			// rolls the transaction back.
			if errs[i] = o.fn(t); errs[i] == nil {
				ok++
			}
			break
		}
		if _, err := t.exec("SAVEPOINT op"); err != nil {
			w.rollback()
			tell(err)
			return
		}
		if errs[i] = o.fn(t); errs[i] != nil {
			if _, err := t.exec("ROLLBACK TO op"); err != nil {
				w.rollback()
				tell(fmt.Errorf("undo a failed write: %w (after %w)", err, errs[i]))
				return
			}
		} else {
			ok++
		}
		if _, err := t.exec("RELEASE op"); err != nil {
			w.rollback()
			tell(err)
			return
		}
	}
	if ok == 0 {
		w.rollback()
	} else if _, err := t.exec("COMMIT"); err != nil {
		w.rollback()
		tell(fmt.Errorf("commit: %w", err))
		return
	}
	tell(nil)
}

// rollback ends a failed transaction. Its own error is moot: either the
// transaction is gone or the connection is broken, and the next BEGIN says
// which.
func (w *writer) rollback() {
	w.conn.ExecContext(context.Background(), "ROLLBACK")
}
