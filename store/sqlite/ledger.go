package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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
type Ledger struct {
	s     *Store
	cfg   LedgerConfig
	owner string
	renew *limit.Renewer
}

var _ limit.Ledger = (*Ledger)(nil)

// Ledger returns the store's ledger, made on first use with the default
// config; Close stops it.
func (s *Store) Ledger() limit.Ledger {
	s.ledgerOnce.Do(func() { s.ledger = s.NewLedger(LedgerConfig{}) })
	return s.ledger
}

// NewLedger returns a ledger on the store's database; Stop stops it.
func (s *Store) NewLedger(cfg LedgerConfig) *Ledger {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	l := &Ledger{s: s, cfg: cfg, owner: limit.Owner()}
	l.renew = limit.NewRenewer(cfg.Lease/3, func(ctx context.Context) error {
		return l.s.w.do(ctx, func(t tx) error {
			_, err := t.exec(`UPDATE limit_slots SET lease = ? WHERE owner = ? AND NOT closed`,
				time.Now().Add(l.cfg.Lease).UnixMicro(), l.owner)
			return err
		})
	})
	return l
}

// Stop stops renewing the leases of the slots the ledger holds: they
// come back to the others when their leases end, as a killed process's.
func (l *Ledger) Stop() { l.renew.Stop() }

// Take implements limit.Ledger.
func (l *Ledger) Take(ctx context.Context, provider string, lim limit.Limits, window time.Duration) (limit.Slot, time.Duration, string, error) {
	var (
		id   int64
		wait time.Duration
		why  string
	)
	err := l.s.w.do(ctx, func(t tx) error {
		now := time.Now()
		n, from := now.UnixMicro(), now.Add(-window).UnixMicro()
		// A slot is done with once it has left the window and is in
		// flight no more; a slot without a reply whose lease ended
		// counts as replied at its lease's end.
		if _, err := t.exec(`DELETE FROM limit_slots WHERE provider = ? AND coalesce(replied, lease) <= ? AND (closed OR lease <= ?)`, provider, from, n); err != nil {
			return err
		}
		if _, err := t.exec(`DELETE FROM limit_tokens WHERE provider = ? AND at <= ?`, provider, from); err != nil {
			return err
		}
		var c limit.Counts
		var oldest, oldestSpend, paused sql.NullInt64
		err := t.queryRow(`SELECT
			coalesce(sum(NOT closed AND lease > ?1), 0),
			coalesce(sum(coalesce(replied, lease) > ?2), 0),
			min(CASE WHEN coalesce(replied, lease) > ?2 AND (replied IS NOT NULL OR lease <= ?1) THEN coalesce(replied, lease) END),
			(SELECT coalesce(sum(tokens), 0) FROM limit_tokens WHERE provider = ?3),
			(SELECT min(at) FROM limit_tokens WHERE provider = ?3),
			(SELECT until FROM limit_pauses WHERE provider = ?3)
			FROM limit_slots WHERE provider = ?3`, n, from, provider).
			Scan(&c.InFlight, &c.Requests, &oldest, &c.Tokens, &oldestSpend, &paused)
		if err != nil {
			return err
		}
		c.Oldest, c.OldestSpend, c.Paused = fromNull(oldest), fromNull(oldestSpend), fromNull(paused)
		id = 0
		if wait, why = limit.Blocked(c, now, lim, window); why != "" {
			return nil
		}
		res, err := t.exec(`INSERT INTO limit_slots (provider, owner, lease) VALUES (?, ?, ?)`, provider, l.owner, now.Add(l.cfg.Lease).UnixMicro())
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
	l.renew.Hold()
	return &slot{l: l, id: id}, 0, "", nil
}

func fromNull(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMicro(v.Int64)
}

// Spend implements limit.Ledger.
func (l *Ledger) Spend(ctx context.Context, provider string, tokens int64) error {
	err := l.s.w.do(ctx, func(t tx) error {
		_, err := t.exec(`INSERT INTO limit_tokens (provider, at, tokens) VALUES (?, ?, ?)`, provider, time.Now().UnixMicro(), tokens)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: spend tokens: %w", err)
	}
	return nil
}

// Pause implements limit.Ledger.
func (l *Ledger) Pause(ctx context.Context, provider string, d time.Duration) error {
	err := l.s.w.do(ctx, func(t tx) error {
		_, err := t.exec(`INSERT INTO limit_pauses (provider, until) VALUES (?, ?)
			ON CONFLICT (provider) DO UPDATE SET until = max(until, excluded.until)`, provider, time.Now().Add(d).UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: pause: %w", err)
	}
	return nil
}

type slot struct {
	l  *Ledger
	id int64
}

func (s *slot) Replied(ctx context.Context) error {
	err := s.l.s.w.do(ctx, func(t tx) error {
		_, err := t.exec(`UPDATE limit_slots SET replied = ? WHERE id = ?`, time.Now().UnixMicro(), s.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: a slot's reply: %w", err)
	}
	return nil
}

func (s *slot) Closed(ctx context.Context) error {
	s.l.renew.Drop()
	err := s.l.s.w.do(ctx, func(t tx) error {
		_, err := t.exec(`UPDATE limit_slots SET closed = 1 WHERE id = ?`, s.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: close a slot: %w", err)
	}
	return nil
}
