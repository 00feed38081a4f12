// Package strength measures how strong a task's checks are: it makes
// mutants of a reference solution (small, plausible bugs made at the syntax
// tree: a flipped comparison, an operator swapped, a constant off by one, a
// negated condition, a removed statement, swapped return values), runs the
// gate checks on each, and reports the share the checks reject — the
// mutation score. A mutant the checks accept is a bug a run could hand over
// as "done"; it is reported as a diff with its line.
//
// Mutants are generated on the host without running the reference (Python
// through an embedded script using python3's ast module, which only parses
// and compiles; Go through go/ast), and run only through the checks, which
// put them in the sandbox. Mutants that cannot differ from the reference
// (identical bytecode for Python, identical printed source for Go) are
// reported apart as equivalent and left out of the score.
package strength

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/verify"
)

// Mutant is one changed copy of the reference.
type Mutant struct {
	ID int `json:"id"`
	// Line is the reference's line the change starts on (1-based).
	Line int `json:"line"`
	// Kind is the mutator: comparison, arithmetic, boolean, constant,
	// negation, removal or swap.
	Kind        string `json:"kind"`
	Description string `json:"description"` // e.g. "< → <="
	Source      string `json:"-"`
	// Diff is a unified diff from the reference to the mutant.
	Diff string `json:"diff"`
	// Equivalent is set when the mutant provably behaves as the reference
	// (see the package doc); such mutants are not run.
	Equivalent bool `json:"equivalent,omitempty"`
}

// Status is what the checks made of a mutant.
type Status string

const (
	Killed     Status = "killed"     // a gate check rejected it
	Survived   Status = "survived"   // every gate check accepted it
	Equivalent Status = "equivalent" // cannot differ from the reference; not run
	Errored    Status = "error"      // a check could not run
)

