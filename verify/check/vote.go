package check

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratchetloop/ratchet/verify"
)

// Vote returns a self-consistency check, named "vote": it passes when the
// candidate's answer is held by at least minShare of the answers judged
// together, the candidate's own and its Peers (the alternatives the loop
// sampled because the model was unsure). A minShare of 0 means the default,
// a strict majority (more than half); otherwise the share must be at least
// minShare, which must be in (0, 1].
//
// Answers are compared after normalising: surrounding white space trimmed,
// inner runs of white space collapsed to one space, and letters lower-cased
// (Unicode simple case mapping). Nothing else is forgiven: "42" and "42.0"
// are different answers.
//
// A candidate with no peers fails: a vote needs sampled alternatives, which
// the loop only draws when the model is unsure (effort samples > 0) or for
// every candidate under high_stakes. Its confidence is 0, since no vote was
// held.
//
// The provenance is Self, however many samples agree: the samples all come
// from the generating model, so their agreement measures its consistency, not
// its correctness; a model that is reliably wrong wins every vote.
func Vote(minShare float64) (verify.Verifier, error) {
	if math.IsNaN(minShare) || minShare < 0 || minShare > 1 {
		return nil, fmt.Errorf("vote check: min share %v is not in (0, 1] (0 means a strict majority)", minShare)
	}
	need := "more than half"
	if minShare > 0 {
		need = "at least " + strconv.FormatFloat(math.Round(minShare*10000)/100, 'f', -1, 64) + "%"
	}
	return &verifier{name: "vote", prov: verify.Self, fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		if len(c.Peers) == 0 {
			return verify.Verdict{Detail: "a vote needs sampled alternatives to compare this answer with, and there are none: set effort samples above 0, or high_stakes to sample for every candidate"}, nil
		}
		own := normalizeAnswer(c.Answer)
		total := 1 + len(c.Peers)
		counts := map[string]int{own: 1}
		order := []string{own}
		for _, p := range c.Peers {
			n := normalizeAnswer(p)
			if counts[n] == 0 {
				order = append(order, n)
			}
			counts[n]++
		}
		agree := counts[own]
		share := float64(agree) / float64(total)
		ok := share > 0.5
		if minShare > 0 {
			ok = share >= minShare-1e-9
		}
		detail := fmt.Sprintf("%d of %d answers (%s) agree with this one; %s needed", agree, total, percent(share), need)
		if ok {
			return verify.Verdict{OK: true, Confidence: share, Detail: detail}, nil
		}
		// Name the most common answer (the first seen on a tie) when it is
		// another one: it is what the model's own samples lean towards.
		top := own
		for _, a := range order {
			if counts[a] > counts[top] {
				top = a
			}
		}
		if top != own {
			detail += fmt.Sprintf("; the most common answer, held by %d of %d, is %q", counts[top], total, clip(top, 200))
		}
		return verify.Verdict{Confidence: 1 - share, Detail: detail}, nil
	}}, nil
}

// normalizeAnswer is how Vote compares answers.
func normalizeAnswer(s string) string { return strings.ToLower(oneLine(s)) }

// percent formats a share as a whole percentage, e.g. 0.667 as "67%".
func percent(share float64) string { return fmt.Sprintf("%.0f%%", share*100) }
