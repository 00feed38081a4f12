package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// DefaultAlpha is the significance level of Compare: a difference with a
// p-value below it is significant.
const DefaultAlpha = 0.05

// CompareOptions tunes Compare; the zero value means defaults.
type CompareOptions struct {
	// Alpha is the significance level (default DefaultAlpha). Without
	// Holm, each metric is tested at Alpha on its own: with about a dozen
	// metrics, one significant difference in two comparisons of identical
	// systems is expected by chance at 0.05.
	Alpha float64
	// Ignore lists metric names (or prefixes such as "wall") that never
	// count as regressions; they are still shown.
	Ignore []string
	// Holm adjusts the p-values of the gated metrics for their number
	// (Holm–Bonferroni), so that Alpha bounds the chance of any false
	// regression rather than of each.
	Holm bool
}

// Row is one metric of a comparison.
type Row struct {
	Metric string `json:"metric"`
	// Kind is "rate", "distribution", "score" or "ratio".
	Kind string `json:"kind"`
	// HigherIsBetter says which way is an improvement.
	HigherIsBetter bool    `json:"higher_is_better"`
	Base           float64 `json:"base"`
	Cand           float64 `json:"cand"`
	// BaseText and CandText show the values with their counts.
	BaseText string `json:"base_text"`
	CandText string `json:"cand_text"`
	// Delta is Cand − Base, with its 95% interval [Lo, Hi] when HasCI.
	Delta float64 `json:"delta"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	HasCI bool    `json:"has_ci"`
	// Test names the significance test ("fisher", "mann-whitney",
	// "bootstrap"), empty when there was nothing to test (a side without
	// data); P is its two-sided p-value (1 without a test).
	Test string  `json:"test,omitempty"`
	P    float64 `json:"p"`
	// PAdj is P adjusted for multiple tests (Comparison.Correction), or P.
	PAdj        float64 `json:"p_adjusted"`
	Significant bool    `json:"significant"`
	// Regression: significant and in the worse direction, and not ignored.
	Regression  bool `json:"regression"`
	Improvement bool `json:"improvement"`
	Ignored     bool `json:"ignored,omitempty"`
}

// Comparison is every metric of a baseline and a candidate side by side.
type Comparison struct {
	Base     string  `json:"base"`
	Cand     string  `json:"cand"`
	BaseRuns int     `json:"base_runs"`
	CandRuns int     `json:"cand_runs"`
	Alpha    float64 `json:"alpha"`
	// Correction is "holm" when p-values were adjusted, else empty.
	Correction string `json:"correction,omitempty"`
	// OnlyBase and OnlyCand count the cases found on one side only: the
	// sides did not run the same suite, and the metrics mix that change
	// with the change under test.
	OnlyBase int   `json:"only_base_cases"`
	OnlyCand int   `json:"only_cand_cases"`
	Rows     []Row `json:"rows"`
	// CaseChanges are the cases whose success rate dropped, each tested
	// on its own runs; a significant drop is a regression named "case C".
	CaseChanges []CaseChange `json:"case_changes"`
	Regressions []string     `json:"regressions"`
	// BaseMetrics and CandMetrics are the full metrics, for reports.
	BaseMetrics Metrics `json:"base_metrics"`
	CandMetrics Metrics `json:"cand_metrics"`
}

// Compare computes the metrics of base and cand and tests each difference:
// Fisher's exact test for rates (interval: Newcombe's), Mann–Whitney for
// the iterations distribution, and a seeded bootstrap for the Brier score
// and the spend per success. It is deterministic.
func Compare(baseName string, base []Record, candName string, cand []Record, opts CompareOptions) Comparison {
	if opts.Alpha <= 0 || opts.Alpha >= 1 {
		opts.Alpha = DefaultAlpha
	}
	b, c := Compute(base), Compute(cand)
	cmp := Comparison{Base: baseName, Cand: candName, BaseRuns: b.Runs, CandRuns: c.Runs, Alpha: opts.Alpha, Regressions: []string{}, BaseMetrics: b, CandMetrics: c}
	cmp.OnlyBase, cmp.OnlyCand = caseDiff(base, cand)
	add := func(r Row) {
		for _, ig := range opts.Ignore {
			if ig != "" && strings.HasPrefix(r.Metric, ig) {
				r.Ignored = true
			}
		}
		cmp.Rows = append(cmp.Rows, r)
	}
	add(rateRow("success rate", b.Success, c.Success, true))
	add(iterRow(b.Iterations, c.Iterations))
	add(rateRow("first-attempt pass rate", b.FirstPass, c.FirstPass, true))
	// The holdout tier's pass rate is the holdout pass rate of accepted
	// attempts (holdouts run only on those): one row, not two.
	for _, t := range []verify.Tier{verify.Cheap, verify.Expensive} {
		rb, okb := b.TierPass[t]
		rc, okc := c.TierPass[t]
		if okb || okc {
			add(rateRow("pass rate ("+string(t)+" tier)", rb, rc, true))
		}
	}
	add(rateRow("holdout pass rate of accepted", b.HoldoutPass, c.HoldoutPass, true))
	add(rateRow("escalation rate", b.Escalated, c.Escalated, false))
	if b.Cheat.N > 0 || c.Cheat.N > 0 {
		add(rateRow("cheat rate (impossible twins done)", b.Cheat, c.Cheat, false))
	}
	for _, d := range budget.Dimensions {
		rb, okb := b.Exhausted[d]
		rc, okc := c.Exhausted[d]
		if okb || okc {
			add(rateRow("exhausted: "+string(d), orZero(rb, b.Runs), orZero(rc, c.Runs), false))
		}
	}
	for _, p := range progress.Patterns {
		rb, okb := b.Stalled[p]
		rc, okc := c.Stalled[p]
		if okb || okc {
			add(rateRow("stalled: "+string(p), orZero(rb, b.Runs), orZero(rc, c.Runs), false))
		}
	}
	add(brierRow(b.Calibration, c.Calibration))
	add(spendRow("cost per success (USD)", b, c, func(u runUnit) float64 { return float64(u.cost) / 1e6 }))
	add(spendRow("tokens per success", b, c, func(u runUnit) float64 { return float64(u.tokens) }))
	add(spendRow("wall time per success (s)", b, c, func(u runUnit) float64 { return u.wall.Seconds() }))

	for i := range cmp.Rows {
		cmp.Rows[i].PAdj = cmp.Rows[i].P
	}
	if opts.Holm {
		cmp.Correction = "holm"
		holm(cmp.Rows)
	}
	for i := range cmp.Rows {
		r := &cmp.Rows[i]
		r.Significant = r.Test != "" && r.PAdj < opts.Alpha
		worse := (r.Delta < 0) == r.HigherIsBetter && r.Delta != 0
		r.Regression = r.Significant && worse && !r.Ignored
		r.Improvement = r.Significant && !worse && r.Delta != 0
		if r.Regression {
			cmp.Regressions = append(cmp.Regressions, r.Metric)
		}
	}
	cmp.CaseChanges = caseChanges(base, cand, opts.Alpha, opts.Holm)
	for _, ch := range cmp.CaseChanges {
		if ch.Regression {
			cmp.Regressions = append(cmp.Regressions, "case "+ch.Case)
		}
	}
	return cmp
}

// holm sets PAdj of the tested, gated rows to Holm's step-down adjusted
// p-values: sorted ascending, the i-th of m (from 0) becomes
// max over j ≤ i of min(1, (m−j)·p_j). Rejecting PAdj < α keeps the chance
// of any false regression among them at most α.
func holm(rows []Row) {
	var idx []int
	for i, r := range rows {
		if r.Test != "" && !r.Ignored {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(rows[a].P, rows[b].P) })
	m, running := len(idx), 0.0
	for j, i := range idx {
		running = max(running, min(1, float64(m-j)*rows[i].P))
		rows[i].PAdj = running
	}
}

func caseDiff(base, cand []Record) (onlyBase, onlyCand int) {
	names := func(rs []Record) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs {
			m[r.Case] = true
		}
		return m
	}
	b, c := names(base), names(cand)
	for n := range b {
		if !c[n] {
			onlyBase++
		}
	}
	for n := range c {
		if !b[n] {
			onlyCand++
		}
	}
	return onlyBase, onlyCand
}

// orZero is r, or 0 of n when the metric did not occur on that side.
func orZero(r Rate, n int) Rate {
	if r.N == 0 {
		return NewRate(0, n)
	}
	return r
}

func rateText(r Rate) string {
	if r.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*r.P, r.K, r.N)
}

func rateRow(name string, b, c Rate, higher bool) Row {
	r := Row{Metric: name, Kind: "rate", HigherIsBetter: higher, Base: b.P, Cand: c.P, BaseText: rateText(b), CandText: rateText(c), P: 1}
	if b.N == 0 || c.N == 0 {
		return r
	}
	r.Delta = c.P - b.P
	r.Lo, r.Hi = Newcombe(b.K, b.N, c.K, c.N)
	r.HasCI = true
	r.Test, r.P = "fisher", FisherExact(b.K, b.N-b.K, c.K, c.N-c.K)
	return r
}

func iterRow(b, c Dist) Row {
	text := func(d Dist) string {
		if d.N == 0 {
			return "–"
		}
		return fmt.Sprintf("mean %.2f, p50 %d, p90 %d (n=%d)", d.Mean, d.P50, d.P90, d.N)
	}
	r := Row{Metric: "iterations to success", Kind: "distribution", Base: b.Mean, Cand: c.Mean, BaseText: text(b), CandText: text(c), P: 1}
	if b.N == 0 || c.N == 0 {
		return r
	}
	r.Delta = c.Mean - b.Mean
	fb, fc := floats(b.Values), floats(c.Values)
	mean := func(xs []float64) func([]int) (float64, bool) {
		return func(idx []int) (float64, bool) {
			s := 0.0
			for _, i := range idx {
				s += xs[i]
			}
			return s / float64(len(idx)), true
		}
	}
	r.Lo, r.Hi, _, r.HasCI = bootstrapDiff(len(fb), len(fc), mean(fb), mean(fc))
	r.Test, r.P = "mann-whitney", MannWhitney(fb, fc)
	return r
}

func floats(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func brierRow(b, c Calibration) Row {
	text := func(cal Calibration) string {
		if cal.N == 0 {
			return "–"
		}
		return fmt.Sprintf("%.4f (n=%d)", cal.Brier, cal.N)
	}
	r := Row{Metric: "calibration (Brier score)", Kind: "score", Base: b.Brier, Cand: c.Brier, BaseText: text(b), CandText: text(c), P: 1}
	if b.N == 0 || c.N == 0 {
		return r
	}
	r.Delta = c.Brier - b.Brier
	stat := func(ps []calPair) func([]int) (float64, bool) {
		return func(idx []int) (float64, bool) {
			s := 0.0
			for _, i := range idx {
				d := ps[i].conf - ps[i].outcome
				s += d * d
			}
			return s / float64(len(idx)), true
		}
	}
	var ok bool
	r.Lo, r.Hi, r.P, ok = bootstrapDiff(len(b.pairs), len(c.pairs), stat(b.pairs), stat(c.pairs))
	if ok {
		r.HasCI, r.Test = true, "bootstrap"
	}
	return r
}

// spendRow compares total(x)/successes, resampling runs.
func spendRow(name string, b, c Metrics, x func(runUnit) float64) Row {
	ratio := func(units []runUnit) func([]int) (float64, bool) {
		return func(idx []int) (float64, bool) {
			total, succ := 0.0, 0
			for _, i := range idx {
				total += x(units[i])
				if units[i].success {
					succ++
				}
			}
			if succ == 0 {
				return 0, false
			}
			return total / float64(succ), true
		}
	}
	all := func(units []runUnit) []int {
		idx := make([]int, len(units))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	bv, bok := ratio(b.perRun)(all(b.perRun))
	cv, cok := ratio(c.perRun)(all(c.perRun))
	text := func(v float64, ok bool) string {
		if !ok {
			return "– (no success)"
		}
		return trimFloat(v)
	}
	r := Row{Metric: name, Kind: "ratio", Base: bv, Cand: cv, BaseText: text(bv, bok), CandText: text(cv, cok), P: 1}
	if !bok || !cok {
		return r
	}
	r.Delta = cv - bv
	var ok bool
	r.Lo, r.Hi, r.P, ok = bootstrapDiff(len(b.perRun), len(c.perRun), ratio(b.perRun), ratio(c.perRun))
	if ok {
		r.HasCI, r.Test = true, "bootstrap"
	} else {
		r.P = 1
	}
	return r
}

func trimFloat(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// fmtDelta shows a delta: rates in percentage points, others as numbers.
func fmtDelta(r Row, v float64) string {
	if r.Kind == "rate" {
		return fmt.Sprintf("%+.1f pts", 100*v)
	}
	s := trimFloat(v)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// Markdown writes the comparison as a Markdown table for people.
func (c Comparison) Markdown(w io.Writer) error {
	var b strings.Builder
	scope := "per metric"
	if c.Correction == "holm" {
		scope = "over the gated metrics (Holm-adjusted p)"
	}
	fmt.Fprintf(&b, "# ratchet eval compare\n\nbase **%s** (%s) vs candidate **%s** (%s); α = %g %s, two-sided tests.\n\n",
		c.Base, words.Count(c.BaseRuns, "run"), c.Cand, words.Count(c.CandRuns, "run"), c.Alpha, scope)
	if c.OnlyBase > 0 || c.OnlyCand > 0 {
		fmt.Fprintf(&b, "**Warning:** the sides ran different cases (%d only in base, %d only in the candidate); the differences below mix that in.\n\n", c.OnlyBase, c.OnlyCand)
	}
	b.WriteString("| metric | base | candidate | Δ | 95% CI of Δ | test | p | |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range c.Rows {
		flag := ""
		switch {
		case r.Regression:
			flag = "▼ regression"
		case r.Improvement:
			flag = "▲ better"
		case r.Significant && r.Ignored:
			flag = "(ignored)"
		}
		mdRow(&b, append(r.cells(), flag))
	}
	b.WriteString("\n")
	if len(c.CaseChanges) > 0 {
		b.WriteString("Cases that did worse:\n\n")
		models := map[string]bool{}
		for _, ch := range c.CaseChanges {
			models[ch.Model] = true
		}
		for _, ch := range c.CaseChanges {
			name := ch.Case
			if len(models) > 1 {
				name += " (" + ch.Model + ")"
			}
			fmt.Fprintf(&b, "- %s: %s → %s; %s\n", name, rateText(ch.Base), rateText(ch.Cand), ch.Note)
		}
		b.WriteString("\n")
	}
	if len(c.Regressions) == 0 {
		b.WriteString("No significant regression.\n")
	} else {
		fmt.Fprintf(&b, "**%d significant regression(s):** %s.\n", len(c.Regressions), strings.Join(c.Regressions, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cells are r's columns as both reports show them: metric, base,
// candidate, Δ, its confidence interval, the test and its p-value.
func (r Row) cells() []string {
	delta, ci, test, p := "–", "–", "–", "–"
	if r.Test != "" || r.HasCI {
		delta = fmtDelta(r, r.Delta)
	}
	if r.HasCI {
		ci = "[" + fmtDelta(r, r.Lo) + ", " + fmtDelta(r, r.Hi) + "]"
	}
	if r.Test != "" {
		test, p = r.Test, fmtP(r.PAdj)
	}
	return []string{r.Metric, r.BaseText, r.CandText, delta, ci, test, p}
}

func fmtP(p float64) string {
	if p < 0.0001 {
		return "<0.0001"
	}
	return fmt.Sprintf("%.4f", p)
}

// JSON writes the comparison as indented JSON for machines.
func (c Comparison) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	out := c
	out.Rows = slices.Clone(c.Rows)
	return enc.Encode(out)
}
