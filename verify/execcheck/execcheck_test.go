package execcheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
	"github.com/ratchetloop/ratchet/verify/verifytest"
)

// runner returns the real sandbox; CI must have one.
func runner(t *testing.T) sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(sandbox.Config{})
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("no sandbox: %v (./test.sh installs bubblewrap)", err))
	}
	return r
}

func requirePytest(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Missing(t, "/usr/bin/python3 with pytest (./test.sh installs python3-pytest)")
	}
}

func pytestCheck(t *testing.T) verify.Verifier {
	t.Helper()
	tests, err := filepath.Abs("../../examples/is-prime/test_is_prime.py") // the example's own tests
	if err != nil {
		t.Fatal(err)
	}
	v, err := execcheck.New(execcheck.Config{
		Name: "tests", Runner: runner(t), Format: "pytest", Artifact: "is_prime.py",
		Command: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_is_prime.py"},
		Tests:   []sandbox.Mount{{Source: tests, Target: "test_is_prime.py"}},
		Limits:  sandbox.Limits{Wall: 20 * time.Second, CPU: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPytest runs seed 000's task for real: the first candidate forgets
// negatives, the second is right, a third cheats with a conftest.py.
func TestPytest(t *testing.T) {
	requirePytest(t)
	v := pytestCheck(t)
	for _, tc := range []struct {
		name, answer string
		ok           bool
		where        string
		detail       []string
	}{
		{"forgets negatives", "def is_prime(n):\n    if n in (0, 1):\n        return False\n    return all(n % i for i in range(2, abs(n)))\n",
			false, "test_negatives", []string{"test_negatives", "assert not"}},
		{"correct", "def is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n            return False\n        i += 1\n    return True\n",
			true, "", []string{"4 tests passed"}},
		{"syntax error", "def is_prime(n) return n > 1\n", false, "", []string{"SyntaxError"}},
		{"exits before the tests", "import os\nos._exit(0)\n", false, "no tests", []string{"no test ran"}},
		{"plants a conftest.py", "open('conftest.py', 'w').write('import pytest\\n')\ndef is_prime(n):\n    return n in (2, 3, 13, 7919)\n",
			false, "tampered", []string{"shadowed the tests", "conftest.py"}},
		{"infinite loop", "while True:\n    pass\n", false, "cpu limit", []string{"CPU time limit", "infinite loop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Check(context.Background(), verify.Candidate{Answer: tc.answer})
			if err != nil {
				t.Fatal(err)
			}
			if got.OK != tc.ok || (tc.where != "" && got.Where != tc.where) {
				t.Fatalf("ok=%v where=%q, want ok=%v where=%q; detail:\n%s", got.OK, got.Where, tc.ok, tc.where, got.Detail)
			}
			for _, want := range tc.detail {
				if !strings.Contains(got.Detail, want) {
					t.Errorf("detail does not mention %q:\n%s", want, got.Detail)
				}
			}
			if got.Provenance != verify.Execution {
				t.Errorf("provenance %s", got.Provenance)
			}
		})
	}
}

func TestConfigProblems(t *testing.T) {
	_, err := execcheck.New(execcheck.Config{Format: "go", Command: []string{"go", "test", "./..."}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"no sandbox runner", "add -json", "neither an artifact"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

// TestConformance runs verifytest over an exec check: seed 000's pytest
// check, on hostile candidates as well as a right and a wrong one.
func TestConformance(t *testing.T) {
	requirePytest(t)
	right := "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, int(n ** 0.5) + 1))\n"
	verifytest.Run(t, pytestCheck(t), verifytest.Config{Candidates: []verify.Candidate{
		{Answer: right, Confidence: 0.9, Attempt: 1},
		{Answer: "def is_prime(n):\n    return True\n", Confidence: 0.9, Attempt: 2},
	}})
}

// TestGoWarmUpFailure: a limit that keeps the go command from warming the
// build cache is an error of the check naming the step and the limit, not
// a verdict against the candidate.
func TestGoWarmUpFailure(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command")
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ratchet-go-cache-warm-test-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(dir) })
	v, err := execcheck.New(execcheck.Config{
		Runner: runner(t), Format: "go", Artifact: "calc.go", GoCache: dir,
		Command: []string{goBin, "test", "-json", "."},
		// The Go runtime cannot even reserve its heap in 64 MiB of
		// address space.
		Limits: sandbox.Limits{Memory: 64 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Check(context.Background(), verify.Candidate{Answer: "package calc\n"})
	if err == nil || !strings.Contains(err.Error(), "warming the Go build cache") || !strings.Contains(err.Error(), "`go build std`") || !strings.Contains(err.Error(), "address-space limit is 64 MiB") {
		t.Errorf("err = %v, verdict %+v; want the warm-up's failure, naming the step and the limit", err, got)
	}
}
