package sim_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/sim"
)

func run(t *testing.T, cfg sim.Config) sim.Report {
	t.Helper()
	rep, err := sim.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func stat(t *testing.T, rep sim.Report, n int, p sim.Policy) sim.Stats {
	t.Helper()
	row, ok := rep.Row(n)
	if !ok {
		t.Fatalf("no row for n=%d", n)
	}
	s, ok := row.Stat(p)
	if !ok {
		t.Fatalf("no %s at n=%d", p, n)
	}
	return s
}

// TestSeedFigures reproduces seed 000's figures: at p = 0.95 the unchecked
// chain lands at about 36% for 20 steps and 13% for 40, over 2,000 trials of
// the default command (seed 1). The closed form p^n is 35.85% and 12.85%;
// a trial's Monte Carlo error at 2,000 trials is about ±1.1 points at n=20
// and ±0.75 at n=40.
func TestSeedFigures(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Ns = []int{20, 40}
	cfg.Policies = []sim.Policy{sim.Unchecked}
	rep := run(t, cfg)
	for _, c := range []struct {
		n    int
		want float64
	}{{20, 0.358}, {40, 0.129}} {
		s := stat(t, rep, c.n, sim.Unchecked)
		within(t, "unchecked success", s.Rate, c.want, 0.02)
		row, _ := rep.Row(c.n)
		within(t, "p^n", row.PowerLaw, c.want, 0.001)
		if s.Trials != 2000 || s.Silent != 2000-s.Successes || s.Halted != 0 {
			t.Errorf("n=%d: %+v: every failure of the unchecked chain must be silent", c.n, s)
		}
		if s.Calls != float64(c.n) || s.Checks != 0 {
			t.Errorf("n=%d: %.2f calls and %.2f checks per chain, want %d and 0", c.n, s.Calls, s.Checks, c.n)
		}
	}
}

// TestCheckedLoopStaysFlat: with a verifier that catches every wrong answer
// and enough retries, a 40-step chain almost always succeeds, where the
// unchecked one succeeds 13% of the time.
func TestCheckedLoopStaysFlat(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Recall, cfg.Retries = 1, 3
	cfg.Ns = []int{40}
	cfg.Policies = []sim.Policy{sim.FixedRetries}
	s := stat(t, run(t, cfg), 40, sim.FixedRetries)
	if s.Rate < 0.99 {
		t.Errorf("checked chain at n=40: %.2f%% success, want ≥ 99%% (%+v)", 100*s.Rate, s)
	}
	if s.Silent != 0 {
		t.Errorf("%d silent failures with recall 1: a wrong answer was accepted", s.Silent)
	}
}

// TestFixedRetriesMatchesClosedForm checks the engine-driven chain against
// s^n, s = p(1−f)(1 + ρ + … + ρ^R), with a verifier that errs both ways.
func TestFixedRetriesMatchesClosedForm(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.P, cfg.Recall, cfg.FalseFail, cfg.Retries = 0.8, 0.7, 0.2, 2
	cfg.Ns, cfg.Trials = []int{1, 4}, 4000
	cfg.Policies = []sim.Policy{sim.FixedRetries}
	rep := run(t, cfg)
	step := sim.StepSuccessFixed(0.8, 0.7, 0.2, 2)
	// ρ = 0.8·0.2 + 0.2·0.7 = 0.3; s = 0.8·0.8·(1 + 0.3 + 0.09).
	within(t, "closed form", step, 0.64*1.39, 1e-12)
	for _, n := range cfg.Ns {
		s := stat(t, rep, n, sim.FixedRetries)
		want := math.Pow(step, float64(n))
		if s.Expected == nil || math.Abs(*s.Expected-want) > 1e-12 {
			t.Errorf("n=%d: expected %v, want %v", n, s.Expected, want)
		}
		within(t, "fixed-retries success", s.Rate, want, 4*sd(want, cfg.Trials))
		if s.Low > want || s.High < want {
			t.Logf("n=%d: %v outside the 95%% interval [%v, %v] (expected 1 time in 20)", n, want, s.Low, s.High)
		}
		if s.Halted == 0 || s.Silent == 0 {
			t.Errorf("n=%d: %+v: a verifier that errs both ways must give halts and silent failures", n, s)
		}
	}
}

// TestHandComputable holds the engine to figures that follow from the
// rules alone.
func TestHandComputable(t *testing.T) {
	base := sim.DefaultConfig()
	base.Ns, base.Trials = []int{1, 3}, 50

	t.Run("p=1", func(t *testing.T) {
		cfg := base
		cfg.P = 1
		rep := run(t, cfg)
		call, check := cfg.CallCost, cfg.CheckCost
		for _, n := range cfg.Ns {
			nn := budget.Micros(n)
			for _, c := range []struct {
				p             sim.Policy
				calls, checks float64 // -1: not fixed by the rules
				cost          budget.Micros
			}{
				{sim.Unchecked, float64(n), 0, nn * call},
				{sim.FixedRetries, float64(n), float64(n), nn * (call + check)},
				// k alternatives per step, and the first checked passes.
				{sim.AlwaysSample, float64(n * 3), float64(n), nn * (3*call + check)},
				{sim.ConfidenceDriven, -1, float64(n), 0},
			} {
				s := stat(t, rep, n, c.p)
				if s.Successes != cfg.Trials {
					t.Errorf("%s n=%d: %d of %d succeeded, want all", c.p, n, s.Successes, cfg.Trials)
				}
				if c.calls >= 0 && (s.Calls != c.calls || s.Checks != c.checks || s.CostPerSuccess != c.cost) {
					t.Errorf("%s n=%d: %.2f calls, %.2f checks, %v per success; want %v, %v, %v", c.p, n, s.Calls, s.Checks, s.CostPerSuccess, c.calls, c.checks, c.cost)
				}
			}
		}
	})

	t.Run("p=0", func(t *testing.T) {
		cfg := base
		cfg.P, cfg.Recall, cfg.Retries = 0, 1, 2
		rep := run(t, cfg)
		for _, n := range cfg.Ns {
			u := stat(t, rep, n, sim.Unchecked)
			if u.Successes != 0 || u.Silent != cfg.Trials {
				t.Errorf("unchecked n=%d: %+v, want every chain a silent failure", n, u)
			}
			// Step 1 rejects all three attempts and halts the chain, however
			// long it was meant to be.
			f := stat(t, rep, n, sim.FixedRetries)
			if f.Halted != cfg.Trials || f.Calls != 3 || f.Checks != 3 || f.CostPerSuccess != 0 {
				t.Errorf("fixed-retries n=%d: %+v, want every chain halted after 3 calls and 3 checks", n, f)
			}
		}
	})

	// With recall 0 every answer passes: the checked loop is the unchecked
	// chain, trial for trial, only dearer.
	t.Run("recall=0", func(t *testing.T) {
		cfg := base
		cfg.P, cfg.Recall, cfg.Trials = 0.7, 0, 300
		cfg.Ns = []int{1, 2, 5}
		rep := run(t, cfg)
		for _, n := range cfg.Ns {
			u, f := stat(t, rep, n, sim.Unchecked), stat(t, rep, n, sim.FixedRetries)
			if u.Successes != f.Successes || u.Silent != f.Silent || f.Halted != 0 || f.Calls != float64(n) {
				t.Errorf("n=%d: unchecked %+v, fixed-retries %+v: want the same outcomes", n, u, f)
			}
			if u.Successes == 0 || u.Successes == cfg.Trials {
				t.Errorf("n=%d: %d successes: the fixture should have both outcomes", n, u.Successes)
			}
		}
	})
}

// TestDeterministic: the same Config gives the same Report, whatever the
// concurrency, with sampling, false failures and halts in play.
func TestDeterministic(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.P, cfg.Recall, cfg.FalseFail, cfg.Retries, cfg.K = 0.7, 0.8, 0.5, 1, 3
	cfg.Calibration.Sharpness = 0.5
	cfg.Ns, cfg.Trials = []int{2, 6}, 150
	cfg.Concurrency = 1
	a := run(t, cfg)
	for _, conc := range []int{8, 3} {
		cfg.Concurrency = conc
		b := run(t, cfg)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("concurrency 1 vs %d (-first +second):\n%s", conc, diff)
		}
	}
	// Every outcome occurs, so the comparison above covers them all.
	for _, s := range a.Rows[1].Stats[1:] {
		if s.Policy != sim.Unchecked && (s.Successes == 0 || s.Silent == 0 || s.Halted == 0) {
			t.Errorf("%s: %+v: want successes, silent failures and halts", s.Policy, s)
		}
	}
	// A policy's column does not depend on which other policies ran.
	only := cfg
	only.Policies = []sim.Policy{sim.ConfidenceDriven}
	o := run(t, only)
	for i, row := range a.Rows {
		want, _ := row.Stat(sim.ConfidenceDriven)
		if diff := cmp.Diff(want, o.Rows[i].Stats[0]); diff != "" {
			t.Errorf("n=%d: confidence-driven alone differs (-with others +alone):\n%s", row.N, diff)
		}
	}
	cfg.Seed++
	if diff := cmp.Diff(a, run(t, cfg)); diff == "" {
		t.Error("another seed gave the same report")
	}
}

