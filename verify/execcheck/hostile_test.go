package execcheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/sandbox/gocache"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// isolated are the backends that must contain a hostile candidate.
var isolated = []string{sandbox.IsolationBwrap, sandbox.IsolationNamespaces}

func backendRunner(t *testing.T, backend string) sandbox.Runner {
	t.Helper()
	if backend == sandbox.IsolationNamespaces && os.Geteuid() != 0 {
		testenv.Missing(t, "root, for the namespaces backend")
	}
	r, err := sandbox.New(sandbox.Config{Backend: backend, AllowUnsafe: backend == sandbox.IsolationUnsafe})
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("backend %s: %v (./test.sh installs bubblewrap)", backend, err))
	}
	return r
}

func hostile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "hostile", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const (
	rightCalc = "def add(a, b):\n    return a + b\n"
	wrongCalc = "def add(a, b):\n    return 0\n"
)

// hostileVerdict is one candidate that tries to forge its verdict or to
// attack the host through it, and the verdict it must get.
type hostileVerdict struct {
	name string
	// answer is the candidate (calc.py) in generate mode; workspace,
	// when set, is the agent's workspace instead (agent mode).
	answer    string
	workspace map[string]string
	limits    sandbox.Limits
	tests     string   // the test file in testdata; test_calc.py unless set
	where     string   // the verdict's in-process Where; every case fails
	detail    []string // in the verdict's in-process Detail
	// forges marks a class that in-process isolation does not catch (the
	// candidate shares the test runner's process), each listed in
	// docs/verification.md: the case pins that it still passes there, so
	// that the docs change with the code. Judge isolation fails every case.
	forges bool
	// rightInJudge marks a right solution whose attack is on the test
	// process: in judge isolation it reaches only the candidate's own
	// sandbox, and the solution passes on its merits.
	rightInJudge bool
}

var pth = `import os; os.environ["PYTEST_PLUGINS"] = "forge"` + "\n"

