package limit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A Ledger keeps the counts a provider's limits are held against: the
// slots of attempts in flight and of those replied within the window, the
// tokens spent within it, and the server's pause. Memory keeps them for
// one process; store/sqlite and store/postgres keep them in a run
// database, for every process that shares it (a fleet of workers, several
// ratchet run). Each process holds the counts against its own Limits: the
// processes of a fleet are given the same.
type Ledger interface {
	// Take takes a slot for an attempt on provider if lim allows one now,
	// counting over window. When it does not, the slot is nil and wait is
	// how long at most to wait before asking again (0: until an attempt
	// of this process ends or lim changes), why the reason in words.
	// Under limits with neither requests per minute nor calls in flight,
	// a shared ledger may give Uncounted: such a process honours the
	// pause, and its attempts do not count against the others' limits.
	Take(ctx context.Context, provider string, lim Limits, window time.Duration) (slot Slot, wait time.Duration, why string, err error)
	// Spend counts tokens a call on provider used, ending now.
	Spend(ctx context.Context, provider string, tokens int64) error
	// Pause holds attempts on provider back for d from now; a later pause
	// already set stands.
	Pause(ctx context.Context, provider string, d time.Duration) error
}

// A Slot is one attempt's place in its provider's counts: in flight from
// Take to Closed, and counted in the requests of every window from Take
// to a window after Replied.
type Slot interface {
	// Replied says the attempt's reply (or failure) is in.
	Replied(ctx context.Context) error
	// Closed says the attempt is over: no longer in flight. Replied comes
	// first.
	Closed(ctx context.Context) error
}

// Uncounted is a slot that counts nowhere.
var Uncounted Slot = uncounted{}

type uncounted struct{}

func (uncounted) Replied(context.Context) error { return nil }
func (uncounted) Closed(context.Context) error  { return nil }

// Memory returns a ledger of this process's own, on the clock now.
func Memory(now func() time.Time) Ledger {
	return &memory{now: now, providers: map[string]*counts{}}
}

type memory struct {
	now       func() time.Time
	mu        sync.Mutex
	providers map[string]*counts
}

// counts are one provider's: open counts the attempts sent and not yet
// over, pending those of them whose reply has not come; sent are the
// reply times of attempts within the last window, spent the tokens of
// calls that ended within it (tokens their sum). Both are in time order,
// as they were added under the lock: what leaves the window is a prefix,
// found by binary search, so that a call costs the same however many the
// window holds.
type counts struct {
	open, pending int
	sent          []time.Time
	spent         []spend
	tokens        int64
	paused        time.Time
}

type spend struct {
	at     time.Time
	tokens int64
}

func (m *memory) counts(provider string) *counts {
	c := m.providers[provider]
	if c == nil {
		c = &counts{}
		m.providers[provider] = c
	}
	return c
}

func (m *memory) Take(_ context.Context, provider string, lim Limits, window time.Duration) (Slot, time.Duration, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts(provider)
	now := m.now()
	if wait, why := c.blocked(now, lim, window); why != "" {
		return nil, wait, why, nil
	}
	c.open++
	c.pending++
	return &memSlot{m: m, c: c}, 0, "", nil
}

// blocked says why an attempt may not be sent at now, and for how long at
// most; "" when it may.
func (c *counts) blocked(now time.Time, lim Limits, window time.Duration) (time.Duration, string) {
	from := now.Add(-window)
	i, _ := slices.BinarySearchFunc(c.sent, from, func(t, from time.Time) int {
		if t.After(from) {
			return 1
		}
		return -1
	})
	c.sent = c.sent[i:]
	i, _ = slices.BinarySearchFunc(c.spent, from, func(s spend, from time.Time) int {
		if s.at.After(from) {
			return 1
		}
		return -1
	})
	for _, s := range c.spent[:i] {
		c.tokens -= s.tokens
	}
	c.spent = c.spent[i:]
	k := Counts{InFlight: c.open, Requests: c.pending + len(c.sent), Tokens: c.tokens, Paused: c.paused}
	if len(c.sent) > 0 {
		k.Oldest = c.sent[0] // the oldest frees first
	}
	if len(c.spent) > 0 {
		k.OldestSpend = c.spent[0].at
	}
	return Blocked(k, now, lim, window)
}

