package limit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model/limit"
)

func TestParseFlag(t *testing.T) {
	tests := []struct {
		in, provider string
		want         limit.Limits
		err          string
	}{
		{"anthropic:requests_per_minute=50,max_in_flight=8", "anthropic", limit.Limits{RequestsPerMinute: 50, MaxInFlight: 8}, ""},
		{"openai:tokens_per_minute=30000", "openai", limit.Limits{TokensPerMinute: 30000}, ""},
		{"openai-compatible:http://localhost:8000/v1:max_in_flight=2", "openai-compatible:http://localhost:8000/v1", limit.Limits{MaxInFlight: 2}, ""},
		{"anthropic", "", limit.Limits{}, "want PROVIDER:FIELD=N"},
		{"anthropic:rpm=5,max_in_flight=0,max_in_flight=2", "", limit.Limits{}, `unknown field "rpm" (known: requests_per_minute, tokens_per_minute, max_in_flight); max_in_flight must be a whole number of at least 1, got "0"`},
		{"anthropic:max_in_flight=2,max_in_flight=3", "", limit.Limits{}, "max_in_flight is given twice"},
		{"gemini:max_in_flight=2", "gemini", limit.Limits{MaxInFlight: 2}, ""},
		{"bedrock:max_in_flight=2", "", limit.Limits{}, `unknown provider "bedrock"`},
	}
	for _, tt := range tests {
		p, l, err := limit.ParseFlag(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseFlag(%q) error %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || p != tt.provider || l != tt.want):
			t.Errorf("ParseFlag(%q) = %q, %+v, %v; want %q, %+v", tt.in, p, l, err, tt.provider, tt.want)
		}
	}
}

// A flag a person types is read whatever it holds: never a panic, and a
// provider it accepts is one limits can be kept for.
func FuzzParseFlag(f *testing.F) {
	for _, s := range []string{"anthropic:requests_per_minute=50,max_in_flight=8", "openai-compatible:http://h:1/v1:max_in_flight=2", ":=", "a:b=c=d", "openai:tokens_per_minute=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, l, err := limit.ParseFlag(s)
		if err != nil {
			return
		}
		if limit.CheckProvider(p) != nil {
			t.Errorf("ParseFlag(%q) accepted provider %q", s, p)
		}
		if l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 || l.MaxInFlight < 0 {
			t.Errorf("ParseFlag(%q) = %+v", s, l)
		}
	})
}

func TestTighten(t *testing.T) {
	a := limit.Limits{RequestsPerMinute: 50, MaxInFlight: 8}
	got := a.Tighten(limit.Limits{RequestsPerMinute: 100, TokensPerMinute: 1000, MaxInFlight: 4})
	if want := (limit.Limits{RequestsPerMinute: 50, TokensPerMinute: 1000, MaxInFlight: 4}); got != want {
		t.Errorf("Tighten = %+v, want %+v: each limit set, the stricter", got, want)
	}
	if got.String() != "requests_per_minute=50,tokens_per_minute=1000,max_in_flight=4" {
		t.Errorf("String %q", got.String())
	}
}

// A server asking for a longer pause than MaxPause pauses for MaxPause;
// a shorter pause does not cut a longer one short.
func TestPauseIsCapped(t *testing.T) {
	now := time.Unix(1000, 0)
	ledger := limit.Memory(func() time.Time { return now })
	reg := limit.NewRegistry(limit.Config{MaxPause: time.Second, Ledger: ledger})
	l := reg.Limiter("anthropic")
	l.Pause(time.Hour)
	l.Pause(time.Millisecond)
	slot, wait, why, err := ledger.Take(context.Background(), "anthropic", limit.Limits{}, time.Minute)
	if slot != nil || err != nil || wait != time.Second || why != limit.Paused {
		t.Errorf("Take = %v, %s, %q, %v; want a wait of %s, paused", slot, wait, why, err, time.Second)
	}
}

// Shares nest and end in any order: the latest not ended holds, and once
// all end, the registry's own ledger does again.
func TestShareNests(t *testing.T) {
	own, a, b, c := &pauses{}, &pauses{}, &pauses{}, &pauses{}
	reg := limit.NewRegistry(limit.Config{Ledger: own})
	l := reg.Limiter("anthropic")
	check := func(when string, want *pauses) {
		t.Helper()
		l.Pause(time.Second)
		for name, p := range map[string]*pauses{"own": own, "a": a, "b": b, "c": c} {
			if n := p.n; (p == want) != (n == 1) {
				t.Errorf("%s: ledger %s was paused %d times", when, name, n)
			}
			p.n = 0
		}
	}
	endA := reg.Share(a)
	endB := reg.Share(b)
	check("a, then b shared", b)
	endA()
	check("a ended", b)
	endC := reg.Share(c)
	check("c shared", c)
	endC()
	check("c ended", b)
	endB()
	check("every share ended", own)
}

// pauses is a ledger that counts its pauses.
type pauses struct {
	limit.Ledger
	n int
}

func (p *pauses) Pause(context.Context, string, time.Duration) error {
	p.n++
	return nil
}
