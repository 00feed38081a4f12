package sim_test

import (
	"testing"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/sim"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/verifytest"
)

// TestVerifierConformance runs verifytest over the simulated check.
func TestVerifierConformance(t *testing.T) {
	cands := []verify.Candidate{{Answer: sim.Correct, Confidence: 0.9, Attempt: 1}, {Answer: "wrong", Confidence: 0.4, Attempt: 2}}
	for _, v := range []sim.Verifier{{}, {CheckName: "truth", Recall: 1}, {Recall: 0.5, FalseFail: 0.5, Cost: budget.USD(0.01), Seed: 7}} {
		verifytest.Run(t, v, verifytest.Config{Candidates: cands})
	}
}
