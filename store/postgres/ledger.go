package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratchetloop/ratchet/model/limit"
)

// LedgerConfig configures a Ledger; the zero value means defaults.
type LedgerConfig struct {
	// Lease is how long a slot stays in flight after its process last
	// renewed it (every Lease/3); default 30s. A killed process's
	// attempts hold their places this long.
	Lease time.Duration
	// Poll is how long a waiting attempt sleeps when only the end of
	// another attempt, perhaps on another machine, can free a place;
	// default 100ms.
	Poll time.Duration
}

// Ledger keeps provider limits (limit.Ledger) in the database, shared by
// every process on every machine that uses it. Each Take is one
// transaction under a transaction-level advisory lock keyed by the
// provider, which serializes the takers of one provider: the counts a
// Take reads are those it adds to. Times are the server's clock
// (clock_timestamp()), so the machines' clocks need not agree.
//
// The ledger has a small pool of its own whose commits do not wait for
// the server's fsync (synchronous_commit=off; the runs' entries, on the
// store's pool, still do): a crash of the server may lose the last
// slots taken, never corrupt the counts.
type Ledger struct {
	pool  *pgxpool.Pool
	cfg   LedgerConfig
	owner string
	renew *limit.Renewer
}

var _ limit.Ledger = (*Ledger)(nil)

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
	pc := s.pcfg.Copy()
	pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pc.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), pc) // connects when first used
	if err != nil {
		return nil, fmt.Errorf("postgres: the limit ledger: %w", err)
	}
	l := &Ledger{pool: pool, cfg: cfg, owner: limit.Owner()}
	l.renew = limit.NewRenewer(cfg.Lease/3, func(ctx context.Context) error {
		_, err := l.pool.Exec(ctx, `UPDATE limit_slots SET lease = clock_timestamp() + $1 WHERE owner = $2 AND NOT closed`, l.cfg.Lease, l.owner)
		return err
	})
	return l, nil
}

// Stop stops renewing the leases of the slots the ledger holds (they
// come back to the others when their leases end, as a killed process's)
// and closes its pool.
func (l *Ledger) Stop() {
	l.renew.Stop()
	l.pool.Close()
}

// lockKey is the advisory lock of provider's takers: a hash of its name
// under a prefix of ratchet's, apart from the migration's lock.
func lockKey(provider string) int64 {
	h := fnv.New64a()
	h.Write([]byte("ratchet limit " + provider))
	return int64(h.Sum64())
}

// Take implements limit.Ledger.
func (l *Ledger) Take(ctx context.Context, provider string, lim limit.Limits, window time.Duration) (limit.Slot, time.Duration, string, error) {
	var (
		id   int64
		wait time.Duration
		why  string
	)
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		// clock_timestamp() is read once the lock is held (the select
		// list is computed for the row the lock's call yields): the time
		// of this Take's turn.
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp() FROM (SELECT pg_advisory_xact_lock($1)) AS locked`, lockKey(provider)).Scan(&now); err != nil {
			return err
		}
		from := now.Add(-window)
		// The counts go in one batch: one round trip, not one a query.
		var c limit.Counts
		var paused, oldest, oldestLease, oldestSpend *time.Time
		var batch pgx.Batch
		batch.Queue(`SELECT until FROM limit_pauses WHERE provider = $1`, provider).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&paused); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		})
		if lim.RequestsPerMinute > 0 || lim.MaxInFlight > 0 {
			// A slot is done with once it has left the window and is in
			// flight no more; a slot without a reply whose lease ended
			// counts as replied at its lease's end.
			batch.Queue(`DELETE FROM limit_slots WHERE provider = $1 AND replied <= $2 AND (closed OR lease <= $3)`, provider, from, now)
			batch.Queue(`DELETE FROM limit_slots WHERE provider = $1 AND replied IS NULL AND lease <= $2`, provider, from)
		}
		if lim.MaxInFlight > 0 {
			batch.Queue(`SELECT count(*) FROM limit_slots WHERE provider = $1 AND NOT closed AND lease > $2`, provider, now).
				QueryRow(func(row pgx.Row) error { return row.Scan(&c.InFlight) })
		}
		if lim.RequestsPerMinute > 0 {
			// Counting stops at the limit: a Take costs what the limit
			// allows, not what the window holds.
			batch.Queue(`SELECT
				(SELECT count(*) FROM (SELECT 1 FROM limit_slots WHERE provider = $1 AND replied > $2 LIMIT $3) AS w)
					+ (SELECT count(*) FROM limit_slots WHERE provider = $1 AND replied IS NULL AND lease > $2),
				(SELECT min(replied) FROM limit_slots WHERE provider = $1 AND replied > $2),
				(SELECT min(lease) FROM limit_slots WHERE provider = $1 AND replied IS NULL AND lease > $2 AND lease <= $4)`,
				provider, from, lim.RequestsPerMinute, now).
				QueryRow(func(row pgx.Row) error { return row.Scan(&c.Requests, &oldest, &oldestLease) })
		}
		if lim.TokensPerMinute > 0 {
			batch.Queue(`DELETE FROM limit_tokens WHERE provider = $1 AND at <= $2`, provider, from)
			batch.Queue(`SELECT coalesce(sum(tokens), 0), min(at) FROM limit_tokens WHERE provider = $1`, provider).
				QueryRow(func(row pgx.Row) error { return row.Scan(&c.Tokens, &oldestSpend) })
		}
		if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
			return err
		}
		c.Paused, c.OldestSpend = deref(paused), deref(oldestSpend)
		c.Oldest = limit.Earliest(deref(oldest), deref(oldestLease))
		if wait, why = limit.Blocked(c, now, lim, window); why != "" || !lim.Counted() {
			return nil
		}
		return tx.QueryRow(ctx, `INSERT INTO limit_slots (provider, owner, lease) VALUES ($1, $2, $3) RETURNING id`,
			provider, l.owner, now.Add(l.cfg.Lease)).Scan(&id)
	})
	if err != nil {
		return nil, 0, "", fmt.Errorf("postgres: take a slot: %w", err)
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

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// Spend implements limit.Ledger.
func (l *Ledger) Spend(ctx context.Context, provider string, tokens int64) error {
	if _, err := l.pool.Exec(ctx, `INSERT INTO limit_tokens (provider, at, tokens) VALUES ($1, clock_timestamp(), $2)`, provider, tokens); err != nil {
		return fmt.Errorf("postgres: spend tokens: %w", err)
	}
	return nil
}

// Pause implements limit.Ledger.
func (l *Ledger) Pause(ctx context.Context, provider string, d time.Duration) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO limit_pauses (provider, until) VALUES ($1, clock_timestamp() + $2)
		ON CONFLICT (provider) DO UPDATE SET until = greatest(limit_pauses.until, excluded.until)`, provider, d)
	if err != nil {
		return fmt.Errorf("postgres: pause: %w", err)
	}
	return nil
}

type slot struct {
	l  *Ledger
	id int64
}

func (s *slot) Replied(ctx context.Context) error {
	if _, err := s.l.pool.Exec(ctx, `UPDATE limit_slots SET replied = clock_timestamp() WHERE id = $1`, s.id); err != nil {
		return fmt.Errorf("postgres: a slot's reply: %w", err)
	}
	return nil
}

func (s *slot) Closed(ctx context.Context) error {
	s.l.renew.Drop()
	if _, err := s.l.pool.Exec(ctx, `UPDATE limit_slots SET closed = true WHERE id = $1`, s.id); err != nil {
		return fmt.Errorf("postgres: close a slot: %w", err)
	}
	return nil
}
