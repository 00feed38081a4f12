package check_test

import (
	"context"
	"errors"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

func judge(t *testing.T, v verify.Verifier, answer string) verify.Verdict {
	t.Helper()
	got, err := v.Check(context.Background(), verify.Candidate{Answer: answer, Confidence: 0.5, Attempt: 1})
	if err != nil {
		t.Fatalf("Check(%q): unexpected error %v", answer, err)
	}
	return got
}

func TestEquals(t *testing.T) {
	long := strings.Repeat("x", 250)
	// 199 ASCII bytes, then a 3-byte rune straddling the 200-byte clip.
	straddle := strings.Repeat("a", 199) + "€€€"
	tests := []struct {
		name   string
		want   string
		answer string
		ok     bool
		detail string
	}{
		{"exact", "TOTAL: 142.50", "TOTAL: 142.50", true, "answer matches the expected value"},
		{"answer trimmed", "TOTAL: 142.50", "  TOTAL: 142.50\n", true, "answer matches the expected value"},
		{"want trimmed", "\tTOTAL: 142.50\n", "TOTAL: 142.50", true, "answer matches the expected value"},
		{"inner space counts", "TOTAL: 142.50", "TOTAL:  142.50", false, `expected "TOTAL: 142.50", got "TOTAL:  142.50"`},
		{"case counts", "TOTAL: 142.50", "Total: 142.5", false, `expected "TOTAL: 142.50", got "Total: 142.5"`},
		{"quoted and trimmed in detail", " a\"b ", "\n line\twith \"quotes\"\n ", false, `expected "a\"b", got "line\twith \"quotes\""`},
		{"empty answer", "5", "   ", false, `expected "5", got ""`},
		{"exactly 200 bytes not clipped", "5", long[:200], false, `expected "5", got "` + long[:200] + `"`},
		{"long answer clipped to 200 bytes", "5", long, false, `expected "5", got "` + long[:200] + `…"`},
		{"clip keeps whole runes", "5", straddle, false, `expected "5", got "` + strings.Repeat("a", 199) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := check.Equals(tt.want)
			got := judge(t, v, tt.answer)
			want := verify.Verdict{Check: "equals", OK: tt.ok, Confidence: 1, Detail: tt.detail, Provenance: verify.Validation}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
			if !utf8.ValidString(got.Detail) {
				t.Errorf("detail is not valid UTF-8: %q", got.Detail)
			}
		})
	}
	if v := check.Equals("x"); v.Name() != "equals" || v.Provenance() != verify.Validation {
		t.Errorf("Equals: Name, Provenance = %q, %q; want equals, validation", v.Name(), v.Provenance())
	}
}

func TestRegexCompileError(t *testing.T) {
	v, err := check.Regex(`^TOTAL: (\d+$`)
	if err == nil {
		t.Fatalf("Regex with an unclosed group: got verifier %v, want an error", v)
	}
	if v != nil {
		t.Errorf("Regex returned a verifier along with the error")
	}
	if !strings.HasPrefix(err.Error(), "regex check: ") {
		t.Errorf("error = %q, want it prefixed with %q", err, "regex check: ")
	}
	var syn *syntax.Error
	if !errors.As(err, &syn) || syn.Code != syntax.ErrMissingParen || syn.Expr != `^TOTAL: (\d+$` {
		t.Errorf("error = %#v, want a wrapped *syntax.Error for the missing paren in the pattern", err)
	}
	if _, err := check.Regex(`(?<!x)y`); err == nil { // lookbehind is not RE2
		t.Error("Regex accepted a non-RE2 pattern")
	}
}

func TestRegex(t *testing.T) {
	const pattern = `^TOTAL: \d+\.\d{2}$`
	tests := []struct {
		answer string
		ok     bool
		detail string
	}{
		{"TOTAL: 142.50", true, "answer matches /" + pattern + "/"},
		{"Total: 142.5", false, "answer does not match /" + pattern + "/"},
		{"TOTAL: 142.5", false, "answer does not match /" + pattern + "/"},
		{"TOTAL: 142.50\n", false, "answer does not match /" + pattern + "/"}, // not trimmed: $ is end of text
		{"", false, "answer does not match /" + pattern + "/"},
	}
	v, err := check.Regex(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name() != "regex" || v.Provenance() != verify.Validation {
		t.Errorf("Name, Provenance = %q, %q; want regex, validation", v.Name(), v.Provenance())
	}
	for _, tt := range tests {
		got := judge(t, v, tt.answer)
		want := verify.Verdict{Check: "regex", OK: tt.ok, Confidence: 1, Detail: tt.detail, Provenance: verify.Validation}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Regex(%q) on %q mismatch (-want +got):\n%s", pattern, tt.answer, diff)
		}
	}
	// Unanchored patterns match anywhere.
	v, _ = check.Regex(`\d{3}`)
	if got := judge(t, v, "total is 142.50 dollars"); !got.OK {
		t.Errorf("unanchored regex did not match inside the answer: %+v", got)
	}
}

func TestContains(t *testing.T) {
	tests := []struct {
		name   string
		subs   []string
		answer string
		ok     bool
		detail string
	}{
		{"none required", nil, "anything", true, "answer contains every required string"},
		{"all present", []string{"alpha", "beta"}, "beta then alpha", true, "answer contains every required string"},
		{"one missing", []string{"alpha", "beta"}, "alpha only", false, `answer is missing "beta"`},
		{"every missing one listed, in order", []string{"a1", "b2", "c3", "d4"}, "has b2 only", false, `answer is missing "a1", "c3", "d4"`},
		{"case sensitive", []string{"Total"}, "total", false, `answer is missing "Total"`},
		{"quotes escaped", []string{`say "hi"`}, "say hi", false, `answer is missing "say \"hi\""`},
		{"empty substring always present", []string{""}, "", true, "answer contains every required string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judge(t, check.Contains(tt.subs...), tt.answer)
			want := verify.Verdict{Check: "contains", OK: tt.ok, Confidence: 1, Detail: tt.detail, Provenance: verify.Validation}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
