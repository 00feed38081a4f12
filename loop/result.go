package loop

import (
	"fmt"
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
	// ByModel is the share each model of a fallback chain had of the
	// run's calls, its sub-agents' included (they are charged to it), in
	// the order they first answered; nil when the run's model is not a
	// chain. Only
	// answered calls count: a call that failed over has no usage of its
	// own.
	ByModel []ModelUsage `json:"by_model,omitempty"`
	// Limits are the limits the run ran under, defaults applied.
	Limits budget.Limits `json:"limits"`
	// Question is the specific question for a person (escalated runs).
	Question string `json:"question,omitempty"`
	// SelfJudged marks a done run accepted on self-judged checks alone (a
	// vote, a grader that is not independent of the generator): low
	// signal. Reason says so in words.
	SelfJudged bool `json:"self_judged,omitempty"`
	// InProcessOnly marks a done run whose execution checks all ran the
	// candidate inside its tests' process (verify.InProcessIsolation),
	// where it could have reached the verdict: no check in judge isolation
	// confirmed it. Reason says so in words.
	InProcessOnly bool `json:"in_process_only,omitempty"`
	// Asked counts the questions put to a person about the run (stuck, or
	// about to end exhausted or on a check that could not run); Answered
	// the answers that came. Approvals of tool calls are not counted.
	Asked    int `json:"asked,omitempty"`
	Answered int `json:"answered,omitempty"`
	// Patch is what an agent run on a copied workspace changed there. The
	// core never sees a workspace: the shell takes the patch as the run
	// finishes and adds it here; nil for other runs.
	Patch *Patch `json:"patch,omitempty"`
}

// Patch is the unified diff of a copied workspace against its start, and
// what applying it to the original needs (package patch makes and applies
// it).
type Patch struct {
	// Diff is the diff, a/ and b/ prefixed for patch -p1 and git apply;
	// secrets in it are redacted (then Redacted is set).
	Diff string `json:"diff"`
	// Git says Diff is git diff output (the workspace is a git work tree).
	Git bool `json:"git,omitempty"`
	// Files are the changed paths, relative to the workspace, sorted.
	Files []string `json:"files,omitempty"`
	// Binary are the changed files Diff names without their content.
	Binary []string `json:"binary,omitempty"`
	// Redacted says the redactor changed Diff: applying it would write the
	// redaction marks.
	Redacted bool `json:"redacted,omitempty"`
	// Original is the workspace that was copied, and Fingerprint its state
	// at the start: the diff applies to the original only while it still
	// has that fingerprint.
	Original    string `json:"original"`
	Fingerprint string `json:"fingerprint"`
	// Copy is the workspace copy the run worked in, kept after the run.
	Copy string `json:"copy,omitempty"`
	// Problem says why Diff is missing or incomplete ("" when it is whole).
	Problem string `json:"problem,omitempty"`
}

// ModelUsage is what one model of a fallback chain consumed in a run: the
// calls it answered and their tokens and cost, counted as Usage counts
// them.
type ModelUsage struct {
	Model        string        `json:"model"` // its model string
	ModelCalls   int           `json:"model_calls"`
	InputTokens  int64         `json:"input_tokens"`
	OutputTokens int64         `json:"output_tokens"`
	Cost         budget.Micros `json:"cost_micros"`
	CostUnknown  bool          `json:"cost_unknown,omitempty"`
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

// maxEarlier is how many earlier attempts feedback lists, one line each.
const maxEarlier = 5

// feedback shapes the rejection of a: its failures in full, one line per
// earlier attempt, capped at maxBytes.
func feedback(a Attempt, earlier []Attempt, maxBytes int, mode Mode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Not accepted: attempt %d failed %d of %d checks run.\n", a.N, len(a.Failing()), len(a.Verdicts))
	if a.Sample {
		// The model has not seen this alternative in its history.
		fmt.Fprintf(&b, "It was the alternative you proposed when asked, and the most informative failure: %s\n", clip(a.Answer, maxBytes/4))
	}
	for _, v := range a.Verdicts {
		if v.OK {
			continue
		}
		fmt.Fprintf(&b, "- %s failed", v.Check)
		if v.Where != "" {
			fmt.Fprintf(&b, " at %s", v.Where)
		}
		fmt.Fprintf(&b, ": %s\n", clip(v.Detail, maxBytes/2))
	}
	if len(earlier) > 0 {
		b.WriteString("Earlier attempts:\n")
		if skip := len(earlier) - maxEarlier; skip > 0 {
			fmt.Fprintf(&b, "- (%d older attempts not shown)\n", skip)
			earlier = earlier[skip:]
		}
		for _, e := range earlier {
			fmt.Fprintf(&b, "- %s\n", clip(e.Summary, 200))
		}
	}
	if mode == ModeGenerate {
		b.WriteString("Fix what failed and reply with the whole artifact again.")
	} else {
		b.WriteString("Fix what failed and call finish again.")
	}
	return clip(b.String(), maxBytes)
}

// summarize is a's one-line summary; ok says it passed every check.
func summarize(a Attempt, ok bool) string {
	head := attemptHead(a)
	switch failing := a.Failing(); {
	case ok:
		return head + "passed every check"
	case len(failing) == 0:
		return head + fmt.Sprintf("passed the %d checks run but was not checked further", len(a.Verdicts))
	}
	var parts []string
	for _, v := range a.Verdicts {
		if !v.OK {
			parts = append(parts, fmt.Sprintf("%s (%s)", v.Check, clip(firstLine(v.Detail), 100)))
		}
	}
	return head + "failed " + strings.Join(parts, "; ")
}

func attemptHead(a Attempt) string {
	return fmt.Sprintf("attempt %d (step %d, confidence %.2f) answered %q: ", a.N, a.Step, a.Confidence, clip(a.Answer, 60))
}

// best is the accepted attempt, else the one that passed the most checks,
// the later one winning ties; nil when there are none.
func best(attempts []Attempt) *Attempt {
	var b *Attempt
	for i := range attempts {
		a := &attempts[i]
		if b == nil || a.Accepted || (!b.Accepted && a.passed() >= b.passed()) {
			b = a
		}
	}
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