func hostileVerdicts(t *testing.T) []hostileVerdict {
	forgeAfter := hostile(t, "forge_after.py")
	link := hostile(t, "link_report.py")
	return []hostileVerdict{
		{name: "wrong solution (control)", answer: wrongCalc, where: "test_add", detail: []string{"assert 0 == 5"}},
		{name: "report forged instead of the run (written at import, exit 0)", answer: hostile(t, "forge_instead.py"),
			where: execcheck.Tampered, detail: []string{"sentinel", "missing"}},
		{name: "report forged after the run failed (atexit)", answer: forgeAfter,
			where: execcheck.Tampered, detail: []string{"sentinel", "missing"}},
		{name: "report forged after the run failed, exit status forced to 0", answer: strings.Replace(forgeAfter, "FORCE_EXIT = False", "FORCE_EXIT = True", 1),
			where: execcheck.Tampered, detail: []string{"sentinel", "missing"}},
		{name: "report forged with the sentinel failing, exit status 0", answer: hostile(t, "forge_sentinel.py"),
			where: execcheck.Tampered, detail: []string{"exit status was forged"}},
		{name: "report forged before the run, at the old fixed path (agent mode)", workspace: map[string]string{
			"calc.py": wrongCalc,
			".ratchet-junit.xml": `<testsuites><testsuite name="pytest" tests="2"><testcase classname="test_calc" name="test_add"/>` +
				`<testcase classname="test_calc" name="test_negative"/></testsuite></testsuites>`,
		}, where: "test_add"},
		{name: "plugin registered at import marks every test passed", answer: hostile(t, "plugin_at_import.py"),
			where: execcheck.Tampered, detail: []string{"sentinel", "passed"}},
		{name: "plugin registered at import drops the failing test", answer: hostile(t, "deselect.py"),
			where: "missing tests", detail: []string{"test_negative (test_calc.py)"}},
		{name: "plugin registered at import drops the failing test named outside ASCII", tests: "test_calc_unicode.py",
			answer: strings.Replace(hostile(t, "deselect.py"), "test_negative", "test_négatif", 1),
			where:  "missing tests", detail: []string{"test_négatif (test_calc.py)"}},
		{name: ".pth in the agent's user site-packages loads a plugin that passes everything", workspace: map[string]string{
			"calc.py": wrongCalc, "forge.py": hostile(t, "forge.py"),
			".local/lib/python3.11/site-packages/forge.pth": pth,
			".local/lib/python3/site-packages/forge.pth":    pth,
		}, where: "test_add"},
		{name: "dist-info in the agent's workspace registers a plugin entry point", workspace: map[string]string{
			"calc.py": wrongCalc, "forge.py": hostile(t, "forge.py"),
			"forge-1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: forge\nVersion: 1.0\n",
			"forge-1.0.dist-info/entry_points.txt": "[pytest11]\nforge = forge\n",
		}, where: "test_add"},
		{name: "a module named like the standard library's pprint, which pytest imports lazily, registers a plugin (agent mode)", workspace: map[string]string{
			"calc.py": wrongCalc, "pprint.py": hostile(t, "plugin_at_import.py"),
		}, where: execcheck.Tampered, detail: []string{"pprint.py: shadows the tests: Python module pprint would be imported"}},
		{name: "report replaced by a link to /dev/zero", answer: link,
			where: execcheck.Tampered, detail: []string{"symbolic link"}},
		{name: "report replaced by a link to /proc/self/fd/0", answer: strings.Replace(link, `"/dev/zero"`, `"/proc/self/fd/0"`, 1),
			where: execcheck.Tampered, detail: []string{"symbolic link"}},
		{name: "report replaced by a link to a host file", answer: strings.Replace(link, `"/dev/zero"`, `"/etc/passwd"`, 1),
			where: execcheck.Tampered, detail: []string{"symbolic link"}},
		{name: "fills the disk (64 MiB limit)", answer: hostile(t, "diskfill.py"), limits: sandbox.Limits{Disk: 64 << 20},
			where: "disk limit", rightInJudge: true},
		{name: "report rewritten at exit: only the failures of the file it was shown become passes", answer: hostile(t, "atexit_flip.py"),
			where: execcheck.Tampered, detail: []string{"test_add, test_negative failed while the tests ran", "rewritten after the run"}},
		{name: "report rewritten at exit, the outcome stream redirected to /dev/null first", answer: "import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 3)\n" + hostile(t, "atexit_flip.py"),
			where: execcheck.Tampered, detail: []string{"never came through the stream", "cut or redirected"}},
		{name: "plugin registered at import passes only the tests it was shown", answer: hostile(t, "flip_shown.py"), forges: true},
		{name: "returns a value equal to everything", answer: hostile(t, "always_equal.py"), forges: true},
	}
}

