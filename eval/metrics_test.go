package eval

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

func ptr[T any](v T) *T { return &v }

// Fixture helpers: a verdict of check c, and an attempt.
func ok(c string) verify.Verdict   { return verify.Verdict{Check: c, OK: true} }
func fail(c string) verify.Verdict { return verify.Verdict{Check: c} }

func att(step int, conf float64, accepted bool, vs ...verify.Verdict) loop.Attempt {
	return loop.Attempt{Step: step, Confidence: conf, Accepted: accepted, Verdicts: vs}
}

var fixtureTiers = map[string]verify.Tier{"fmt": verify.Cheap, "tests": verify.Expensive, "hidden": verify.Holdout}

func run(c, mdl string, status loop.Status, cost budget.Micros, in, out int64, wall time.Duration, as ...loop.Attempt) Record {
	return Record{Case: c, Model: mdl, Tiers: fixtureTiers, Wall: wall, Result: loop.Result{
		Status: status, Attempts: as, Usage: budget.Usage{Cost: cost, InputTokens: in, OutputTokens: out},
	}}
}

// fixture is six runs whose metrics are computed by hand in
// TestComputeFixture.
func fixture() []Record {
	withHoldout := func(a loop.Attempt, vs ...verify.Verdict) loop.Attempt { a.Holdout = vs; return a }
	sample := func(a loop.Attempt) loop.Attempt { a.Sample = true; return a }
	rs := []Record{
		// r1: done at the first attempt; the holdout agrees.
		run("A", "m1", loop.Done, 100, 10, 5, time.Second,
			withHoldout(att(1, 0.9, true, ok("fmt"), ok("tests")), ok("hidden"))),
		// r2: done at the second attempt; the holdout disagrees (overfit).
		run("A", "m1", loop.Done, 200, 20, 10, 2*time.Second,
			att(1, 0.6, false, ok("fmt"), fail("tests")),
			withHoldout(att(2, 0.8, true, ok("fmt"), ok("tests")), fail("hidden"))),
		// r3: out of steps; the cheap check fails fast twice.
		run("B", "m2", loop.Exhausted(budget.Steps), 300, 40, 20, 3*time.Second,
			att(1, 0.3, false, fail("fmt")),
			att(2, 0.45, false, ok("fmt"), fail("tests")),
			sample(att(2, 0.2, false, fail("fmt")))),
		// r4: stalled before any attempt.
		run("B", "m2", loop.Stalled(progress.Repeating), 50, 5, 0, 500*time.Millisecond),
		// r5: done in round 2 by a sampled alternative.
		run("C", "m2", loop.Done, 150, 15, 5, 1500*time.Millisecond,
			att(1, 0.4, false, ok("fmt"), fail("tests")),
			att(2, 0.7, false, ok("fmt"), fail("tests")),
			sample(att(2, 0.95, true, ok("fmt"), ok("tests")))),
		// r6: escalated at once, nothing spent.
		run("C", "m2", loop.Escalated, 0, 0, 0, 0),
	}
	for i := range rs {
		rs[i].Repeat = i // every (case, repeat) pair distinct, as in a suite
	}
	// A person was asked in r3 (answered: steps raised, still exhausted),
	// r5 (answered, then done) and r6 (nobody answered).
	rs[2].Result.Asked, rs[2].Result.Answered = 1, 1
	rs[4].Result.Asked, rs[4].Result.Answered = 2, 2
	rs[5].Result.Asked = 1
	// Cases A and C have references; their checks measured 0.9 and 0.6.
	strong, weak := 0.9, 0.6
	rs[0].CheckStrength, rs[1].CheckStrength, rs[4].CheckStrength, rs[5].CheckStrength = &strong, &strong, &weak, &weak
	return rs
}

