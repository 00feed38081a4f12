// Package limittest is the conformance test of limit.Ledger: every ledger
// (the in-process one, SQLite's, PostgreSQL's) keeps the same counts and
// gives the same answers. The windows are short, real time: a store's
// ledger keeps its own clock.
package limittest

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model/limit"
)

// Kit opens the ledger under test.
type Kit struct {
	// Open returns n ledgers on one database, as n processes would open
	// it (the in-process ledger: the same one n times).
	Open func(t *testing.T, n int) []limit.Ledger
	// Abandon stops l renewing its leases and leaves its slots taken, as
	// a killed process would; nil for a ledger of one process, which has
	// no leases.
	Abandon func(l limit.Ledger)
	// Lease is how long an abandoned slot stays in flight.
	Lease time.Duration
}

const window = 400 * time.Millisecond

var ctx = context.Background()

// Run runs the conformance test.
func Run(t *testing.T, k Kit) {
	t.Run("RequestsPerWindow", func(t *testing.T) { requests(t, k) })
	t.Run("InFlight", func(t *testing.T) { inFlight(t, k) })
	t.Run("Tokens", func(t *testing.T) { tokens(t, k) })
	t.Run("Pause", func(t *testing.T) { pause(t, k) })
	t.Run("ProvidersApart", func(t *testing.T) { apart(t, k) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, k) })
	if k.Abandon != nil {
		t.Run("Leases", func(t *testing.T) { leases(t, k) })
	}
}

func take(t *testing.T, l limit.Ledger, lim limit.Limits) limit.Slot {
	t.Helper()
	s, wait, why, err := l.Take(ctx, "anthropic", lim, window)
	if err != nil || s == nil {
		t.Fatalf("Take = %v, wait %s (%s), %v; want a slot", s, wait, why, err)
	}
	return s
}

// blocked checks that l gives no slot for lim, for the reason why, with a
// wait of at most most (and, for a shared ledger, above 0: no end of
// another process's attempt wakes it); it returns the wait.
func blocked(t *testing.T, k Kit, l limit.Ledger, lim limit.Limits, why string, most time.Duration) time.Duration {
	t.Helper()
	s, wait, got, err := l.Take(ctx, "anthropic", lim, window)
	switch {
	case err != nil:
		t.Fatalf("Take: %v", err)
	case s != nil:
		t.Fatalf("Take gave a slot; want none: %s", why)
	case got != why:
		t.Fatalf("Take's reason %q, want %q", got, why)
	case wait < 0 || wait > most:
		t.Fatalf("Take's wait %s, want at most %s", wait, most)
	case k.Abandon != nil && wait == 0:
		t.Fatalf("a shared ledger's wait is 0: nothing in this process would end it")
	}
	return wait
}

func done(t *testing.T, s limit.Slot) {
	t.Helper()
	if err := s.Replied(ctx); err != nil {
		t.Fatalf("Replied: %v", err)
	}
	if err := s.Closed(ctx); err != nil {
		t.Fatalf("Closed: %v", err)
	}
}

// Attempts without a reply count, and so do those replied within the
// window, on every ledger of the database; the oldest reply frees the
// first place a window after it.
func requests(t *testing.T, k Kit) {
	ls := k.Open(t, 2)
	lim := limit.Limits{RequestsPerMinute: 3}
	a, b := take(t, ls[0], lim), take(t, ls[1], lim)
	c := take(t, ls[0], lim)
	blocked(t, k, ls[1], lim, limit.Requests(3, window), window)
	for _, s := range []limit.Slot{a, b, c} {
		done(t, s)
	}
	time.Sleep(blocked(t, k, ls[1], lim, limit.Requests(3, window), window))
	soon(t, ls[1], lim)
}

// soon takes a slot on l within a window (a shared ledger's wait may be
// shorter than the wait for a slot: a poll) and gives it back.
func soon(t *testing.T, l limit.Ledger, lim limit.Limits) {
	t.Helper()
	deadline := time.Now().Add(window)
	for {
		s, _, why, err := l.Take(ctx, "anthropic", lim, window)
		if err != nil {
			t.Fatal(err)
		}
		if s != nil {
			done(t, s)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still blocked (%s) a window after the wait", why)
		}
		time.Sleep(window / 20)
	}
}

// Attempts in flight are those not closed, on every ledger.
func inFlight(t *testing.T, k Kit) {
	ls := k.Open(t, 2)
	lim := limit.Limits{MaxInFlight: 2}
	a := take(t, ls[0], lim)
	b := take(t, ls[1], lim)
	blocked(t, k, ls[0], lim, limit.InFlight(2), window)
	if err := a.Replied(ctx); err != nil {
		t.Fatal(err)
	}
	blocked(t, k, ls[0], lim, limit.InFlight(2), window) // replied, still being read
	if err := a.Closed(ctx); err != nil {
		t.Fatal(err)
	}
	done(t, take(t, ls[1], lim))
	done(t, b)
}

// Tokens spent on any ledger count for a window.
func tokens(t *testing.T, k Kit) {
	ls := k.Open(t, 2)
	lim := limit.Limits{TokensPerMinute: 100}
	done(t, take(t, ls[0], lim))
	if err := ls[0].Spend(ctx, "anthropic", 60); err != nil {
		t.Fatal(err)
	}
	done(t, take(t, ls[1], lim))
	if err := ls[1].Spend(ctx, "anthropic", 40); err != nil {
		t.Fatal(err)
	}
	time.Sleep(blocked(t, k, ls[0], lim, limit.Tokens(100, window), window))
	soon(t, ls[0], lim)
}

