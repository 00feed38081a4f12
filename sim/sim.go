// Package sim measures what checking buys a chain of agent steps, by driving
// the real engine (runner.Run over the loop core) with a simulated generator
// and simulated verifiers of known quality.
//
// A step is one runner.Run of a task whose only gate check is a Verifier
// (expensive tier) and whose model is a Generator. A chain of n steps
// succeeds when every step ended done and every accepted answer is truly
// correct. A step that ends not done (its budget spent on rejected attempts)
// halts the chain: the loop said it failed. A false pass does not halt it:
// nobody knows, and the chain goes on (and spends) to the end, then fails
// silently.
//
// Policies (see Policy) differ only in the engine's loop.Policy and checks.
// The unchecked chain runs through the same engine with Verifier{}, which
// passes everything for free, so it accepts the generator's first answer at
// every step; its closed form p^n is reported beside it.
//
// Each trial runs one chain of max(Ns) steps per policy, and the row for n
// reads its first n steps, so the rows share trials (common random numbers):
// they are comparable but not independent samples. Step s of trial t uses the
// same generator and verifier seeds under every policy, so every policy sees
// the same first answer at each step (with recall 0, fixed-retries equals
// unchecked trial for trial).
//
// # Determinism
//
// Run is a pure function of its Config: the same Config gives an identical
// Report, whatever Concurrency, GOMAXPROCS or goroutine scheduling. Trials
// are independent jobs whose results are stored by index and summed in
// order, in integers. Within a step, calls made one after another get
// Generator outcomes in call order. The alternatives the engine samples for
// an unsure candidate are requested in parallel with identical requests, so
// which request gets which outcome is up to the scheduler; but the set of
// outcomes is fixed, the engine checks candidates in order of stated
// confidence (distinct with probability 1 − ~1e-16), and a verdict depends
// only on the candidate, never on its attempt number or on when it was
// checked. What is not deterministic is therefore invisible in the Report:
// the attempt numbers and the wording of feedback inside a step's
// loop.Result. The tests check the Report's identity across concurrency
// settings with sampling on.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/verify"
)

// Policy names a way of running each step.
type Policy string

const (
	// Unchecked accepts the first answer: Verifier{} passes everything.
	Unchecked Policy = "unchecked"
	// FixedRetries checks each answer and retries a rejected one, up to
	// Config.Retries times, never sampling alternatives (loop.Policy.Samples
	// -1).
	FixedRetries Policy = "fixed-retries"
	// AlwaysSample samples Config.K alternatives for every answer
	// (loop.Policy.HighStakes) and checks them in confidence order until one
	// passes; up to Config.Retries retries.
	AlwaysSample Policy = "always-sample-k"
	// ConfidenceDriven samples Config.K alternatives only when the stated
	// confidence is below Config.Threshold; up to Config.Retries retries.
	ConfidenceDriven Policy = "confidence-driven"
)

// Policies lists every policy in report order.
var Policies = []Policy{Unchecked, FixedRetries, AlwaysSample, ConfidenceDriven}

// Config is a simulation. P, Seed, Recall, FalseFail, Retries and K are taken as
// given (their zero is meaningful or invalid); other zero fields take the
// defaults of DefaultConfig.
type Config struct {
	// P is the probability that one generator call answers correctly.
	P      float64 `json:"p"`
	Ns     []int   `json:"ns"`
	Trials int     `json:"trials"`
	Seed   uint64  `json:"seed"`
	// Recall is the probability the verifier catches a wrong answer;
	// FalseFail the probability it fails a correct one.
	Recall    float64 `json:"recall"`
	FalseFail float64 `json:"false_fail"`
	// Retries is how many times a step may retry a rejected attempt: the
	// step's budget is Retries+1 steps of the engine.
	Retries int `json:"retries"`
	// K is how many alternatives the sampling policies ask for.
	K int `json:"k"`
	// Threshold is the confidence below which the confidence-driven policy
	// samples (default 0.8).
	Threshold   float64     `json:"threshold"`
	Calibration Calibration `json:"calibration"`
	// Usage of one generator call and cost of one check.
	InputTokens  int64         `json:"input_tokens"`
	OutputTokens int64         `json:"output_tokens"`
	CallCost     budget.Micros `json:"call_cost_micros"`
	CheckCost    budget.Micros `json:"check_cost_micros"`
	// Policies to run, in report order (default all of Policies).
	Policies []Policy `json:"policies"`
	// Concurrency is how many chains run at once (default GOMAXPROCS). It
	// does not change the Report.
	Concurrency int `json:"-"`
}

