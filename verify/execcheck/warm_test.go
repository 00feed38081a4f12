package execcheck_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// countingStarter counts the runs started ahead.
type countingStarter struct {
	sandbox.Starter
	starts atomic.Int32
}

func (c *countingStarter) Start(ctx context.Context, s sandbox.Spec) (*sandbox.Started, error) {
	c.starts.Add(1)
	return c.Starter.Start(ctx, s)
}

// TestWarmRuns: with a Runner that starts runs ahead, a pytest check's
// candidates run in warm runs, each its own (in judge isolation the
// candidate's server too), and each is judged on its own answer: wrong
// and right candidates alternating back to back get their own verdicts.
func TestWarmRuns(t *testing.T) {
	requirePytest(t)
	tests, err := filepath.Abs("../../examples/is-prime/test_is_prime.py")
	if err != nil {
		t.Fatal(err)
	}
	right := "def is_prime(n):\n    if n < 2:\n        return False\n    return all(n % i for i in range(2, int(n ** 0.5) + 1))\n"
	wrong := "def is_prime(n):\n    return n in (2, 3, 5, 7)\n"
	for _, isolation := range []string{execcheck.InProcess, execcheck.Judge} {
		t.Run(isolation, func(t *testing.T) {
			st, ok := runner(t).(sandbox.Starter)
			if !ok {
				t.Fatal("the sandbox's Runner is not a Starter")
			}
			counting := &countingStarter{Starter: st}
			v, err := execcheck.New(execcheck.Config{
				Name: "tests", Runner: counting, Format: "pytest", Artifact: "is_prime.py", Isolation: isolation,
				Command: []string{"python3", "-m", "pytest", "-q", "test_is_prime.py"},
				Tests:   []sandbox.Mount{{Source: tests, Target: "test_is_prime.py"}},
				Limits:  sandbox.Limits{Wall: 20 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			const n = 4
			for i := range n {
				answer, want := right, true
				if i%2 == 1 {
					answer, want = wrong, false
				}
				got, err := v.Check(context.Background(), verify.Candidate{Answer: answer})
				if err != nil {
					t.Fatal(err)
				}
				if got.OK != want || (!want && got.Where == execcheck.Tampered) {
					t.Fatalf("candidate %d: ok=%v where=%q, want ok=%v on its own answer; detail:\n%s", i, got.OK, got.Where, want, got.Detail)
				}
			}
			perCandidate := int32(1)
			if isolation == execcheck.Judge {
				perCandidate = 2 // the tests' sandbox and the candidate's
			}
			if got := counting.starts.Load(); got < n*perCandidate {
				t.Errorf("%d runs started ahead for %d candidates: want at least %d each, none shared", got, n, perCandidate)
			}
		})
	}
}

// TestWarmSlots: the runs that earlier checks keep waiting take the
// process's slots, and a new check still gets runs started ahead, by
// stopping the ones that waited longest.
func TestWarmSlots(t *testing.T) {
	requirePytest(t)
	tests, err := filepath.Abs("../../examples/is-prime/test_is_prime.py")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := runner(t).(sandbox.Starter)
	if !ok {
		t.Fatal("the sandbox's Runner is not a Starter")
	}
	right := "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
	var last *countingStarter
	for range 3 { // two checks' runs fill the 4 slots
		last = &countingStarter{Starter: st}
		v, err := execcheck.New(execcheck.Config{
			Name: "tests", Runner: last, Format: "pytest", Artifact: "is_prime.py", Isolation: execcheck.InProcess,
			Command: []string{"python3", "-m", "pytest", "-q", "test_is_prime.py"},
			Tests:   []sandbox.Mount{{Source: tests, Target: "test_is_prime.py"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := v.Check(context.Background(), verify.Candidate{Answer: right}); err != nil || !got.OK {
			t.Fatalf("verdict %+v, err %v", got, err)
		}
		// Its own run, then two started ahead once it was judged (the
		// starts are under way when Check returns).
		for deadline := time.Now().Add(10 * time.Second); last.starts.Load() < 3 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second) // until they wait, and can be stopped
	}
	if got := last.starts.Load(); got != 3 {
		t.Errorf("the third check started %d runs; want 3 (one for its candidate, two ahead in slots the others' runs held)", got)
	}
}

// TestStopWarm: StopWarm stops the runs waiting ahead, so that the next
// candidate's run is started with it.
func TestStopWarm(t *testing.T) {
	requirePytest(t)
	tests, err := filepath.Abs("../../examples/is-prime/test_is_prime.py")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := runner(t).(sandbox.Starter)
	if !ok {
		t.Fatal("the sandbox's Runner is not a Starter")
	}
	counting := &countingStarter{Starter: st}
	v, err := execcheck.New(execcheck.Config{
		Name: "tests", Runner: counting, Format: "pytest", Artifact: "is_prime.py", Isolation: execcheck.InProcess,
		Command: []string{"python3", "-m", "pytest", "-q", "test_is_prime.py"},
		Tests:   []sandbox.Mount{{Source: tests, Target: "test_is_prime.py"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	right := "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, n))\n"
	settle := func(want int32) {
		for deadline := time.Now().Add(10 * time.Second); counting.starts.Load() < want && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second) // until they wait
	}
	for range 2 {
		if got, err := v.Check(context.Background(), verify.Candidate{Answer: right}); err != nil || !got.OK {
			t.Fatalf("verdict %+v, err %v", got, err)
		}
		settle(3)
		execcheck.StopWarm()
	}
	// Each candidate's own run and two ahead, twice: none of the first
	// two served the second candidate.
	settle(6)
	if got := counting.starts.Load(); got != 6 {
		t.Errorf("%d runs started for two candidates with StopWarm between them; want 6", got)
	}
}
