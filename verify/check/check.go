// Package check holds ratchet's built-in verifiers: string checks (equals,
// regex, contains), syntax of a language, JSON Schema, length, grounding of
// quotes in sources, a rubric grader (a separate model) and a
// self-consistency vote. Package verify holds only the neutral types they
// implement.
//
// Every constructor validates its configuration and returns an error naming
// the problem; the verifiers it returns are safe for concurrent use. As
// everywhere in ratchet, Check returns a Go error only when the check could
// not run (a missing interpreter, a failed model call); a candidate that
// fails is a Verdict with OK false whose Detail says what is wrong and where,
// in words the generating model can act on.
package check

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/verify"
)

// verifier is the common shape of this package's verifiers: a name, a
// provenance and a function of the candidate. It fills Check and Provenance
// in every verdict so that the functions cannot forget them.
type verifier struct {
	name string
	prov verify.Provenance
	fn   func(ctx context.Context, c verify.Candidate) (verify.Verdict, error)
}

var _ verify.Verifier = (*verifier)(nil)

func (v *verifier) Name() string                  { return v.name }
func (v *verifier) Provenance() verify.Provenance { return v.prov }

func (v *verifier) Check(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
	d, err := v.fn(ctx, c)
	d.Check, d.Provenance = v.name, v.prov
	return d, err
}

// clip shortens s to at most n bytes plus an ellipsis, never splitting a
// UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// oneLine collapses every run of white space (newlines included) to one
// space, so that a snippet of the answer fits on a line of feedback.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// lineCol returns the 1-based line and column (in runes) of byte offset off
// in src; off is clamped to [0, len(src)], so len(src) is the position just
// after the last character.
func lineCol(src string, off int) (line, col int) {
	off = max(0, min(off, len(src)))
	before := src[:off]
	line = strings.Count(before, "\n") + 1
	start := strings.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCountInString(before[start:]) + 1
}

// at formats a place in the answer as Where does.
func at(line, col int) string {
	switch {
	case line <= 0:
		return ""
	case col <= 0:
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}

// plural returns "1 word" or "2 words".

// isWordRune reports whether r is part of a word: a letter or a digit.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
