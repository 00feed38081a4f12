package check

import (
	"math"
	"testing"

	"github.com/ratchetloop/ratchet/verify"
)

func TestVote(t *testing.T) {
	third := 1.0
	third /= 3
	majority := mustNew(t)(Vote(0))
	if majority.Name() != "vote" || majority.Provenance() != verify.Self {
		t.Errorf("name %q, provenance %q; a vote among the model's own samples must be Self", majority.Name(), majority.Provenance())
	}
	t.Run("strict majority", func(t *testing.T) {
		runVerdicts(t, majority, []verdictCase{
			{name: "unanimous", answer: "42", peers: []string{"42", "42"}, ok: true, conf: 1, detail: "3 of 3 answers (100%) agree with this one; more than half needed"},
			{name: "normalised", answer: "  The Answer\n is 42 ", peers: []string{"the answer is 42", "THE ANSWER\tIS 42", "no"}, ok: true, conf: 0.75,
				detail: "3 of 4 answers (75%) agree with this one; more than half needed"},
			{name: "tie is not a majority", answer: "a", peers: []string{"b"}, conf: 0.5,
				detail: "1 of 2 answers (50%) agree with this one; more than half needed"},
			{name: "half is not a majority", answer: "a", peers: []string{"a", "b", "c"}, conf: 0.5,
				detail: "2 of 4 answers (50%) agree with this one; more than half needed"},
			{name: "outvoted", answer: "41", peers: []string{"42", " 42", "41", "42"}, conf: 0.6,
				detail: `2 of 5 answers (40%) agree with this one; more than half needed; the most common answer, held by 3 of 5, is "42"`},
			{name: "punctuation counts", answer: "42", peers: []string{"42.", "42.0"}, conf: 1 - third,
				detail: "1 of 3 answers (33%) agree with this one; more than half needed"},
			{name: "first of the tied leaders is named", answer: "a", peers: []string{"b", "c", "c", "b"}, conf: 0.8,
				detail: `1 of 5 answers (20%) agree with this one; more than half needed; the most common answer, held by 2 of 5, is "b"`},
			{name: "no peers", answer: "42", conf: 0,
				detail: "a vote needs sampled alternatives to compare this answer with, and there are none: set effort samples above 0, or high_stakes to sample for every candidate"},
		})
	})
	t.Run("min share", func(t *testing.T) {
		runVerdicts(t, mustNew(t)(Vote(0.5)), []verdictCase{
			{name: "half passes", answer: "a", peers: []string{"b"}, ok: true, conf: 0.5, detail: "1 of 2 answers (50%) agree with this one; at least 50% needed"},
		})
		runVerdicts(t, mustNew(t)(Vote(2.0/3)), []verdictCase{
			{name: "two thirds passes", answer: "a", peers: []string{"a", "b"}, ok: true, conf: 2.0 / 3, detail: "2 of 3 answers (67%) agree with this one; at least 66.67% needed"},
			{name: "below", answer: "a", peers: []string{"a", "b", "c"}, conf: 0.5, detail: "2 of 4 answers (50%) agree with this one; at least 66.67% needed"},
		})
		runVerdicts(t, mustNew(t)(Vote(1)), []verdictCase{
			{name: "one dissent fails", answer: "a", peers: []string{"a", "a", "b"}, conf: 0.25, detail: "3 of 4 answers (75%) agree with this one; at least 100% needed"},
		})
	})
}

func TestVoteConfig(t *testing.T) {
	for _, share := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		v, err := Vote(share)
		if err == nil {
			t.Errorf("Vote(%v) succeeded (%v)", share, v)
		}
	}
	v, err := Vote(1.01)
	wantConfigError(t, v, err, "vote check: min share 1.01 is not in (0, 1] (0 means a strict majority)")
}
