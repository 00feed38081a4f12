package loop

import (
	"testing"

	"github.com/ratchetloop/ratchet/budget"
)

// FuzzReadReply: a person's answer is free text; reading it never panics,
// and whatever it raises is raised above the current limit.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"stop", "retry", "raise steps to 16", "raise steps to 16, cost to 0.50", "raise time to 15m; and tool_calls to 9", "raise cost to $-1", "raise to", "raise ,,,", "raise input_tokens to 5"} {
		f.Add(s)
	}
	limits := budget.Limits{Steps: 8, Cost: budget.USD(0.25), InputTokens: budget.Unlimited}.WithDefaults()
	f.Fuzz(func(t *testing.T, answer string) {
		r := readReply(answer, limits, "")
		if r.Problem != "" && (r.Stop || r.Retry || len(r.Raise) > 0) {
			t.Fatalf("%q: a problem and an action: %+v", answer, r)
		}
		for _, x := range r.Raise {
			if x.From < 0 || x.To <= x.From || x.From != limits.Limit(x.Dim) {
				t.Fatalf("%q: bad raise %+v", answer, x)
			}
		}
	})
}
