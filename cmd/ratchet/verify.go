package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
	"github.com/ratchetloop/ratchet/verify/strength"
)

// fileReport is what `ratchet verify --json` prints for one candidate file.
type fileReport struct {
	File     string          `json:"file"`
	OK       bool            `json:"ok"` // every cheap and expensive check passed
	Verdicts []tieredVerdict `json:"verdicts"`
	Errors   []string        `json:"errors,omitempty"` // checks that could not run
	// Skipped are the tiers not run because an earlier one failed.
	Skipped []verify.Tier    `json:"skipped,omitempty"`
	Holdout []verify.Verdict `json:"-"`
}

type tieredVerdict struct {
	Tier verify.Tier `json:"tier"`
	verify.Verdict
}

// verifyHelp is verify's usage, above its flags.
const verifyHelp = `Usage: ratchet verify TASK.yaml FILE... [flags]
       ratchet verify --strength [--reference FILE] TASK.yaml [flags]

Runs the task's checks on each candidate file, with no model, as a run
does: the cheap checks, then the expensive ones only if every cheap check
passed, then the holdout checks only if every gate check passed (--all runs
every check); prints each verdict; candidates are checked in parallel. Exit 0 when every cheap and expensive check passed for every file,
1 when one failed, 2 for a usage or config error, 3 when a check could not
run (e.g. no sandbox).

With --strength, measures how strong the gate checks are: mutants of the
reference (a flipped comparison, a swapped operator, a constant off by one,
a negated condition, a removed statement, swapped return values) are made at
the syntax tree (Python, Go) and checked in parallel in the sandbox; the
mutation score is the share the checks reject, and the mutants they accept
are printed as diffs. Exit 0 when measured (1 if the score is below the
task's min_strength), 1 when the reference itself fails a check, 3 when a
mutant could not be checked.

Flags:
`

// verifyCommand is 'ratchet verify', and its --strength (strength.go).
type verifyCommand struct{ *Main }

// run runs a task file's checks on candidate files, with no model,
// or measures the strength of the checks (--strength).
func (m verifyCommand) run(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("ratchet verify", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	asJSON := fs.Bool("json", false, "print the verdicts (or the strength report) as JSON")
	unsafe := fs.Bool("unsafe-sandbox", false, "where no sandbox works, run exec checks without isolation")
	measure := fs.Bool("strength", false, "measure the strength of the task's gate checks on mutants of a reference solution")
	reference := fs.String("reference", "", "with --strength: the reference solution (default the task's reference:)")
	parallel := fs.Int("parallel", runtime.NumCPU(), "candidates (or mutants) checked at once")
	all := fs.Bool("all", false, "run every check of every tier, even after a cheap (or gate) check failed")
	setUsage(fs, verifyHelp)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if !m.wellUsed(fs, pos, *measure, *parallel) {
		return exitUsage
	}
	tf, err := taskfile.Load(pos[0])
	if err != nil {
		printProblems(m.Stderr, "ratchet verify", err)
		return exitUsage
	}
	generator := tf.Model
	if generator == "" {
		generator = m.Getenv("RATCHET_MODEL")
	}
	tiers, err := tf.Verifiers(taskfile.Env{OpenModel: m.openModel, Generator: generator, Sandbox: m.sandbox(*unsafe)})
	if err != nil {
		printProblems(m.Stderr, "ratchet verify", err)
		return exitUsage
	}
	if *measure {
		return m.strengthCmd(ctx, tf, tiers, *reference, *parallel, *asJSON)
	}
	if !*asJSON {
		m.printInProcess(tiers)
	}
	start := time.Now()
	files := pos[1:]
	answers := make([]string, len(files))
	for i, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet verify: %v\n", err)
			return exitUsage
		}
		answers[i] = string(data)
	}
	reports := checkFiles(ctx, tiers, files, answers, *parallel, *all)
	elapsed := time.Since(start)
	code = exitDone
	for _, rep := range reports {
		switch {
		case len(rep.Errors) > 0:
			code = exitInfra
		case !rep.OK && code == exitDone:
			code = exitNotDone
		}
		if !*asJSON {
			m.printReport(rep)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet verify: %v\n", err)
			return exitInfra
		}
	} else if len(files) > 1 {
		fmt.Fprintf(m.Stdout, "%d candidates in %s (%.1f per second, %d at once)\n", len(files), elapsed.Round(time.Millisecond), float64(len(files))/elapsed.Seconds(), min(*parallel, len(files)))
	}
	return code
}

// checkFiles checks each candidate file (answers holds their contents),
// parallel at once.
func checkFiles(ctx context.Context, tiers verify.Tiers, files, answers []string, parallel int, all bool) []fileReport {
	reports := make([]fileReport, len(files))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, path := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			reports[i] = checkFile(ctx, tiers, path, answers[i], all)
		}()
	}
	wg.Wait()
	return reports
}

// wellUsed says whether verify's flags and arguments go together, and
// how not on stderr.
func (m verifyCommand) wellUsed(fs *flag.FlagSet, pos []string, measure bool, parallel int) bool {
	switch {
	case measure && len(pos) != 1:
		fmt.Fprintln(m.Stderr, "ratchet verify --strength: want one task file (and --reference FILE unless the task names one)")
		fs.Usage()
		return false
	case !measure && len(pos) < 2:
		fmt.Fprintln(m.Stderr, "ratchet verify: want a task file and at least one candidate file")
		fs.Usage()
		return false
	case parallel < 1:
		fmt.Fprintln(m.Stderr, "ratchet verify: --parallel must be at least 1")
		return false
	}
	return true
}

