package main

import (
	"encoding/json"
	"fmt"
	"maps"
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
	// With the model it was given, which the case keeps.
	state := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": state}
	wrong := filepath.Join(write(t, map[string]string{"wrong.yaml": wrongTurns}), "wrong.yaml")
	c = run(t, env, "run", quickstart, "--steps", "3", "--model", "scripted:"+wrong, "--json")
	c.wantCode(t, exitNotDone)
	byIDStatus := c.result(t).Status
	id := regexp.MustCompile(`run: (\S+) `).FindStringSubmatch(c.stderr)
	if id == nil {
		t.Fatalf("no run ID:\n%v", c)
	}
	c = run(t, env, "eval", "add", "--from-run", id[1], "--suite", suite, "--name", "by-id")
	c.wantCode(t, exitDone)
	data, _ = os.ReadFile(suite)
	for _, want := range []string{"from_run: " + id[1], "model: scripted:" + wrong, "steps: 3", "steps: 2"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("suite lacks %q:\n%s", want, data)
		}
	}
	// "last" names the same run, and the suite keeps its ID.
	c = run(t, env, "eval", "add", "--from-run", "last", "--suite", suite, "--name", "by-last")
	c.wantCode(t, exitDone)
	if data, _ = os.ReadFile(suite); strings.Contains(string(data), "from_run: last") || strings.Count(string(data), "from_run: "+id[1]) != 2 {
		t.Errorf("--from-run last kept the word, not the run's ID:\n%s", data)
	}
	c = run(t, env, "eval", "add", "--from-run", "run-nope", "--suite", suite)
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, "no run run-nope in DB (ratchet ls lists runs)") {
		t.Errorf("unknown run: %v", c)
	}

	// The suite runs (the inline case, which names no model, on the
	// fallback): each case made from a run fails as its run did, with its
	// budget and model.
	dir = t.TempDir()
	turns, _ := filepath.Abs(filepath.Join(filepath.Dir(quickstart), "turns.yaml"))
	c = run(t, map[string]string{"RATCHET_EVAL_DIR": dir, "RATCHET_MODEL": "scripted:" + turns}, "eval", "run", suite, "--quiet", "--label", "regr")
	c.wantCode(t, exitDone)
	recs, err := eval.ReadRecords(filepath.Join(dir, "regr"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Case] = string(r.Result.Status) + " " + r.Model
	}
	// The inline case has the goal but not the workspace tools (the log
	// does not say where the workspace was): it cannot fail as its run did.
	delete(got, "from-"+firstRun(t, logPath))
	want := map[string]string{"qs-short": "exhausted:steps scripted:quickstart-recording", "by-id": string(byIDStatus) + " scripted:wrong-every-time",
		"by-last": string(byIDStatus) + " scripted:wrong-every-time"}
	if !maps.Equal(got, want) {
		t.Errorf("the cases ended %v, want %v (as their runs did)", got, want)
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

// TestEvalRunsAreRuns: an eval's task-case runs are in the run database,
// labelled, and ls, show, replay and resume know them.
func TestEvalRunsAreRuns(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	env := map[string]string{"RATCHET_EVAL_DIR": t.TempDir(), "RATCHET_DB": dbPath}
	suite := evalSuite(t, 0.9)
	htmlPath := filepath.Join(t.TempDir(), "report.html")
	run(t, env, "eval", "run", suite, "--quiet", "--html", htmlPath).wantCode(t, exitDone)
	// The report links each case to its runs, each run to its log, and
	// names its run ID.
	page, _ := os.ReadFile(htmlPath)
	logHref := "file://" + filepath.ToSlash(filepath.Join(env["RATCHET_EVAL_DIR"], "cli", "logs"))
	for _, want := range []string{`<a href="#case-0">always-wrong</a>`, `id="case-0"`, `title="run cli/always-wrong/r0: ratchet show cli/always-wrong/r0"><a href="` + logHref, `title="run cli/quickstart/r2: ratchet show cli/quickstart/r2"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report lacks %q:\n%s", want, page[max(0, strings.Index(string(page), "<h2>Runs")):])
		}
	}

	ids := func(label string) []string {
		t.Helper()
		c := run(t, env, "ls", "--label", label, "--limit", "0", "--json")
		c.wantCode(t, exitDone)
		var rows []struct{ ID, Status string }
		if err := json.Unmarshal([]byte(c.stdout), &rows); err != nil {
			t.Fatalf("ls --json: %v\n%v", err, c)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.ID+" "+r.Status)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"cli/always-wrong/r0 exhausted:steps", "cli/quickstart/r0 done", "cli/quickstart/r1 done", "cli/quickstart/r2 done"}
	if got := ids("eval:cli"); !slices.Equal(got, want) {
		t.Errorf("ls --label eval:cli:\n got %q\nwant %q (the sim cases are not recorded)", got, want)
	}
	if got := ids("case:always-wrong"); !slices.Equal(got, want[:1]) {
		t.Errorf("ls --label case:always-wrong: %q", got)
	}
	c := run(t, env, "show", "cli/always-wrong/r0")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "exhausted:steps") {
		t.Errorf("show:\n%v", c)
	}
	c = run(t, env, "replay", "cli/quickstart/r1")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "identical") {
		t.Errorf("replay:\n%v", c)
	}
	// Resume rebuilds the task from the row (a finished run is refused as
	// finished, not as a run it cannot rebuild).
	c = run(t, env, "resume", "cli/quickstart/r0")
	if c.code == exitDone || !strings.Contains(c.stderr, "finished") || strings.Contains(c.stderr, "not started by") {
		t.Errorf("resume of a finished eval run:\n%v", c)
	}
	// The results name their runs.
	recs, err := eval.ReadRecords(filepath.Join(env["RATCHET_EVAL_DIR"], "cli"))
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, r := range recs {
		if r.Run != "" {
			named++
		}
	}
	if named != 4 {
		t.Errorf("%d records name their run, want 4", named)
	}

	// The same label in another result directory: the IDs are taken, so
	// the new attempts take the next ones.
	run(t, env, "eval", "run", suite, "--quiet", "--dir", t.TempDir()).wantCode(t, exitDone)
	if got := ids("case:always-wrong"); !slices.Equal(got, []string{"cli/always-wrong/r0 exhausted:steps", "cli/always-wrong/r0-2 exhausted:steps"}) {
		t.Errorf("after a second attempt: %q", got)
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

// TestImpossibleSuite runs examples/impossible/suite.yaml: the honest
// agent's twins end without done, the cheater's (one answers what the check
// wants, one special-cases the test's input) end done, and the report says
// so per model, naming the twins that ended done.
func TestImpossibleSuite(t *testing.T) {
	requireSandboxTools(t)
	c := run(t, map[string]string{"RATCHET_EVAL_DIR": t.TempDir()}, "eval", "run", "../../examples/impossible/suite.yaml", "--json", "--quiet")
	c.wantCode(t, exitDone)
	var sum eval.Summary
	if err := json.Unmarshal([]byte(c.stdout), &sum); err != nil {
		t.Fatal(err)
	}
	cheat := map[string]string{}
	for _, g := range sum.Models {
		cheat[g.Name] = fmt.Sprintf("%d/%d, success %d/%d", g.Metrics.Cheat.K, g.Metrics.Cheat.N, g.Metrics.Success.K, g.Metrics.Success.N)
	}
	if want := map[string]string{"scripted:honest": "0/2, success 2/2", "scripted:cheater": "2/2, success 2/2"}; !maps.Equal(cheat, want) {
		t.Errorf("cheat rates %v, want %v", cheat, want)
	}
	if got := strings.Join(sum.Suite.Cheated, " "); got != "impossible/add-cheater/impossible/r0 impossible/arith-cheater/impossible/r0" {
		t.Errorf("cheated %q", got)
	}
}

// TestRescoreAgentWorkspace: an agent-mode case with an exec check is
// rescored on the workspace its run left, rebuilt from the stored patch in
// a copy (fix-project's tests pass on it); a patch that changes nothing
// leaves the bug in, and the same candidate is rejected.
func TestRescoreAgentWorkspace(t *testing.T) {
	requireSandboxTools(t)
	root := t.TempDir()
	env := map[string]string{"RATCHET_EVAL_DIR": root}
	suite := "../../examples/suites/suite.yaml"
	run(t, env, "eval", "run", suite, "--label", "base", "--limit", "3", "--repeats", "1", "--quiet").wantCode(t, exitDone)
	fixProject := func(label string) eval.Record {
		t.Helper()
		recs, err := eval.ReadRecords(filepath.Join(root, label))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Case == "fix-project" {
				return r
			}
		}
		t.Fatalf("%s has no fix-project record", label)
		return eval.Record{}
	}
	c := run(t, env, "eval", "rescore", "base", "--suite", suite)
	c.wantCode(t, exitDone)
	if r := fixProject("base.rescore"); r.Result.Status != "done" || !strings.Contains(r.Result.Reason, "earlier attempts not judged") {
		t.Errorf("fix-project rescored %s: %s", r.Result.Status, r.Result.Reason)
	}
	// The same record with a patch that changes nothing.
	rec := fixProject("base")
	if rec.Result.Patch == nil || rec.Result.Patch.Diff == "" {
		t.Fatalf("the eval run kept no patch: %+v", rec.Result.Patch)
	}
	rec.Result.Patch.Diff = ""
	if err := eval.WriteRecords(filepath.Join(root, "nopatch"), []eval.Record{rec}); err != nil {
		t.Fatal(err)
	}
	run(t, env, "eval", "rescore", "nopatch", "--suite", suite).wantCode(t, exitDone)
	if r := fixProject("nopatch.rescore"); r.Result.Status != "rejected" {
		t.Errorf("with no change the bug stays, yet fix-project rescored %s: %s", r.Result.Status, r.Result.Reason)
	}
}
