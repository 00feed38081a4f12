package loop

import (
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// The ladder reflects, widens, then stops; a person's help starts it
// again from the first rung.
func TestLadderClimbs(t *testing.T) {
	cfg := progress.Config{Window: 2, Patience: 100}
	l := ladder{Monitor: progress.NewMonitor(cfg)}
	o := progress.Observation{Kind: progress.Malformed, Problem: "empty_reply"}
	fire := func() rung {
		t.Helper()
		for range 3 {
			if r, fired := l.observe("same", o, cfg); fired {
				return r
			}
		}
		t.Fatal("the monitor never fired on a repeated key")
		return rung{}
	}
	want := []struct {
		rung   progress.Intervention
		inject string
	}{{progress.Reflect, "Step back"}, {progress.Widen, "second warning"}, {progress.Stop, ""}}
	for i, w := range want {
		r := fire()
		if r.Rung != w.rung || r.Pattern != progress.Repeating {
			t.Fatalf("fire %d: rung %s pattern %s, want %s repeating", i+1, r.Rung, r.Pattern, w.rung)
		}
		if (r.Inject != "") != (w.rung != progress.Stop) || !strings.Contains(r.Inject, w.inject) {
			t.Errorf("fire %d: inject %q", i+1, r.Inject)
		}
		if !strings.Contains(r.What, "protocol (empty_reply)") {
			t.Errorf("fire %d: what %q does not name the problem", i+1, r.What)
		}
	}
	if l.StalledOn != progress.Repeating {
		t.Errorf("stalled on %q after the last rung", l.StalledOn)
	}
	l.helped()
	if r := fire(); r.Rung != progress.Reflect {
		t.Errorf("after help: rung %s, want reflect", r.Rung)
	}
}

// The escalation question names the best attempt's failing check when
// there is one, else the goal.
func TestEscalationQuestion(t *testing.T) {
	failing := &Attempt{Answer: "4", Verdicts: []verify.Verdict{{Check: "equals", Detail: "want 5\nmore"}}}
	if q := escalation("stuck", failing, "add"); !strings.Contains(q, `"4", fails check equals: want 5.`) {
		t.Errorf("question %q", q)
	}
	if q := escalation("stuck", nil, "add two numbers"); !strings.Contains(q, `Its goal: "add two numbers"`) {
		t.Errorf("question %q", q)
	}
}