// TestHostileVerdicts runs candidates that forge their verdict or attack
// the host through the report, under both isolating backends and both
// isolations: in judge isolation none passes; in-process each gets the
// verdict it deserves, or is a class listed as not caught there.
//
//	go test ./verify/execcheck -run TestHostileVerdicts -v -count=1
func TestHostileVerdicts(t *testing.T) {
	requirePytest(t)
	tests, err := filepath.Abs("testdata/test_calc.py")
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	// bwrap/cold runs every candidate in a run started with it, as a
	// Runner that cannot start runs ahead does; the others in warm runs.
	for _, backend := range append(isolated, sandbox.IsolationBwrap+"/cold") {
		t.Run(backend, func(t *testing.T) {
			r := backendRunner(t, strings.TrimSuffix(backend, "/cold"))
			if strings.HasSuffix(backend, "/cold") {
				r = coldRunner{r}
			}
			for _, isolation := range []string{execcheck.InProcess, execcheck.Judge} {
				for _, hc := range hostileVerdicts(t) {
					if isolation == execcheck.Judge && hc.workspace != nil {
						continue // an agent's workspace runs in-process
					}
					t.Run(isolation+"/"+hc.name, func(t *testing.T) {
						got, took := hostileCheck(t, r, tests, isolation, hc)
						switch {
						case got.Isolation != isolation:
							t.Errorf("the verdict says isolation %q, want %q", got.Isolation, isolation)
						case isolation == execcheck.Judge && got.OK != hc.rightInJudge:
							t.Errorf("ok=%v in judge isolation; detail:\n%s", got.OK, got.Detail)
						case isolation == execcheck.InProcess && hc.forges && !got.OK:
							t.Errorf("no longer forges a pass in-process (%q): update docs/verification.md and the case", got.Where)
						case isolation == execcheck.InProcess && !hc.forges && (got.OK || got.Where != hc.where):
							t.Errorf("ok=%v where=%q, want a failure at %q; detail:\n%s", got.OK, got.Where, hc.where, got.Detail)
						}
						if isolation == execcheck.InProcess {
							for _, want := range hc.detail {
								if !strings.Contains(got.Detail, want) {
									t.Errorf("detail does not mention %q:\n%s", want, got.Detail)
								}
							}
						}
						where := got.Where
						if got.OK {
							where = "**passed**"
						}
						fmt.Fprintf(&table, "| %s | %s | %s | %s | %s |\n", backend, isolation, hc.name, where, took.Round(time.Millisecond))
					})
				}
			}
			// The control: the same machinery passes a right solution, also
			// when the command names no tests or stops at the first failure
			// (the sentinel is collected last).
			// test_sum.py sorts after a sentinel named test_ratchet_….
			for _, command := range [][]string{
				{"python3", "-m", "pytest", "-q", "test_sum.py"},
				{"python3", "-m", "pytest", "-q"},
				{"python3", "-m", "pytest", "-q", "-x"},
			} {
				v, err := execcheck.New(execcheck.Config{
					Runner: r, Format: "pytest", Artifact: "calc.py", Command: command,
					Tests: []sandbox.Mount{{Source: tests, Target: "test_sum.py"}},
				})
				if err != nil {
					t.Fatal(err)
				}
				if got, err := v.Check(context.Background(), verify.Candidate{Answer: rightCalc}); err != nil || !got.OK || got.Detail != "2 tests passed" {
					t.Errorf("%v, right solution: %+v %v", command, got, err)
				}
			}
		})
	}
	t.Logf("\n| backend | isolation | hostile candidate | verdict where | time |\n|---|---|---|---|---|\n%s", table.String())
}

// hostileCheck runs one hostile case against test_calc.py (or hc.tests).
// coldRunner hides a Runner's Start: each check starts its run with its
// candidate.
type coldRunner struct{ sandbox.Runner }

