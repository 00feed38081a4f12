package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/eval"
)

// evalSuite runs the quickstart example three times, an inline generate
// task whose scripted model is wrong every time, and a small sim block.
func evalSuite(t *testing.T, p float64) string {
	t.Helper()
	qs, _ := filepath.Abs(quickstart)
	dir := write(t, map[string]string{"wrong.yaml": wrongTurns})
	suite := `label: cli
concurrency: 4
cases:
  - task: ` + qs + `
    repeats: 3
  - name: always-wrong
    task:
      mode: generate
      goal: say please
      model: scripted:wrong.yaml
      checks: [{equals: please}]
      budget: {steps: 3}
sim:
  - name: s
    cases: 40
    p: ` + strings.TrimRight(strings.TrimRight(jsonFloat(p), "0"), ".") + `
    policy: fixed-retries
    retries: 1
`
	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte(suite), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func jsonFloat(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestEvalRunResumeCompareGate(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"RATCHET_EVAL_DIR": root}

	c := run(t, env, "eval", "run", evalSuite(t, 0.9), "--label", "base", "--json")
	c.wantCode(t, exitDone)
	var sum eval.Summary
	if err := json.Unmarshal([]byte(c.stdout), &sum); err != nil {
		t.Fatalf("stdout is not a Summary: %v\n%v", err, c)
	}
	if sum.Suite.Runs != 44 || len(sum.Cases) != 42 {
		t.Errorf("runs %d, cases %d; want 44 and 42", sum.Suite.Runs, len(sum.Cases))
	}
	for _, g := range sum.Cases {
		switch g.Name {
		case "quickstart":
			if g.Metrics.Success.K != 3 {
				t.Errorf("quickstart succeeded %d of 3", g.Metrics.Success.K)
			}
		case "always-wrong":
			if g.Metrics.Success.K != 0 || g.Metrics.Exhausted["steps"].K != 1 {
				t.Errorf("always-wrong: %+v", g.Metrics.Success)
			}
		}
	}
	if n := strings.Count(c.stderr, notice); n != 1 {
		t.Errorf("the scripted notice appears %d times, want once:\n%s", n, c.stderr)
	}
	logs, _ := os.ReadDir(filepath.Join(root, "base", "logs"))
	if len(logs) != 44 {
		t.Errorf("%d event logs, want 44", len(logs))
	}

	// The same label again resumes everything.
	c = run(t, env, "eval", "run", evalSuite(t, 0.9), "--label", "base")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "(0 runs now, 44 resumed)") || !strings.Contains(c.stderr, "resuming: 44 of 44") {
		t.Errorf("second run did not resume:\n%v", c)
	}

	// A weaker simulated model: the gate must fail on it, and pass on the
	// baseline against itself.
	run(t, env, "eval", "run", evalSuite(t, 0.3), "--label", "weak", "--quiet").wantCode(t, exitDone)
	html := filepath.Join(t.TempDir(), "cmp.html")
	c = run(t, env, "eval", "compare", "base", "weak", "--gate", "--html", html)
	c.wantCode(t, exitNotDone)
	if !strings.Contains(c.stdout, "| success rate |") || !strings.Contains(c.stdout, "▼ regression") || !strings.Contains(c.stderr, "gate failed") {
		t.Errorf("compare output:\n%v", c)
	}
	if st, err := os.Stat(html); err != nil || st.Size() < 1000 {
		t.Errorf("html report: %v", err)
	}
	c = run(t, env, "eval", "compare", filepath.Join(root, "base"), "base", "--gate", "--json")
	c.wantCode(t, exitDone)
	var cmp eval.Comparison
	if err := json.Unmarshal([]byte(c.stdout), &cmp); err != nil || len(cmp.Regressions) != 0 {
		t.Errorf("self-comparison: %v, regressions %v", err, cmp.Regressions)
	}

	c = run(t, env, "eval", "report", "weak")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "# ratchet eval: weak") || !strings.Contains(c.stdout, "exhausted: steps") {
		t.Errorf("report:\n%v", c)
	}
	run(t, env, "eval", "compare", "base", "nope").wantCode(t, exitUsage)
}

func TestEvalRunProblems(t *testing.T) {
	dir := write(t, map[string]string{"s.yaml": "cases:\n  - task: nope.yaml\nsmth: 1\n"})
	c := run(t, nil, "eval", "run", filepath.Join(dir, "s.yaml"))
	c.wantCode(t, exitUsage)
	for _, want := range []string{"s.yaml:2: task: open", "s.yaml:3: unknown field \"smth\""} {
		if !strings.Contains(c.stderr, want) {
			t.Errorf("stderr lacks %q:\n%v", want, c)
		}
	}
}

