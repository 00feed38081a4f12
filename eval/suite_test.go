package eval

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/sim"
	"github.com/ratchetloop/ratchet/taskfile"
)

func TestParseSuite(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tasks/add/task.yaml", "goal: add\nmodel: scripted:turns.yaml\nchecks: [{equals: \"5\"}]\n")
	path := writeFile(t, dir, "suite.yaml", `label: nightly
repeats: 2
concurrency: 3
cases:
  - task: tasks/add/task.yaml
    budget: {steps: 4, cost: 0.5}
  - name: inline
    repeats: 5
    expect: {status: "exhausted:steps", not_answer: "4"}
    category: budget
    task:
      goal: |
        say five
      # a comment inside the inline task
      checks:
        - equals: "5"
sim:
  - name: s
    cases: 3
    p: 0.8
    policy: fixed-retries
    holdout: false
`)
	s, err := LoadSuite(path)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, TaskPath, Goal string
		Repeats              int
		Sim                  bool
	}
	var got []row
	for _, c := range s.Cases {
		r := row{Name: c.Name, TaskPath: c.TaskPath, Repeats: c.Repeats, Sim: c.Sim != nil}
		if c.Task != nil {
			r.Goal = c.Task.Goal
		}
		got = append(got, r)
	}
	want := []row{
		{"add", "tasks/add/task.yaml", "add", 2, false},
		{"inline", "", "say five", 5, false},
		{"s/0", "", "", 2, true}, {"s/1", "", "", 2, true}, {"s/2", "", "", 2, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
	if s.Label != "nightly" || s.Concurrency != 3 || s.Runs() != 2+5+6 {
		t.Errorf("suite: label %q, concurrency %d, runs %d", s.Label, s.Concurrency, s.Runs())
	}
	if b := s.Cases[0].Budget; b != (budget.Limits{Steps: 4, Cost: budget.USD(0.5)}) {
		t.Errorf("case budget: %+v", b)
	}
	if e := s.Cases[1].Expect; e == nil || e.Status != loop.Status("exhausted:steps") || e.NotAnswer != "4" {
		t.Errorf("expect: %+v", e)
	}
	sc := s.Cases[2].Sim
	if sc.Config.P != 0.8 || sc.Policy != sim.FixedRetries || sc.Holdout || sc.Model != "sim:s" {
		t.Errorf("sim case: %+v", sc)
	}
	// Relative paths inside an inline task resolve against the suite.
	if s.Cases[1].Task.Dir != dir {
		t.Errorf("inline task dir %q, want %q", s.Cases[1].Task.Dir, dir)
	}
}

// TestParseSuiteProblems checks every problem is reported at once with
// the line it is on, including those inside inline tasks and named task
// files.
func TestParseSuiteProblems(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad.yaml", "goal: g\n")
	path := writeFile(t, dir, "suite.yaml", `label: "a b"
repeats: 0
colour: red
cases:
  - task: missing.yaml
  - task: bad.yaml
  - name: x
    task:
      goal: g
      checks:
        - equals: "1"
      budget:
        steps: many
  - name: y
    task: {goal: g, checks: [{equals: "1"}]}
    budget: {stepz: 1}
  - category: nope
  - name: z/impossible
    task: {goal: g, checks: [{equals: "1"}]}
impossible: maybe
sim:
  - name: s
    p: 2
    cases: 1
  - p: 0.5
`)
	_, err := LoadSuite(path)
	var ps taskfile.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v, want Problems", err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, filepath.Base(p.File)+":"+strconv.Itoa(p.Line)+": "+firstWords(p.Msg, 4))
	}
	want := []string{
		"bad.yaml:1: checks are missing: ratchet",
		"suite.yaml:1: \"a b\" may only",
		"suite.yaml:2: repeats must be between",
		"suite.yaml:3: unknown field \"colour\" in",
		"suite.yaml:5: task: open " + filepath.Join(dir, "missing.yaml") + ": no",
		"suite.yaml:13: budget.steps must be a",
		"suite.yaml:16: unknown field \"stepz\" in",
		"suite.yaml:17: category \"nope\" is not",
		"suite.yaml:17: case needs task: (a",
		"suite.yaml:18: case name: \"z/impossible\" ends",
		"suite.yaml:20: impossible must be true",
		"suite.yaml:22: sim: p: 2 is",
		"suite.yaml:25: sim block needs cases:",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(n, len(f))], " ")
}
