package verifytest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/verifytest"
)

// broken breaks every rule of the contract.
type broken struct{ calls atomic.Int64 }

func (b *broken) Name() string {
	if b.calls.Add(1) > 1 {
		return "renamed"
	}
	return " spaced "
}

func (b *broken) Provenance() verify.Provenance { return "vibes" }

func (b *broken) Check(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
	switch {
	case !utf8.ValidString(c.Answer):
		panic("not UTF-8")
	case ctx.Err() != nil:
		return verify.Verdict{}, errors.New("gave up") // does not wrap ctx.Err()
	case c.Answer == "":
		return verify.Verdict{Check: "other", Provenance: verify.Self, OK: false, Confidence: 1.5, Cost: -1}, nil
	}
	return verify.Verdict{Check: "renamed", Provenance: "vibes", OK: true, Confidence: 1}, nil
}

// slow ignores its context.
type slow struct{}

func (slow) Name() string                  { return "slow" }
func (slow) Provenance() verify.Provenance { return verify.Execution }
func (slow) Check(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
	if ctx.Err() != nil {
		time.Sleep(300 * time.Millisecond)
	}
	return verify.Verdict{Check: "slow", Provenance: verify.Execution, OK: true, Confidence: 1}, nil
}

func TestCheckFindsEveryViolation(t *testing.T) {
	err := verifytest.Check(&broken{}, verifytest.Config{HugeBytes: 100})
	if err == nil {
		t.Fatal("Check passed a verifier that breaks every rule")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`Name " spaced " is not one line without surrounding space`,
		`Name changed between calls: " spaced ", then "renamed"`,
		`Provenance "vibes" is none of [execution validation grounding grader self]`,
		`verdict on the empty candidate names check "other", not "renamed"`,
		`verdict on the empty candidate has provenance "self", not "vibes"`,
		`verdict on the empty candidate has confidence 1.5, outside [0, 1]`,
		`verdict on the empty candidate has a negative cost -$0.000001`,
		`verdict on the empty candidate fails without a detail: the generator is not told why`,
		`Check panicked on an invalid UTF-8 candidate: not UTF-8`,
		`Check on a cancelled context returned an error that does not wrap context.Canceled: gave up`,
		`Check panicked on an invalid UTF-8 candidate (concurrently): not UTF-8`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

func TestCheckFindsIgnoredCancellation(t *testing.T) {
	err := verifytest.Check(slow{}, verifytest.Config{Timeout: 50 * time.Millisecond})
	if err == nil || err.Error() != "Check on a cancelled context did not return within 50ms" {
		t.Errorf("Check = %v, want the ignored cancellation", err)
	}
}

func TestCheckFindsUnwrappedCancellation(t *testing.T) {
	v := verify.Func{CheckName: "f", Prov: verify.Validation, Fn: func(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
		if ctx.Err() != nil {
			return verify.Verdict{}, errors.New("stopped")
		}
		return verify.Verdict{OK: true, Confidence: 1}, nil
	}}
	err := verifytest.Check(v, verifytest.Config{})
	if err == nil || !strings.Contains(err.Error(), "does not wrap context.Canceled: stopped") {
		t.Errorf("Check = %v, want the unwrapped cancellation", err)
	}
}

// TestFunc: verify.Func keeps the contract whatever its function's verdict
// says about name and provenance.
func TestFunc(t *testing.T) {
	verifytest.Run(t, verify.Func{CheckName: "answer-set", Prov: verify.Validation, Fn: func(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
		if err := ctx.Err(); err != nil {
			return verify.Verdict{}, err
		}
		if c.Answer == "" {
			return verify.Verdict{Check: "liar", OK: false, Confidence: 1, Detail: "the answer is empty"}, nil
		}
		return verify.Verdict{OK: true, Confidence: 1}, nil
	}}, verifytest.Config{})
}
