package strength_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
	"github.com/ratchetloop/ratchet/verify/strength"
)

// isolationReport is one problem's line of the judge-isolation
// measurement: the canonical solution and each mutant of it checked by
// HumanEval's own tests under pytest, in-process and in judge isolation.
type isolationReport struct {
	TaskID string `json:"task_id"`
	// Canonical is the canonical solution's verdict in each isolation.
	CanonicalInProcess bool `json:"canonical_in_process"`
	CanonicalJudge     bool `json:"canonical_judge"`
	Mutants            int  `json:"mutants"`
	// Disagree lists the mutants judged differently, with both details.
	Disagree []string `json:"disagree,omitempty"`
	// Seconds is the check time summed over every candidate.
	InProcessSeconds float64 `json:"in_process_seconds"`
	JudgeSeconds     float64 `json:"judge_seconds"`
	Failure          string  `json:"failure,omitempty"`
	// CanonicalDetail is the detail of a canonical solution that failed.
	CanonicalDetail string `json:"canonical_detail,omitempty"`
}

// pytestChecks are a problem's tests as a pytest file, checked in each
// isolation.
func pytestChecks(t *testing.T, r sandbox.Runner, p problem) map[string]verify.Verifier {
	t.Helper()
	dir := t.TempDir()
	test := fmt.Sprintf("from solution import *\nfrom solution import %s\n\n%s\n\n\ndef test_humaneval():\n    check(%s)\n", p.EntryPoint, p.Test, p.EntryPoint)
	path := filepath.Join(dir, "test_humaneval.py")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	checks := map[string]verify.Verifier{}
	for _, isolation := range []string{execcheck.InProcess, execcheck.Judge} {
		v, err := execcheck.New(execcheck.Config{
			Name: "humaneval", Runner: r, Format: "pytest", Artifact: "solution.py", Isolation: isolation,
			Command: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_humaneval.py"},
			Tests:   []sandbox.Mount{{Source: path, Target: "test_humaneval.py"}},
			Limits:  sandbox.Limits{Wall: 30 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		checks[isolation] = v
	}
	return checks
}

// compareIsolations checks the canonical solution and every mutant of it
// in both isolations, two candidates at once.
// limit > 0 checks only the first limit mutants.
func compareIsolations(t *testing.T, r sandbox.Runner, p problem, limit int) isolationReport {
	t.Helper()
	rep := isolationReport{TaskID: p.TaskID}
	ref := p.Prompt + p.CanonicalSolution
	mutants, _, _, err := strength.Generate(context.Background(), strength.Config{Filename: "solution.py", Reference: []byte(ref)})
	if err != nil {
		rep.Failure = err.Error()
		return rep
	}
	checks := pytestChecks(t, r, p)
	sources := []string{ref}
	for _, m := range mutants {
		if !m.Equivalent && (limit == 0 || len(sources) <= limit) {
			sources = append(sources, m.Source)
		}
	}
	rep.Mutants = len(sources) - 1
	type verdicts map[string]verify.Verdict
	got := make([]verdicts, len(sources))
	var mu sync.Mutex
	took := map[string]time.Duration{}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range work {
				got[i] = verdicts{}
				for isolation, v := range checks {
					start := time.Now()
					vd, err := v.Check(context.Background(), verify.Candidate{Answer: sources[i]})
					if err != nil {
						vd.Detail = "error: " + err.Error()
					}
					mu.Lock()
					took[isolation] += time.Since(start)
					got[i][isolation] = vd
					mu.Unlock()
				}
			}
		})
	}
	for i := range sources {
		work <- i
	}
	close(work)
	wg.Wait()
	rep.CanonicalInProcess, rep.CanonicalJudge = got[0][execcheck.InProcess].OK, got[0][execcheck.Judge].OK
	for _, v := range got[0] {
		if !v.OK {
			rep.CanonicalDetail += v.Isolation + ": " + v.Detail + "\n"
		}
	}
	for i, g := range got[1:] {
		in, j := g[execcheck.InProcess], g[execcheck.Judge]
		if in.OK != j.OK {
			rep.Disagree = append(rep.Disagree, fmt.Sprintf("mutant %d: in-process ok=%v %q, judge ok=%v %q", i+1, in.OK, in.Detail, j.OK, j.Detail))
		}
	}
	rep.InProcessSeconds, rep.JudgeSeconds = took[execcheck.InProcess].Seconds(), took[execcheck.Judge].Seconds()
	return rep
}

// TestHumanEvalJudge: on five HumanEval problems, the canonical solutions
// pass in judge isolation as in-process, and every mutant gets the same
// verdict in both.
func TestHumanEvalJudge(t *testing.T) {
	r := humanevalSandbox(t)
	for _, p := range readProblems(t, filepath.Join("testdata", "humaneval-5.jsonl")) {
		rep := compareIsolations(t, r, p, 0)
		if rep.Failure != "" || !rep.CanonicalInProcess || !rep.CanonicalJudge || len(rep.Disagree) > 0 || rep.Mutants == 0 {
			t.Errorf("%+v", rep)
		}
		t.Logf("%s: %d mutants; in-process %.1fs, judge %.1fs", p.TaskID, rep.Mutants, rep.InProcessSeconds, rep.JudgeSeconds)
	}
}

// TestHumanEvalJudgeAll does the same for every problem when
// RATCHET_HUMANEVAL names HumanEval.jsonl.gz, writing one JSON line per
// problem to RATCHET_HUMANEVAL_OUT; RATCHET_HUMANEVAL_MUTANTS=N checks only
// the first N mutants of each (docs/verification.md has the numbers).
func TestHumanEvalJudgeAll(t *testing.T) {
	path := os.Getenv("RATCHET_HUMANEVAL")
	if path == "" {
		t.Skip("set RATCHET_HUMANEVAL to HumanEval.jsonl.gz (and RATCHET_HUMANEVAL_OUT) to compare the isolations on every problem")
	}
	r := humanevalSandbox(t)
	out, err := os.Create(os.Getenv("RATCHET_HUMANEVAL_OUT"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	enc := json.NewEncoder(out)
	var in, judged time.Duration
	pass, mutants, disagree := 0, 0, 0
	limit, _ := strconv.Atoi(os.Getenv("RATCHET_HUMANEVAL_MUTANTS"))
	problems := readProblems(t, path)
	for _, p := range problems {
		rep := compareIsolations(t, r, p, limit)
		if err := enc.Encode(rep); err != nil {
			t.Fatal(err)
		}
		if rep.CanonicalJudge && rep.CanonicalInProcess {
			pass++
		}
		mutants += rep.Mutants
		disagree += len(rep.Disagree)
		in += time.Duration(rep.InProcessSeconds * float64(time.Second))
		judged += time.Duration(rep.JudgeSeconds * float64(time.Second))
		t.Logf("%s: canonical %v/%v, %d mutants, %d disagree; in-process %.1fs, judge %.1fs %s", p.TaskID, rep.CanonicalInProcess, rep.CanonicalJudge, rep.Mutants, len(rep.Disagree), rep.InProcessSeconds, rep.JudgeSeconds, rep.Failure)
	}
	t.Logf("%d of %d canonical solutions pass in both; %d mutants, %d judged differently; check time in-process %s, judge %s (%.2f×)",
		pass, len(problems), mutants, disagree, in.Round(time.Second), judged.Round(time.Second), judged.Seconds()/in.Seconds())
}
