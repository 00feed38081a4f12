package loop

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/verify"
)

// A search runs cheap checks on every candidate, expensive ones on the
// survivors most confident first until one passes, then the holdout
// checks on the winner; with nothing passing, it rejects the most
// informative failure.
func TestSearchTiers(t *testing.T) {
	checks := []Check{{Name: "format", Tier: verify.Cheap}, {Name: "tests", Tier: verify.Expensive}, {Name: "held", Tier: verify.Holdout}}
	attempts := []Attempt{{N: 1, Confidence: 0.4}, {N: 2, Confidence: 0.6}, {N: 3, Confidence: 0.9}}
	s := &search{Cands: []int{1, 2, 3}}
	ids := func() []string {
		var out []string
		for _, j := range s.started {
			out = append(out, j.ID)
		}
		s.started = nil
		return out
	}
	if v := s.start(attempts, checks); v != searching || !slices.Equal(ids(), []string{"v1.cheap", "v2.cheap", "v3.cheap"}) {
		t.Fatalf("start: %v %+v", v, s.Running)
	}
	pass := func(id, check string, ok bool) judgement {
		t.Helper()
		if !s.due(id, check, attempts, checks) {
			t.Fatalf("%s %s is not due", id, check)
		}
		v := s.record(id, verify.Verdict{Check: check, OK: ok}, attempts, checks)
		if s.due(id, check, attempts, checks) {
			t.Fatalf("%s %s is still due once answered", id, check)
		}
		return v
	}
	pass("v1.cheap", "format", false)
	pass("v2.cheap", "format", true)
	if v := pass("v3.cheap", "format", true); v != searching || !slices.Equal(ids(), []string{"v3.expensive"}) {
		t.Fatalf("after the cheap tier: %v, want the most confident survivor next", v)
	}
	if v := pass("v3.expensive", "tests", false); v != searching || !slices.Equal(ids(), []string{"v2.expensive"}) {
		t.Fatalf("after a failed expensive check: %v, want the next survivor", v)
	}
	if v := pass("v2.expensive", "tests", true); v != searching || s.Winner != 2 || !slices.Equal(ids(), []string{"v2.holdout"}) {
		t.Fatalf("after a pass: %v winner %d, want the holdout checks on it", v, s.Winner)
	}
	if cmd := s.command(s.Running[0], attempts, checks, time.Time{}); len(cmd.Candidate.Peers) != 2 || cmd.Checks[0] != "held" {
		t.Errorf("holdout command %+v", cmd)
	}
	if v := pass("v2.holdout", "held", false); v != accepted {
		t.Fatalf("holdout checks never gate: %v", v)
	}

	// Nothing passes: the failure that says most is fed back.
	attempts = []Attempt{{N: 1, Confidence: 0.9}, {N: 2, Confidence: 0.2}}
	s = &search{Cands: []int{1, 2}}
	s.start(attempts, checks[:1])
	s.record("v1.cheap", verify.Verdict{Check: "format"}, attempts, checks[:1])
	if v := s.record("v2.cheap", verify.Verdict{Check: "format"}, attempts, checks[:1]); v != rejected || s.mostInformative(attempts) != 1 {
		t.Fatalf("all failing: %v, most informative %d", v, s.mostInformative(attempts))
	}
}

// A holdout check that could not run is a failed holdout verdict, and the
// winner is still accepted.
func TestSearchHoldoutError(t *testing.T) {
	checks := []Check{{Name: "tests", Tier: verify.Expensive}, {Name: "held", Tier: verify.Holdout}}
	attempts := []Attempt{{N: 1}}
	s := &search{Cands: []int{1}}
	s.start(attempts, checks)
	if s.holdoutFailed("v1.expensive", Failure{Message: "x"}, attempts, checks) {
		t.Fatal("an expensive command taken for a holdout one")
	}
	s.record("v1.expensive", verify.Verdict{Check: "tests", OK: true}, attempts, checks)
	if !s.holdoutFailed("v1.holdout", Failure{Message: "sandbox down"}, attempts, checks) || len(s.Running) != 0 {
		t.Fatalf("holdout error not taken: %+v", s.Running)
	}
	if h := attempts[0].Holdout; len(h) != 1 || h[0].OK || h[0].Detail != "could not run: sandbox down" {
		t.Errorf("holdout verdicts %+v", h)
	}
}

// An accepted attempt whose execution checks all ran in-process says so;
// one check in judge isolation, or none that executed, says nothing.
func TestAcceptanceInProcessOnly(t *testing.T) {
	in := verify.Verdict{Check: "tests", OK: true, Provenance: verify.Execution, Isolation: verify.InProcessIsolation}
	judged := verify.Verdict{Check: "judged", OK: true, Provenance: verify.Execution, Isolation: verify.JudgeIsolation}
	equals := verify.Verdict{Check: "equals", OK: true, Provenance: verify.Validation}
	for _, tc := range []struct {
		verdicts []verify.Verdict
		want     bool
	}{
		{[]verify.Verdict{in}, true},
		{[]verify.Verdict{equals, in}, true},
		{[]verify.Verdict{in, judged}, false},
		{[]verify.Verdict{equals}, false},
	} {
		reason := acceptance(Attempt{N: 1, Verdicts: tc.verdicts})
		if got := strings.Contains(reason, "inside the tests' process"); got != tc.want {
			t.Errorf("%+v: %q", tc.verdicts, reason)
		}
	}
}
