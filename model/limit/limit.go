// Package limit holds the limits that every run on one provider shares
// within a process (an eval run at concurrency 50, a service running many
// loops), and across the processes and machines that keep their counts in
// one Ledger (a run database: store/sqlite, store/postgres): requests per
// minute, tokens per minute and calls in flight, and the pause a 429's
// retry-after asks for.
//
// A Registry keeps one Limiter per provider, its counts in a Ledger
// (Memory, this process's own, unless Config.Ledger or Share says
// otherwise). A provider's HTTP attempts go
// through its Limiter's Transport, placed under the retrying transport
// (model/retry), so that every attempt, retries included, waits its turn;
// Model wraps the provider's model to count the tokens each call used.
//
// What is promised, and how it is kept:
//   - Requests per minute, as the server counts them. An attempt takes a
//     slot when it is sent and keeps it until a Window after its reply
//     arrived (while it is in flight its slot counts too). The server saw
//     the request between those two moments, so however long the network
//     takes, no Window of the server's clock holds more requests than the
//     limit.
//   - Calls in flight: attempts sent and not yet read to their end.
//   - Tokens per minute: a call's input and output tokens count when it
//     ends, for a Window; no attempt is sent while the Window's tokens have
//     reached the limit. Calls in flight are not known until they end, so
//     they can carry the count past the limit; bound them with MaxInFlight.
//   - A reply of 429, 503 or 529 with a retry-after pauses every attempt
//     on the provider until then, not only the call that got it.
//
// Waiting honours the call's context: the runner derives its deadline from
// the run's time budget, so time spent waiting counts against the budget.
// Before an attempt waits, model.HooksFrom(ctx).OnWait is called (the
// runner logs it, and the terminal's status line shows it).
package limit

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/retry"
)

// Limits are one provider's limits. A zero field means no limit.
type Limits struct {
	RequestsPerMinute int   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64 `json:"tokens_per_minute,omitempty"`
	MaxInFlight       int   `json:"max_in_flight,omitempty"`
}

// Tighten returns l with each limit o sets taken where it is stricter: the
// limits of several sources (flags, a suite file, its task files) all hold.
func (l Limits) Tighten(o Limits) Limits {
	lower := func(a, b int64) int64 {
		if b > 0 && (a == 0 || b < a) {
			return b
		}
		return a
	}
	l.RequestsPerMinute = int(lower(int64(l.RequestsPerMinute), int64(o.RequestsPerMinute)))
	l.TokensPerMinute = lower(l.TokensPerMinute, o.TokensPerMinute)
	l.MaxInFlight = int(lower(int64(l.MaxInFlight), int64(o.MaxInFlight)))
	return l
}

// String writes l as the --limit flag takes it, without the provider.
func (l Limits) String() string {
	var parts []string
	if l.RequestsPerMinute > 0 {
		parts = append(parts, fmt.Sprintf("requests_per_minute=%d", l.RequestsPerMinute))
	}
	if l.TokensPerMinute > 0 {
		parts = append(parts, fmt.Sprintf("tokens_per_minute=%d", l.TokensPerMinute))
	}
	if l.MaxInFlight > 0 {
		parts = append(parts, fmt.Sprintf("max_in_flight=%d", l.MaxInFlight))
	}
	return strings.Join(parts, ",")
}

// CheckProvider says whether name can key limits: anthropic, openai, or
// openai-compatible:BASE_URL (each compatible server has its own).
func CheckProvider(name string) error {
	switch {
	case name == "anthropic", name == "openai", name == "gemini":
		return nil
	case strings.HasPrefix(name, "openai-compatible:") && len(name) > len("openai-compatible:"):
		return nil
	}
	return fmt.Errorf("unknown provider %q for limits: use anthropic, openai, gemini or openai-compatible:BASE_URL", name)
}

// Config configures a Registry. The zero value means defaults.
type Config struct {
	// Window is the span the per-minute limits count over; default one
	// minute. Tests shorten it: the limits then hold per Window.
	Window time.Duration
	// MaxPause is the longest retry-after that pauses the provider
	// (default 60s, the retrying transport's longest honoured wait).
	MaxPause time.Duration
	// Now is the clock of the in-process ledger; nil means time.Now. A
	// shared ledger keeps its own clock.
	Now func() time.Time
	// Ledger keeps the counts; nil means one of this process's own
	// (Memory). A ledger in a run database (store/sqlite, store/postgres)
	// shares the limits with every process that uses it.
	Ledger Ledger
}

// Registry holds the Limiter of each provider. It is safe for concurrent
// use; share one among every run of the process.
type Registry struct {
	cfg      Config
	mu       sync.Mutex
	limiters map[string]*Limiter
	// own is Config.Ledger, shares the Shares not yet ended.
	own    Ledger
	shares []*share
}

