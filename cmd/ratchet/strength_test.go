package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clampTask is a task whose tests never go above hi: the mutants of the
// reference's upper clamp survive.
var clampTask = map[string]string{
	"task.yaml": `mode: generate
goal: Write clamp(x, lo, hi).
artifact: clamp.py
model: scripted:turns.yaml
reference: reference.py
checks:
  - syntax: python
  - exec: {command: [python3, -B, test_clamp.py], tests: [test_clamp.py], timeout: 20s}
    tier: expensive
`,
	"test_clamp.py": "from clamp import clamp\nassert clamp(5, 0, 10) == 5\nassert clamp(-1, 0, 10) == 0\n",
	"reference.py":  "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n",
	"wrong.py":      "def clamp(x, lo, hi):\n    return hi\n",
	"turns.yaml":    "name: clamp\nturns:\n  - text: |\n      ```python\n      def clamp(x, lo, hi):\n          return max(lo, min(x, hi))\n      ```\n",
}

func TestVerifyStrength(t *testing.T) {
	requireSandboxTools(t)
	dir := write(t, clampTask)
	task := filepath.Join(dir, "task.yaml")
	env := map[string]string{"XDG_CACHE_HOME": t.TempDir()}

	c := run(t, env, "verify", "--strength", task)
	c.wantCode(t, exitDone)
	for _, want := range []string{
		"mutation score 0.636: 7 of 11 mutants killed, 4 survived",
		"#", "line 4, removal (statement removed):",
		"    -    if x > hi:\n    -        return hi\n    +    pass\n",
	} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, c.stdout)
		}
	}

	c = run(t, env, "verify", "--strength", "--json", "--parallel", "1", task)
	c.wantCode(t, exitDone)
	var rep struct {
		Score    float64 `json:"score"`
		Parallel int     `json:"parallel"`
		Mutants  []struct {
			Line   int    `json:"line"`
			Status string `json:"status"`
			Diff   string `json:"diff"`
		} `json:"mutants"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, c.stdout)
	}
	if rep.Parallel != 1 || len(rep.Mutants) != 11 || rep.Score < 0.63 || rep.Score > 0.64 {
		t.Errorf("json report: %+v", rep)
	}

	// An agent-mode task's checks never see the answer: refused.
	agent := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(agent, []byte("goal: g\nchecks:\n  - exec: {command: [python3, test_clamp.py], tests: [test_clamp.py]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = run(t, env, "verify", "--strength", "--reference", filepath.Join(dir, "reference.py"), agent)
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, "is not in generate mode") {
		t.Errorf("stderr: %s", c.stderr)
	}

	// A reference that fails its own checks measures nothing.
	c = run(t, env, "verify", "--strength", "--reference", filepath.Join(dir, "wrong.py"), task)
	c.wantCode(t, exitNotDone)
	if !strings.Contains(c.stderr, "the reference does not pass every check: exec") {
		t.Errorf("stderr: %s", c.stderr)
	}
}

// TestRunRefusesWeakChecks: min_strength makes run refuse checks weaker
// than asked, with the score and the survivors; the measurement is cached.
func TestRunRefusesWeakChecks(t *testing.T) {
	requireSandboxTools(t)
	files := map[string]string{}
	for k, v := range clampTask {
		files[k] = v
	}
	files["task.yaml"] += "min_strength: 0.8\n"
	dir := write(t, files)
	task := filepath.Join(dir, "task.yaml")
	cache := t.TempDir()
	env := map[string]string{"XDG_CACHE_HOME": cache}

	c := run(t, env, "run", "--quiet", task)
	c.wantCode(t, exitUsage)
	for _, want := range []string{"the checks are weaker than min_strength 0.80: mutation score 0.636, 7 of 11 mutants of reference.py killed", "+    pass"} {
		if !strings.Contains(c.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, c.stderr)
		}
	}
	// verify --strength measures, and fails the task's demand too.
	c = run(t, env, "verify", "--strength", task)
	c.wantCode(t, exitNotDone)
	if !strings.Contains(c.stderr, "score 0.636 is below the task's min_strength 0.80") {
		t.Errorf("stderr: %s", c.stderr)
	}
	entries, err := os.ReadDir(filepath.Join(cache, "ratchet", "strength"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache: %v %v", entries, err)
	}

	// Stronger tests change the key: measured again, and now enough. The
	// two boundary mutants (x < lo → x <= lo, x > hi → x >= hi) survive any
	// test: they are equivalent, which no cheap check proves.
	strong := files["test_clamp.py"] + "assert clamp(11, 0, 10) == 10\nassert clamp(10, 0, 10) == 10\nassert clamp(0, 0, 10) == 0\n"
	if err := os.WriteFile(filepath.Join(dir, "test_clamp.py"), []byte(strong), 0o644); err != nil {
		t.Fatal(err)
	}
	c = run(t, env, "run", "--quiet", task)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stderr, "check strength 0.818 ≥ 0.80") || strings.Contains(c.stderr, "from the cache") {
		t.Errorf("stderr:\n%s", c.stderr)
	}
	c = run(t, env, "run", "--quiet", task)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stderr, "from the cache") {
		t.Errorf("second run did not use the cache:\n%s", c.stderr)
	}
}

// TestVerifyManyCandidatesInParallel checks several files at once, each
// report in the order given.
func TestVerifyManyCandidatesInParallel(t *testing.T) {
	requireSandboxTools(t)
	dir := write(t, clampTask)
	task := filepath.Join(dir, "task.yaml")
	ref, wrong := filepath.Join(dir, "reference.py"), filepath.Join(dir, "wrong.py")
	c := run(t, nil, "verify", "--json", task, ref, wrong, ref, wrong)
	c.wantCode(t, exitNotDone)
	var reports []fileReport
	if err := json.Unmarshal([]byte(c.stdout), &reports); err != nil {
		t.Fatalf("%v\n%s", err, c.stdout)
	}
	var got []string
	for _, r := range reports {
		got = append(got, filepath.Base(r.File)+map[bool]string{true: " ok", false: " rejected"}[r.OK])
	}
	if strings.Join(got, ", ") != "reference.py ok, wrong.py rejected, reference.py ok, wrong.py rejected" {
		t.Errorf("reports: %v", got)
	}
	c = run(t, nil, "verify", task, ref, ref)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "2 candidates in ") || !strings.Contains(c.stdout, "per second") {
		t.Errorf("stdout:\n%s", c.stdout)
	}
}

// TestEvalReportShowsCheckStrength: a case whose task names a reference
// has its check strength measured, stored with each record and shown
// beside its success rate.
func TestEvalReportShowsCheckStrength(t *testing.T) {
	requireSandboxTools(t)
	dir := write(t, clampTask)
	suite := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(suite, []byte("label: s\nrepeats: 2\ncases:\n  - name: clamp\n    task: task.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RATCHET_EVAL_DIR": t.TempDir(), "XDG_CACHE_HOME": t.TempDir()}
	c := run(t, env, "eval", "run", "--quiet", suite)
	c.wantCode(t, exitDone)
	c = run(t, env, "eval", "report", "s")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "| clamp | 2 | 100.0% (2/2) | 0.636 | – |") {
		t.Errorf("report:\n%s", c.stdout)
	}
}
