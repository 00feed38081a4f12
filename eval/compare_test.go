package eval

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
)

// synth makes n runs of which succ end done (after iters rounds each) and
// the rest exhausted steps; every run costs cost µ$.
func synth(n, succ, iters int, cost budget.Micros) []Record {
	var out []Record
	for i := range n {
		var as []loop.Attempt
		status := loop.Exhausted(budget.Steps)
		for s := 1; s <= iters; s++ {
			accepted := i < succ && s == iters
			v := fail("tests")
			if accepted {
				v = ok("tests")
			}
			as = append(as, att(s, 0.7, accepted, ok("fmt"), v))
		}
		if i < succ {
			status = loop.Done
		}
		out = append(out, run("c"+strconv.Itoa(i), "m", status, cost, 100, 50, time.Second, as...))
	}
	return out
}

func TestCompareIdenticalHasNoRegression(t *testing.T) {
	a := synth(40, 30, 2, 1000)
	c := Compare("a", a, "b", a, CompareOptions{})
	if len(c.Regressions) != 0 {
		t.Errorf("identical sides regress on %v", c.Regressions)
	}
	for _, r := range c.Rows {
		if r.Significant || r.Delta != 0 {
			t.Errorf("%s: delta %v, p %v on identical sides", r.Metric, r.Delta, r.P)
		}
	}
}

func TestCompareFindsRegressions(t *testing.T) {
	base := synth(60, 54, 1, 1000) // 90% done in one round
	cand := synth(60, 30, 3, 3000) // 50% done in three rounds, dearer
	c := Compare("base", base, "cand", cand, CompareOptions{Ignore: []string{"wall"}})
	got := map[string]Row{}
	for _, r := range c.Rows {
		got[r.Metric] = r
	}
	// Fisher on [[54, 6], [30, 30]] is far below 0.05.
	s := got["success rate"]
	if !s.Regression || s.Test != "fisher" || s.P > 1e-4 || !(s.Lo < s.Delta && s.Delta < s.Hi) || s.Hi >= 0 {
		t.Errorf("success rate row: %+v", s)
	}
	if r := got["iterations to success"]; !r.Regression || r.Test != "mann-whitney" || r.Delta != 2 {
		t.Errorf("iterations row: %+v", r)
	}
	if r := got["exhausted: steps"]; !r.Regression || r.Delta <= 0 {
		t.Errorf("exhaustion row: %+v", r)
	}
	// Cost per success: 60·1000/54 = 1111 µ$ against 60·3000/30 = 6000 µ$.
	if r := got["cost per success (USD)"]; !r.Regression || r.Test != "bootstrap" ||
		math.Abs(r.Base-60*1000/54.0/1e6) > 1e-12 || math.Abs(r.Cand-60*3000/30.0/1e6) > 1e-12 {
		t.Errorf("cost row: %+v", r)
	}
	if r := got["wall time per success (s)"]; r.Regression || !r.Ignored {
		t.Errorf("wall row is ignored, yet: %+v", r)
	}
	// The reverse comparison turns the regressions into improvements.
	rev := Compare("cand", cand, "base", base, CompareOptions{})
	if len(rev.Regressions) != 0 {
		t.Errorf("reverse regressions: %v", rev.Regressions)
	}
	var md bytes.Buffer
	if err := c.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Warning") {
		t.Errorf("same cases, yet a warning:\n%s", md.String())
	}
	for _, want := range []string{"| success rate | 90.0% (54/60) | 50.0% (30/60) | -40.0 pts |", "▼ regression", "significant regression(s):"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestCompareDeterministic(t *testing.T) {
	base, cand := synth(50, 40, 2, 1000), synth(50, 35, 2, 1100)
	enc := func() string {
		var b bytes.Buffer
		if err := Compare("a", base, "b", cand, CompareOptions{}).JSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	first := enc()
	if diff := cmp.Diff(first, enc()); diff != "" {
		t.Errorf("two comparisons differ:\n%s", diff)
	}
	var back Comparison
	if err := json.Unmarshal([]byte(first), &back); err != nil || len(back.Rows) == 0 {
		t.Errorf("JSON does not read back: %v", err)
	}
}

func TestCompareEmptySide(t *testing.T) {
	c := Compare("a", nil, "b", synth(5, 5, 1, 10), CompareOptions{})
	if c.OnlyBase != 0 || c.OnlyCand != 5 {
		t.Errorf("case difference: %d only in base, %d only in cand", c.OnlyBase, c.OnlyCand)
	}
	for _, r := range c.Rows {
		if r.Test != "" || r.Regression {
			t.Errorf("%s tested against an empty side: %+v", r.Metric, r)
		}
	}
}

func TestHolm(t *testing.T) {
	rows := []Row{
		{Metric: "a", Test: "fisher", P: 0.01},
		{Metric: "b", Test: "fisher", P: 0.04},
		{Metric: "c", Test: "fisher", P: 0.03},
		{Metric: "d", Test: "fisher", P: 0.5},
		{Metric: "ignored", Test: "bootstrap", P: 0.001, Ignored: true},
		{Metric: "untested", P: 1},
	}
	for i := range rows {
		rows[i].PAdj = rows[i].P
	}
	holm(rows)
	// m = 4 gated tests. Sorted: .01·4 = .04; .03·3 = .09; .04·2 = .08,
	// raised to the running maximum .09; .5·1 = .5.
	var got []float64
	for _, r := range rows {
		got = append(got, r.PAdj)
	}
	want := []float64{0.04, 0.09, 0.09, 0.5, 0.001, 1}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Holm-adjusted p (-want +got):\n%s", diff)
	}
	// Through Compare: 54/60 against 45/60 done gives raw p-values of
	// 0.027 (Brier) and 0.033 (spend per success) among ten tests:
	// regressions alone, not once adjusted.
	base, cand := synth(60, 54, 1, 1000), synth(60, 45, 1, 1000)
	plain := Compare("a", base, "b", cand, CompareOptions{})
	adjusted := Compare("a", base, "b", cand, CompareOptions{Holm: true})
	if len(plain.Regressions) == 0 || len(adjusted.Regressions) != 0 {
		t.Errorf("regressions: plain %v, Holm %v", plain.Regressions, adjusted.Regressions)
	}
}