// NewRegistry returns an empty registry: no limits, but a provider's
// retry-after pauses all its calls once they go through its Limiter.
func NewRegistry(cfg Config) *Registry {
	if cfg.Window <= 0 {
		cfg.Window = time.Minute
	}
	if cfg.MaxPause <= 0 {
		cfg.MaxPause = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Ledger == nil {
		cfg.Ledger = Memory(cfg.Now)
	}
	return &Registry{cfg: cfg, limiters: map[string]*Limiter{}, own: cfg.Ledger}
}

// Share makes the registry's limiters count in ledger until restore is
// called: the CLI makes its registry before it opens the run database
// whose ledger the limits are then shared in, and gives the ledger up
// when it closes the database. Shares may nest, and end in any order: the
// latest that has not ended holds. Attempts already holding a slot give
// it back where they took it.
func (r *Registry) Share(ledger Ledger) (restore func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &share{ledger}
	r.shares = append(r.shares, s)
	r.use(ledger)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if i := slices.Index(r.shares, s); i >= 0 {
			r.shares = slices.Delete(r.shares, i, i+1)
		}
		ledger := r.own
		if len(r.shares) > 0 {
			ledger = r.shares[len(r.shares)-1].ledger
		}
		r.use(ledger)
	}
}

// share is one Share, told apart from another of the same ledger.
type share struct{ ledger Ledger }

// use makes ledger the registry's; r.mu is held.
func (r *Registry) use(ledger Ledger) {
	r.cfg.Ledger = ledger
	for _, l := range r.limiters {
		l.mu.Lock()
		l.ledger = ledger
		l.wake()
		l.mu.Unlock()
	}
}

// Set tightens provider's limits by l (see Limits.Tighten).
func (r *Registry) Set(provider string, l Limits) {
	lim := r.Limiter(provider)
	lim.mu.Lock()
	defer lim.mu.Unlock()
	lim.limits = lim.limits.Tighten(l)
	lim.wake()
}

// Limiter returns provider's limiter, making it on first use.
func (r *Registry) Limiter(provider string) *Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.limiters[provider]
	if l == nil {
		l = &Limiter{provider: provider, cfg: r.cfg, ledger: r.cfg.Ledger, changed: make(chan struct{})}
		r.limiters[provider] = l
	}
	return l
}

// Limiter is one provider's limits, kept in a Ledger.
type Limiter struct {
	provider string
	cfg      Config

	mu     sync.Mutex
	limits Limits
	ledger Ledger
	// changed is closed, and replaced, whenever a waiting attempt might
	// now go: an attempt of this process ended, limits changed. (A shared
	// ledger's waits are bounded by its polling instead: other processes'
	// attempts end unseen.)
	changed chan struct{}
}

// Limits returns the provider's limits.
func (l *Limiter) Limits() Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limits
}

func (l *Limiter) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// acquire waits until an attempt may be sent and takes its slot, to be
// released by replied once its reply arrived (or it failed) and by closed
// once it is over.
func (l *Limiter) acquire(ctx context.Context) (Slot, error) {
	told := false
	for {
		l.mu.Lock()
		lim, ledger, changed := l.limits, l.ledger, l.changed
		l.mu.Unlock()
		slot, wait, why, err := ledger.Take(ctx, l.provider, lim, l.cfg.Window)
		if err != nil {
			return nil, fmt.Errorf("the shared limits of %s: %w", l.provider, err)
		}
		if slot != nil {
			return slot, nil
		}
		if !told {
			told = true
			if h := model.HooksFrom(ctx); h.OnWait != nil {
				h.OnWait(model.Wait{Provider: l.provider, For: wait, Reason: why})
			}
		}
		if err := sleep(ctx, wait, changed); err != nil {
			return nil, err
		}
	}
}

// sleep waits for d (forever when d is 0), for changed to close, or for
// ctx to be done.
func sleep(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-changed:
	case <-timer:
	}
	return nil
}