// TestComputeFixture checks every metric of the fixture against values
// computed by hand.
func TestComputeFixture(t *testing.T) {
	got := Compute(fixture())
	want := Metrics{
		Runs: 6,
		// Done: r1, r2, r5 → 3/6. Wilson(3, 6), z = 1.96: centre
		// (0.5 + z²/12)/(1 + z²/6) = 0.5, half-width
		// z/(1+z²/6)·√(0.25/6 + z²/144) = 0.31238 → [0.18762, 0.81238].
		Success: Rate{K: 3, N: 6, P: 0.5, Lo: 0.187616, Hi: 0.812384},
		// Rounds to the accepted attempt: r1 1; r2 2; r5 2 (its accepted
		// attempt is a sample in step 2). Sorted [1 2 2]: mean 5/3,
		// p50 = x[⌈1.5⌉−1] = x[1] = 2, p90 = x[⌈2.7⌉−1] = x[2] = 2.
		Iterations: Dist{Values: []int{1, 2, 2}, N: 3, Mean: 5.0 / 3, P50: 2, P90: 2,
			Hist: []Bin{{1, 1}, {2, 2}}},
		// One run each of six: Wilson(1, 6) = [0.030053, 0.563503].
		Exhausted: map[budget.Dimension]Rate{budget.Steps: {K: 1, N: 6, P: 1.0 / 6, Lo: 0.030053, Hi: 0.563503}},
		Stalled:   map[progress.Pattern]Rate{progress.Repeating: {K: 1, N: 6, P: 1.0 / 6, Lo: 0.030053, Hi: 0.563503}},
		Escalated: Rate{K: 1, N: 6, P: 1.0 / 6, Lo: 0.030053, Hi: 0.563503},
		// Asked: r3, r5, r6 → 3/6; answered r3 and r5, of which r5 was
		// done → 1/2.
		Asked:               Rate{K: 3, N: 6, P: 0.5, Lo: 0.187616, Hi: 0.812384},
		ResolvedAfterAnswer: Rate{K: 1, N: 2, P: 0.5, Lo: 0.094531, Hi: 0.905469},
		Cheat:               Rate{Hi: 1}, // no twins: the whole interval
		// Runs with an attempt: r1, r2, r3, r5; only r1's first passed.
		FirstPass: Rate{K: 1, N: 4, P: 0.25, Lo: 0.045587, Hi: 0.699358},
		TierPass: map[verify.Tier]Rate{
			// fmt verdicts on 9 attempts; r3's first and sampled ones fail.
			verify.Cheap: {K: 7, N: 9, P: 7.0 / 9, Lo: 0.452589, Hi: 0.936775},
			// tests verdicts on 7 attempts (r3's two fmt failures never
			// reached it): passes r1a1, r2a2, r5a3.
			verify.Expensive: {K: 3, N: 7, P: 3.0 / 7, Lo: 0.15822, Hi: 0.749542},
			verify.Holdout:   {K: 1, N: 2, P: 0.5, Lo: 0.094531, Hi: 0.905469},
		},
		// Accepted with holdout verdicts: r1 (pass), r2 (fail).
		HoldoutPass: Rate{K: 1, N: 2, P: 0.5, Lo: 0.094531, Hi: 0.905469},
		// Nine (confidence, outcome) pairs: (.9,1) (.6,0) (.8,1) (.3,0)
		// (.45,0) (.2,0) (.4,0) (.7,0) (.95,1). Squared errors .01 .36 .04
		// .09 .2025 .04 .16 .49 .0025 sum to 1.395; Brier 1.395/9 = 0.155.
		Calibration: Calibration{N: 9, Brier: 0.155, Bins: []CalBin{
			{Range: "[0, 0.1)"}, {Range: "[0.1, 0.2)"},
			{Range: "[0.2, 0.3)", N: 1, Confidence: 0.2},
			{Range: "[0.3, 0.4)", N: 1, Confidence: 0.3},
			{Range: "[0.4, 0.5)", N: 2, Confidence: 0.425}, // .4 and .45
			{Range: "[0.5, 0.6)"},
			{Range: "[0.6, 0.7)", N: 1, Confidence: 0.6},
			{Range: "[0.7, 0.8)", N: 1, Confidence: 0.7},
			{Range: "[0.8, 0.9)", N: 1, Confidence: 0.8, Accuracy: 1},
			{Range: "[0.9, 1]", N: 2, Confidence: 0.925, Accuracy: 1}, // .9 and .95
		}},
		// Against the holdout, two pairs: r1 (.9, 1) and r2 (.8, 0), whose
		// gate passed but whose hidden test failed: (.01 + .64)/2 = .325.
		HoldoutCalibration: Calibration{N: 2, Brier: 0.325, Bins: []CalBin{
			{Range: "[0, 0.1)"}, {Range: "[0.1, 0.2)"}, {Range: "[0.2, 0.3)"}, {Range: "[0.3, 0.4)"},
			{Range: "[0.4, 0.5)"}, {Range: "[0.5, 0.6)"}, {Range: "[0.6, 0.7)"}, {Range: "[0.7, 0.8)"},
			{Range: "[0.8, 0.9)", N: 1, Confidence: 0.8},
			{Range: "[0.9, 1]", N: 1, Confidence: 0.9, Accuracy: 1},
		}},
		// The weakest case's checks: C's.
		CheckStrength: ptr(0.6),
		// Totals 800 µ$, 130 tokens, 8 s over 3 successes.
		Spend: Spend{Cost: 800, Tokens: 130, Wall: 8 * time.Second,
			CostPerSuccess: 800.0 / 3, TokensPerSuccess: 130.0 / 3, WallPerSuccess: 8.0 / 3},
	}
	opts := cmp.Options{
		cmpopts.EquateApprox(0, 1e-5),
		cmpopts.IgnoreUnexported(Metrics{}, Calibration{}),
		cmpopts.IgnoreFields(CalBin{}, "Lo", "Hi"),
		cmpopts.IgnoreFields(Metrics{}, "Stability"), // TestStability
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("Compute(fixture) mismatch (-want +got):\n%s", diff)
	}
}

