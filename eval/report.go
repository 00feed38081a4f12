package eval

import (
	"fmt"
	"github.com/ratchetloop/ratchet/internal/words"
	"io"
	"slices"
	"strings"
)

// Markdown writes the summary for people: the suite's metrics, then one
// line per model and per case (at most maxCases cases, worst first; 0 means
// all).
func (s Summary) Markdown(w io.Writer, maxCases int) error {
	var b strings.Builder
	m := s.Suite
	fmt.Fprintf(&b, "# ratchet eval: %s\n\n%s.\n\n", s.Label, words.Count(m.Runs, "run"))
	b.WriteString("| metric | value | 95% CI |\n| --- | --- | --- |\n")
	for _, row := range summaryTable(m).Rows {
		mdRow(&b, row)
	}
	if len(s.Models) > 0 {
		b.WriteString("\n## Per model\n\n")
		t := groupTable("", s.Models)
		mdHead(&b, "model", t.Head)
		for _, row := range t.Rows {
			mdRow(&b, row)
		}
	}
	if len(s.Cases) > 0 {
		cases := slices.Clone(s.Cases)
		slices.SortStableFunc(cases, func(a, b Group) int { return cmpFloat(a.Metrics.Success.P, b.Metrics.Success.P) })
		shown := cases
		if maxCases > 0 && len(shown) > maxCases {
			shown = shown[:maxCases]
		}
		fmt.Fprintf(&b, "\n## Per case (%d of %d, lowest success first)\n\n", len(shown), len(cases))
		t := groupTable("", shown)
		mdHead(&b, "case", t.Head)
		for _, row := range t.Rows {
			mdRow(&b, row)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdHead writes head, a per-group table's, with its first column named.
func mdHead(b *strings.Builder, first string, head []string) {
	mdRow(b, append([]string{first}, head[1:]...))
	mdRow(b, slices.Repeat([]string{"---"}, len(head)))
}

// mdRow writes cells as a row of a Markdown table.
func mdRow(b *strings.Builder, cells []string) {
	for _, c := range cells {
		b.WriteString("| ")
		if c != "" {
			b.WriteString(c + " ")
		}
	}
	b.WriteString("|\n")
}
