package execcheck_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
func runner(t testing.TB) sandbox.Runner {
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

func pytestCheck(t testing.TB, isolation string) verify.Verifier {
	t.Helper()
	return pytestCheckOn(t, runner(t), isolation)
}

// pytestCheckOn is pytestCheck on the Runner r.
func pytestCheckOn(t testing.TB, r sandbox.Runner, isolation string) verify.Verifier {
	t.Helper()
	tests, err := filepath.Abs("../../examples/is-prime/test_is_prime.py") // the example's own tests
	if err != nil {
		t.Fatal(err)
	}
	v, err := execcheck.New(execcheck.Config{
		Name: "tests", Runner: r, Format: "pytest", Artifact: "is_prime.py", Isolation: isolation,
		Command: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_is_prime.py"},
		Tests:   []sandbox.Mount{{Source: tests, Target: "test_is_prime.py"}},
		Limits:  sandbox.Limits{Wall: 20 * time.Second, CPU: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPytest runs seed 000's task for real in both isolations: the first
// candidate forgets negatives, the second is right, the others crash,
// cheat with a conftest.py or never end.
func TestPytest(t *testing.T) {
	requirePytest(t)
	type want struct {
		ok     bool
		where  string
		detail []string
	}
	right := "def is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n            return False\n        i += 1\n    return True\n"
	for _, tc := range []struct {
		name, answer      string
		inProcess, judged want
	}{
		{"forgets negatives", "def is_prime(n):\n    if n in (0, 1):\n        return False\n    return all(n % i for i in range(2, abs(n)))\n",
			want{false, "test_negatives", []string{"test_negatives", "assert not"}}, want{false, "test_negatives", []string{"test_negatives", "assert not"}}},
		{"correct", right, want{true, "", []string{"4 tests passed"}}, want{true, "", []string{"4 tests passed"}}},
		{"syntax error", "def is_prime(n) return n > 1\n", want{false, "", []string{"SyntaxError"}}, want{false, "", []string{"SyntaxError", "failed to import"}}},
		{"exits before the tests", "import os\nos._exit(0)\n",
			want{false, "no tests", []string{"no test ran"}}, want{false, "test_small_primes", []string{"did not load", "exited with status 0"}}},
		// In judge isolation the conftest.py lands in the candidate's own
		// sandbox, where it changes nothing: the weak tests pass honestly.
		{"plants a conftest.py", "open('conftest.py', 'w').write('import pytest\\n')\ndef is_prime(n):\n    return n in (2, 3, 13, 7919)\n",
			want{false, "tampered", []string{"shadowed the tests", "conftest.py"}}, want{true, "", []string{"4 tests passed"}}},
		{"infinite loop", "while True:\n    pass\n",
			want{false, "cpu limit", []string{"CPU time limit", "infinite loop"}}, want{false, "", []string{"did not load", "CPU time limit"}}},
		{"infinite loop in a call", "def is_prime(n):\n    while True:\n        pass\n",
			want{false, "cpu limit", []string{"CPU time limit"}}, want{false, "test_small_primes", []string{"JudgeError", "CPU time limit"}}},
	} {
		for _, isolation := range []string{execcheck.InProcess, execcheck.Judge} {
			w := tc.inProcess
			if isolation == execcheck.Judge {
				w = tc.judged
			}
			t.Run(isolation+"/"+tc.name, func(t *testing.T) {
				got, err := pytestCheck(t, isolation).Check(context.Background(), verify.Candidate{Answer: tc.answer})
				if err != nil {
					t.Fatal(err)
				}
				if got.OK != w.ok || (w.where != "" && got.Where != w.where) || got.Isolation != isolation {
					t.Fatalf("ok=%v where=%q isolation=%q, want ok=%v where=%q; detail:\n%s", got.OK, got.Where, got.Isolation, w.ok, w.where, got.Detail)
				}
				for _, want := range w.detail {
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
}

// TestIsolationChosen: judge isolation is the default wherever it serves,
// and asking for it where it cannot serve is a config error saying why.
func TestIsolationChosen(t *testing.T) {
	requirePytest(t)
	if got, err := pytestCheck(t, "").Check(context.Background(), verify.Candidate{Answer: "def is_prime(n):\n    return False\n"}); err != nil || got.Isolation != execcheck.Judge {
		t.Errorf("default isolation %q (%v), want judge", got.Isolation, err)
	}
	for _, tc := range []struct {
		cfg  execcheck.Config
		want string
	}{
		{execcheck.Config{Format: "exit", Artifact: "a.py"}, "not format exit"},
		{execcheck.Config{Format: "pytest", Workspace: t.TempDir()}, "agent's workspace runs in-process"},
		{execcheck.Config{Format: "pytest", Artifact: "pkg/a.py"}, "top of the workspace"},
		{execcheck.Config{Format: "pytest", Artifact: "a.txt", Isolation: "sideways"}, `isolation "sideways" is not judge or in-process`},
	} {
		tc.cfg.Runner, tc.cfg.Command = runner(t), []string{"python3", "-m", "pytest"}
		if tc.cfg.Isolation == "" {
			tc.cfg.Isolation = execcheck.Judge
		}
		if _, err := execcheck.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
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
	verifytest.Run(t, pytestCheck(t, ""), verifytest.Config{Candidates: []verify.Candidate{
		{Answer: right, Confidence: 0.9, Attempt: 1},
		{Answer: "def is_prime(n):\n    return True\n", Confidence: 0.9, Attempt: 2},
	}})
}

// TestIOCases judges a program by its output: the comparison and the
// checker run outside the candidate's sandbox, so a program that prints
// a forged verdict or exits 0 early gains nothing.
func TestIOCases(t *testing.T) {
	requirePytest(t)
	cases := []execcheck.Case{
		{Stdin: "3 4\n", Stdout: "7\n"},
		{Name: "negatives", Stdin: "-1 -2\n", Stdout: "-3"},
		{Name: "as arguments", Args: []string{"10", "5"}, Stdout: "15\n"},
	}
	sum := "import sys\nargs = sys.argv[1:] or sys.stdin.read().split()\nprint(sum(int(a) for a in args))\n"
	checker, err := filepath.Abs("testdata/io_checker.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, answer string
		checker      bool
		ok           bool
		detail       string
	}{
		{"right", sum + "print('   ')\n", false, true, "3 cases passed"},
		{"wrong on negatives", strings.Replace(sum, "int(a)", "abs(int(a))", 1), false, false, "negatives: wrong output\ninput: \"-1 -2\\n\"\nexpected: \"-3\"\ngot:      \"3\""},
		{"prints a verdict", "print('3 cases passed')\n", false, false, "case 1: wrong output"},
		{"crashes", "raise SystemExit(3)\n", false, false, "case 1: python3 exited with status 3"},
		{"right, by the checker", sum, true, true, "3 cases passed"},
		{"wrong, by the checker", "print(0)\n", true, false, "case 1: the checker rejected the output: want 7, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := execcheck.Config{Runner: runner(t), Format: "io", Artifact: "sum.py", Command: []string{"python3", "sum.py"}, Cases: cases}
			if tc.checker {
				cfg.Checker = []string{"python3", "io_checker.py"}
				cfg.Tests = []sandbox.Mount{{Source: checker, Target: "io_checker.py"}}
			}
			v, err := execcheck.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Check(context.Background(), verify.Candidate{Answer: tc.answer})
			if err != nil {
				t.Fatal(err)
			}
			if got.OK != tc.ok || !strings.Contains(got.Detail, tc.detail) || got.Isolation != execcheck.Judge {
				t.Errorf("ok=%v isolation=%q detail:\n%s\nwant ok=%v and %q", got.OK, got.Isolation, got.Detail, tc.ok, tc.detail)
			}
		})
	}
	for _, cfg := range []execcheck.Config{
		{Format: "io"},
		{Format: "io", Cases: cases, Isolation: execcheck.InProcess},
		{Format: "exit", Cases: cases},
	} {
		cfg.Runner, cfg.Command, cfg.Artifact = runner(t), []string{"python3", "sum.py"}, "sum.py"
		if _, err := execcheck.New(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
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

// humanEvalGo is a HumanEval-X Go problem's tests (they use testify's
// assert) with the module vendored, as a check mounts them: vendored by
// the host's go command into a temporary copy of testdata/humaneval-go.
// Fresh vendored sources end in a comment unique to this call, so that no
// build cache holds them compiled yet.
func humanEvalGo(t testing.TB, goBin string, fresh bool) []sandbox.Mount {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "go.sum", "has_close_test.go"} {
		b, err := os.ReadFile(filepath.Join("testdata", "humaneval-go", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, "mod", "vendor")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		testenv.Missing(t, fmt.Sprintf("testify v1.12.1 in the module cache or through GOPROXY: go mod vendor: %v: %s", err, out))
	}
	if fresh {
		nonce := []byte("\n// " + rand.Text() + "\n")
		err := filepath.WalkDir(filepath.Join(dir, "vendor"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !strings.HasSuffix(p, ".go") {
				return err
			}
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.Write(nonce)
			return errors.Join(err, f.Close())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var tests []sandbox.Mount
	for _, name := range []string{"go.mod", "go.sum", "vendor", "has_close_test.go"} {
		tests = append(tests, sandbox.Mount{Source: filepath.Join(dir, name), Target: name})
	}
	return tests
}

const hasClose = `package humaneval

func HasCloseElements(numbers []float64, threshold float64) bool {
	for i := range numbers {
		for j := range numbers {
			if i != j && numbers[i]-numbers[j] < threshold && numbers[j]-numbers[i] < threshold {
				return true
			}
		}
	}
	return false
}
`

// recorder passes runs on to a sandbox and keeps the last result.
type recorder struct {
	sandbox.Runner
	last sandbox.Result
}

func (r *recorder) Run(ctx context.Context, s sandbox.Spec) (sandbox.Result, error) {
	res, err := r.Runner.Run(ctx, s)
	r.last = res
	return res, err
}

// TestGoVendoredWarm: the vendored modules of a go check are compiled once,
// before its first candidate, into the read-only build cache, where each
// candidate's go test finds them (the workspace is at the same path in
// every run): go test -x shows the compiler run for the candidate's
// package and the test's main only.
func TestGoVendoredWarm(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command")
	}
	rec := &recorder{Runner: runner(t)}
	v, err := execcheck.New(execcheck.Config{
		Runner: rec, Format: "go", Artifact: "has_close.go", Tests: humanEvalGo(t, goBin, true),
		Command: []string{goBin, "test", "-json", "-x", "."},
		Limits:  sandbox.Limits{Wall: 5 * time.Minute, CPU: time.Minute, Output: 8 << 20}, // -x writes much
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Check(context.Background(), verify.Candidate{Answer: hasClose})
	if err != nil || !got.OK {
		t.Fatalf("verdict %+v, err %v; want a pass", got, err)
	}
	if rec.last.TruncatedStdout {
		t.Fatalf("go test's output was cut short (%d bytes): the compiler runs cannot all be seen", rec.last.StdoutBytes)
	}
	// go test -json passes -x's lines on as build-output events: the
	// compiler's command line names the package (-p), and the vet.cfg
	// written for each vet run names its ImportPath.
	var compiled, vetted []string
	for line := range bytes.Lines(rec.last.Stdout) {
		var ev struct{ Action, Output string }
		if json.Unmarshal(line, &ev) != nil || ev.Action != "build-output" {
			continue
		}
		f := strings.Fields(ev.Output)
		switch {
		case strings.Contains(ev.Output, "/compile ") && slices.Contains(f, "-p"):
			compiled = append(compiled, f[slices.Index(f, "-p")+1])
		case strings.Contains(ev.Output, "vet.cfg << ") && slices.Contains(f, `"ImportPath":`):
			vetted = append(vetted, f[slices.Index(f, `"ImportPath":`)+1])
		}
	}
	if !slices.Equal(compiled, []string{"humaneval", "main"}) {
		t.Errorf("the candidate's go test compiled %q; want only the candidate's package humaneval and the test's main (the vendored modules warm)", compiled)
	}
	if !slices.Equal(vetted, []string{`"humaneval",`}) {
		t.Errorf("the candidate's go test vetted %q; want only the candidate's package humaneval (the vet facts of what it imports warm)", vetted)
	}
}
