package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// FinishTool is the name of the tool the model calls to submit a candidate.
const FinishTool = "finish"

// Spec is the pure, serialisable description of a run that the core needs:
// what to achieve, which tools exist (by description), which checks gate
// done, and the budget and policies. The live tools and verifiers that carry
// out the commands belong to the shell (see package runner).
type Spec struct {
	Goal string `json:"goal"`
	// Instructions are added to the system prompt after ratchet's protocol.
	Instructions string `json:"instructions,omitempty"`
	// Tools the model may call, not counting finish, which is always offered.
	Tools []model.ToolSpec `json:"tools,omitempty"`
	// Checks gate done: a candidate is accepted only when every check has
	// passed. Cheap checks run first; expensive ones only if all cheap passed.
	Checks []Check       `json:"checks"`
	Budget budget.Limits `json:"budget"`
	Policy Policy        `json:"policy"`
}

// Check names one verifier and the tier it runs in.
type Check struct {
	Name string      `json:"name"`
	Tier verify.Tier `json:"tier"`
}

// Policy holds the loop's tunables. Zero fields take the defaults below.
type Policy struct {
	Progress progress.Config `json:"progress"`
	// Key overrides the progress key function; it must be pure. It is not
	// serialised: pass the same Policy to Restore.
	Key progress.KeyFunc `json:"-"`
	// Escalate says a person is reachable: the last rung of the intervention
	// ladder asks them instead of ending the run stalled.
	Escalate bool `json:"escalate,omitempty"`
	// Reserve is kept back from the budget for the closing turn. Default: one
	// step and one model call, ClosingOutputTokens output tokens, 5% of the
	// cost limit and min(10% of the time limit, 30s) of wall time.
	Reserve budget.Usage `json:"reserve"`
	// MaxOutputTokens caps each ordinary model reply (default 4096).
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// ClosingOutputTokens caps the closing reply (default 1024).
	ClosingOutputTokens int `json:"closing_output_tokens,omitempty"`
	// MaxReplyBytes rejects a reply larger than this (default 64 KiB).
	MaxReplyBytes int `json:"max_reply_bytes,omitempty"`
	// MaxFeedbackBytes caps the feedback sent after a rejected attempt
	// (default 2000).
	MaxFeedbackBytes int `json:"max_feedback_bytes,omitempty"`
}

func (p Policy) withDefaults(l budget.Limits) Policy {
	p.Progress = p.Progress.WithDefaults()
	if p.MaxOutputTokens == 0 {
		p.MaxOutputTokens = 4096
	}
	if p.ClosingOutputTokens == 0 {
		p.ClosingOutputTokens = 1024
	}
	if p.MaxReplyBytes == 0 {
		p.MaxReplyBytes = 64 << 10
	}
	if p.MaxFeedbackBytes == 0 {
		p.MaxFeedbackBytes = 2000
	}
	if p.Reserve == (budget.Usage{}) {
		p.Reserve = budget.Usage{Steps: 1, ModelCalls: 1}
		if l.OutputTokens >= 0 || l.TotalTokens >= 0 {
			p.Reserve.OutputTokens = int64(p.ClosingOutputTokens)
		}
		if l.Cost > 0 {
			p.Reserve.Cost = l.Cost / 20
		}
		if l.Time > 0 {
			p.Reserve.Time = min(l.Time/10, 30*time.Second)
		}
	}
	return p
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Goal == "" {
		add("goal is empty")
	}
	seen := map[string]bool{FinishTool: true}
	for i, t := range s.Tools {
		switch {
		case !toolName.MatchString(t.Name):
			add("tools[%d]: name %q must match %s", i, t.Name, toolName)
		case t.Name == FinishTool:
			add("tools[%d]: %q is reserved for submitting answers", i, t.Name)
		case seen[t.Name]:
			add("tools[%d]: duplicate tool %q", i, t.Name)
		}
		seen[t.Name] = true
		if len(t.InputSchema) > 0 && !json.Valid(t.InputSchema) {
			add("tools[%d] %q: input schema is not valid JSON", i, t.Name)
		}
	}
	if len(s.Checks) == 0 {
		add("checks: none given; ratchet never accepts an unchecked answer (add e.g. an equals or regex check)")
	}
	checks := map[string]bool{}
	for i, c := range s.Checks {
		switch {
		case c.Name == "":
			add("checks[%d]: name is empty", i)
		case checks[c.Name]:
			add("checks[%d]: duplicate check name %q", i, c.Name)
		}
		checks[c.Name] = true
		if c.Tier != verify.Cheap && c.Tier != verify.Expensive {
			add("checks[%d] %q: tier %q is not cheap or expensive", i, c.Name, c.Tier)
		}
	}
	p := s.Policy.withDefaults(s.Budget.WithDefaults())
	if err := s.Budget.Validate(p.Reserve); err != nil {
		errs = append(errs, err)
	}
	if p.Progress.Window < 2 {
		add("progress.window: %d is below 2", p.Progress.Window)
	}
	if p.Progress.Patience < 1 {
		add("progress.patience: %d is below 1", p.Progress.Patience)
	}
	return errors.Join(errs...)
}
