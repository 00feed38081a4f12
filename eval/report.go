package eval

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// Markdown writes the summary for people: the suite's metrics, then one
// line per model and per case (at most maxCases cases, worst first; 0 means
// all).
func (s Summary) Markdown(w io.Writer, maxCases int) error {
	var b strings.Builder
	m := s.Suite
	fmt.Fprintf(&b, "# ratchet eval: %s\n\n%d runs.\n\n", s.Label, m.Runs)
	b.WriteString("| metric | value | 95% CI |\n| --- | --- | --- |\n")
	rate := func(name string, r Rate) {
		if r.N == 0 {
			fmt.Fprintf(&b, "| %s | – | |\n", name)
			return
		}
		fmt.Fprintf(&b, "| %s | %s | [%.1f%%, %.1f%%] |\n", name, rateText(r), 100*r.Lo, 100*r.Hi)
	}
	rate("success rate", m.Success)
	if m.Iterations.N > 0 {
		fmt.Fprintf(&b, "| iterations to success | mean %.2f, p50 %d, p90 %d (n=%d) | |\n", m.Iterations.Mean, m.Iterations.P50, m.Iterations.P90, m.Iterations.N)
	}
	rate("first-attempt pass rate", m.FirstPass)
	// The holdout tier's pass rate is the holdout pass rate of accepted
	// attempts (holdouts run only on those): one row, not two.
	for _, t := range []verify.Tier{verify.Cheap, verify.Expensive} {
		if r, ok := m.TierPass[t]; ok {
			rate("pass rate ("+string(t)+" tier)", r)
		}
	}
	rate("holdout pass rate of accepted", m.HoldoutPass)
	rate("escalation rate", m.Escalated)
	for _, d := range budget.Dimensions {
		if r, ok := m.Exhausted[d]; ok {
			rate("exhausted: "+string(d), r)
		}
	}
	for _, p := range []progress.Pattern{progress.Repeating, progress.Oscillating, progress.Stagnating} {
		if r, ok := m.Stalled[p]; ok {
			rate("stalled: "+string(p), r)
		}
	}
	if m.Calibration.N > 0 {
		fmt.Fprintf(&b, "| calibration (Brier score) | %.4f (n=%d) | |\n", m.Calibration.Brier, m.Calibration.N)
	}
	if m.Success.K > 0 {
		fmt.Fprintf(&b, "| cost per success | $%s | |\n| tokens per success | %.0f | |\n| wall time per success | %.3fs | |\n",
			trimFloat(m.Spend.CostPerSuccess/1e6), m.Spend.TokensPerSuccess, m.Spend.WallPerSuccess)
	}
	if len(s.Models) > 0 {
		b.WriteString("\n## Per model\n\n| model | runs | success | first-attempt pass | Brier | cost per success |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, g := range s.Models {
			groupLine(&b, g)
		}
	}
	if len(s.Cases) > 0 {
		cases := slices.Clone(s.Cases)
		slices.SortStableFunc(cases, func(a, b Group) int { return cmpFloat(a.Metrics.Success.P, b.Metrics.Success.P) })
		shown := cases
		if maxCases > 0 && len(shown) > maxCases {
			shown = shown[:maxCases]
		}
		fmt.Fprintf(&b, "\n## Per case (%d of %d, lowest success first)\n\n| case | runs | success | first-attempt pass | Brier | cost per success |\n| --- | --- | --- | --- | --- | --- |\n", len(shown), len(cases))
		for _, g := range shown {
			groupLine(&b, g)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func groupLine(b *strings.Builder, g Group) {
	m := g.Metrics
	brier, cost := "–", "–"
	if m.Calibration.N > 0 {
		brier = fmt.Sprintf("%.3f", m.Calibration.Brier)
	}
	if m.Success.K > 0 {
		cost = "$" + trimFloat(m.Spend.CostPerSuccess/1e6)
	}
	fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s |\n", g.Name, m.Runs, rateText(m.Success), rateText(m.FirstPass), brier, cost)
}
