// Package verifytest checks that a verify.Verifier keeps the interface's
// contract, in the manner of testing/slogtest: [Check] judges a set of
// candidates, hostile ones included, and returns every violation at once.
//
// The contract checked:
//   - Name is non-empty, one line without surrounding space, and the same
//     on every call; Provenance is one of verify's five and the same on
//     every call.
//   - Check never panics, whatever the candidate: empty, huge, invalid
//     UTF-8, with or without peers.
//   - A verdict names its check and provenance as Name and Provenance do;
//     its Confidence is in [0, 1]; its Cost is not negative; a failing
//     verdict says why (a Detail for the generator).
//   - Check honours its context: on a cancelled context it returns within
//     Config.Timeout, and an error it returns then wraps ctx.Err().
//   - Check is safe for concurrent use (run the suite under -race).
package verifytest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/verify"
)

// Config says what to judge beyond the candidates every run uses. The zero
// value means defaults.
type Config struct {
	// Candidates are judged besides the empty, huge and invalid UTF-8 ones;
	// give one the verifier passes and one it fails.
	Candidates []verify.Candidate
	// Timeout bounds a Check on a cancelled context (default 5s).
	Timeout time.Duration
	// HugeBytes is the size of the huge candidate (default 1 MiB).
	HugeBytes int
}

// Check runs the suite on v and returns every violation, joined; nil means
// v keeps the contract.
func Check(v verify.Verifier, cfg Config) error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.HugeBytes <= 0 {
		cfg.HugeBytes = 1 << 20
	}
	s := &suite{v: v, cfg: cfg}
	s.identity()
	for _, c := range s.candidates() {
		s.judge(c)
	}
	s.cancelled()
	s.concurrent()
	return errors.Join(s.errs...)
}

// Run is Check as a test: each violation is reported with t.Error.
func Run(t *testing.T, v verify.Verifier, cfg Config) {
	t.Helper()
	if err := Check(v, cfg); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			t.Error(line)
		}
	}
}

type suite struct {
	v    verify.Verifier
	cfg  Config
	mu   sync.Mutex
	errs []error
}

func (s *suite) errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Errorf(format, args...))
}

var provenances = []verify.Provenance{verify.Execution, verify.Validation, verify.Grounding, verify.Grader, verify.Self}

func (s *suite) identity() {
	name, prov := s.v.Name(), s.v.Provenance()
	switch {
	case name == "":
		s.errorf("Name is empty")
	case strings.TrimSpace(name) != name || strings.ContainsAny(name, "\n\r"):
		s.errorf("Name %q is not one line without surrounding space", name)
	}
	if again := s.v.Name(); again != name {
		s.errorf("Name changed between calls: %q, then %q", name, again)
	}
	valid := false
	for _, p := range provenances {
		valid = valid || p == prov
	}
	if !valid {
		s.errorf("Provenance %q is none of %v", prov, provenances)
	}
	if again := s.v.Provenance(); again != prov {
		s.errorf("Provenance changed between calls: %q, then %q", prov, again)
	}
}

// candidate is one input to judge and how to name it in violations.
type candidate struct {
	what string
	c    verify.Candidate
}

func (s *suite) candidates() []candidate {
	huge := strings.Repeat("all work and no play ", s.cfg.HugeBytes/21+1)
	out := []candidate{
		{"the empty candidate", verify.Candidate{Attempt: 1}},
		{"a huge candidate", verify.Candidate{Answer: huge, Confidence: 0.5, Attempt: 1}},
		{"an invalid UTF-8 candidate", verify.Candidate{Answer: "ok \xff\xfe\xfd \xc3", Confidence: 0.5, Attempt: 1}},
		{"a candidate with peers", verify.Candidate{Answer: "a", Confidence: 0.5, Attempt: 2, Peers: []string{"a", "b", "", "\xff"}}},
	}
	for i, c := range s.cfg.Candidates {
		out = append(out, candidate{fmt.Sprintf("Config.Candidates[%d]", i), c})
	}
	return out
}

// call runs Check, turning a panic into a violation.
func (s *suite) call(ctx context.Context, what string, c verify.Candidate) (v verify.Verdict, err error, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.errorf("Check panicked on %s: %v", what, r)
			ok = false
		}
	}()
	v, err = s.v.Check(ctx, c)
	return v, err, true
}

func (s *suite) judge(c candidate) {
	v, err, ok := s.call(context.Background(), c.what, c.c)
	if !ok || err != nil {
		// An error says the check could not run: the verdict is not used.
		return
	}
	s.verdict(c.what, v)
}

// verdict checks that v's fields agree with each other and the verifier.
func (s *suite) verdict(what string, v verify.Verdict) {
	if v.Check != s.v.Name() {
		s.errorf("verdict on %s names check %q, not %q", what, v.Check, s.v.Name())
	}
	if v.Provenance != s.v.Provenance() {
		s.errorf("verdict on %s has provenance %q, not %q", what, v.Provenance, s.v.Provenance())
	}
	if math.IsNaN(v.Confidence) || v.Confidence < 0 || v.Confidence > 1 {
		s.errorf("verdict on %s has confidence %v, outside [0, 1]", what, v.Confidence)
	}
	if v.Cost < 0 {
		s.errorf("verdict on %s has a negative cost %v", what, v.Cost)
	}
	if !v.OK && strings.TrimSpace(v.Detail) == "" {
		s.errorf("verdict on %s fails without a detail: the generator is not told why", what)
	}
}

func (s *suite) cancelled() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cands := s.candidates()
	c := cands[len(cands)-1] // the caller's last, else one with peers
	type outcome struct {
		v   verify.Verdict
		err error
		ok  bool
	}
	done := make(chan outcome, 1)
	go func() {
		v, err, ok := s.call(ctx, c.what+" on a cancelled context", c.c)
		done <- outcome{v, err, ok}
	}()
	select {
	case o := <-done:
		switch {
		case !o.ok:
		case o.err != nil && !errors.Is(o.err, context.Canceled):
			s.errorf("Check on a cancelled context returned an error that does not wrap context.Canceled: %v", o.err)
		case o.err == nil:
			s.verdict(c.what+" on a cancelled context", o.v)
		}
	case <-time.After(s.cfg.Timeout):
		s.errorf("Check on a cancelled context did not return within %v", s.cfg.Timeout)
	}
}

// concurrent judges every candidate at once, for the race detector and for
// panics that only concurrency provokes.
func (s *suite) concurrent() {
	var wg sync.WaitGroup
	for _, c := range s.candidates() {
		wg.Go(func() { s.call(context.Background(), c.what+" (concurrently)", c.c) })
	}
	wg.Wait()
}