func TestValidate(t *testing.T) {
	bad := sim.DefaultConfig()
	bad.P, bad.K, bad.Retries, bad.Ns = 1.5, 0, -1, []int{0, 5}
	bad.Policies = []sim.Policy{"yolo"}
	bad.Calibration.Sharpness = -1
	err := bad.Validate()
	for _, want := range []string{"p: 1.5", "k: 0", "retries: -1", "n: chain lengths", `policy "yolo"`, "sharpness -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
	if _, err := sim.Run(context.Background(), bad); err == nil {
		t.Error("Run accepted an invalid config")
	}
	if err := sim.DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sim.Run(ctx, sim.DefaultConfig()); !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a cancelled context: %v, want context.Canceled", err)
	}
}

func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.27753},
		{5, 10, 0.23659, 0.76341},
		{10, 10, 0.72247, 1},
		{716, 2000, 0.33735, 0.37919},
	} {
		lo, hi := sim.Wilson(c.k, c.n)
		within(t, "low", lo, c.lo, 1e-4)
		within(t, "high", hi, c.hi, 1e-4)
	}
}

func TestTableAndReading(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Ns, cfg.Trials = []int{5, 40}, 100
	rep := run(t, cfg)
	var b strings.Builder
	if err := rep.Table(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	h := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "n    p^n  policy") })
	// The column heads, then 4 policies × 2 rows, and nothing else.
	if h < 0 || len(lines) != h+1+8 {
		t.Fatalf("column heads at line %d of %d:\n%s", h, len(lines), b.String())
	}
	head := lines[h]
	col := strings.Index(head, "success")
	for _, l := range lines[h+1:] {
		// Aligned: each success figure ends where the heading does.
		if l[col+len("success")-1] != '%' {
			t.Errorf("misaligned line %q under %q", l, head)
		}
	}
	for _, want := range []string{"p^n", "77.4%", "12.9%", "unchecked", "fixed-retries(R=3)", "always-sample(k=2)", "confidence<0.8(k=2)", "cost/success", "AUC 0.94"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	r := rep.Reading()
	u := stat(t, rep, 40, sim.Unchecked)
	for _, want := range []string{"n=40", "12.9%", pctOf(u.Rate), "silent", "per success"} {
		if !strings.Contains(r, want) {
			t.Errorf("reading lacks %q: %s", want, r)
		}
	}
}

func pctOf(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
