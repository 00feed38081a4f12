package strength

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is not installed (./test.sh installs it)")
	}
}

const pySource = `def f(a, b):
    """doc"""
    if a < b and not b:
        return a + 1, b
    while a <= 2:
        a += 1
    return True
`

func kinds(ms []Mutant) []string {
	var out []string
	for _, m := range ms {
		if !slices.Contains(out, m.Kind) {
			out = append(out, m.Kind)
		}
	}
	slices.Sort(out)
	return out
}

func find(ms []Mutant, line int, desc string) *Mutant {
	for i := range ms {
		if ms[i].Line == line && ms[i].Description == desc {
			return &ms[i]
		}
	}
	return nil
}

func TestPythonMutantsCoverEveryMutator(t *testing.T) {
	needPython(t)
	ms, stillborn, dups, err := Generate(context.Background(), Config{Filename: "f.py", Reference: []byte(pySource)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"arithmetic", "boolean", "comparison", "constant", "negation", "removal", "swap"}, kinds(ms)); diff != "" {
		t.Errorf("mutator kinds (-want +got):\n%s", diff)
	}
	if stillborn != 0 || dups != 0 {
		t.Errorf("stillborn %d, duplicates %d; want none", stillborn, dups)
	}
	for _, c := range []struct {
		line       int
		desc, want string // want: the changed line in the mutant
	}{
		{3, "< → <=", "    if a <= b and not b:"},
		{3, "and → or", "    if a < b or not b:"},
		{3, "not x → x", "    if a < b and b:"},
		{3, "condition negated", "    if not (a < b and (not b)):"},
		{4, "+ → -", "        return a - 1, b"},
		{4, "1 → 0", "        return a + 0, b"},
		{4, "return values 1 and 2 swapped", "        return (b, a + 1)"},
		{5, "2 → 3", "    while a <= 3:"},
		{6, "+= → -=", "        a -= 1"},
		{7, "True → False", "    return False"},
		{6, "statement removed", "        pass"},
	} {
		m := find(ms, c.line, c.desc)
		if m == nil {
			t.Errorf("no mutant %q on line %d", c.desc, c.line)
			continue
		}
		if !strings.Contains(m.Diff, "\n+"+c.want+"\n") {
			t.Errorf("mutant %q on line %d: diff lacks +%q:\n%s", c.desc, c.line, c.want, m.Diff)
		}
		if m.Equivalent {
			t.Errorf("mutant %q on line %d marked equivalent", c.desc, c.line)
		}
	}
	// The docstring is never removed: it is documentation, not behaviour.
	if m := find(ms, 2, "statement removed"); m != nil {
		t.Errorf("the docstring was removed:\n%s", m.Diff)
	}
}

