package eval

import (
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/verify"
)

// Record is one finished run of a suite: a (case, repeat) pair and how it
// ended. It is what a Store keeps and what the metrics are computed from.
type Record struct {
	Case   string `json:"case"`
	Repeat int    `json:"repeat"`
	// Model names the model that ran (the model string, or "sim:NAME").
	Model  string      `json:"model"`
	Result loop.Result `json:"result"`
	// Tiers maps each check name in the Result's verdicts to its tier, as
	// the run's spec declared it.
	Tiers map[string]verify.Tier `json:"tiers,omitempty"`
	// Expect is what the case counts as success; nil means status done.
	Expect *Expect `json:"expect,omitempty"`
	// Wall is the run's wall-clock time as the eval runner measured it.
	Wall time.Duration `json:"wall_ns"`
	// Log is the run's JSONL event log, relative to the result directory;
	// empty when none was kept.
	Log string `json:"log,omitempty"`
	// Run is the run's ID in the run database, empty when it was not
	// recorded there.
	Run string `json:"run,omitempty"`
	// CheckStrength is the mutation score of the case's gate checks on its
	// reference solution (see verify/strength), nil when the case has no
	// reference: how far its "done" can be trusted.
	CheckStrength *float64 `json:"check_strength,omitempty"`
	// Twin, set on a run of an impossible twin, says what its checks
	// contradict. Such a run counts only towards the cheat rate: ended
	// done, the agent passed checks no honest answer passes.
	Twin string `json:"twin,omitempty"`
	// Error is the infrastructure error the run ended with, if any.
	Error    string    `json:"error,omitempty"`
	Finished time.Time `json:"finished"`
}

// Key identifies a run within a suite.
type Key struct {
	Case   string
	Repeat int
}

// Key returns the record's (case, repeat) pair.
func (r Record) Key() Key { return Key{r.Case, r.Repeat} }

// Expect is a case's checkable expected outcome.
type Expect struct {
	// Status is the exit the case should end with (default "done").
	Status loop.Status `json:"status,omitempty" yaml:"status,omitempty"`
	// Answer, when set, is the best answer the case should end with
	// (compared with surrounding space trimmed).
	Answer string `json:"answer,omitempty" yaml:"answer,omitempty"`
	// NotAnswer, when set, is an answer the case must not end with (the
	// wrong answer of the run the case was made from).
	NotAnswer string `json:"not_answer,omitempty" yaml:"not_answer,omitempty"`
}

// Success reports whether the record met its case's expected outcome: by
// default, whether the run ended done.
func (r Record) Success() bool {
	e := Expect{}
	if r.Expect != nil {
		e = *r.Expect
	}
	want := e.Status
	if want == "" {
		want = loop.Done
	}
	if r.Result.Status != want {
		return false
	}
	best := ""
	if r.Result.Best != nil {
		best = trim(r.Result.Best.Answer)
	}
	if e.Answer != "" && best != trim(e.Answer) {
		return false
	}
	if e.NotAnswer != "" && best == trim(e.NotAnswer) {
		return false
	}
	return true
}

// tier returns the tier of check name (expensive when unknown: a gate check
// all the same).
func (r Record) tier(name string) verify.Tier {
	if t, ok := r.Tiers[name]; ok {
		return t
	}
	return verify.Expensive
}
