package check

import (
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/verify"
)

func TestLength(t *testing.T) {
	words := mustNew(t)(Length(2, 4, "words"))
	if words.Name() != "length" || words.Provenance() != verify.Validation {
		t.Errorf("name %q, provenance %q", words.Name(), words.Provenance())
	}
	t.Run("words", func(t *testing.T) {
		runVerdicts(t, words, []verdictCase{
			{name: "within", answer: "one two three", ok: true, conf: 1, detail: "the answer has 3 words, within the bounds"},
			{name: "at min", answer: "  one\n\ttwo  ", ok: true, conf: 1, detail: "the answer has 2 words, within the bounds"},
			{name: "at max", answer: "a b c d", ok: true, conf: 1, detail: "the answer has 4 words, within the bounds"},
			{name: "below", answer: "one", conf: 1, detail: "the answer has 1 word; the minimum is 2 words"},
			{name: "above", answer: "a b c d e", conf: 1, detail: "the answer has 5 words; the maximum is 4 words"},
			{name: "empty", answer: "", conf: 1, detail: "the answer has 0 words; the minimum is 2 words"},
		})
	})
	t.Run("chars count runes", func(t *testing.T) {
		runVerdicts(t, mustNew(t)(Length(0, 3, "chars")), []verdictCase{
			{name: "three runes, six bytes", answer: "héé\n", ok: true, conf: 1, detail: "the answer has 3 characters, within the bounds"},
			{name: "four", answer: "abcd", conf: 1, detail: "the answer has 4 characters; the maximum is 3 characters"},
			{name: "no minimum", answer: "", ok: true, conf: 1, detail: "the answer has 0 characters, within the bounds"},
		})
	})
	t.Run("lines", func(t *testing.T) {
		runVerdicts(t, mustNew(t)(Length(2, 0, "lines")), []verdictCase{
			{name: "trailing newline does not count", answer: "a\n", conf: 1, detail: "the answer has 1 line; the minimum is 2 lines"},
			{name: "blank line counts", answer: "a\n\nb", ok: true, conf: 1, detail: "the answer has 3 lines, within the bounds"},
			{name: "no maximum", answer: strings.Repeat("x\n", 1000), ok: true, conf: 1, detail: "the answer has 1000 lines, within the bounds"},
			{name: "empty", answer: "\n\n", conf: 1, detail: "the answer has 0 lines; the minimum is 2 lines"},
		})
	})
}

func TestLengthConfig(t *testing.T) {
	tests := []struct {
		name     string
		min, max int
		unit     string
		msg      string
	}{
		{"unit", 1, 2, "bytes", `length check: unit must be one of chars, words, lines, got "bytes"`},
		{"empty unit", 1, 2, "", `length check: unit must be one of chars, words, lines, got ""`},
		{"negative", -1, 2, "words", "length check: bounds must not be negative, got min -1, max 2"},
		{"no bound", 0, 0, "words", "length check: no bound given; set min, max or both (max 0 means no maximum)"},
		{"inverted", 5, 2, "words", "length check: min 5 is above max 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Length(tt.min, tt.max, tt.unit)
			wantConfigError(t, v, err, tt.msg)
		})
	}
}
