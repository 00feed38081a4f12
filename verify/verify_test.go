package verify_test

import (
	"context"
	"errors"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/verify"
)

func check(t *testing.T, v verify.Verifier, answer string) verify.Verdict {
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
			v := verify.Equals(tt.want)
			got := check(t, v, tt.answer)
			want := verify.Verdict{Check: "equals", OK: tt.ok, Confidence: 1, Detail: tt.detail, Provenance: verify.Validation}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
			if !utf8.ValidString(got.Detail) {
				t.Errorf("detail is not valid UTF-8: %q", got.Detail)
			}
		})
	}
	if v := verify.Equals("x"); v.Name() != "equals" || v.Provenance() != verify.Validation {
		t.Errorf("Equals: Name, Provenance = %q, %q; want equals, validation", v.Name(), v.Provenance())
	}
}

func TestRegexCompileError(t *testing.T) {
	v, err := verify.Regex(`^TOTAL: (\d+$`)
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
	if _, err := verify.Regex(`(?<!x)y`); err == nil { // lookbehind is not RE2
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
	v, err := verify.Regex(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name() != "regex" || v.Provenance() != verify.Validation {
		t.Errorf("Name, Provenance = %q, %q; want regex, validation", v.Name(), v.Provenance())
	}
	for _, tt := range tests {
		got := check(t, v, tt.answer)
		want := verify.Verdict{Check: "regex", OK: tt.ok, Confidence: 1, Detail: tt.detail, Provenance: verify.Validation}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Regex(%q) on %q mismatch (-want +got):\n%s", pattern, tt.answer, diff)
		}
	}
	// Unanchored patterns match anywhere.
	v, _ = verify.Regex(`\d{3}`)
	if got := check(t, v, "total is 142.50 dollars"); !got.OK {
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
			got := check(t, verify.Contains(tt.subs...), tt.answer)
			want := verify.Verdict{Check: "contains", OK: tt.ok, Confidence: 1, Detail: tt.detail, Provenance: verify.Validation}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunc(t *testing.T) {
	errInfra := errors.New("grader unreachable")
	tests := []struct {
		name    string
		fn      func(context.Context, verify.Candidate) (verify.Verdict, error)
		want    verify.Verdict
		wantErr error
	}{
		{
			"name and provenance set on the verdict",
			func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
				return verify.Verdict{OK: c.Answer == "42", Confidence: 0.9, Detail: "ran the tests", Where: "TestAnswer", Cost: 12}, nil
			},
			verify.Verdict{Check: "unit-tests", OK: true, Confidence: 0.9, Detail: "ran the tests", Where: "TestAnswer", Provenance: verify.Execution, Cost: 12},
			nil,
		},
		{
			"the function's own name and provenance are overridden",
			func(context.Context, verify.Candidate) (verify.Verdict, error) {
				return verify.Verdict{Check: "liar", Provenance: verify.Self, OK: false, Detail: "nope"}, nil
			},
			verify.Verdict{Check: "unit-tests", OK: false, Detail: "nope", Provenance: verify.Execution},
			nil,
		},
		{
			"errors pass through, verdict still named",
			func(context.Context, verify.Candidate) (verify.Verdict, error) {
				return verify.Verdict{}, errInfra
			},
			verify.Verdict{Check: "unit-tests", Provenance: verify.Execution},
			errInfra,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen verify.Candidate
			f := verify.Func{CheckName: "unit-tests", Prov: verify.Execution, Fn: func(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
				seen = c
				return tt.fn(ctx, c)
			}}
			var v verify.Verifier = f
			if v.Name() != "unit-tests" || v.Provenance() != verify.Execution {
				t.Errorf("Name, Provenance = %q, %q", v.Name(), v.Provenance())
			}
			cand := verify.Candidate{Answer: "42", Confidence: 0.8, Attempt: 3}
			got, err := v.Check(context.Background(), cand)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(cand, seen); diff != "" {
				t.Errorf("candidate passed to Fn mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTiersAll(t *testing.T) {
	re, err := verify.Regex(`x`)
	if err != nil {
		t.Fatal(err)
	}
	named := func(n string) verify.Verifier { return verify.Func{CheckName: n} }
	tests := []struct {
		name  string
		tiers verify.Tiers
		want  []string
	}{
		{"empty", verify.Tiers{}, nil},
		{"cheap only", verify.Tiers{Cheap: []verify.Verifier{re, verify.Contains("a")}}, []string{"regex", "contains"}},
		{"expensive only", verify.Tiers{Expensive: []verify.Verifier{verify.Equals("a")}}, []string{"equals"}},
		{
			"cheap first, each tier in order",
			verify.Tiers{
				Cheap:     []verify.Verifier{named("c1"), named("c2"), named("c3")},
				Expensive: []verify.Verifier{named("e1"), named("e2")},
			},
			[]string{"c1", "c2", "c3", "e1", "e2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range tt.tiers.All() {
				got = append(got, v.Name())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("All() names mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// All returns a new slice: writing to it leaves the tiers alone, even when
	// Cheap has spare capacity.
	cheap := make([]verify.Verifier, 1, 4)
	cheap[0] = named("c1")
	tiers := verify.Tiers{Cheap: cheap, Expensive: []verify.Verifier{named("e1")}}
	all := tiers.All()
	all[0] = named("changed")
	_ = append(tiers.All()[:1], named("clobber"))
	if got := tiers.Cheap[0].Name(); got != "c1" {
		t.Errorf("writing to All()'s result changed Cheap[0] to %q", got)
	}
	if got := cheap[:2][1]; got != nil {
		t.Errorf("appending to All()'s result wrote into Cheap's spare capacity: %v", got.Name())
	}
}