// release is the context a slot is given back under: the attempt's own
// may be cancelled already, and a slot not given back is held until its
// lease runs out.
func release(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// replied moves an attempt from in flight to the window, once its reply
// (or failure) is in: from here on the server has certainly seen it. A
// ledger that fails to record it keeps the slot until its lease ends,
// which only errs on the side of the limit.
func (l *Limiter) replied(ctx context.Context, s Slot) {
	_ = s.Replied(release(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wake()
}

// closed ends an attempt's time in flight (a failure to record it, as
// replied's).
func (l *Limiter) closed(ctx context.Context, s Slot) {
	_ = s.Closed(release(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wake()
}

// Pause holds every attempt on the provider back for d (capped at
// Config.MaxPause); a later pause already set stands. A ledger that fails
// to record it loses only the pause: the server's next 429 asks again.
func (l *Limiter) Pause(d time.Duration) {
	l.mu.Lock()
	ledger := l.ledger
	l.mu.Unlock()
	_ = ledger.Pause(context.Background(), l.provider, min(d, l.cfg.MaxPause))
}

// Spend counts tokens used by a call that just ended, if the provider has
// a limit on tokens per minute (a process without one leaves no record
// that anything would prune). A ledger that fails to record them
// undercounts the window, as a call still in flight does.
func (l *Limiter) Spend(tokens int64) {
	l.mu.Lock()
	ledger, lim := l.ledger, l.limits
	l.mu.Unlock()
	if tokens <= 0 || lim.TokensPerMinute == 0 {
		return
	}
	_ = ledger.Spend(context.Background(), l.provider, tokens)
}

// Transport returns base (nil: http.DefaultTransport) under l: each
// attempt waits for l's limits, and a reply asking to retry after a while
// pauses the provider.
func (l *Limiter) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{l: l, base: base}
}

type transport struct {
	l    *Limiter
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c, _ := ctx.Value(callKey{}).(*call)
	if c != nil {
		c.release() // an earlier attempt of the call is over, and used nothing
	}
	slot, err := t.l.acquire(ctx)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	t.l.replied(ctx, slot)
	closed := func() { t.l.closed(ctx, slot) }
	if err != nil {
		closed()
		return nil, err
	}
	done := closed
	if c != nil && resp.StatusCode/100 == 2 {
		// A reply's call stays in flight until Model has counted its
		// tokens: the next attempt must see them.
		done = func() { c.hold(closed) }
	}
	resp.Body = &body{ReadCloser: resp.Body, done: done}
	switch resp.StatusCode {
	case 429, 503, 529:
		if d, ok := retry.RetryAfter(resp.Header, t.l.cfg.Now()); ok {
			t.l.Pause(d)
		}
	}
	return resp, nil
}

// body ends its attempt's time in flight when it is closed, once.
type body struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// Model wraps a provider's model so that the tokens of each call count
// against its Limiter's tokens per minute. It says the same Name and
// PriceKnown as the model it wraps.
type Model struct {
	model.Model
	Limiter *Limiter
}

func (m Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	c := &call{}
	defer c.end()
	resp, err := m.Model.Generate(context.WithValue(ctx, callKey{}, c), req)
	u := resp.Usage
	m.Limiter.Spend(u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens)
	return resp, err
}

// call is one Model call: the ends of its attempts in flight are held
// back until its tokens are counted.
type call struct {
	mu      sync.Mutex
	ended   bool
	pending []func()
}

type callKey struct{}

// hold runs f once the call's tokens are counted (now, if they are).
func (c *call) hold(f func()) {
	c.mu.Lock()
	if !c.ended {
		c.pending = append(c.pending, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

// release runs what is held.
func (c *call) release() {
	c.mu.Lock()
	fs := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// end releases what is held, and anything held from now on at once.
func (c *call) end() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.release()
}

// Name is the wrapped model's name, if it has one.
func (m Model) Name() string {
	if n, ok := m.Model.(model.Named); ok {
		return n.Name()
	}
	return ""
}

// PriceKnown is the wrapped model's; a model that does not say is priced.
func (m Model) PriceKnown() bool {
	if p, ok := m.Model.(model.Priced); ok {
		return p.PriceKnown()
	}
	return true
}

// ParseFlag reads one provider's limits as the --provider-limit flag
// gives them: PROVIDER:FIELD=N[,FIELD=N...], the fields those of the
// task file's provider_limits: (requests_per_minute, tokens_per_minute,
// max_in_flight), e.g. anthropic:requests_per_minute=50,max_in_flight=8.
// The provider is everything before the last colon ahead of the first
// "=", so an openai-compatible:BASE_URL with a port reads as one.
func ParseFlag(s string) (string, Limits, error) {
	eq := strings.IndexByte(s, '=')
	colon := -1
	if eq > 0 {
		colon = strings.LastIndexByte(s[:eq], ':')
	}
	if colon < 0 {
		return "", Limits{}, fmt.Errorf("provider limit %q: want PROVIDER:FIELD=N,..., e.g. anthropic:requests_per_minute=50,max_in_flight=8", s)
	}
	name, fields := s[:colon], s[colon+1:]
	if err := CheckProvider(name); err != nil {
		return "", Limits{}, fmt.Errorf("provider limit %q: %v", s, err)
	}
	var l Limits
	var problems []string
	seen := map[string]bool{}
	for field := range strings.SplitSeq(fields, ",") {
		key, val, _ := strings.Cut(field, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		switch {
		case seen[key]:
			problems = append(problems, key+" is given twice")
			continue
		case err != nil || n < 1:
			problems = append(problems, fmt.Sprintf("%s must be a whole number of at least 1, got %q", key, val))
			continue
		}
		seen[key] = true
		switch key {
		case "requests_per_minute":
			l.RequestsPerMinute = int(min(n, math.MaxInt32))
		case "tokens_per_minute":
			l.TokensPerMinute = n
		case "max_in_flight":
			l.MaxInFlight = int(min(n, math.MaxInt32))
		default:
			problems = append(problems, fmt.Sprintf("unknown field %q (known: requests_per_minute, tokens_per_minute, max_in_flight)", key))
		}
	}
	if len(problems) > 0 {
		return "", Limits{}, fmt.Errorf("provider limit %q: %s", s, strings.Join(problems, "; "))
	}
	return name, l, nil
}
