package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
)

// runs returns n records of case c under model m, the first k done.
func runs(c, m string, k, n int) []Record {
	var out []Record
	for i := range n {
		st := loop.Status("exhausted:steps")
		if i < k {
			st = loop.Done
		}
		out = append(out, Record{Case: c, Model: m, Repeat: i, Result: loop.Result{Status: st}})
	}
	return out
}

func concat(rs ...[]Record) []Record {
	var out []Record
	for _, r := range rs {
		out = append(out, r...)
	}
	return out
}

// TestStability checks pass@1, pass^k and the classes against values
// computed by hand.
func TestStability(t *testing.T) {
	for _, tc := range []struct {
		name              string
		records           []Record
		k                 int
		passAt1, passHatK float64
		stable, flaky     int
		fail              int
	}{
		// Three cases of 4 runs: 4/4, 2/4, 0/4. pass@1 = (1 + .5 + 0)/3
		// = .5; pass^4 = (C(4,4)/C(4,4) + 0 + 0)/3 = 1/3.
		{"three of four", concat(runs("a", "m", 4, 4), runs("b", "m", 2, 4), runs("c", "m", 0, 4)), 4, 0.5, 1.0 / 3, 1, 1, 1},
		// k is the fewest runs, 3: case a 5 of 5 → 1; case b 2 of 3 → 0;
		// case c 4 of 5 → C(4,3)/C(5,3) = 4/10. pass^3 = 1.4/3; pass@1 =
		// (1 + 2/3 + .8)/3.
		{"unequal repeats", concat(runs("a", "m", 5, 5), runs("b", "m", 2, 3), runs("c", "m", 4, 5)), 3, (1 + 2.0/3 + 0.8) / 3, 1.4 / 3, 1, 2, 0},
		// The same task under two models is two cases.
		{"two models", concat(runs("a", "m1", 2, 2), runs("a", "m2", 1, 2)), 2, 0.75, 0.5, 1, 1, 0},
		// One run each: pass^k is not defined.
		{"single runs", concat(runs("a", "m", 1, 1), runs("b", "m", 0, 1)), 0, 0.5, 0, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStability(tc.records)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if s.K != tc.k || !near(s.PassAt1, tc.passAt1) || !near(s.PassHatK, tc.passHatK) || s.StablePass != tc.stable || s.Flaky != tc.flaky || s.StableFail != tc.fail {
				t.Errorf("got k=%d pass@1=%.4f pass^k=%.4f %d/%d/%d, want k=%d %.4f %.4f %d/%d/%d",
					s.K, s.PassAt1, s.PassHatK, s.StablePass, s.Flaky, s.StableFail, tc.k, tc.passAt1, tc.passHatK, tc.stable, tc.flaky, tc.fail)
			}
		})
	}
}

// TestCaseChanges: a case that got worse is a regression only when its
// own rate dropped significantly; a flaky baseline says so.
func TestCaseChanges(t *testing.T) {
	base := concat(runs("steady", "m", 20, 20), runs("wobbly", "m", 2, 3), runs("same", "m", 3, 3), runs("gone", "m", 1, 1))
	cand := concat(runs("steady", "m", 2, 20), runs("wobbly", "m", 1, 3), runs("same", "m", 3, 3))
	got := caseChanges(base, cand, 0.05, true)
	if len(got) != 2 {
		t.Fatalf("%d changes, want steady and wobbly: %+v", len(got), got)
	}
	// steady: 20/20 → 2/20, Fisher p ≈ 2e-8; wobbly: 2/3 → 1/3, p = 1.
	if s := got[0]; s.Case != "steady" || !s.Regression || s.BaseClass != StablePass || s.CandClass != Flaky {
		t.Errorf("steady: %+v", s)
	}
	if w := got[1]; w.Case != "wobbly" || w.Regression || !strings.Contains(w.Note, "flaky in the baseline (2 of 3 passed)") {
		t.Errorf("wobbly: %+v", w)
	}
	c := Compare("b", base, "c", cand, CompareOptions{Holm: true})
	if !strings.Contains(strings.Join(c.Regressions, ","), "case steady") || strings.Contains(strings.Join(c.Regressions, ","), "wobbly") {
		t.Errorf("regressions %v", c.Regressions)
	}
	var md strings.Builder
	c.Markdown(&md)
	if !strings.Contains(md.String(), "- wobbly: 66.7% (2/3) → 33.3% (1/3); flaky in the baseline") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var html strings.Builder
	if err := HTMLCompare(&html, c); err != nil || !strings.Contains(html.String(), "Cases that did worse") || !strings.Contains(html.String(), "flaky in the baseline (2 of 3 passed)") {
		t.Errorf("html (%v) lacks the cases that did worse", err)
	}
	sum := Summarize("s", cand)
	md.Reset()
	sum.Markdown(&md, 0)
	if !strings.Contains(md.String(), "| cases stable-pass / flaky / stable-fail | 1 / 2 / 0 |") {
		t.Errorf("summary:\n%s", md.String())
	}
}