func hostileCheck(t *testing.T, r sandbox.Runner, tests, isolation string, hc hostileVerdict) (verify.Verdict, time.Duration) {
	t.Helper()
	if hc.tests != "" {
		tests = filepath.Join(filepath.Dir(tests), hc.tests)
	}
	cfg := execcheck.Config{
		Name: "tests", Runner: r, Format: "pytest", Isolation: isolation,
		Command: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py"},
		Tests:   []sandbox.Mount{{Source: tests, Target: "test_calc.py"}},
		Limits:  hc.limits,
	}
	cfg.Limits.Wall = 30 * time.Second
	if hc.workspace != nil {
		cfg.Workspace = t.TempDir()
		for name, body := range hc.workspace {
			p := filepath.Join(cfg.Workspace, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		cfg.Artifact = "calc.py"
	}
	v, err := execcheck.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := v.Check(context.Background(), verify.Candidate{Answer: hc.answer})
	if err != nil {
		t.Fatal(err)
	}
	return got, time.Since(start)
}

// TestHostileGoVerdicts does the same for go test: the sentinel is a test
// in the tests' own package, so it runs in the same test binary as the
// candidate's code.
func TestHostileGoVerdicts(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command")
	}
	var tests []sandbox.Mount
	for _, name := range []string{"go.mod", "calc_test.go"} {
		src, err := filepath.Abs(filepath.Join("testdata", "gocalc", name))
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, sandbox.Mount{Source: src, Target: name})
	}
	for _, backend := range isolated {
		for _, isolation := range []string{execcheck.InProcess, execcheck.Judge} {
			v, err := execcheck.New(execcheck.Config{
				Runner: backendRunner(t, backend), Format: "go", Artifact: "calc.go", Isolation: isolation,
				Command: []string{goBin, "test", "-json", "."}, Tests: tests,
				Limits: sandbox.Limits{Wall: 2 * time.Minute, CPU: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			// In judge isolation the forger's init runs in its own
			// process: its lines never reach go test's output.
			forged := execcheck.Tampered
			if isolation == execcheck.Judge {
				forged = "TestAdd"
			}
			for _, tc := range []struct {
				name, answer string
				ok           bool
				where        string
			}{
				{"right", "package calc\n\nfunc Add(a, b int) int { return a + b }\n", true, ""},
				{"wrong", "package calc\n\nfunc Add(a, b int) int { return 0 }\n", false, "TestAdd"},
				{"prints passing test2json lines at init and exits 0", hostile(t, "forge_go.go"), false, forged},
				{"returns an error and panics", "package calc\n\nimport \"errors\"\n\nfunc Add(a, b int) int {\n\tif a < 0 {\n\t\tpanic(errors.New(\"negative\"))\n\t}\n\treturn a + b\n}\n", false, "TestNegative"},
			} {
				t.Run(backend+"/"+isolation+"/"+tc.name, func(t *testing.T) {
					got, err := v.Check(context.Background(), verify.Candidate{Answer: tc.answer})
					if err != nil {
						t.Fatal(err)
					}
					if got.OK != tc.ok || got.Where != tc.where || got.Isolation != isolation {
						t.Errorf("ok=%v where=%q isolation=%q, want ok=%v where=%q; detail:\n%s", got.OK, got.Where, got.Isolation, tc.ok, tc.where, got.Detail)
					}
				})
			}
		}
	}
}

// TestHostileNodeVerdicts: node --test runs each file in its own process,
// so the sentinel (a file of its own) catches a forged stream, and a file
// whose process ends early shows up as its tests missing.
func TestHostileNodeVerdicts(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node (./test.sh installs nodejs)")
	}
	src, err := filepath.Abs("testdata/nodecalc/calc.test.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range isolated {
		t.Run(backend, func(t *testing.T) {
			for _, command := range [][]string{{"node", "--test"}, {"node", "--test", "calc.test.js"}} {
				v, err := execcheck.New(execcheck.Config{
					Runner: backendRunner(t, backend), Format: "node", Artifact: "calc.js", Command: command,
					Tests: []sandbox.Mount{{Source: src, Target: "calc.test.js"}},
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, tc := range []struct {
					name, answer string
					ok           bool
					where        string
				}{
					{"right", "exports.add = (a, b) => a + b;\n", true, ""},
					{"wrong", "exports.add = (a, b) => 0;\n", false, "adds"},
					{"exits 0 when required", "process.exit(0);\n", false, "missing tests"},
					// Not caught: the tests' file and the candidate share one
					// process and its module cache (docs/verification.md).
					{"patches the shared node:assert", "const assert = require('node:assert');\nassert.strictEqual = () => {};\nexports.add = (a, b) => 0;\n", true, ""},
				} {
					t.Run(strings.Join(command, " ")+"/"+tc.name, func(t *testing.T) {
						got, err := v.Check(context.Background(), verify.Candidate{Answer: tc.answer})
						if err != nil {
							t.Fatal(err)
						}
						if got.OK != tc.ok || got.Where != tc.where {
							t.Errorf("ok=%v where=%q, want ok=%v where=%q; detail:\n%s", got.OK, got.Where, tc.ok, tc.where, got.Detail)
						}
					})
				}
			}
		})
	}
}

// TestHostileGoCachePoison: a candidate compiles a testing package in
// which no test fails and files it in the Go build cache under the real
// package's action ID (it works: its own run then passes a failing test,
// and so does its verdict). A later wrong candidate still fails, on every
// backend, unsafe included: the shared cache is read-only to every run.
// The cache is a copy of the default one, so that nothing here can poison
// what other checks use.
//
//	go test ./verify/execcheck -run TestHostileGoCachePoison -v -count=1
func TestHostileGoCachePoison(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command")
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "sandbox", "testdata", "hostile", "poison_gocache.sh"))
	if err != nil {
		t.Fatal(err)
	}
	poison := strings.Replace(hostile(t, "poison_gocache.go.tmpl"), "SCRIPT", strconv.Quote(string(script)), 1)
	tests := goCalcTests(t)
	dir := copyOfDefaultGoCache(t, goBin, tests)
	for _, backend := range append(isolated, sandbox.IsolationUnsafe) {
		t.Run(backend, func(t *testing.T) {
			r := backendRunner(t, backend)
			v, err := execcheck.New(execcheck.Config{
				Runner: r, Format: "go", Artifact: "calc.go", GoCache: dir,
				Command: []string{goBin, "test", "-json", "."}, Tests: tests,
				Limits: sandbox.Limits{Wall: 2 * time.Minute, CPU: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := v.Check(context.Background(), verify.Candidate{Answer: poison})
			if err != nil {
				t.Fatal(err)
			}
			if !got.OK {
				t.Fatalf("the poisoning candidate's own run shows no effect (the test proves nothing): where %q\n%s", got.Where, got.Detail)
			}
			got, err = v.Check(context.Background(), verify.Candidate{Answer: "package calc\n\nfunc Add(a, b int) int { return 0 }\n"})
			if err != nil {
				t.Fatal(err)
			}
			if got.OK || got.Where != "TestAdd" {
				t.Errorf("after the poisoning, a wrong candidate got ok=%v where=%q, want a failure at TestAdd:\n%s", got.OK, got.Where, got.Detail)
			}
		})
	}
}

func goCalcTests(t testing.TB) []sandbox.Mount {
	var tests []sandbox.Mount
	for _, name := range []string{"go.mod", "calc_test.go"} {
		src, err := filepath.Abs(filepath.Join("testdata", "gocalc", name))
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, sandbox.Mount{Source: src, Target: name})
	}
	return tests
}

// copyOfDefaultGoCache warms the default Go build cache through a check
// and returns a copy of it, removed after the test: a cold cache would
// cost the test half a minute of compiling.
func copyOfDefaultGoCache(t *testing.T, goBin string, tests []sandbox.Mount) string {
	v, err := execcheck.New(execcheck.Config{
		Runner: runner(t), Format: "go", Artifact: "calc.go",
		Command: []string{goBin, "test", "-json", "."}, Tests: tests,
		Limits: sandbox.Limits{Wall: 2 * time.Minute, CPU: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Check(context.Background(), verify.Candidate{Answer: "package calc\n\nfunc Add(a, b int) int { return a + b }\n"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ratchet-go-cache-poison-test-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", gocache.DefaultDir()+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the Go build cache: %v: %s", err, out)
	}
	return dir
}

// TestGoJudgeSignatures is the conformance test of Go's judge stubs: a
// package with every kind of signature it serves (variadic, slices, maps,
// structs, pointers, named and imported types, errors, several results,
// none, unexported functions and constants) and one it cannot (a function
// argument), called by tests that must all pass across the boundary.
func TestGoJudgeSignatures(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command")
	}
	var tests []sandbox.Mount
	for _, name := range []string{"go.mod", "shapes_test.go"} {
		src, err := filepath.Abs(filepath.Join("testdata", "gojudge", name))
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, sandbox.Mount{Source: src, Target: name})
	}
	v, err := execcheck.New(execcheck.Config{
		Runner: runner(t), Format: "go", Artifact: "shapes.go", Isolation: execcheck.Judge,
		Command: []string{goBin, "test", "-json", "."}, Tests: tests,
		Limits: sandbox.Limits{Wall: 2 * time.Minute, CPU: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "gojudge", "shapes.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Check(context.Background(), verify.Candidate{Answer: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK || got.Detail != "2 tests passed" {
		t.Errorf("ok=%v where=%q; detail:\n%s", got.OK, got.Where, got.Detail)
	}
	got, err = v.Check(context.Background(), verify.Candidate{Answer: "package shapes\n\nfunc Sum(xs ...int) int {"})
	if err != nil || got.OK || got.Where != "build failed" || !strings.Contains(got.Detail, "does not parse") {
		t.Errorf("a candidate that does not parse: %+v %v", got, err)
	}
}
