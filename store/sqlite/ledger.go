package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ratchetloop/ratchet/internal/sqlitefile"
	"github.com/ratchetloop/ratchet/model/limit"
)

// LedgerConfig configures a Ledger; the zero value means defaults.
type LedgerConfig struct {
	// Lease is how long a slot stays in flight after its process last
	// renewed it (every Lease/3); default 30s. A killed process's
	// attempts hold their places this long.
	Lease time.Duration
	// Poll is how long a waiting attempt sleeps when only the end of
	// another attempt, perhaps in another process, can free a place;
	// default 100ms.
	Poll time.Duration
}

// Ledger keeps provider limits (limit.Ledger) in the database, shared by
// every process that opens it. Each Take runs in one IMMEDIATE
// transaction, which serializes the takers of all processes on the file:
// the counts a Take reads are those it adds to. Times are this machine's
// clock, which every process on the file shares.
//
// The ledger writes on a connection of its own with synchronous=NORMAL:
// in WAL mode its commits wait for no fsync (the runs' entries, on the
// store's writer, still do). A crash of the machine may lose the last
// slots taken; the machine's processes went with them.
type Ledger struct {
	db    *sql.DB
	cfg   LedgerConfig
	owner string
	renew *limit.Renewer
	stmts map[string]*sql.Stmt // ledgerStatements, prepared
}

var _ limit.Ledger = (*Ledger)(nil)

// The ledger's statements, prepared once (NewLedger): parsing is most of
// a small statement's cost in SQLite.
const (
	qRenew     = `UPDATE limit_slots SET lease = ? WHERE owner = ? AND NOT closed`
	qPaused    = `SELECT until FROM limit_pauses WHERE provider = ?`
	qDropSlots = `DELETE FROM limit_slots WHERE provider = ? AND replied <= ? AND (closed OR lease <= ?)`
	qDropLost  = `DELETE FROM limit_slots WHERE provider = ? AND replied IS NULL AND lease <= ?`
	qInFlight  = `SELECT count(*) FROM limit_slots WHERE provider = ? AND NOT closed AND lease > ?`
	qRequests  = `SELECT
				(SELECT count(*) FROM (SELECT 1 FROM limit_slots WHERE provider = ?1 AND replied > ?2 LIMIT ?3))
					+ (SELECT count(*) FROM limit_slots WHERE provider = ?1 AND replied IS NULL AND lease > ?2),
				(SELECT min(replied) FROM limit_slots WHERE provider = ?1 AND replied > ?2),
				(SELECT min(lease) FROM limit_slots WHERE provider = ?1 AND replied IS NULL AND lease > ?2 AND lease <= ?4)`
	qDropTokens = `DELETE FROM limit_tokens WHERE provider = ? AND at <= ?`
	qTokens     = `SELECT coalesce(sum(tokens), 0), min(at) FROM limit_tokens WHERE provider = ?`
	qInsertSlot = `INSERT INTO limit_slots (provider, owner, lease) VALUES (?, ?, ?)`
	qSpend      = `INSERT INTO limit_tokens (provider, at, tokens) VALUES (?, ?, ?)`
	qPause      = `INSERT INTO limit_pauses (provider, until) VALUES (?, ?)
		ON CONFLICT (provider) DO UPDATE SET until = max(until, excluded.until)`
	qReplied = `UPDATE limit_slots SET replied = ? WHERE id = ?`
	qClosed  = `UPDATE limit_slots SET closed = 1 WHERE id = ?`
)

var ledgerStatements = []string{qRenew, qPaused, qDropSlots, qDropLost, qInFlight, qRequests, qDropTokens, qTokens, qInsertSlot, qSpend, qPause, qReplied, qClosed}

// Ledger returns the store's ledger, made on first use with the default
// config; Close stops it.
func (s *Store) Ledger() (limit.Ledger, error) {
	s.ledgerOnce.Do(func() { s.ledger, s.ledgerErr = s.NewLedger(LedgerConfig{}) })
	return s.ledger, s.ledgerErr
}

// NewLedger returns a ledger on the store's database; Stop stops it.
func (s *Store) NewLedger(cfg LedgerConfig) (*Ledger, error) {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	db, err := sql.Open("sqlite", sqlitefile.DSN(s.cfg.Path, s.cfg.BusyTimeout, "synchronous(NORMAL)")+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: the limit ledger: %w", err)
	}
	db.SetMaxOpenConns(1) // one writer of this process at a time; the others wait here, not in the busy handler
	l := &Ledger{db: db, cfg: cfg, owner: limit.Owner(), stmts: map[string]*sql.Stmt{}}
	for _, q := range ledgerStatements {
		st, err := db.Prepare(q)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("sqlite: the limit ledger: %w", err)
		}
		l.stmts[q] = st
	}
	l.renew = limit.NewRenewer(cfg.Lease/3, func(ctx context.Context) error {
		_, err := l.exec(ctx, nil, qRenew,
			time.Now().Add(l.cfg.Lease).UnixMicro(), l.owner)
		return err
	})
	return l, nil
}