// Counts are what a ledger knows of one provider at a moment, as Blocked
// weighs them.
type Counts struct {
	// InFlight counts the attempts taken and not yet over.
	InFlight int
	// Requests counts the attempts the window holds: those without a
	// reply, and those replied within the window.
	Requests int
	// Oldest is the reply of the oldest attempt counted in Requests, the
	// first to leave the window; zero when none has replied.
	Oldest time.Time
	// Tokens are those spent within the window; OldestSpend is when the
	// first of them was.
	Tokens      int64
	OldestSpend time.Time
	// Paused is when the server's pause ends.
	Paused time.Time
}

// Counted says whether attempts under l take slots in a ledger: only
// requests per minute and calls in flight count them.
func (l Limits) Counted() bool { return l.RequestsPerMinute > 0 || l.MaxInFlight > 0 }

// Earliest is the earlier of two times, a zero one being none: how a
// ledger finds Counts.Oldest from its rows.
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// Blocked says why lim allows no attempt at now given c, and for how long
// at most (0 when only the end of an attempt can free one); "" when lim
// allows one. Every Ledger decides by it, so that they agree.
func Blocked(c Counts, now time.Time, lim Limits, window time.Duration) (time.Duration, string) {
	if now.Before(c.Paused) {
		return c.Paused.Sub(now), Paused
	}
	from := now.Add(-window)
	if lim.MaxInFlight > 0 && c.InFlight >= lim.MaxInFlight {
		return 0, InFlight(c.InFlight)
	}
	if n := lim.RequestsPerMinute; n > 0 && c.Requests >= n {
		var wait time.Duration
		if !c.Oldest.IsZero() {
			wait = max(c.Oldest.Sub(from), time.Microsecond)
		}
		return wait, Requests(n, window)
	}
	if n := lim.TokensPerMinute; n > 0 && c.Tokens >= n {
		return max(c.OldestSpend.Sub(from), time.Microsecond), Tokens(n, window)
	}
	return 0, ""
}

func (m *memory) Spend(_ context.Context, provider string, tokens int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts(provider)
	c.spent = append(c.spent, spend{at: m.now(), tokens: tokens})
	c.tokens += tokens
	return nil
}

func (m *memory) Pause(_ context.Context, provider string, d time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts(provider)
	if until := m.now().Add(d); until.After(c.paused) {
		c.paused = until
	}
	return nil
}

type memSlot struct {
	m *memory
	c *counts
}

func (s *memSlot) Replied(context.Context) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.c.pending--
	s.c.sent = append(s.c.sent, s.m.now())
	return nil
}

func (s *memSlot) Closed(context.Context) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.c.open--
	return nil
}

// The reasons a Ledger gives for a wait, the same whichever keeps the
// counts.

// Paused is the reason while the server's retry-after holds.
const Paused = "paused by the server's retry-after"

// InFlight is the reason when n calls are in flight.
func InFlight(n int) string { return fmt.Sprintf("%d calls in flight (max_in_flight)", n) }

// Requests is the reason when n requests per window are reached.
func Requests(n int, window time.Duration) string {
	return fmt.Sprintf("%d requests per %s reached (requests_per_minute)", n, windowName(window))
}

// Tokens is the reason when n tokens per window are reached.
func Tokens(n int64, window time.Duration) string {
	return fmt.Sprintf("%d tokens per %s reached (tokens_per_minute)", n, windowName(window))
}

func windowName(d time.Duration) string {
	if d == time.Minute {
		return "minute"
	}
	return d.String()
}