// DefaultConfig is `ratchet sim` without flags.
func DefaultConfig() Config {
	return Config{
		P: 0.95, Ns: []int{5, 10, 20, 30, 40}, Trials: 2000, Seed: 1,
		Recall: 0.9, Retries: 3, K: 2, Threshold: 0.8,
		Calibration:  Calibration{Sharpness: 1},
		InputTokens:  1200,
		OutputTokens: 300,
		CallCost:     3000, // $0.003 per call
		CheckCost:    1000, // $0.001 per check
	}
}

// WithDefaults fills the zero fields that have defaults and sorts Ns.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if len(c.Ns) == 0 {
		c.Ns = d.Ns
	}
	c.Ns = slices.Compact(slices.Sorted(slices.Values(c.Ns)))
	if c.Trials == 0 {
		c.Trials = d.Trials
	}
	if c.Threshold == 0 {
		c.Threshold = d.Threshold
	}
	c.Calibration = c.Calibration.WithDefaults()
	if c.InputTokens == 0 {
		c.InputTokens = d.InputTokens
	}
	if c.OutputTokens == 0 {
		c.OutputTokens = d.OutputTokens
	}
	if c.CallCost == 0 {
		c.CallCost = d.CallCost
	}
	if c.CheckCost == 0 {
		c.CheckCost = d.CheckCost
	}
	if len(c.Policies) == 0 {
		c.Policies = Policies
	}
	c.Policies = slices.Clone(c.Policies)
	if c.Concurrency == 0 {
		c.Concurrency = runtime.GOMAXPROCS(0)
	}
	return c
}

// Limits on a Config, to keep a run bounded.
const (
	MaxN       = 1000
	MaxTrials  = 1_000_000
	MaxRetries = 20
	MaxK       = 16 // the engine's limit on samples
)

// Validate reports every problem with c (defaults applied first).
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	prob := func(name string, v float64) {
		if !(v >= 0 && v <= 1) {
			add("%s: %v is not a probability in [0, 1]", name, v)
		}
	}
	prob("p", c.P)
	prob("recall", c.Recall)
	prob("false-fail", c.FalseFail)
	if !(c.Threshold > 0 && c.Threshold <= 1) {
		add("threshold: %v is not in (0, 1]", c.Threshold)
	}
	if c.Ns[0] < 1 || c.Ns[len(c.Ns)-1] > MaxN {
		add("n: chain lengths must be between 1 and %d, got %v", MaxN, c.Ns)
	}
	if c.Trials < 1 || c.Trials > MaxTrials {
		add("trials: %d is not between 1 and %d", c.Trials, MaxTrials)
	}
	if c.Retries < 0 || c.Retries > MaxRetries {
		add("retries: %d is not between 0 and %d", c.Retries, MaxRetries)
	}
	if c.K < 1 || c.K > MaxK {
		add("k: %d is not between 1 and %d", c.K, MaxK)
	}
	if c.InputTokens < 0 || c.OutputTokens < 0 || c.CallCost < 0 || c.CheckCost < 0 {
		add("tokens and costs must not be negative")
	}
	for _, p := range c.Policies {
		if !slices.Contains(Policies, p) {
			add("policy %q is not one of %v", p, Policies)
		}
	}
	if c.Concurrency < 1 {
		add("concurrency: %d is below 1", c.Concurrency)
	}
	if err := c.Calibration.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Report is what Run measured.
type Report struct {
	// Config is the simulation's Config, defaults applied, with Concurrency
	// 0: it does not affect the result.
	Config Config `json:"config"`
	Rows   []Row  `json:"rows"`
}

// Row is every policy's result for chains of N steps.
type Row struct {
	N int `json:"n"`
	// PowerLaw is p^n, the closed form of the unchecked chain.
	PowerLaw float64 `json:"p_pow_n"`
	Stats    []Stats `json:"stats"` // in Config.Policies order
}

