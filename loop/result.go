package loop

import (
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// Status is a run's one named exit.
type Status string

const (
	Done      Status = "done"      // a candidate passed every check
	Escalated Status = "escalated" // handed to a person with a question
	Cancelled Status = "cancelled"
	Failed    Status = "failed" // infrastructure failed; see Reason
)

// Exhausted is the status of a run that spent dimension d.
func Exhausted(d budget.Dimension) Status { return Status("exhausted:" + string(d)) }

// Stalled is the status of a run that stopped making progress.
func Stalled(p progress.Pattern) Status { return Status("stalled:" + string(p)) }

// IsDone reports whether s is the verified exit.
func (s Status) IsDone() bool { return s == Done }

// Kind returns the part before any colon: "exhausted", "stalled", "done"…
func (s Status) Kind() string {
	k, _, _ := strings.Cut(string(s), ":")
	return k
}

// Result is how a run ended. Every run has exactly one.
type Result struct {
	Status Status `json:"status"`
	// Reason says in words why the run stopped.
	Reason string `json:"reason"`
	// Best is the accepted candidate for done, otherwise the attempt that got
	// furthest through the checks; nil when no candidate was submitted.
	Best *Attempt `json:"best,omitempty"`
	// Attempts holds every submitted candidate in order.
	Attempts []Attempt    `json:"attempts"`
	Usage    budget.Usage `json:"usage"`
	// Limits are the limits the run ran under, defaults applied.
	Limits budget.Limits `json:"limits"`
	// Question is the specific question for a person (escalated runs).
	Question string `json:"question,omitempty"`
	// SelfJudged marks a done run accepted on self-judged checks alone (a
	// vote, a grader that is not independent of the generator): low
	// signal. Reason says so in words.
	SelfJudged bool `json:"self_judged,omitempty"`
}

// Attempt is one submitted candidate and what the checks said of it.
type Attempt struct {
	N          int              `json:"n"`
	Step       int              `json:"step"`
	Answer     string           `json:"answer"`
	Confidence float64          `json:"confidence"`
	Verdicts   []verify.Verdict `json:"verdicts"`
	// Holdout holds the holdout verdicts of an accepted attempt: measured,
	// never fed back, never gating.
	Holdout  []verify.Verdict `json:"holdout,omitempty"`
	Accepted bool             `json:"accepted"`
	// Sample marks an alternative asked for because the model was unsure.
	Sample bool `json:"sample,omitempty"`
	// Summary is one line: what was tried and how it fared.
	Summary string `json:"summary"`
}

// passed counts passing verdicts.
func (a Attempt) passed() int {
	n := 0
	for _, v := range a.Verdicts {
		if v.OK {
			n++
		}
	}
	return n
}

// Failing returns the names of the failing checks in check order.
func (a Attempt) Failing() []string {
	var out []string
	for _, v := range a.Verdicts {
		if !v.OK {
			out = append(out, v.Check)
		}
	}
	return out
}
