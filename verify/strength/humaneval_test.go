package strength_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify/strength"
)

// A HumanEval problem, as in openai/human-eval's data/HumanEval.jsonl.gz.
type problem struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	CanonicalSolution string `json:"canonical_solution"`
	Test              string `json:"test"`
	EntryPoint        string `json:"entry_point"`
}

func readProblems(t *testing.T, path string) []problem {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	var out []problem
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p problem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeTask turns a problem into a task directory: the reference is the
// prompt with the canonical solution, and the gate check runs the
// problem's own check() on the candidate in the sandbox.
func writeTask(t *testing.T, dir string, p problem) string {
	t.Helper()
	task := fmt.Sprintf(`mode: generate
goal: %q
artifact: solution.py
reference: reference.py
checks:
  - exec:
      command: [python3, -B, test_humaneval.py]
      format: exit
      tests: [test_humaneval.py]
      timeout: 20s
    tier: expensive
`, "Complete the function:\n"+p.Prompt)
	// HumanEval runs prompt, solution and test in one namespace: some
	// tests call the prompt's helpers (encode_cyclic, poly), hence the *.
	test := fmt.Sprintf("from solution import *\nfrom solution import %s\n\n%s\n\ncheck(%s)\n", p.EntryPoint, p.Test, p.EntryPoint)
	for name, data := range map[string]string{"task.yaml": task, "reference.py": p.Prompt + p.CanonicalSolution, "test_humaneval.py": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "task.yaml")
}

// summary is one problem's line in the full run's output.
type summary struct {
	TaskID     string     `json:"task_id"`
	Score      float64    `json:"score"`
	Killed     int        `json:"killed"`
	Survived   int        `json:"survived"`
	Equivalent int        `json:"equivalent"`
	Stillborn  int        `json:"stillborn"`
	Duplicates int        `json:"duplicates"`
	Errors     int        `json:"errors"`
	Seconds    float64    `json:"seconds"`
	Survivors  []survivor `json:"survivors,omitempty"`
	Failure    string     `json:"failure,omitempty"`
}

type survivor struct {
	Line        int    `json:"line"`
	Description string `json:"description"`
	Diff        string `json:"diff"`
}

func measureProblem(t *testing.T, r sandbox.Runner, p problem) summary {
	t.Helper()
	path := writeTask(t, t.TempDir(), p)
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tiers, err := tf.Verifiers(taskfile.Env{Sandbox: func() (sandbox.Runner, error) { return r, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(tf.Reference)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := strength.Measure(context.Background(), strength.Config{Filename: tf.Artifact, Reference: ref, Checks: tiers.Expensive})
	s := summary{TaskID: p.TaskID}
	if err != nil {
		s.Failure = err.Error()
		return s
	}
	s.Score, s.Killed, s.Survived, s.Equivalent = rep.Score, rep.Killed, rep.Survived, rep.Equivalent
	s.Stillborn, s.Duplicates, s.Errors, s.Seconds = rep.Stillborn, rep.Duplicates, rep.Errors, rep.Duration.Seconds()
	for _, m := range rep.Surviving() {
		s.Survivors = append(s.Survivors, survivor{Line: m.Line, Description: m.Description, Diff: m.Diff})
	}
	return s
}

func humanevalSandbox(t *testing.T) sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(sandbox.Config{})
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("no sandbox: %v (./test.sh installs bubblewrap)", err))
	}
	return r
}

// TestHumanEvalStrength measures HumanEval's own tests on five of its
// problems (testdata/humaneval-5.jsonl, MIT licence beside it), with their
// canonical solutions as references. The counts are pinned: a change in
// the mutators or in how mutants are judged shows here.
func TestHumanEvalStrength(t *testing.T) {
	r := humanevalSandbox(t)
	got := map[string]string{}
	for _, p := range readProblems(t, filepath.Join("testdata", "humaneval-5.jsonl")) {
		s := measureProblem(t, r, p)
		if s.Failure != "" || s.Errors > 0 {
			t.Errorf("%s: %s (%d errors)", p.TaskID, s.Failure, s.Errors)
		}
		var surv []string
		for _, m := range s.Survivors {
			surv = append(surv, fmt.Sprintf("%d %s", m.Line, m.Description))
		}
		got[p.TaskID] = fmt.Sprintf("killed %d survived %d equivalent %d: %s", s.Killed, s.Survived, s.Equivalent, strings.Join(surv, "; "))
	}
	want := map[string]string{
		"HumanEval/0":  "killed 14 survived 1 equivalent 0: 16 < → <=",
		"HumanEval/12": "killed 9 survived 0 equivalent 0: ",
		"HumanEval/2":  "killed 2 survived 0 equivalent 0: ",
		// m = l[0] → l[1] or l[-1], and > → >=, still find the maximum:
		// survivors that are equivalent, though no cheap test can tell.
		"HumanEval/35": "killed 7 survived 3 equivalent 0: 10 0 → 1; 10 0 → -1; 12 > → >=",
		"HumanEval/53": "killed 2 survived 0 equivalent 0: ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestHumanEvalStrengthAll measures all 164 problems when
// RATCHET_HUMANEVAL names HumanEval.jsonl.gz, writing one JSON line per
// problem to RATCHET_HUMANEVAL_OUT (RATCHET_HUMANEVAL_ONLY: a comma-separated
// list of task ids to measure alone). It takes many minutes: run it alone,
// niced (docs/verification.md has the command and the numbers).
func TestHumanEvalStrengthAll(t *testing.T) {
	path := os.Getenv("RATCHET_HUMANEVAL")
	if path == "" {
		t.Skip("set RATCHET_HUMANEVAL to HumanEval.jsonl.gz (and RATCHET_HUMANEVAL_OUT) to measure every problem")
	}
	r := humanevalSandbox(t)
	out, err := os.Create(os.Getenv("RATCHET_HUMANEVAL_OUT"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	enc := json.NewEncoder(out)
	start := time.Now()
	only := os.Getenv("RATCHET_HUMANEVAL_ONLY")
	for _, p := range readProblems(t, path) {
		if only != "" && !slices.Contains(strings.Split(only, ","), p.TaskID) {
			continue
		}
		s := measureProblem(t, r, p)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: score %.3f (%d/%d) in %.1fs %s", p.TaskID, s.Score, s.Killed, s.Killed+s.Survived, s.Seconds, s.Failure)
	}
	t.Logf("all problems in %s", time.Since(start).Round(time.Second))
}