// Stats is one policy's result for one chain length, over Config.Trials
// chains. Successes + Silent + Halted = Trials.
type Stats struct {
	Policy    Policy `json:"policy"`
	Trials    int    `json:"trials"`
	Successes int    `json:"successes"`
	// Silent counts chains whose every step ended done although some
	// accepted answer was wrong: a failure nobody was told about.
	Silent int `json:"silent_failures"`
	// Halted counts chains stopped by a step that ended not done: a failure
	// the loop reported.
	Halted int `json:"halted"`
	// Rate is Successes/Trials, with its 95% Wilson score interval.
	Rate float64 `json:"rate"`
	Low  float64 `json:"ci95_low"`
	High float64 `json:"ci95_high"`
	// Expected is the closed-form success rate, where one exists: p^n for
	// unchecked, s^n for fixed-retries (s in StepSuccessFixed); nil for the
	// sampling policies.
	Expected *float64 `json:"expected,omitempty"`
	// Per chain, averaged over trials. A halted chain counts the steps it
	// ran.
	Calls  float64 `json:"model_calls_per_chain"`
	Checks float64 `json:"checks_per_chain"`
	Tokens float64 `json:"tokens_per_chain"`
	// Cost is the total over all trials; CostPerSuccess is Cost/Successes
	// (what one successful chain costs when failed ones are paid for too),
	// 0 when no chain succeeded.
	Cost           budget.Micros `json:"cost_micros"`
	CostPerSuccess budget.Micros `json:"cost_per_success_micros"`
}

// Stat returns the Stats of policy p in the row, if it ran.
func (r Row) Stat(p Policy) (Stats, bool) {
	for _, s := range r.Stats {
		if s.Policy == p {
			return s, true
		}
	}
	return Stats{}, false
}

// Row returns the row for chains of n steps, if there is one.
func (r Report) Row(n int) (Row, bool) {
	for _, row := range r.Rows {
		if row.N == n {
			return row, true
		}
	}
	return Row{}, false
}

// StepSuccessFixed is the closed-form probability that one fixed-retries
// step ends done with a correct answer: each attempt is correct and passed
// with probability p(1−f), rejected with probability ρ = p·f + (1−p)·r, and
// otherwise falsely passed, so s = p(1−f)·(1 + ρ + … + ρ^R). It assumes no
// stall: progress detection cannot end a step of at most 8 attempts (wrong
// answers never repeat; a thrice-rejected correct answer is answered by a
// reflection prompt, not a stop).
func StepSuccessFixed(p, recall, falseFail float64, retries int) float64 {
	rho := p*falseFail + (1-p)*recall
	sum := 0.0
	for i := range retries + 1 {
		sum += math.Pow(rho, float64(i))
	}
	return p * (1 - falseFail) * sum
}

// Wilson returns the 95% Wilson score interval for k successes in n trials.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(0, centre-half), min(1, centre+half)
}

// step is one step's outcome.
type step struct {
	done, correct bool
	calls, checks int
	tokens        int64
	cost          budget.Micros
}

// chainSum is a chain prefix's outcome.
type chainSum struct {
	outcome       int8 // success, silent or halted
	calls, checks int32
	tokens        int64
	cost          budget.Micros
}

const (
	success int8 = iota
	silent
	halted
)

