package execcheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// BenchmarkChecks measures a check per candidate beside its floor, in one
// run (docs/performance.md): a Go check of a small package on a warm build
// cache beside `bwrap true` and the host's `go test` of an empty package
// on its warm cache, and of a HumanEval-X Go problem whose tests use a
// vendored testify, there and on the host; the pytest check in both isolations beside
// `python3 -c pass` in the sandbox, its candidates in runs started ahead
// (warm.go) and, for comparison, in runs started with them (cold). The
// candidates come back to back: each run started ahead must be ready in
// the time the checks before it take. Each reports its p50 as ms/p50.
//
//	flock /tmp/ratchet-sandbox.lock go test -run '^$' -bench BenchmarkChecks -benchtime 20x ./verify/execcheck/
func BenchmarkChecks(b *testing.B) {
	r := runner(b)
	ctx := context.Background()
	sandboxed := func(cmd ...string) func(b *testing.B) {
		return func(b *testing.B) {
			if res, err := r.Run(ctx, sandbox.Spec{Command: cmd}); err != nil || res.ExitCode != 0 {
				b.Fatalf("%v: exit %d, err %v: %s", cmd, res.ExitCode, err, res.Stderr)
			}
		}
	}
	check := func(v verify.Verifier, answer string) func(b *testing.B) {
		return func(b *testing.B) {
			if got, err := v.Check(ctx, verify.Candidate{Answer: answer}); err != nil || !got.OK {
				b.Fatalf("verdict %+v, err %v", got, err)
			}
		}
	}
	b.Run("floor=bwrap-true", p50(sandboxed("true")))

	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(b, "the go command")
	}
	empty := b.TempDir()
	for name, src := range map[string]string{"go.mod": "module empty\n", "empty_test.go": "package empty\n\nimport \"testing\"\n\nfunc TestEmpty(t *testing.T) {}\n"} {
		if err := os.WriteFile(filepath.Join(empty, name), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	hostGo := func(dir string) func(b *testing.B) {
		return func(b *testing.B) {
			cmd := exec.Command(goBin, "test", "-count=1", ".")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("go test: %v: %s", err, out)
			}
		}
	}
	b.Run("floor=host-go-test-empty", p50(hostGo(empty)))
	goCheck, err := execcheck.New(execcheck.Config{
		Runner: r, Format: "go", Artifact: "calc.go", Tests: goCalcTests(b),
		Command: []string{goBin, "test", "-json", "."},
		Limits:  sandbox.Limits{Wall: 5 * time.Minute, CPU: time.Minute},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("go-check", p50(check(goCheck, "package calc\n\nfunc Add(a, b int) int { return a + b }\n")))
	humanEval := humanEvalGo(b, goBin, false)
	hostDir := filepath.Dir(humanEval[0].Source)
	if err := os.WriteFile(filepath.Join(hostDir, "has_close.go"), []byte(hasClose), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("host-go-test-vendored-testify", p50(hostGo(hostDir)))
	vendored, err := execcheck.New(execcheck.Config{
		Runner: r, Format: "go", Artifact: "has_close.go", Tests: humanEval,
		Command: []string{goBin, "test", "-json", "."},
		Limits:  sandbox.Limits{Wall: 5 * time.Minute, CPU: time.Minute},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("go-check-vendored-testify", p50(check(vendored, hasClose)))

	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Missing(b, "/usr/bin/python3 with pytest")
	}
	b.Run("floor=python3-pass", p50(sandboxed("python3", "-c", "pass")))
	isPrime, err := os.ReadFile("../../examples/is-prime/reference.py")
	if err != nil {
		b.Fatal(err)
	}
	for _, iso := range []string{execcheck.Judge, execcheck.InProcess} {
		b.Run("pytest-check/"+iso, p50(check(pytestCheck(b, iso), string(isPrime))))
	}
	// Candidates that come as a loop's do, a model's turn apart (here
	// half a second, untimed): the run started ahead is ready.
	for _, iso := range []string{execcheck.Judge, execcheck.InProcess} {
		b.Run("pytest-check-spaced/"+iso, spaced(500*time.Millisecond, check(pytestCheck(b, iso), string(isPrime))))
	}
	// The same checks with each run started with its candidate (a Runner
	// that cannot start runs ahead), as before warm runs.
	cold := coldRunner{r}
	for _, iso := range []string{execcheck.Judge, execcheck.InProcess} {
		b.Run("pytest-check-cold/"+iso, p50(check(pytestCheckOn(b, cold, iso), string(isPrime))))
	}
}

// p50 runs once per iteration, after one untimed run that warms what
// the check prepares once (the Go build cache, the interpreter's files in
// the page cache), and reports the median iteration as ms/p50.
func p50(once func(b *testing.B)) func(b *testing.B) { return spaced(0, once) }

// spaced is p50 with a pause, untimed, before each iteration.
func spaced(pause time.Duration, once func(b *testing.B)) func(b *testing.B) {
	return func(b *testing.B) {
		once(b)
		var times []time.Duration
		for b.Loop() {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
			start := time.Now()
			once(b)
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2])/1e6, "ms/p50")
	}
}
