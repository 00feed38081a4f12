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

// A poll of a declared tool that sees no change is waiting: the ladder fires
// only after MaxWaits of them, and says they were polls.
func TestLadderWaits(t *testing.T) {
	cfg := progress.Config{Waits: []string{"job_status"}, MaxWaits: 5}
	l := ladder{Monitor: progress.NewMonitor(cfg)}
	o := progress.Observation{Kind: progress.Action, Calls: []progress.Call{{Tool: "job_status", Args: []byte(`{"id":7}`), Result: "running"}}}
	for i := range cfg.MaxWaits {
		if r, fired := l.observe(progress.DefaultKey(o), o, cfg); fired {
			t.Fatalf("poll %d fired %s: %s", i+1, r.Pattern, r.What)
		}
	}
	r, fired := l.observe(progress.DefaultKey(o), o, cfg)
	if !fired || r.Pattern != progress.Waiting || r.Rung != progress.Reflect {
		t.Fatalf("after %d polls: fired %v, %s %s", cfg.MaxWaits+1, fired, r.Pattern, r.Rung)
	}
	if want := `the last 5 polls saw no change; the latest was calling job_status {"id":7}`; r.What != want {
		t.Errorf("what = %q, want %q", r.What, want)
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

// A negative max_waits is a problem of the spec; zero takes the default.
func TestSpecMaxWaits(t *testing.T) {
	spec := Spec{Goal: "g", Checks: []Check{{Name: "facts", Tier: verify.Cheap}}}
	spec.Policy.Progress.MaxWaits = -1
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "progress.max_waits: -1 is below 0") {
		t.Errorf("Validate = %v", err)
	}
	spec.Policy.Progress.MaxWaits = 0
	if err := spec.Validate(); err != nil {
		t.Errorf("Validate with the default = %v", err)
	}
}