// Run simulates cfg. It returns an error for an invalid Config, when ctx is
// cancelled, or when the engine fails (which would be a bug).
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.WithDefaults()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// sums[policy][trial][i] is the chain of Ns[i] steps.
	sums := make([][][]chainSum, len(cfg.Policies))
	for pi := range sums {
		sums[pi] = make([][]chainSum, cfg.Trials)
	}
	jobs := len(cfg.Policies) * cfg.Trials
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(cfg.Concurrency, jobs) {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= jobs || ctx.Err() != nil {
					return
				}
				// Trial-major order, so that an early cancel leaves whole
				// trials, and every policy's jobs interleave evenly.
				pi, trial := j%len(cfg.Policies), j/len(cfg.Policies)
				s, err := chain(ctx, cfg, cfg.Policies[pi], trial)
				if err != nil {
					cancel(err)
					return
				}
				sums[pi][trial] = s
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return Report{}, err
	}

	rep := Report{Config: cfg}
	rep.Config.Concurrency = 0 // how the work was spread is no part of the result
	for ni, n := range cfg.Ns {
		row := Row{N: n, PowerLaw: math.Pow(cfg.P, float64(n))}
		for pi, p := range cfg.Policies {
			st := Stats{Policy: p, Trials: cfg.Trials}
			var calls, checks, tokens int64
			for trial := range cfg.Trials {
				c := sums[pi][trial][ni]
				switch c.outcome {
				case success:
					st.Successes++
				case silent:
					st.Silent++
				default:
					st.Halted++
				}
				calls += int64(c.calls)
				checks += int64(c.checks)
				tokens += c.tokens
				st.Cost += c.cost
			}
			t := float64(cfg.Trials)
			st.Rate = float64(st.Successes) / t
			st.Low, st.High = Wilson(st.Successes, cfg.Trials)
			st.Calls, st.Checks, st.Tokens = float64(calls)/t, float64(checks)/t, float64(tokens)/t
			if st.Successes > 0 {
				st.CostPerSuccess = st.Cost / budget.Micros(st.Successes)
			}
			switch p {
			case Unchecked:
				st.Expected = &row.PowerLaw
			case FixedRetries:
				e := math.Pow(StepSuccessFixed(cfg.P, cfg.Recall, cfg.FalseFail, cfg.Retries), float64(n))
				st.Expected = &e
			}
			row.Stats = append(row.Stats, st)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// epoch is the clock every simulated run reads: time plays no part (the
// time budget is unlimited), and a fixed clock keeps each loop.Result
// reproducible.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return epoch }

// chain runs one trial of policy p for max(Ns) steps (fewer if a step halts
// it) and sums it up for every n in Ns.
func chain(ctx context.Context, cfg Config, p Policy, trial int) ([]chainSum, error) {
	maxN := cfg.Ns[len(cfg.Ns)-1]
	out := make([]chainSum, len(cfg.Ns))
	var acc chainSum
	ni := 0
	for s := 1; s <= maxN; s++ {
		st, err := runStep(ctx, cfg, p, trial, s)
		if err != nil {
			return nil, err
		}
		acc.calls += int32(st.calls)
		acc.checks += int32(st.checks)
		acc.tokens += st.tokens
		acc.cost += st.cost
		switch {
		case !st.done:
			acc.outcome = halted
		case !st.correct && acc.outcome == success:
			acc.outcome = silent
		}
		for ni < len(cfg.Ns) && cfg.Ns[ni] == s {
			out[ni] = acc
			ni++
		}
		if acc.outcome == halted {
			break
		}
	}
	for ; ni < len(out); ni++ { // the longer chains halted at the same step
		out[ni] = acc
	}
	return out, nil
}

// StepTask returns the task and model of step s of trial trial under policy
// p: what Run gives runner.Run.
func StepTask(cfg Config, p Policy, trial, s int) (runner.Task, *Generator) {
	seed := mix(mix(cfg.Seed, uint64(trial)), uint64(s))
	gen := &Generator{
		P: cfg.P, Calibration: cfg.Calibration, Seed: mix(seed, 1),
		InputTokens: cfg.InputTokens, OutputTokens: cfg.OutputTokens, Cost: cfg.CallCost,
	}
	ver := Verifier{Recall: cfg.Recall, FalseFail: cfg.FalseFail, Cost: cfg.CheckCost, Seed: mix(seed, 2)}
	attempts := cfg.Retries + 1
	pol := loop.Policy{
		ConfidenceThreshold: cfg.Threshold,
		Samples:             cfg.K,
		// No step held back for a closing turn: every attempt is an
		// ordinary turn judged by the policy, and a step whose attempts
		// are all rejected ends exhausted:steps.
		Reserve: budget.Usage{ModelCalls: 1},
	}
	switch p {
	case Unchecked:
		ver = Verifier{CheckName: "accept-all"}
		attempts = 1
		pol.Samples = -1
	case FixedRetries:
		pol.Samples = -1
	case AlwaysSample:
		pol.HighStakes = true
	}
	task := runner.Task{
		Goal:   "Simulated step: answer correctly.",
		Checks: verify.Tiers{Expensive: []verify.Verifier{ver}},
		Budget: budget.Limits{
			Steps:        attempts,
			ModelCalls:   attempts*(cfg.K+1) + 1,
			InputTokens:  budget.Unlimited,
			OutputTokens: budget.Unlimited,
			TotalTokens:  budget.Unlimited,
			Cost:         budget.Unlimited,
			Time:         budget.Unlimited,
		},
		Policy: pol,
	}
	return task, gen
}

func runStep(ctx context.Context, cfg Config, p Policy, trial, s int) (step, error) {
	task, gen := StepTask(cfg, p, trial, s)
	res, err := runner.Run(ctx, task, runner.Config{Model: gen, RunID: "sim", Now: fixedClock})
	if err != nil {
		return step{}, fmt.Errorf("sim: %s trial %d step %d: %w", p, trial, s, err)
	}
	if res.Status == loop.Cancelled {
		return step{}, context.Cause(ctx)
	}
	st := step{
		done:   res.Status.IsDone(),
		calls:  res.Usage.ModelCalls,
		tokens: res.Usage.TotalTokens(),
		cost:   res.Usage.Cost,
	}
	st.correct = st.done && res.Best != nil && res.Best.Answer == Correct
	if p != Unchecked {
		for _, a := range res.Attempts {
			st.checks += len(a.Verdicts)
		}
	}
	return st, nil
}