// Stop stops renewing the leases of the slots the ledger holds (they
// come back to the others when their leases end, as a killed process's)
// and closes its connection.
func (l *Ledger) Stop() {
	l.renew.Stop()
	l.close()
}

func (l *Ledger) close() {
	for _, st := range l.stmts {
		st.Close()
	}
	l.db.Close()
}

// Take implements limit.Ledger.
func (l *Ledger) Take(ctx context.Context, provider string, lim limit.Limits, window time.Duration) (limit.Slot, time.Duration, string, error) {
	var (
		id   int64
		wait time.Duration
		why  string
	)
	err := l.tx(ctx, func(t *sql.Tx) error {
		now := time.Now()
		n, from := now.UnixMicro(), now.Add(-window).UnixMicro()
		var c limit.Counts
		var paused, oldest, oldestLease, oldestSpend sql.NullInt64
		if err := l.queryRow(ctx, t, qPaused, provider).Scan(&paused); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		c.Paused = fromNull(paused)
		if lim.RequestsPerMinute > 0 || lim.MaxInFlight > 0 {
			// A slot is done with once it has left the window and is in
			// flight no more; a slot without a reply whose lease ended
			// counts as replied at its lease's end.
			if _, err := l.exec(ctx, t, qDropSlots, provider, from, n); err != nil {
				return err
			}
			if _, err := l.exec(ctx, t, qDropLost, provider, from); err != nil {
				return err
			}
		}
		if lim.MaxInFlight > 0 {
			if err := l.queryRow(ctx, t, qInFlight, provider, n).Scan(&c.InFlight); err != nil {
				return err
			}
		}
		if lim.RequestsPerMinute > 0 {
			// Counting stops at the limit: a Take costs what the limit
			// allows, not what the window holds.
			err := l.queryRow(ctx, t, qRequests,
				provider, from, lim.RequestsPerMinute, n).Scan(&c.Requests, &oldest, &oldestLease)
			if err != nil {
				return err
			}
			c.Oldest = limit.Earliest(fromNull(oldest), fromNull(oldestLease))
		}
		if lim.TokensPerMinute > 0 {
			if _, err := l.exec(ctx, t, qDropTokens, provider, from); err != nil {
				return err
			}
			if err := l.queryRow(ctx, t, qTokens, provider).Scan(&c.Tokens, &oldestSpend); err != nil {
				return err
			}
			c.OldestSpend = fromNull(oldestSpend)
		}
		if wait, why = limit.Blocked(c, now, lim, window); why != "" || !lim.Counted() {
			return nil
		}
		res, err := l.exec(ctx, t, qInsertSlot, provider, l.owner, now.Add(l.cfg.Lease).UnixMicro())
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return nil, 0, "", fmt.Errorf("sqlite: take a slot: %w", err)
	}
	if why != "" {
		if wait == 0 {
			wait = l.cfg.Poll // another process's attempt may end unseen
		}
		return nil, wait, why, nil
	}
	if !lim.Counted() {
		return limit.Uncounted, 0, "", nil
	}
	l.renew.Hold()
	return &slot{l: l, id: id}, 0, "", nil
}

// exec runs one of ledgerStatements in t (nil: in a transaction of its
// own).
func (l *Ledger) exec(ctx context.Context, t *sql.Tx, query string, args ...any) (sql.Result, error) {
	st := l.stmts[query]
	if t != nil {
		st = t.StmtContext(ctx, st)
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs one of ledgerStatements in t.
func (l *Ledger) queryRow(ctx context.Context, t *sql.Tx, query string, args ...any) *sql.Row {
	return t.StmtContext(ctx, l.stmts[query]).QueryRowContext(ctx, args...)
}

// tx runs fn in one IMMEDIATE transaction and commits it.
func (l *Ledger) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	t, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		t.Rollback()
		return err
	}
	return t.Commit()
}

func fromNull(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64)
}

// Spend implements limit.Ledger.
func (l *Ledger) Spend(ctx context.Context, provider string, tokens int64) error {
	if _, err := l.exec(ctx, nil, qSpend, provider, time.Now().UnixMicro(), tokens); err != nil {
		return fmt.Errorf("sqlite: spend tokens: %w", err)
	}
	return nil
}

// Pause implements limit.Ledger.
func (l *Ledger) Pause(ctx context.Context, provider string, d time.Duration) error {
	if _, err := l.exec(ctx, nil, qPause, provider, time.Now().Add(d).UnixMicro()); err != nil {
		return fmt.Errorf("sqlite: pause: %w", err)
	}
	return nil
}

type slot struct {
	l  *Ledger
	id int64
}

func (s *slot) Replied(ctx context.Context) error {
	if _, err := s.l.exec(ctx, nil, qReplied, time.Now().UnixMicro(), s.id); err != nil {
		return fmt.Errorf("sqlite: a slot's reply: %w", err)
	}
	return nil
}

func (s *slot) Closed(ctx context.Context) error {
	s.l.renew.Drop()
	if _, err := s.l.exec(ctx, nil, qClosed, s.id); err != nil {
		return fmt.Errorf("sqlite: close a slot: %w", err)
	}
	return nil
}
