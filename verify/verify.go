// Package verify holds the neutral vocabulary of judging candidates: the
// Verifier interface, the Candidate it judges, the Verdict it returns, the
// Tiers checks are grouped in, and Func to adapt a function. The loop core
// only accepts a candidate as done once every gate check has passed.
//
// Checks are grouped in tiers: cheap checks run on every candidate and fail
// fast; expensive checks run only on candidates that passed every cheap one.
//
// The built-in checks live in verify/check (and verify/execcheck for
// commands in a sandbox); verify/verifytest checks any implementation.
package verify

import (
	"context"

	"github.com/ratchetloop/ratchet/budget"
)

// Provenance says where a verdict's evidence comes from, strongest first.
type Provenance string

const (
	Execution  Provenance = "execution"  // the candidate was run (tests, compiler)
	Validation Provenance = "validation" // schema, format, equality, bounds
	Grounding  Provenance = "grounding"  // claims found in a source
	Grader     Provenance = "grader"     // a separate model with a rubric
	Self       Provenance = "self"       // the generator judging itself: low signal
)

// Tier is when a check runs.
type Tier string

const (
	Cheap     Tier = "cheap"     // every candidate; fail fast
	Expensive Tier = "expensive" // only candidates that passed every cheap check
	// Holdout checks run only on a candidate that passed every gate check.
	// They never gate done and are never fed back to the model: they measure
	// whether accepted candidates overfit the visible checks.
	Holdout Tier = "holdout"
)

// Candidate is what a verifier judges.
type Candidate struct {
	Answer     string  `json:"answer"`
	Confidence float64 `json:"confidence"`
	Attempt    int     `json:"attempt"`
	// Peers are the other candidates judged with this one (alternatives
	// sampled because the model was unsure), for checks such as a majority
	// vote; empty when the candidate was judged alone.
	Peers []string `json:"peers,omitempty"`
}

// Verdict is one check's judgement of one candidate.
type Verdict struct {
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	// Confidence is how sure the check is of its own verdict, 0..1.
	Confidence float64 `json:"confidence"`
	// Detail is plain feedback for the generator: what failed and why.
	Detail string `json:"detail,omitempty"`
	// Where locates the failure (a test name, a line) when known.
	Where      string        `json:"where,omitempty"`
	Provenance Provenance    `json:"provenance"`
	Cost       budget.Micros `json:"cost_micros,omitempty"`
	// Isolation says where an execution check ran the candidate:
	// JudgeIsolation or InProcessIsolation.
	Isolation string `json:"isolation,omitempty"`
}

// Isolations of an execution check's verdict.
const (
	// JudgeIsolation: the candidate ran in a process of its own, answering
	// the tests' calls with plain data (package verify/judge).
	JudgeIsolation = "judge"
	// InProcessIsolation: the candidate ran inside the test runner's
	// process, which it could reach into.
	InProcessIsolation = "in-process"
)

// Verifier checks a candidate. Check returns a Go error only when the check
// could not run (infrastructure); a failing candidate is a Verdict with OK
// false. Implementations must be safe for concurrent use.
type Verifier interface {
	Name() string
	Provenance() Provenance
	Check(ctx context.Context, c Candidate) (Verdict, error)
}

// Tiers groups verifiers by when they run.
type Tiers struct {
	Cheap     []Verifier
	Expensive []Verifier
	Holdout   []Verifier
}

// All returns every verifier, cheap first, holdout last.
func (t Tiers) All() []Verifier {
	return append(append(append([]Verifier(nil), t.Cheap...), t.Expensive...), t.Holdout...)
}

// Func adapts a function to a Verifier.
type Func struct {
	CheckName string
	Prov      Provenance
	Fn        func(ctx context.Context, c Candidate) (Verdict, error)
}

var _ Verifier = Func{}

func (f Func) Name() string           { return f.CheckName }
func (f Func) Provenance() Provenance { return f.Prov }
func (f Func) Check(ctx context.Context, c Candidate) (Verdict, error) {
	v, err := f.Fn(ctx, c)
	v.Check, v.Provenance = f.CheckName, f.Prov
	return v, err
}