// TestEvalAddFromRun turns a run that ran out of steps into a case, and
// runs the suite it was added to.
func TestEvalAddFromRun(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "run.jsonl")
	run(t, nil, "run", quickstart, "--steps", "2", "--log", logPath, "--quiet").wantCode(t, exitNotDone)

	suite := filepath.Join(dir, "regressions.yaml")
	c := run(t, nil, "eval", "add", "--from-run", logPath, "--suite", suite, "--task", quickstart, "--name", "qs-short")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "category: budget") {
		t.Errorf("add output:\n%v", c)
	}
	data, _ := os.ReadFile(suite)
	for _, want := range []string{"label: regressions", "- name: qs-short", "category: budget", "status: done", "from_run: " + logPath} {
		if !strings.Contains(string(data), want) {
			t.Errorf("suite lacks %q:\n%s", want, data)
		}
	}
	// The same case twice is refused.
	run(t, nil, "eval", "add", "--from-run", logPath, "--suite", suite, "--task", quickstart, "--name", "qs-short").wantCode(t, exitUsage)
	// An overriding category, and an inline case.
	c = run(t, nil, "eval", "add", "--from-run", logPath, "--suite", suite, "--expect-answer", "TOTAL: 142.50", "--category", "insufficient_context")
	c.wantCode(t, exitDone)
	run(t, nil, "eval", "add", "--from-run", logPath, "--suite", suite, "--category", "bogus").wantCode(t, exitUsage)
	// A run ID finds its log, and its task file, in the run database.
	state := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": state}
	c = run(t, env, "run", quickstart, "--steps", "2")
	c.wantCode(t, exitNotDone)
	id := regexp.MustCompile(`run: (\S+) `).FindStringSubmatch(c.stderr)
	if id == nil {
		t.Fatalf("no run ID:\n%v", c)
	}
	c = run(t, env, "eval", "add", "--from-run", id[1], "--suite", suite, "--name", "by-id")
	c.wantCode(t, exitDone)
	if data, _ := os.ReadFile(suite); !strings.Contains(string(data), "from_run: "+id[1]) {
		t.Errorf("suite lacks the run ID:\n%s", data)
	}
	c = run(t, env, "eval", "add", "--from-run", "run-nope", "--suite", suite)
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, "no run run-nope in DB (ratchet ls lists runs)") {
		t.Errorf("unknown run: %v", c)
	}

	// The suite runs: the task case, with its full budget, passes.
	c = run(t, map[string]string{"RATCHET_EVAL_DIR": t.TempDir()}, "eval", "run", suite, "--json", "--quiet", "--model", "scripted:"+filepath.Join(filepath.Dir(quickstart), "turns.yaml"))
	c.wantCode(t, exitDone)
	var sum eval.Summary
	if err := json.Unmarshal([]byte(c.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, g := range sum.Cases {
		got[g.Name] = g.Metrics.Success.K
	}
	// The inline case has the goal but not the workspace tools (the log
	// does not say where the workspace was), so only the task case passes.
	if _, ok := got["from-"+firstRun(t, logPath)]; len(got) != 3 || got["qs-short"] != 1 || got["by-id"] != 1 || !ok {
		t.Errorf("cases and successes: %v", got)
	}
}

func firstRun(t *testing.T, logPath string) string {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Run string }
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Run
}

// TestExampleSuite runs examples/suites/suite.yaml as its header says, and
// checks every example case passes (the scripted recordings succeed).
func TestExampleSuite(t *testing.T) {
	requireSandboxTools(t)
	c := run(t, map[string]string{"RATCHET_EVAL_DIR": t.TempDir()}, "eval", "run", "../../examples/suites/suite.yaml", "--json", "--quiet")
	c.wantCode(t, exitDone)
	var sum eval.Summary
	if err := json.Unmarshal([]byte(c.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	for _, g := range sum.Cases {
		if !strings.Contains(g.Name, "/") && g.Metrics.Success.K != g.Metrics.Runs {
			t.Errorf("example case %s: %d of %d runs succeeded", g.Name, g.Metrics.Success.K, g.Metrics.Runs)
		}
	}
	// Scripted models go by their recording's name: three recordings, two
	// simulated models.
	var models []string
	for _, g := range sum.Models {
		models = append(models, g.Name)
	}
	if len(models) != 5 || !slices.Contains(models, "scripted:quickstart-recording") || !slices.Contains(models, "sim:weak") {
		t.Errorf("models: %v", models)
	}
}

// TestEvalRunLimitRepeats: --limit runs the first N cases, --repeats runs
// each that many times, whatever the suite says (the suite has 42 cases,
// one of them repeated 3 times).
func TestEvalRunLimitRepeats(t *testing.T) {
	env := map[string]string{"RATCHET_EVAL_DIR": t.TempDir()}
	c := run(t, env, "eval", "run", evalSuite(t, 0.9), "--label", "small", "--limit", "2", "--repeats", "2", "--json", "--quiet")
	c.wantCode(t, exitDone)
	var sum eval.Summary
	if err := json.Unmarshal([]byte(c.stdout), &sum); err != nil {
		t.Fatalf("stdout is not a Summary: %v\n%v", err, c)
	}
	if len(sum.Cases) != 2 || sum.Suite.Runs != 4 {
		t.Errorf("%d cases, %d runs; want 2 cases of 2 repeats", len(sum.Cases), sum.Suite.Runs)
	}
	run(t, env, "eval", "run", evalSuite(t, 0.9), "--limit", "-1").wantCode(t, exitUsage)
}