func TestPythonEquivalentByBytecode(t *testing.T) {
	needPython(t)
	// `while 1` and `while 2` compile to the same unconditional loop.
	src := "def f():\n    while 1:\n        return 5\n"
	ms, _, _, err := Generate(context.Background(), Config{Filename: "f.py", Reference: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	var equivalent []string
	for _, m := range ms {
		if m.Equivalent {
			equivalent = append(equivalent, fmt.Sprintf("%d %s", m.Line, m.Description))
		}
	}
	if diff := cmp.Diff([]string{"2 1 → 2"}, equivalent); diff != "" {
		t.Errorf("equivalent mutants (-want +got):\n%s", diff)
	}
}

func TestPythonNegativeConstantAndPrecedence(t *testing.T) {
	needPython(t)
	// 0 → -1 must be written as a unary minus, and 2 * a ** 2 → 2 * a * 2
	// needs parentheses to keep the tree it means.
	src := "def f(a, b, c):\n    return c - a * b, a[0], 2 * a ** 2\n"
	ms, stillborn, _, err := Generate(context.Background(), Config{Filename: "f.py", Reference: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if stillborn != 0 {
		t.Errorf("%d stillborn mutants", stillborn)
	}
	if m := find(ms, 2, "0 → -1"); m == nil || !strings.Contains(m.Diff, "+    return c - a * b, a[-1], 2 * a ** 2\n") {
		t.Errorf("0 → -1 mutant missing or wrong: %+v", m)
	}
	if m := find(ms, 2, "** → *"); m == nil || !strings.Contains(m.Diff, "+    return c - a * b, a[0], 2 * (a * 2)\n") {
		t.Errorf("** → * mutant missing or wrong: %+v", m)
	}
}

func TestPythonReferenceMustParse(t *testing.T) {
	needPython(t)
	_, _, _, err := Generate(context.Background(), Config{Filename: "f.py", Reference: []byte("def f(:\n")})
	if err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("err = %v, want a parse error", err)
	}
}

const goSource = `package abs

// Abs is |n| and whether n was negative.
func Abs(n int) (int, bool) {
	if n < 0 {
		return -n, true
	}
	for i := 0; i < 2 && n > 100; i++ {
		n--
	}
	return n, false
}
`

func TestGoMutantsCoverEveryMutatorAndDropStillborn(t *testing.T) {
	ms, stillborn, _, err := Generate(context.Background(), Config{Filename: "abs.go", Reference: []byte(goSource)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"arithmetic", "boolean", "comparison", "constant", "negation", "removal"}, kinds(ms)); diff != "" {
		t.Errorf("mutator kinds (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		line       int
		desc, want string
	}{
		{5, "< → <=", "\tif n <= 0 {"},
		{5, "condition negated", "\tif !(n < 0) {"},
		{6, "-x → x", "\t\treturn n, true"},
		{6, "true → false", "\t\treturn -n, false"},
		{8, "&& → ||", "\tfor i := 0; i < 2 || n > 100; i++ {"},
		{8, "0 → -1", "\tfor i := -1; i < 2 && n > 100; i++ {"},
		{9, "-- → ++", "\t\tn++"},
	} {
		m := find(ms, c.line, c.desc)
		if m == nil {
			t.Errorf("no mutant %q on line %d", c.desc, c.line)
			continue
		}
		if !strings.Contains(m.Diff, "\n+"+c.want+"\n") {
			t.Errorf("mutant %q on line %d: diff lacks +%q:\n%s", c.desc, c.line, c.want, m.Diff)
		}
	}
	// (int, bool) swapped does not compile, nor does a function without
	// its last return: both are stillborn, not mutants.
	if m := find(ms, 6, "return values 1 and 2 swapped"); m != nil {
		t.Errorf("a mistyped swap was kept:\n%s", m.Diff)
	}
	if m := find(ms, 11, "statement removed"); m != nil {
		t.Errorf("removing the final return was kept:\n%s", m.Diff)
	}
	if stillborn < 3 {
		t.Errorf("stillborn = %d, want at least the two swaps and the final return", stillborn)
	}
}

func TestGoSwapSameTypes(t *testing.T) {
	src := "package p\n\nfunc minmax(a, b int) (int, int) {\n\treturn a, b\n}\n\nfunc same(a int) (int, int) {\n\treturn a, a\n}\n"
	ms, _, _, err := Generate(context.Background(), Config{Filename: "p.go", Reference: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if m := find(ms, 4, "return values 1 and 2 swapped"); m == nil || m.Equivalent || !strings.Contains(m.Diff, "+\treturn b, a\n") {
		t.Errorf("swap of a, b: %+v", m)
	}
	// Swapping a with a prints the same file: equivalent.
	if m := find(ms, 8, "return values 1 and 2 swapped"); m == nil || !m.Equivalent {
		t.Errorf("swap of a, a should be equivalent: %+v", m)
	}
}

func TestUnifiedDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n"
	want := `--- x.py
+++ x.py (mutant)
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
`
	if diff := cmp.Diff(want, unifiedDiff("x.py", a, b)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A removal of two lines into one, at the start, with no final newline.
	got := unifiedDiff("x", "a\nb\nc", "z\nc")
	want = "--- x\n+++ x (mutant)\n@@ -1,3 +1,2 @@\n-a\n-b\n+z\n c\n\\ No newline at end of file\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := unifiedDiff("x", a, a); got != "" {
		t.Errorf("diff of equal texts = %q", got)
	}
}

// weakCheck passes any answer in which a is compared below b, so it cannot
// tell < from <=: the one mutant it must let through.
var weakCheck = verify.Func{CheckName: "weak", Prov: verify.Execution, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
	ok := strings.Contains(c.Answer, "return a < b") || strings.Contains(c.Answer, "return a <= b")
	return verify.Verdict{OK: ok, Detail: "assert lt(1, 2)", Where: "test_lt"}, nil
}}

func TestMeasureScoreAndSurvivors(t *testing.T) {
	needPython(t)
	ref := "def lt(a, b):\n    return a < b\n"
	rep, err := Measure(context.Background(), Config{Filename: "lt.py", Reference: []byte(ref), Checks: []verify.Verifier{weakCheck}})
	if err != nil {
		t.Fatal(err)
	}
	// < → <=, < → >=, removal.
	if rep.Total != 3 || rep.Killed != 2 || rep.Survived != 1 || rep.Equivalent != 0 || rep.Errors != 0 {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Score != 2.0/3 {
		t.Errorf("score = %v, want 2/3", rep.Score)
	}
	s := rep.Surviving()
	if len(s) != 1 || s[0].Description != "< → <=" || s[0].Line != 2 || !strings.Contains(s[0].Diff, "+    return a <= b\n") {
		t.Errorf("survivors = %+v", s)
	}
	for _, r := range rep.Results {
		if r.Status == Killed && r.KilledBy != "weak at test_lt: assert lt(1, 2)" {
			t.Errorf("killed by %q", r.KilledBy)
		}
	}
}

func TestMeasureRefusesAFailingReference(t *testing.T) {
	needPython(t)
	_, err := Measure(context.Background(), Config{Filename: "lt.py", Reference: []byte("def lt(a, b):\n    return a > b\n"), Checks: []verify.Verifier{weakCheck}})
	if !errors.Is(err, ErrReferenceFails) || !strings.Contains(err.Error(), "weak at test_lt") {
		t.Fatalf("err = %v, want ErrReferenceFails naming the check", err)
	}
}

func TestMeasureTimeoutKillsAndParallelIsBounded(t *testing.T) {
	needPython(t)
	var running, peak atomic.Int32
	// The reference answers at once; every mutant hangs until its context
	// ends, as an infinite loop in the sandbox would.
	hang := verify.Func{CheckName: "hang", Prov: verify.Execution, Fn: func(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if strings.Contains(c.Answer, "return a < b + 1\n") {
			return verify.Verdict{OK: true}, nil
		}
		<-ctx.Done()
		return verify.Verdict{}, ctx.Err()
	}}
	ref := "def lt(a, b):\n    return a < b + 1\n"
	rep, err := Measure(context.Background(), Config{Filename: "lt.py", Reference: []byte(ref), Checks: []verify.Verifier{hang}, Parallel: 2, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Killed != rep.Total || rep.Total < 5 {
		t.Fatalf("report = %+v, want every mutant killed by the timeout", rep)
	}
	for _, r := range rep.Results {
		if r.KilledBy != "timeout (50ms)" {
			t.Errorf("mutant %d killed by %q", r.ID, r.KilledBy)
		}
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d checks ran at once, want at most 2", p)
	}
}

func TestMeasureReportsInfrastructureErrorsApart(t *testing.T) {
	needPython(t)
	broken := verify.Func{CheckName: "broken", Prov: verify.Execution, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		if strings.Contains(c.Answer, "a < b") {
			return verify.Verdict{OK: true}, nil
		}
		return verify.Verdict{}, errors.New("sandbox fell over")
	}}
	rep, err := Measure(context.Background(), Config{Filename: "lt.py", Reference: []byte("def lt(a, b):\n    return a < b\n"), Checks: []verify.Verifier{broken}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 3 || rep.Killed != 0 || rep.Survived != 0 || rep.Score != 1 {
		t.Errorf("report = %+v, want three errors and nothing scored", rep)
	}
}

// TestMeasureInSandbox runs real tests on real mutants: python3 in the
// sandbox, through the exec check.
func TestMeasureInSandbox(t *testing.T) {
	needPython(t)
	r, err := sandbox.New(sandbox.Config{})
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("no sandbox: %v (./test.sh installs bubblewrap)", err))
	}
	dir := t.TempDir()
	test := "from clamp import clamp\nassert clamp(5, 0, 10) == 5\nassert clamp(-1, 0, 10) == 0\n"
	if err := os.WriteFile(filepath.Join(dir, "test_clamp.py"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	check, err := execcheck.New(execcheck.Config{Runner: r, Command: []string{"python3", "test_clamp.py"}, Artifact: "clamp.py",
		Tests: []sandbox.Mount{{Source: filepath.Join(dir, "test_clamp.py"), Target: "test_clamp.py"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The tests never go above hi, so the upper clamp's mutants survive;
	// x < lo → x <= lo survives too, being equivalent (x == lo returns lo).
	ref := "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"
	rep, err := Measure(context.Background(), Config{Filename: "clamp.py", Reference: []byte(ref), Checks: []verify.Verifier{check}})
	if err != nil {
		t.Fatal(err)
	}
	var survivors []string
	for _, s := range rep.Surviving() {
		survivors = append(survivors, fmt.Sprintf("%d %s", s.Line, s.Description))
	}
	want := []string{"2 < → <=", "4 statement removed", "4 > → >=", "5 statement removed"}
	if diff := cmp.Diff(want, survivors); diff != "" || rep.Errors != 0 || rep.Killed != rep.Total-len(want) {
		t.Errorf("killed %d of %d, errors %d; survivors (-want +got):\n%s", rep.Killed, rep.Total, rep.Errors, diff)
	}
}
