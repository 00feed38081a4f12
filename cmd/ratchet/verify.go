package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
)

// fileReport is what `ratchet verify --json` prints for one candidate file.
type fileReport struct {
	File     string           `json:"file"`
	OK       bool             `json:"ok"` // every cheap and expensive check passed
	Verdicts []tieredVerdict  `json:"verdicts"`
	Errors   []string         `json:"errors,omitempty"` // checks that could not run
	Holdout  []verify.Verdict `json:"-"`
}

type tieredVerdict struct {
	Tier verify.Tier `json:"tier"`
	verify.Verdict
}

// verifyCmd runs a task file's checks on candidate files, with no model.
func (m *Main) verifyCmd(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("ratchet verify", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	asJSON := fs.Bool("json", false, "print the verdicts as JSON")
	unsafe := fs.Bool("unsafe-sandbox", false, "where no sandbox works, run exec checks without isolation")
	setUsage(fs, `Usage: ratchet verify TASK.yaml FILE... [flags]

Runs every check of the task (cheap, expensive and holdout) on each candidate
file, with no model, and prints each verdict. Exit 0 when every cheap and
expensive check passed for every file, 1 when one failed, 2 for a usage or
config error, 3 when a check could not run (e.g. no sandbox).

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) < 2 {
		fmt.Fprintln(m.Stderr, "ratchet verify: want a task file and at least one candidate file")
		fs.Usage()
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
	code = exitDone
	var reports []fileReport
	for _, path := range pos[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet verify: %v\n", err)
			return exitUsage
		}
		rep := fileReport{File: path, OK: true}
		cand := verify.Candidate{Answer: string(data), Confidence: 1, Attempt: 1}
		for _, group := range []struct {
			tier verify.Tier
			vs   []verify.Verifier
		}{{verify.Cheap, tiers.Cheap}, {verify.Expensive, tiers.Expensive}, {verify.Holdout, tiers.Holdout}} {
			for _, v := range group.vs {
				verdict, err := v.Check(ctx, cand)
				if err != nil {
					rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", v.Name(), err))
					rep.OK = false
					code = exitInfra
					continue
				}
				verdict.Check = v.Name()
				rep.Verdicts = append(rep.Verdicts, tieredVerdict{Tier: group.tier, Verdict: verdict})
				if !verdict.OK && group.tier != verify.Holdout {
					rep.OK = false
					if code == exitDone {
						code = exitNotDone
					}
				}
			}
		}
		reports = append(reports, rep)
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
	}
	return code
}

func (m *Main) printReport(rep fileReport) {
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
		where := ""
		if v.Where != "" {
			where = " at " + v.Where
		}
		fmt.Fprintf(m.Stdout, "  %s %-9s %s (%s)%s: %s\n", mark, v.Tier, v.Check, v.Provenance, where, oneLineDetail(v.Detail))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(m.Stdout, "  ! could not run %s\n", e)
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
