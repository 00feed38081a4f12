package strength

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// unifiedDiff is a one-hunk unified diff from a to b. A mutant changes one
// contiguous span, so the lines between the common prefix and the common
// suffix are the whole change.
func unifiedDiff(name, a, b string) string {
	al, bl := lines(a), lines(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	if pre == len(al) && pre == len(bl) {
		return ""
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	lo := max(pre-diffContext, 0)
	aHi, bHi := min(len(al)-suf+diffContext, len(al)), min(len(bl)-suf+diffContext, len(bl))
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s (mutant)\n@@ -%s +%s @@\n", name, name, hunkRange(lo, aHi-lo), hunkRange(lo, bHi-lo))
	line := func(prefix, s string) {
		sb.WriteString(prefix)
		sb.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for _, s := range al[lo:pre] {
		line(" ", s)
	}
	for _, s := range al[pre : len(al)-suf] {
		line("-", s)
	}
	for _, s := range bl[pre : len(bl)-suf] {
		line("+", s)
	}
	for _, s := range al[len(al)-suf : aHi] {
		line(" ", s)
	}
	return sb.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// lines splits s after each newline, with no empty last element.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
