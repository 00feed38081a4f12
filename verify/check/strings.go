package check

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/ratchetloop/ratchet/verify"
)

// validation is a verifier whose verdict is a pure, certain function of the
// answer.
func validation(name string, fn func(answer string) (ok bool, detail string)) verify.Verifier {
	return &verifier{name: name, prov: verify.Validation, fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		ok, detail := fn(c.Answer)
		return verify.Verdict{OK: ok, Confidence: 1, Detail: detail}, nil
	}}
}

// Equals passes when the answer, trimmed of surrounding space, equals want.
func Equals(want string) verify.Verifier {
	return validation("equals", func(answer string) (bool, string) {
		got := strings.TrimSpace(answer)
		if got == strings.TrimSpace(want) {
			return true, "answer matches the expected value"
		}
		return false, fmt.Sprintf("expected %q, got %q", strings.TrimSpace(want), clip(got, 200))
	})
}

// Regex passes when the answer matches the RE2 pattern.
func Regex(pattern string) (verify.Verifier, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("regex check: %w", err)
	}
	return validation("regex", func(answer string) (bool, string) {
		if re.MatchString(answer) {
			return true, fmt.Sprintf("answer matches /%s/", pattern)
		}
		return false, fmt.Sprintf("answer does not match /%s/", pattern)
	}), nil
}

// Contains passes when the answer contains every one of the substrings.
func Contains(subs ...string) verify.Verifier {
	return validation("contains", func(answer string) (bool, string) {
		var missing []string
		for _, s := range subs {
			if !strings.Contains(answer, s) {
				missing = append(missing, fmt.Sprintf("%q", s))
			}
		}
		if len(missing) > 0 {
			return false, "answer is missing " + strings.Join(missing, ", ")
		}
		return true, "answer contains every required string"
	})
}