// Result is one mutant's outcome.
type Result struct {
	Mutant
	Status Status `json:"status"`
	// KilledBy names the check that rejected the mutant, and where.
	KilledBy string        `json:"killed_by,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Report is a measurement of a set of checks.
type Report struct {
	Language string `json:"language"`
	// Score is Killed / (Killed + Survived): the share of non-equivalent
	// mutants the checks reject. It is 1 when there are none.
	Score      float64 `json:"score"`
	Total      int     `json:"total"` // every mutant, equivalent ones included
	Killed     int     `json:"killed"`
	Survived   int     `json:"survived"`
	Equivalent int     `json:"equivalent"`
	Errors     int     `json:"errors"`
	// Stillborn mutants did not parse or compile and were dropped;
	// Duplicates behaved exactly as an earlier mutant and were dropped.
	Stillborn  int           `json:"stillborn"`
	Duplicates int           `json:"duplicates"`
	Reference  time.Duration `json:"reference_ns"` // the reference's own check time
	Duration   time.Duration `json:"duration_ns"`  // the whole measurement
	Parallel   int           `json:"parallel"`
	Results    []Result      `json:"mutants"`
}

// Surviving returns the results of the mutants that survived.
func (r Report) Surviving() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == Survived {
			out = append(out, res)
		}
	}
	return out
}

// Config configures Measure. Reference and Checks are required.
type Config struct {
	// Filename is the reference's name; its extension picks the language
	// when Language is empty (.py python, .go go).
	Filename  string
	Language  string
	Reference []byte
	// Checks are the gate checks (cheap then expensive), run in order on
	// each mutant until one rejects it.
	Checks []verify.Verifier
	// Parallel bounds the mutants checked at once (default the number of
	// CPUs).
	Parallel int
	// Timeout bounds one mutant's checks; a mutant still running then is
	// killed by it (an infinite loop). Default ten times the reference's
	// check time, at least 5s.
	Timeout time.Duration
	// Python is the interpreter that generates Python mutants (default
	// python3).
	Python string
}

// ErrReferenceFails is wrapped by Measure's error when the reference does
// not pass every check: its mutants would measure nothing.
var ErrReferenceFails = errors.New("the reference does not pass every check")

// Generate returns the mutants of cfg.Reference, with the number of
// stillborn and duplicate ones dropped.
func Generate(ctx context.Context, cfg Config) (mutants []Mutant, stillborn, duplicates int, err error) {
	lang, err := language(cfg)
	if err != nil {
		return nil, 0, 0, err
	}
	switch lang {
	case "python":
		mutants, stillborn, duplicates, err = pythonMutants(ctx, cfg.Python, cfg.Reference)
	case "go":
		mutants, stillborn, duplicates, err = goMutants(cfg.Reference)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	name := cfg.Filename
	if name == "" {
		name = "reference"
	}
	for i := range mutants {
		mutants[i].ID = i + 1
		mutants[i].Diff = unifiedDiff(name, string(cfg.Reference), mutants[i].Source)
	}
	return mutants, stillborn, duplicates, nil
}

func language(cfg Config) (string, error) {
	lang := cfg.Language
	if lang == "" {
		switch filepath.Ext(cfg.Filename) {
		case ".py":
			lang = "python"
		case ".go":
			lang = "go"
		default:
			return "", fmt.Errorf("cannot tell the language of %q: name a .py or .go file", cfg.Filename)
		}
	}
	if lang != "python" && lang != "go" {
		return "", fmt.Errorf("mutants are made for python and go, not %q", lang)
	}
	return lang, nil
}

// Measure checks the reference, then every mutant, and reports the score.
// Its error means the measurement could not be made: the reference failed
// a check (ErrReferenceFails, with the verdict), it could not be mutated,
// or a check could not run on the reference.
func Measure(ctx context.Context, cfg Config) (Report, error) {
	start := time.Now()
	if len(cfg.Checks) == 0 {
		return Report{}, errors.New("no gate checks to measure")
	}
	lang, err := language(cfg)
	if err != nil {
		return Report{}, err
	}
	ref, err := judge(ctx, cfg.Checks, string(cfg.Reference))
	if err != nil {
		return Report{}, fmt.Errorf("checking the reference: %w", err)
	}
	if ref.status != Survived {
		return Report{}, fmt.Errorf("%w: %s", ErrReferenceFails, ref.killedBy)
	}
	mutants, stillborn, duplicates, err := Generate(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = runtime.NumCPU()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = max(10*ref.duration, 5*time.Second)
	}
	rep := Report{Language: lang, Total: len(mutants), Stillborn: stillborn, Duplicates: duplicates,
		Reference: ref.duration, Parallel: cfg.Parallel, Results: make([]Result, len(mutants))}
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for i, m := range mutants {
		rep.Results[i] = Result{Mutant: m, Status: Equivalent}
		if m.Equivalent {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				rep.Results[i].Status, rep.Results[i].Error = Errored, ctx.Err().Error()
				return
			}
			defer func() { <-sem }()
			rep.Results[i] = runMutant(ctx, cfg, m)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	for _, r := range rep.Results {
		switch r.Status {
		case Killed:
			rep.Killed++
		case Survived:
			rep.Survived++
		case Equivalent:
			rep.Equivalent++
		case Errored:
			rep.Errors++
		}
	}
	rep.Score = 1
	if n := rep.Killed + rep.Survived; n > 0 {
		rep.Score = float64(rep.Killed) / float64(n)
	}
	sort.SliceStable(rep.Results, func(a, b int) bool { return rep.Results[a].Line < rep.Results[b].Line })
	rep.Duration = time.Since(start)
	return rep, nil
}

func runMutant(ctx context.Context, cfg Config, m Mutant) Result {
	mctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	out := judgeTimed(mctx, cfg.Checks, m.Source)
	res := Result{Mutant: m, Status: out.status, KilledBy: out.killedBy, Duration: out.duration}
	if out.err != nil {
		// A mutant the checks could not finish within the timeout is killed
		// by it; any other failure is the infrastructure's.
		if ctx.Err() == nil && errors.Is(mctx.Err(), context.DeadlineExceeded) {
			res.Status, res.KilledBy = Killed, fmt.Sprintf("timeout (%s)", cfg.Timeout)
		} else {
			res.Status, res.Error = Errored, out.err.Error()
		}
	}
	return res
}

type outcome struct {
	status   Status
	killedBy string
	duration time.Duration
	err      error
}

func judge(ctx context.Context, checks []verify.Verifier, answer string) (outcome, error) {
	out := judgeTimed(ctx, checks, answer)
	return out, out.err
}

// judgeTimed runs checks in order until one rejects the answer.
func judgeTimed(ctx context.Context, checks []verify.Verifier, answer string) outcome {
	start := time.Now()
	cand := verify.Candidate{Answer: answer, Confidence: 1, Attempt: 1}
	for _, c := range checks {
		v, err := c.Check(ctx, cand)
		if err != nil {
			return outcome{status: Errored, duration: time.Since(start), err: fmt.Errorf("%s: %w", c.Name(), err)}
		}
		if !v.OK {
			by := c.Name()
			if v.Where != "" {
				by += " at " + v.Where
			}
			if d := firstLine(v.Detail); d != "" {
				by += ": " + d
			}
			return outcome{status: Killed, killedBy: by, duration: time.Since(start)}
		}
	}
	return outcome{status: Survived, duration: time.Since(start)}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
