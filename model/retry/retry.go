// Package retry is the transport retry policy of ratchet's model providers:
// an http.RoundTripper placed under a provider SDK whose own retries are off,
// so that every provider retries the same way and every retry is reported.
//
// It retries 408, 429, 500, 502, 503, 504 and 529 replies, connection resets
// and attempts that timed out, with exponential backoff and jitter. A
// retry-after-ms or retry-after header (seconds or an HTTP date) replaces the
// computed wait. It never waits past the request context's deadline (the
// runner derives it from the run's remaining time budget): when the wait
// would cross it, the transport gives up and returns the last reply or error.
// Anything else (400, 401, 403, 404, a refused connection) is returned at
// once, and so is a 429 whose body says the account's quota is spent
// (insufficient_quota). Before each wait it calls
// model.HooksFrom(ctx).OnRetry.
package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/redact"
)

// Config configures a Transport. The zero value means defaults.
type Config struct {
	// Base carries out each attempt; nil means http.DefaultTransport.
	Base http.RoundTripper
	// MaxAttempts is the number of attempts including the first (default 5).
	// 1 disables retries.
	MaxAttempts int
	// BaseDelay is the wait before the first retry, doubled for each later
	// one (default 500ms); MaxDelay caps it (default 30s). Jitter takes the
	// wait uniformly from [d/2, d).
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest server-requested wait honoured (default
	// 60s); a server asking for more gets its reply returned instead.
	MaxRetryAfter time.Duration
	// AttemptTimeout bounds how long one attempt waits for the reply's
	// headers; 0 means no bound beyond the context. It does not bound
	// reading the body, which for a non-streaming call arrives with the
	// headers and for a streaming call may take as long as generation.
	AttemptTimeout time.Duration
	// Rand returns a number in [0, 1) for jitter; nil means math/rand/v2.
	Rand func() float64
	// Sleep waits d or until ctx is done; nil means a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock compared with the context's deadline; nil means time.Now.
	Now func() time.Time
}

// Transport is a retrying http.RoundTripper. It is safe for concurrent use.
type Transport struct{ cfg Config }

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport configured by cfg.
func New(cfg Config) *Transport {
	if cfg.Base == nil {
		cfg.Base = http.DefaultTransport
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = 500 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 30 * time.Second
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = 60 * time.Second
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Transport{cfg: cfg}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Retryable reports whether a reply with this status is retried.
func Retryable(status int) bool {
	switch status {
	case 408, 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// RoundTrip sends req, retrying as the package documentation describes.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		// The body must be sent again on a retry.
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(ctx)
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	hooks := model.HooksFrom(ctx)
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		c = &call{}
	}
	for first := true; ; first = false {
		c.attempts++
		attempt := c.attempts
		areq := req
		if !first && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			areq = req.Clone(ctx)
			areq.Body = body
		}
		resp, err := t.attempt(areq)
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			if err == nil {
				err = context.Cause(ctx)
			}
			return nil, err
		}
		var status int
		var reason string
		var wait time.Duration
		var asked bool
		switch {
		case err != nil:
			var ok bool
			if reason, ok = transient(err); !ok {
				return nil, err
			}
		case !Retryable(resp.StatusCode):
			return resp, nil
		case resp.StatusCode == 429 && quotaSpent(resp):
			return resp, nil // a spent balance does not come back by waiting
		default:
			status = resp.StatusCode
			reason = fmt.Sprintf("%d %s", status, model.KindOf(status))
			if wait, asked = RetryAfter(resp.Header, t.cfg.Now()); asked && wait > t.cfg.MaxRetryAfter {
				c.stopped = notRetried(attempt, fmt.Sprintf("retry-after %s exceeds the longest wait honoured (%s)", seconds(wait), seconds(t.cfg.MaxRetryAfter)))
				return resp, nil
			}
		}
		if wait == 0 {
			wait = t.backoff(attempt)
		}
		if c.stopped = t.stop(ctx, attempt, wait, asked); c.stopped != "" {
			return resp, err // the last reply or error, as the SDK would have seen it
		}
		if resp != nil {
			// Drain a little so that the connection can be reused.
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if hooks.OnRetry != nil {
			hooks.OnRetry(model.Retry{Attempt: attempt + 1, Status: status, Wait: wait, Reason: reason})
		}
		if err := t.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// quotaSpent reports whether a 429 reply's body says the account's quota
// or credit is spent rather than a rate passed (see QuotaSpent). It reads
// the body, which is small, and puts it back for the SDK.
func quotaSpent(resp *http.Response) bool {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return err == nil && QuotaSpent(data)
}

// QuotaSpent reports whether an error body ({"error":{...}}) says the
// account's quota or credit is spent, which waiting minutes cannot cure:
// OpenAI's insufficient_quota; Gemini's RESOURCE_EXHAUSTED with a per-day
// quota in its QuotaFailure detail, or its prepaid credit depleted.
func QuotaSpent(body []byte) bool {
	var e struct {
		Error struct {
			Code    any    `json:"code"` // a string at OpenAI, a number at Gemini and some servers
			Type    string `json:"type"`
			Message string `json:"message"`
			Details []struct {
				Violations []struct {
					QuotaID string `json:"quotaId"`
				} `json:"violations"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	code, _ := e.Error.Code.(string)
	if code == "insufficient_quota" || e.Error.Type == "insufficient_quota" {
		return true
	}
	for _, d := range e.Error.Details {
		for _, v := range d.Violations {
			if strings.Contains(v.QuotaID, "PerDay") {
				return true
			}
		}
	}
	return strings.Contains(strings.ToLower(e.Error.Message), "prepayment credits are depleted")
}

// stop says in words why the failed attempt is the last one, or "" when it
// is retried after wait: the attempts are used up, or the wait (asked for
// by the server's retry-after when asked) would pass the deadline.
func (t *Transport) stop(ctx context.Context, attempt int, wait time.Duration, asked bool) string {
	if attempt >= t.cfg.MaxAttempts {
		if attempt == 1 {
			return "not retried: retries are off (one attempt allowed)"
		}
		return fmt.Sprintf("gave up after %d attempts", attempt)
	}
	d, ok := ctx.Deadline()
	if left := d.Sub(t.cfg.Now()); ok && wait >= left {
		what := fmt.Sprintf("the next wait (%s)", seconds(wait))
		if asked {
			what = "retry-after " + seconds(wait)
		}
		return notRetried(attempt, fmt.Sprintf("%s exceeds the %s left", what, seconds(max(left, 0))))
	}
	return ""
}

// seconds writes d as seconds, to a tenth: "120s", "9.9s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
}

// call is one model call's retry state, shared by its HTTP attempts and
// the restarts of its broken replies (Do).
type call struct {
	attempts int
	// stopped says why the last failure was not retried; "" while retrying
	// is still possible.
	stopped string
}

type callKey struct{}

// notRetried words why a call stopped after attempts.
func notRetried(attempts int, why string) string {
	if attempts <= 1 {
		return "not retried: " + why
	}
	return fmt.Sprintf("not retried after %d attempts: %s", attempts, why)
}

// Outcome is how a call's retries ended.
type Outcome struct {
	// Attempts is how many attempts were made.
	Attempts int
	// Stopped says in words why the last failure was not retried ("gave
	// up after 5 attempts", "not retried: retry-after 120s exceeds the 10s
	// left"); "" when the call succeeded or failed in a way no retry helps.
	Stopped string
}

// Explain adds to e, the call's error, why it was not retried, redacting
// the call's own key (secrets) from everything e shows.
func (o Outcome) Explain(e *model.APIError, secrets *redact.Redactor) *model.APIError {
	if o.Stopped != "" {
		if e.Fix != "" {
			e.Fix = o.Stopped + "; " + e.Fix
		} else {
			e.Fix = o.Stopped
		}
	}
	// A server may echo the key in its error body or headers.
	e.Message = secrets.String(e.Message)
	e.Err = secrets.Error(e.Err)
	return e
}

// ErrIncomplete says a reply ended before it was complete (a stream cut
// off before its last event): Do retries it like a reset.
var ErrIncomplete = errors.New("the reply ended before it was complete")

// Broken marks err, a failure after the reply began that a retry may
// cure (an overloaded error in the middle of a stream), for Do to retry.
func Broken(reason string, err error) error { return &brokenError{reason: reason, err: err} }

type brokenError struct {
	reason string
	err    error
}

func (e *brokenError) Error() string { return e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// Billed marks err, the failure of an attempt whose reply had begun, with
// what the provider bills for it all the same (see CutUsage). Do reports
// it to model.Hooks.OnBilled, whether it then retries or gives up.
func Billed(err error, u model.Usage) error { return &billedError{err: err, usage: u} }

type billedError struct {
	err   error
	usage model.Usage
}

func (e *billedError) Error() string { return e.err.Error() }
func (e *billedError) Unwrap() error { return e.err }

// CutUsage is what a reply cut off after it began is billed: the usage it
// reported, with the request's estimated input (model.EstimateTokens)
// where it reported none, and at least the estimated tokens of the
// received bytes of output. The cost is left to the provider, which knows
// its price.
func CutUsage(reported model.Usage, req *model.Request, received int) model.Usage {
	u := reported
	if u.InputTokens <= 0 && u.CacheReadTokens <= 0 {
		u.InputTokens = model.EstimateTokens(*req)
	}
	u.OutputTokens = max(u.OutputTokens, model.TokensOf(int64(received)))
	return u
}

// Do carries out one model call, fn, under t's policy. fn's HTTP attempts
// go through t (it must use ctx), and a failure after a reply began (its
// body or stream cut off: a connection error, ErrIncomplete or a Broken
// error) is retried like a reset: counted against the same MaxAttempts,
// waiting the same backoff, never past ctx's deadline, and reported to
// model.Hooks.OnRetry. The loop only ever sees complete replies, so a
// restart is safe. An attempt's Billed usage goes to model.Hooks.OnBilled.
// It returns fn's last error, unchanged, and the Outcome.
func (t *Transport) Do(ctx context.Context, fn func(ctx context.Context) error) (Outcome, error) {
	c := &call{}
	ctx = context.WithValue(ctx, callKey{}, c)
	for {
		err := fn(ctx)
		var b *billedError
		if errors.As(err, &b) {
			if h := model.HooksFrom(ctx); h.OnBilled != nil {
				h.OnBilled(b.usage)
			}
		}
		if err == nil || c.stopped != "" || ctx.Err() != nil {
			return Outcome{Attempts: c.attempts, Stopped: c.stopped}, err
		}
		reason, ok := broken(err)
		if !ok {
			return Outcome{Attempts: c.attempts}, err
		}
		wait := t.backoff(c.attempts)
		if c.stopped = t.stop(ctx, c.attempts, wait, false); c.stopped != "" {
			return Outcome{Attempts: c.attempts, Stopped: c.stopped}, err
		}
		if h := model.HooksFrom(ctx); h.OnRetry != nil {
			h.OnRetry(model.Retry{Attempt: c.attempts + 1, Wait: wait, Reason: reason})
		}
		if err := t.cfg.Sleep(ctx, wait); err != nil {
			return Outcome{Attempts: c.attempts}, err
		}
	}
}

// broken says whether err, from a call whose transport did not give up on
// it, is a reply cut off after it began, and names it.
func broken(err error) (string, bool) {
	var b *brokenError
	switch {
	case errors.As(err, &b):
		return "reply broke off: " + b.reason, true
	case errors.Is(err, ErrIncomplete):
		return "reply broke off: it ended before it was complete", true
	}
	if reason, ok := transient(err); ok {
		return "reply broke off: " + reason, true
	}
	return "", false
}

// backoff is the jittered wait before attempt+1.
func (t *Transport) backoff(attempt int) time.Duration {
	d := t.cfg.BaseDelay
	for i := 1; i < attempt && d < t.cfg.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, t.cfg.MaxDelay)
	return d/2 + time.Duration(t.cfg.Rand()*float64(d/2))
}

// errAttemptTimeout is the cause of an attempt cut off by AttemptTimeout.
var errAttemptTimeout = errors.New("attempt timed out waiting for a reply")

func (t *Transport) attempt(req *http.Request) (*http.Response, error) {
	if t.cfg.AttemptTimeout <= 0 {
		return t.cfg.Base.RoundTrip(req)
	}
	// A timer rather than a context deadline: once the headers are in, the
	// body (a stream, perhaps) must not be cut off by the attempt's bound.
	ctx, cancel := context.WithCancelCause(req.Context())
	var fired atomic.Bool
	timer := time.AfterFunc(t.cfg.AttemptTimeout, func() {
		fired.Store(true)
		cancel(errAttemptTimeout)
	})
	resp, err := t.cfg.Base.RoundTrip(req.WithContext(ctx))
	timer.Stop()
	if err != nil {
		cancel(nil)
		if fired.Load() {
			return nil, errAttemptTimeout
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// transient says whether a transport error is worth retrying, and names it.
func transient(err error) (string, bool) {
	switch {
	case errors.Is(err, errAttemptTimeout):
		return "attempt timed out", true
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset", true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed before the reply", true
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe", true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "network timeout", true
	}
	return "", false
}

// RetryAfter reads the server's requested wait: retry-after-ms (Anthropic
// and OpenAI send it), else retry-after in seconds or as an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return max(time.Duration(ms*float64(time.Millisecond)), 1), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
			return max(time.Duration(s*float64(time.Second)), 1), true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 1), true
		}
	}
	return 0, false
}

// TransportError describes err, a call that got no HTTP reply, as a
// *model.APIError of kind timeout or transport. It returns nil for nil.
func TransportError(provider string, err error) *model.APIError {
	if err == nil {
		return nil
	}
	e := &model.APIError{Provider: provider, Kind: model.ErrTransport, Message: err.Error(), Err: err}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errAttemptTimeout), errors.As(err, &ne) && ne.Timeout():
		e.Kind = model.ErrTimeout
		e.Fix = "the call ran out of time: raise the time budget, or check the server is responsive"
	case errors.Is(err, context.Canceled):
		e.Kind = model.ErrTimeout
		e.Message = "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Fix = "nothing is listening at the base URL: is the server running?"
	}
	return e
}
