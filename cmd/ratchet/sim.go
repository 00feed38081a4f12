package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/sim"
)

// simCommand is 'ratchet sim'.
type simCommand struct{ *Main }

// run runs the simulation of package sim and prints its table.
func (m simCommand) run(ctx context.Context, args []string) int {
	cfg := sim.DefaultConfig()
	fs := flag.NewFlagSet("ratchet sim", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Float64Var(&cfg.P, "p", cfg.P, "probability that one generator call answers correctly")
	fs.IntVar(&cfg.Trials, "trials", cfg.Trials, "chains simulated per policy")
	ns := fs.String("n", joinInts(cfg.Ns), "chain lengths, comma-separated")
	fs.Float64Var(&cfg.Recall, "recall", cfg.Recall, "probability the verifier catches a wrong answer")
	fs.Float64Var(&cfg.FalseFail, "false-fail", cfg.FalseFail, "probability the verifier fails a correct answer")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "retries of a rejected attempt per step")
	fs.IntVar(&cfg.K, "k", cfg.K, "alternatives sampled by the sampling policies")
	fs.Float64Var(&cfg.Threshold, "threshold", cfg.Threshold, "confidence below which the confidence-driven policy samples")
	fs.Float64Var(&cfg.Calibration.Sharpness, "sharpness", cfg.Calibration.Sharpness, "how much the stated confidence tells right from wrong (0: nothing)")
	callCost := fs.Float64("call-cost", cfg.CallCost.Dollars(), "US dollars per model call")
	checkCost := fs.Float64("check-cost", cfg.CheckCost.Dollars(), "US dollars per check")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed; the same seed and flags give the same report")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "chains run at once (default GOMAXPROCS; does not change the report)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	setUsage(fs, `Usage: ratchet sim [flags]

Simulates chains of n agent steps on the real engine, with a generator that is
right with probability p and a verifier of known recall, and prints each
policy's success rate beside the unchecked chain's p^n: unchecked, fixed
retries, always sampling k alternatives, and sampling when the stated
confidence is low. Seeded and deterministic.

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(m.Stderr, "ratchet sim: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	var err error
	if cfg.Ns, err = parseInts(*ns); err != nil {
		fmt.Fprintf(m.Stderr, "ratchet sim: --n: %v\n", err)
		return exitUsage
	}
	if *callCost < 0 || *checkCost < 0 {
		fmt.Fprintln(m.Stderr, "ratchet sim: costs must not be negative")
		return exitUsage
	}
	cfg.CallCost, cfg.CheckCost = budget.USD(*callCost), budget.USD(*checkCost)
	if cfg.Concurrency < 0 {
		fmt.Fprintln(m.Stderr, "ratchet sim: --concurrency must not be negative")
		return exitUsage
	}
	if err := cfg.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(m.Stderr, "ratchet sim: %s\n", line)
		}
		return exitUsage
	}
	if m.Getenv("GOGC") == "" {
		// The engine allocates ~9 KB per run and a simulation makes hundreds
		// of thousands of runs with a small live heap: collecting less often
		// nearly halves the wall time for ~10 MB more memory.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	rep, err := sim.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet sim: %v\n", err)
		return exitInfra
	}
	return m.printReport(rep, *asJSON)
}

// printReport prints the simulation's report: a table and its reading, or
// both as JSON.
func (m simCommand) printReport(rep sim.Report, asJSON bool) int {
	var err error
	if asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			sim.Report
			Reading string `json:"reading"`
		}{rep, rep.Reading()})
	} else {
		if err = rep.Table(m.Stdout); err == nil {
			_, err = fmt.Fprintf(m.Stdout, "\n%s\n", wrap(rep.Reading(), 80))
		}
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet sim: %v\n", err)
		return exitInfra
	}
	return exitDone
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers such as 5,10,20", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// wrap breaks text into lines of at most width columns at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	col := 0
	for i, w := range strings.Fields(text) {
		n := len([]rune(w))
		if i > 0 && col+1+n > width {
			b.WriteByte('\n')
			col = 0
		} else if i > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
	}
	return b.String()
}