// A pause holds every ledger's attempts back; a shorter one does not cut
// it short.
func pause(t *testing.T, k Kit) {
	ls := k.Open(t, 2)
	if err := ls[0].Pause(ctx, "anthropic", window); err != nil {
		t.Fatal(err)
	}
	if err := ls[1].Pause(ctx, "anthropic", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if wait := blocked(t, k, ls[1], limit.Limits{}, limit.Paused, window); wait < window/2 {
		t.Fatalf("paused for %s, want about %s: the shorter pause cut it short", wait, window)
	}
	time.Sleep(window - time.Since(start))
	soon(t, ls[1], limit.Limits{})
}

// One provider's counts do not hold another's attempts back.
func apart(t *testing.T, k Kit) {
	ls := k.Open(t, 1)
	lim := limit.Limits{MaxInFlight: 1}
	a := take(t, ls[0], lim)
	s, _, why, err := ls[0].Take(ctx, "openai", lim, window)
	if err != nil || s == nil {
		t.Fatalf("openai held back by anthropic's attempt: %s, %v", why, err)
	}
	done(t, s)
	done(t, a)
}

// Goroutines on several ledgers take slots as fast as they are given:
// no window holds more than the limit.
func concurrent(t *testing.T, k Kit) {
	ls := k.Open(t, 3)
	const limitN = 5
	lim := limit.Limits{RequestsPerMinute: limitN}
	var mu sync.Mutex
	var at []time.Time
	end := time.Now().Add(2*window + window/2)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			l := ls[i%len(ls)]
			for time.Now().Before(end) {
				s, wait, _, err := l.Take(ctx, "anthropic", lim, window)
				if err != nil {
					t.Error(err)
					return
				}
				if s == nil {
					time.Sleep(min(max(wait, time.Millisecond), window/10))
					continue
				}
				mu.Lock()
				at = append(at, time.Now())
				mu.Unlock()
				// The reply comes at once: the window counts from here.
				if err := s.Replied(ctx); err != nil {
					t.Error(err)
				}
				if err := s.Closed(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 2*limitN {
		t.Fatalf("%d slots in %s: the limit stalls", len(at), 2*window)
	}
	slices.SortFunc(at, time.Time.Compare)
	for i := 0; i+limitN < len(at); i++ {
		if d := at[i+limitN].Sub(at[i]); d < window {
			t.Fatalf("slots %d to %d were taken within %s: %d in one window, over %d", i+1, i+limitN+1, d, limitN+1, limitN)
		}
	}
}

// A slot whose ledger stops renewing it (its process was killed) is in
// flight until its lease ends, and counts as a request for a window more;
// a slot whose ledger lives stays in flight past its lease.
func leases(t *testing.T, k Kit) {
	ls := k.Open(t, 2)
	lim := limit.Limits{MaxInFlight: 1, RequestsPerMinute: 2}
	kept := take(t, ls[1], lim)
	time.Sleep(2 * k.Lease)
	blocked(t, k, ls[0], lim, limit.InFlight(1), window) // renewed
	done(t, kept)

	ls = k.Open(t, 2)
	lim = limit.Limits{MaxInFlight: 1, RequestsPerMinute: 1}
	take(t, ls[0], lim) // never given back
	k.Abandon(ls[0])
	blocked(t, k, ls[1], lim, limit.InFlight(1), k.Lease)
	time.Sleep(k.Lease + window/10)
	blocked(t, k, ls[1], lim, limit.Requests(1, window), window)
	time.Sleep(window)
	soon(t, ls[1], lim)
}

// Bench measures what the limits cost a model call when they are kept in
// l: one attempt through the limited transport (its slot taken, replied,
// closed) and the call's tokens spent, under limits it never reaches. The
// attempt itself costs nothing (a RoundTripper that answers at once).
//
// A ledger's counting grows with the requests the window holds (up to
// the limit): "idle" counts over a window of 50 ms, which holds next to
// nothing; "full" over the minute, which holds 1,000 requests before the
// first call (a provider at 1,000 requests per minute) and each call's
// own after.
func Bench(b *testing.B, l limit.Ledger) {
	lim := limit.Limits{RequestsPerMinute: 1 << 30, TokensPerMinute: 1 << 50, MaxInFlight: 1 << 20}
	bench := func(provider string, window time.Duration) func() {
		reg := limit.NewRegistry(limit.Config{Ledger: l, Window: window})
		reg.Set(provider, lim)
		rt := reg.Limiter(provider).Transport(answer{})
		return func() {
			req, err := http.NewRequest("POST", "http://model.invalid/v1/messages", nil)
			if err != nil {
				b.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			reg.Limiter(provider).Spend(15)
		}
	}
	idle := bench("anthropic", 50*time.Millisecond)
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			idle()
		}
	})
	b.Run("idle-parallel", func(b *testing.B) {
		b.SetParallelism(4) // 4×GOMAXPROCS calls at once, as a busy eval
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				idle()
			}
		})
	})
	full := bench("openai", time.Minute)
	for range 1000 {
		full()
	}
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			full()
		}
	})
}

// answer is a RoundTripper that answers 200 at once.
type answer struct{}

func (answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}}, nil
}
