package check

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/verify"
)

// LengthUnits are the units Length counts in.
var LengthUnits = []string{"chars", "words", "lines"}

// Length returns a check, named "length", that passes when the answer's
// length is within [min, max]. A max of 0 means no maximum and a min of 0 no
// minimum; at least one bound must be set.
//
// The answer is trimmed of surrounding white space before counting, so a
// trailing newline never counts. Units: "chars" counts characters (Unicode
// code points, not bytes), "words" counts runs of non-space text
// (strings.Fields), "lines" counts lines (newlines + 1; 0 for an empty
// answer). A failure gives the count and the bound it breaks: "the answer has
// 312 words; the maximum is 250 words".
//
// The provenance is Validation.
func Length(min, max int, unit string) (verify.Verifier, error) {
	var count func(string) int
	noun := map[string]string{"chars": "character", "words": "word", "lines": "line"}[unit]
	switch unit {
	case "chars":
		count = utf8.RuneCountInString
	case "words":
		count = func(s string) int { return len(strings.Fields(s)) }
	case "lines":
		count = func(s string) int {
			if s == "" {
				return 0
			}
			return strings.Count(s, "\n") + 1
		}
	default:
		return nil, fmt.Errorf("length check: unit must be one of %s, got %q", strings.Join(LengthUnits, ", "), unit)
	}
	switch {
	case min < 0 || max < 0:
		return nil, fmt.Errorf("length check: bounds must not be negative, got min %d, max %d", min, max)
	case min == 0 && max == 0:
		return nil, fmt.Errorf("length check: no bound given; set min, max or both (max 0 means no maximum)")
	case max > 0 && min > max:
		return nil, fmt.Errorf("length check: min %d is above max %d", min, max)
	}
	return &verifier{name: "length", prov: verify.Validation, fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		n := count(strings.TrimSpace(c.Answer))
		switch {
		case n < min:
			return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("the answer has %s; the minimum is %s", words.Count(n, noun), words.Count(min, noun))}, nil
		case max > 0 && n > max:
			return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("the answer has %s; the maximum is %s", words.Count(n, noun), words.Count(max, noun))}, nil
		}
		return verify.Verdict{OK: true, Confidence: 1, Detail: fmt.Sprintf("the answer has %s, within the bounds", words.Count(n, noun))}, nil
	}}, nil
}
