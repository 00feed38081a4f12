package retry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h     map[string]string
		want  time.Duration
		asked bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": "0"}, 1, true}, // asked to retry now: the smallest wait, not "not asked"
		{map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true}, // ms is more precise
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 1, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-4"}, 0, false},
		{map[string]string{"Retry-After-Ms": "1e400"}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		got, asked := RetryAfter(h, now)
		if got != tt.want || asked != tt.asked {
			t.Errorf("RetryAfter(%v) = %v, %v; want %v, %v", tt.h, got, asked, tt.want, tt.asked)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0.25", "Wed, 21 Oct 2015 07:28:00 GMT", "", "NaN", "Inf", "-1", "1e9"} {
		f.Add(s, s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, after, ms string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", ms)
		d, asked := RetryAfter(h, now)
		if d < 0 || asked != (d > 0) {
			t.Errorf("RetryAfter(%q, %q) = %v, %v", after, ms, d, asked)
		}
	})
}

func TestBackoff(t *testing.T) {
	tr := New(Config{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Rand: func() float64 { return 0 }})
	var got []time.Duration
	for a := 1; a <= 6; a++ {
		got = append(got, tr.backoff(a))
	}
	// Half of 100ms, 200ms, 400ms, 800ms, then the 1s cap.
	want := []time.Duration{50, 100, 200, 400, 500, 500}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoff = %v, want %v ms", got, want)
		}
	}
	tr.cfg.Rand = func() float64 { return 0.999999 }
	if d := tr.backoff(1); d < 99*time.Millisecond || d >= 100*time.Millisecond {
		t.Errorf("full jitter gave %v, want just under 100ms", d)
	}
}

// AttemptTimeout bounds the wait for the headers only: a stream whose body
// is slow is not cut off, and a hung attempt is retried.
func TestAttemptTimeout(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // the server notices a closed connection only after the body
		if calls.Add(1) == 1 {
			<-r.Context().Done() // hang
			return
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(time.Second) // a slow body, past the attempt timeout
		io.WriteString(w, "done")
	}))
	defer srv.Close()
	var retries []model.Retry
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnRetry: func(r model.Retry) { retries = append(retries, r) }})
	c := &http.Client{Transport: New(Config{AttemptTimeout: 500 * time.Millisecond, BaseDelay: time.Millisecond})}
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader("body"))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "done" {
		t.Fatalf("body %q, err %v", body, err)
	}
	if len(retries) != 1 || retries[0].Reason != "attempt timed out" {
		t.Errorf("retries = %+v", retries)
	}
}

// A body without GetBody is buffered so that a retry sends it again.
func TestBodyResent(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if len(bodies) == 1 {
			w.WriteHeader(502)
		}
	}))
	defer srv.Close()
	tr := New(Config{BaseDelay: time.Millisecond})
	req, _ := http.NewRequest("POST", srv.URL, io.NopCloser(strings.NewReader("payload")))
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("resp %v err %v", resp, err)
	}
	resp.Body.Close()
	if len(bodies) != 2 || bodies[0] != "payload" || bodies[1] != "payload" {
		t.Errorf("bodies = %q", bodies)
	}
}

func TestRetryAfterTooLong(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(429)
	}))
	defer srv.Close()
	tr := New(Config{Sleep: func(context.Context, time.Duration) error { t.Error("slept"); return nil }})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("resp %v err %v, want the 429 back at once", resp, err)
	}
	resp.Body.Close()
}

func TestKindOf(t *testing.T) {
	for status, want := range map[int]model.ErrorKind{
		400: model.ErrBadRequest, 401: model.ErrAuth, 403: model.ErrAuth, 404: model.ErrNotFound, 413: model.ErrBadRequest,
		429: model.ErrRateLimited, 500: model.ErrServer, 502: model.ErrServer, 503: model.ErrOverloaded, 529: model.ErrOverloaded,
	} {
		if got := model.KindOf(status); got != want {
			t.Errorf("KindOf(%d) = %s, want %s", status, got, want)
		}
		if Retryable(status) != (&model.APIError{Kind: want}).Temporary() {
			t.Errorf("%d: Retryable and Temporary disagree", status)
		}
	}
}

// TestOutcomeSaysWhy: the Outcome of Do says truthfully why the last
// failure was not retried.
func TestOutcomeSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", r.URL.Query().Get("after"))
		w.WriteHeader(503)
	}))
	defer srv.Close()
	now := time.Now()
	noSleep := func(context.Context, time.Duration) error { return nil }
	for _, tc := range []struct {
		cfg      Config
		after    string
		attempts int
		want     string
	}{
		{Config{MaxRetryAfter: 300 * time.Second}, "120", 1, "not retried: retry-after 120s exceeds the 10s left"},
		{Config{}, "120", 1, "not retried: retry-after 120s exceeds the longest wait honoured (60s)"},
		{Config{MaxAttempts: 3}, "1", 3, "gave up after 3 attempts"},
		{Config{MaxAttempts: 5}, "4", 3, "not retried after 3 attempts: retry-after 4s exceeds the 2s left"},
		{Config{MaxAttempts: 1}, "1", 1, "not retried: retries are off (one attempt allowed)"},
	} {
		cfg := tc.cfg
		cfg.Sleep, cfg.Now = noSleep, func() time.Time { return now }
		if tc.after == "4" {
			// Each wait of 4s is taken (sleeping is faked) and moves the clock.
			clock := now
			cfg.Now = func() time.Time { return clock }
			cfg.Sleep = func(_ context.Context, d time.Duration) error { clock = clock.Add(d); return nil }
		}
		tr := New(cfg)
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(10*time.Second))
		out, err := tr.Do(ctx, func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"?after="+tc.after, nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		})
		cancel()
		if err != nil || out.Stopped != tc.want || out.Attempts != tc.attempts {
			t.Errorf("retry-after %s, %+v: outcome %+v, err %v; want %d attempts and %q", tc.after, tc.cfg, out, err, tc.attempts, tc.want)
		}
	}
}

// A 429 that says the quota is spent (OpenAI's insufficient_quota, body as
// its API reference documents it; Gemini's RESOURCE_EXHAUSTED naming a
// per-day quota in its QuotaFailure, as its rate-limit documentation shows
// it) is returned at once: waiting does not refill a balance. A plain 429,
// and Gemini's per-minute one, are retried.
func TestQuotaSpentIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		body     string
		attempts int
	}{
		{`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, 1},
		{`{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, 3},
		{`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"50"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"}]}}`, 1},
		{`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"10"}]}]}}`, 3},
		{`{"error":{"code":429,"message":"Your prepayment credits are depleted. Please go to AI Studio to manage your project and billing.","status":"RESOURCE_EXHAUSTED"}}`, 1},
	} {
		n := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n++
			w.WriteHeader(429)
			io.WriteString(w, tc.body)
		}))
		tr := New(Config{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }})
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if n != tc.attempts || string(body) != tc.body {
			t.Errorf("%s: %d attempts, body %q; want %d attempts and the body intact", tc.body, n, body, tc.attempts)
		}
	}
}