// TestSummarizeGroups checks the per-case and per-model success rates.
func TestSummarizeGroups(t *testing.T) {
	s := Summarize("fx", fixture())
	type row struct {
		Name string
		K, N int
	}
	rows := func(gs []Group) []row {
		var out []row
		for _, g := range gs {
			out = append(out, row{g.Name, g.Metrics.Success.K, g.Metrics.Success.N})
		}
		return out
	}
	if diff := cmp.Diff([]row{{"A", 2, 2}, {"B", 0, 2}, {"C", 1, 2}}, rows(s.Cases)); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]row{{"m1", 2, 2}, {"m2", 1, 4}}, rows(s.Models)); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestSuccessExpect(t *testing.T) {
	best := func(s loop.Status, answer string) loop.Result {
		return loop.Result{Status: s, Best: &loop.Attempt{Answer: answer}}
	}
	for _, tc := range []struct {
		name   string
		expect *Expect
		res    loop.Result
		want   bool
	}{
		{"default done", nil, best(loop.Done, "x"), true},
		{"default not done", nil, best(loop.Exhausted(budget.Steps), "x"), false},
		{"status", &Expect{Status: loop.Exhausted(budget.Cost)}, best(loop.Exhausted(budget.Cost), ""), true},
		{"answer", &Expect{Answer: " 5 "}, best(loop.Done, "5\n"), true},
		{"wrong answer", &Expect{Answer: "5"}, best(loop.Done, "6"), false},
		{"not answer hit", &Expect{NotAnswer: "6"}, best(loop.Done, "6"), false},
		{"not answer avoided", &Expect{NotAnswer: "6"}, best(loop.Done, "5"), true},
		{"no best", &Expect{Answer: "5"}, loop.Result{Status: loop.Done}, false},
	} {
		r := Record{Expect: tc.expect, Result: tc.res}
		if got := r.Success(); got != tc.want {
			t.Errorf("%s: Success() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestComputeEmpty(t *testing.T) {
	m := Compute(nil)
	if m.Runs != 0 || m.Success.N != 0 || m.Spend.CostPerSuccess != 0 || len(m.Calibration.Bins) != CalBins {
		t.Errorf("Compute(nil) = %+v", m)
	}
}

// TestComputeOrderFree: runs finish in any order; the metrics, and the
// comparison's bootstrap, must not depend on it.
func TestComputeOrderFree(t *testing.T) {
	recs := append(fixture(), synth(30, 20, 2, 700)...)
	rev := slices.Clone(recs)
	slices.Reverse(rev)
	opts := cmp.Options{cmp.AllowUnexported(Metrics{}, Calibration{}, runUnit{}, calPair{})}
	if diff := cmp.Diff(Compute(recs), Compute(rev), opts); diff != "" {
		t.Errorf("metrics depend on record order:\n%s", diff)
	}
	other := synth(40, 25, 1, 900)
	a, b := Compare("x", recs, "y", other, CompareOptions{}), Compare("x", rev, "y", other, CompareOptions{})
	if diff := cmp.Diff(a, b, opts); diff != "" {
		t.Errorf("comparison depends on record order:\n%s", diff)
	}
}

// TestMarkdownShowsStrengthBesideSuccess: each case's check strength and
// holdout pass rate of accepted sit next to its success rate.
func TestMarkdownShowsStrengthBesideSuccess(t *testing.T) {
	var b strings.Builder
	if err := Summarize("x", fixture()).Markdown(&b, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| case | runs | success | check strength | holdout pass of accepted | first-attempt pass | Brier | spend | cost per success |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
		"| B | 2 | 0.0% (0/2) | – | – | 0.0% (0/1) | 0.111 | $0.000350 | – |",
		"| A | 2 | 100.0% (2/2) | 0.900 | 50.0% (1/2) | 50.0% (1/2) |",
		"| B | 2 | 0.0% (0/2) | – | – |",
		"| calibration against holdout (Brier score) | 0.3250 (n=2) | |",
		"| check strength (weakest case) | 0.600 | |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