// checkFile runs the tiers' checks on one candidate in order, stopping
// after a tier with a failure as a run does, unless all.
func checkFile(ctx context.Context, tiers verify.Tiers, path, answer string, all bool) fileReport {
	rep := fileReport{File: path, OK: true}
	cand := verify.Candidate{Answer: answer, Confidence: 1, Attempt: 1}
	for _, group := range []struct {
		tier verify.Tier
		vs   []verify.Verifier
	}{{verify.Cheap, tiers.Cheap}, {verify.Expensive, tiers.Expensive}, {verify.Holdout, tiers.Holdout}} {
		if !rep.OK && !all {
			if len(group.vs) > 0 {
				rep.Skipped = append(rep.Skipped, group.tier)
			}
			continue
		}
		for _, v := range group.vs {
			verdict, err := v.Check(ctx, cand)
			if err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", v.Name(), err))
				rep.OK = false
				continue
			}
			verdict.Check = v.Name()
			rep.Verdicts = append(rep.Verdicts, tieredVerdict{Tier: group.tier, Verdict: verdict})
			if !verdict.OK && group.tier != verify.Holdout {
				rep.OK = false
			}
		}
	}
	return rep
}

// strengthCmd is ratchet verify --strength.
func (m verifyCommand) strengthCmd(ctx context.Context, tf *taskfile.File, tiers verify.Tiers, refPath string, parallel int, asJSON bool) int {
	if tf.Mode != "generate" {
		// In agent mode the checks read the workspace, not the answer: every
		// mutant would pass untouched and the score would mean nothing.
		fmt.Fprintf(m.Stderr, "ratchet verify --strength: %s is not in generate mode; mutants are candidates written to its artifact file\n", tf.Path)
		return exitUsage
	}
	if refPath == "" {
		refPath = tf.Reference
	}
	if refPath == "" {
		fmt.Fprintf(m.Stderr, "ratchet verify --strength: no reference: pass --reference FILE or set reference: in %s\n", tf.Path)
		return exitUsage
	}
	if len(gateChecks(tiers)) == 0 {
		fmt.Fprintf(m.Stderr, "ratchet verify --strength: %s has no gate checks to measure (holdout checks never gate)\n", tf.Path)
		return exitUsage
	}
	rep, _, err := checkStrength(m).measureStrength(ctx, tf, tiers, refPath, parallel, false)
	switch {
	case errors.Is(err, strength.ErrReferenceFails):
		fmt.Fprintf(m.Stderr, "ratchet verify --strength: %s: %v\n", refPath, err)
		return exitNotDone
	case err != nil:
		fmt.Fprintf(m.Stderr, "ratchet verify --strength: %v\n", err)
		return exitInfra
	}
	if asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet verify: %v\n", err)
			return exitInfra
		}
	} else {
		checkStrength(m).printStrength(tf, refPath, rep)
	}
	switch {
	case rep.Errors > 0:
		return exitInfra
	case tf.MinStrength > 0 && rep.Score < tf.MinStrength:
		fmt.Fprintf(m.Stderr, "ratchet verify --strength: score %.3f is below the task's min_strength %.2f\n", rep.Score, tf.MinStrength)
		return exitNotDone
	}
	return exitDone
}

// printInProcess names each exec check that runs the candidate inside the
// tests' process, and why judge isolation does not serve it.
func (m verifyCommand) printInProcess(tiers verify.Tiers) {
	said := map[string]bool{}
	for _, v := range tiers.All() {
		c, ok := v.(execcheck.Isolated)
		if !ok {
			continue
		}
		if isolation, why := c.Isolation(); isolation == execcheck.InProcess && !said[v.Name()+why] {
			said[v.Name()+why] = true
			fmt.Fprintf(m.Stdout, "note: %s runs the candidate inside the tests' process (in-process isolation: %s)\n", v.Name(), why)
		}
	}
}

func (m verifyCommand) printReport(rep fileReport) {
	status := "passed every gate check"
	if !rep.OK {
		status = "NOT accepted"
	}
	fmt.Fprintf(m.Stdout, "%s: %s\n", rep.File, status)
	for _, v := range rep.Verdicts {
		mark := "✓"
		if !v.OK {
			mark = "✗"
		}
		// The location once: most details already name it.
		where := ""
		if v.Where != "" && !strings.Contains(v.Detail, v.Where) {
			where = " at " + v.Where
		}
		kind := string(v.Provenance)
		if v.Isolation != "" {
			kind += ", " + v.Isolation
		}
		fmt.Fprintf(m.Stdout, "  %s %-9s %s (%s)%s: %s\n", mark, v.Tier, v.Check, kind, where, oneLineDetail(v.Detail))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(m.Stdout, "  ! could not run %s\n", e)
	}
	if len(rep.Skipped) > 0 {
		names := make([]string, len(rep.Skipped))
		for i, t := range rep.Skipped {
			names[i] = string(t)
		}
		fmt.Fprintf(m.Stdout, "  - not run: the %s checks, since an earlier tier failed (--all runs them)\n", strings.Join(names, " and "))
	}
}

func oneLineDetail(s string) string {
	const max = 300
	out := []rune{}
	for _, r := range s {
		if r == '\n' {
			r = ' '
		}
		out = append(out, r)
		if len(out) >= max {
			return string(out) + "…"
		}
	}
	return string(out)
}
