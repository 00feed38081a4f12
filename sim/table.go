package sim

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/budget"
)

// label names a policy with its parameters, as the table shows it.
func (c Config) label(p Policy) string {
	switch p {
	case FixedRetries:
		return fmt.Sprintf("fixed-retries(R=%d)", c.Retries)
	case AlwaysSample:
		return fmt.Sprintf("always-sample(k=%d)", c.K)
	case ConfidenceDriven:
		return fmt.Sprintf("confidence<%.2g(k=%d)", c.Threshold, c.K)
	}
	return string(p)
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func dollars(m budget.Micros) string {
	if m == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.4f", m.Dollars())
}

// Table writes the report as an aligned table: a heading with the
// parameters, then per chain length n the closed form p^n and one line per
// policy.
func (r Report) Table(w io.Writer) error {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "p=%g per call; verifier recall=%g, false-fail=%g; retries=%d, k=%d; %d trials, seed %d\n",
		c.P, c.Recall, c.FalseFail, c.Retries, c.K, c.Trials, c.Seed)
	fmt.Fprintf(&b, "stated confidence: sharpness %g (AUC %.2f); each call %d+%d tokens, %s; each check %s\n",
		c.Calibration.Sharpness, c.Calibration.AUC(), c.InputTokens, c.OutputTokens, c.CallCost, c.CheckCost)
	b.WriteString("every step of a chain is one runner.Run of the real engine\n\n")
	rows := [][]string{{"n", "p^n", "policy", "success", "95% CI", "expected", "silent fail", "halted", "calls", "checks", "cost/success"}}
	for _, row := range r.Rows {
		for i, s := range row.Stats {
			n, pow := "", ""
			if i == 0 {
				n, pow = fmt.Sprint(row.N), pct(row.PowerLaw)
			}
			exp := "-"
			if s.Expected != nil {
				exp = pct(*s.Expected)
			}
			t := float64(c.Trials)
			rows = append(rows, []string{
				n, pow, c.label(s.Policy), pct(s.Rate), fmt.Sprintf("[%.1f, %.1f]", 100*s.Low, 100*s.High), exp,
				pct(float64(s.Silent) / t), pct(float64(s.Halted) / t),
				fmt.Sprintf("%.2f", s.Calls), fmt.Sprintf("%.2f", s.Checks), dollars(s.CostPerSuccess),
			})
		}
	}
	writeAligned(&b, rows, 2) // column 2, the policy, is left-aligned
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAligned writes rows in columns two spaces apart, right-aligned except
// column left.
func writeAligned(b *strings.Builder, rows [][]string, left int) {
	var width []int
	for _, r := range rows {
		for i, cell := range r {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, cell := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			if i == left {
				line.WriteString(cell + pad)
			} else {
				line.WriteString(pad + cell)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// Reading is one paragraph that says what the first and last rows show.
func (r Report) Reading() string {
	if len(r.Rows) == 0 {
		return ""
	}
	c := r.Config
	first, last := r.Rows[0], r.Rows[len(r.Rows)-1]
	frac := func(k int) string { return pct(float64(k) / float64(c.Trials)) }
	var parts []string
	u, okU := last.Stat(Unchecked)
	if okU {
		u0, _ := first.Stat(Unchecked)
		parts = append(parts, fmt.Sprintf(
			"With nothing checking, a step that is right %s of the time compounds: the chain succeeds %s at n=%d and %s at n=%d (p^n: %s and %s), and every failure is silent, a wrong answer accepted and built on.",
			pct(c.P), pct(u0.Rate), first.N, pct(u.Rate), last.N, pct(first.PowerLaw), pct(last.PowerLaw)))
	}
	if f, ok := last.Stat(FixedRetries); ok {
		f0, _ := first.Stat(FixedRetries)
		parts = append(parts, fmt.Sprintf(
			"Checking every answer (recall %g, false-fail %g) and retrying a rejected one up to %d times makes a step %s reliable, so the checked chain holds %s at n=%d and %s at n=%d.",
			c.Recall, c.FalseFail, c.Retries, pct(StepSuccessFixed(c.P, c.Recall, c.FalseFail, c.Retries)),
			pct(f0.Rate), first.N, pct(f.Rate), last.N))
		switch {
		case f.Silent > 0 && f.Halted > 0:
			parts = append(parts, fmt.Sprintf(
				"Of its chains at n=%d, %s fail silently (a wrong answer the verifier missed) and %s halt (a step the loop reported as not done).",
				last.N, frac(f.Silent), frac(f.Halted)))
		case f.Silent > 0:
			parts = append(parts, fmt.Sprintf(
				"Its failures at n=%d (%s of chains) are all silent: wrong answers the verifier missed.", last.N, frac(f.Silent)))
		case f.Halted > 0:
			parts = append(parts, fmt.Sprintf(
				"Its failures at n=%d (%s of chains) all halt: the loop reported them instead of building on them.", last.N, frac(f.Halted)))
		}
		if f.Silent > 0 {
			parts = append(parts, "Retries cannot fix what the check cannot see: there the verifier, not the generator, sets the ceiling.")
		}
	}
	a, okA := last.Stat(AlwaysSample)
	d, okD := last.Stat(ConfidenceDriven)
	if okA {
		parts = append(parts, fmt.Sprintf(
			"Sampling %d alternatives for every answer and checking them in order of stated confidence reaches %s at n=%d, with %.1f model calls per chain and %s per success.",
			c.K, pct(a.Rate), last.N, a.Calls, dollars(a.CostPerSuccess)))
	}
	if okD {
		parts = append(parts, fmt.Sprintf(
			"Sampling only when the stated confidence is below %.2g reaches %s with %.1f calls and %s per success.",
			c.Threshold, pct(d.Rate), d.Calls, dollars(d.CostPerSuccess)))
	}
	if okA || okD {
		parts = append(parts, fmt.Sprintf(
			"Both lean on the confidence (AUC %.2f at sharpness %g; at 0 it is noise).", c.Calibration.AUC(), c.Calibration.Sharpness))
	}
	if okU && u.CostPerSuccess > 0 {
		parts = append(parts, fmt.Sprintf("Unchecked, one successful %d-step chain costs %s once the failed ones are paid for.", last.N, dollars(u.CostPerSuccess)))
	}
	if len(last.Stats) > 1 {
		cheap, best := last.Stats[0], last.Stats[0]
		for _, s := range last.Stats[1:] {
			if s.CostPerSuccess > 0 && (cheap.CostPerSuccess == 0 || s.CostPerSuccess < cheap.CostPerSuccess) {
				cheap = s
			}
			if s.Successes > best.Successes {
				best = s
			}
		}
		if cheap.CostPerSuccess > 0 {
			parts = append(parts, fmt.Sprintf("At n=%d the cheapest per success is %s (%s) and the most reliable %s (%s).",
				last.N, c.label(cheap.Policy), dollars(cheap.CostPerSuccess), c.label(best.Policy), pct(best.Rate)))
		}
	}
	return strings.Join(parts, " ")
}
