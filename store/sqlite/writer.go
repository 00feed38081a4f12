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

// op is one caller's write. fn runs in the batch's transaction; when an
// op of the batch fails, the batch runs again with each fn inside a
// savepoint, so that its error undoes only its own changes. fn may thus
// run twice: it must change nothing but the database (what it reads
// back, it sets anew).
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
	errs := make([]error, len(batch))
	for i, o := range batch {
		errs[i] = o.ctx.Err()
	}
	n := live(errs)
	// Ops nearly always succeed, so the batch first runs them all in
	// one transaction without savepoints (two statements fewer an op, a
	// third of a small op's cost); if one of several fails, that
	// transaction is rolled back and the batch runs again with a
	// savepoint around each op, so that a failure undoes only its own. A
	// lone op needs no savepoint: its failure rolls back its transaction.
	if n > 0 && !w.run(batch, errs, n == 1) {
		w.run(batch, errs, true)
	}
	for i, o := range batch {
		o.done <- errs[i]
	}
}

// run runs the live ops of batch (those with no error in errs) in one
// transaction, each inside a savepoint when isolate (but for a lone op,
// which its transaction isolates), and commits it, recording each op's
// outcome in errs. Without isolate it stops at the first op that fails,
// rolls back, leaves errs as they were and returns false: the batch is to
// run again, isolated.
func (w *writer) run(batch []*op, errs []error, isolate bool) bool {
	t := tx{w}
	lone := isolate && live(errs) == 1
	fail := func(err error) bool {
		for i := range batch {
			if errs[i] == nil || errs[i] == errPending {
				errs[i] = err
			}
		}
		return true
	}
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		return fail(err)
	}
	ok := 0
	for i, o := range batch {
		if errs[i] != nil {
			continue
		}
		if !isolate {
			if err := o.fn(t); err != nil {
				w.rollback()
				for j := range batch {
					if errs[j] == errPending {
						errs[j] = nil
					}
				}
				return false
			}
			errs[i] = errPending
			ok++
			continue
		}
		if lone {
			if errs[i] = o.fn(t); errs[i] == nil {
				errs[i] = errPending
				ok++
			}
			break
		}
		if _, err := t.exec("SAVEPOINT op"); err != nil {
			w.rollback()
			return fail(err)
		}
		if errs[i] = o.fn(t); errs[i] != nil {
			if _, err := t.exec("ROLLBACK TO op"); err != nil {
				w.rollback()
				return fail(fmt.Errorf("undo a failed write: %w (after %w)", err, errs[i]))
			}
		} else {
			errs[i] = errPending
			ok++
		}
		if _, err := t.exec("RELEASE op"); err != nil {
			w.rollback()
			return fail(err)
		}
	}
	if ok == 0 {
		w.rollback()
	} else if _, err := t.exec("COMMIT"); err != nil {
		w.rollback()
		return fail(fmt.Errorf("commit: %w", err))
	}
	for i := range batch {
		if errs[i] == errPending {
			errs[i] = nil
		}
	}
	return true
}

// live counts the ops with no outcome yet.
func live(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}

// errPending marks, while a transaction is open, an op that ran and
// waits for the commit.
var errPending = errors.New("pending commit")

// rollback ends a failed transaction. Its own error is moot: either the
// transaction is gone or the connection is broken, and the next BEGIN says
// which.
func (w *writer) rollback() {
	w.conn.ExecContext(context.Background(), "ROLLBACK")
}
