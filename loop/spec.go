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
	// Mode is ModeAgent (default: tools, and a finish call submits) or
	// ModeGenerate (seed 000's generate-and-check: no tools; every reply is
	// a candidate, its artifact in a fenced block and a CONFIDENCE line).
	Mode Mode   `json:"mode,omitempty"`
	Goal string `json:"goal"`
	// Instructions are added to the system prompt after ratchet's protocol.
	Instructions string `json:"instructions,omitempty"`
	// Tools the model may call, not counting finish, which is always offered.
	Tools []model.ToolSpec `json:"tools,omitempty"`
	// Checks gate done: a candidate is accepted only when every check has
	// passed. Cheap checks run first; expensive ones only if all cheap passed.
	Checks []Check `json:"checks"`
	// Permissions decide which tool calls run, ask a person first, or are
	// refused; see Permission.
	Permissions []Permission `json:"permissions,omitempty"`
	// OutputSchema, when set, is the JSON Schema of the answer: a typed
	// answer (output.go). The shell validates it with the cheap check
	// named OutputCheck.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Budget       budget.Limits   `json:"budget"`
	Policy       Policy          `json:"policy"`
}

// Mode is how the model submits candidates.
type Mode string

const (
	ModeAgent    Mode = "agent"
	ModeGenerate Mode = "generate"
)

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
	// ConfidenceThreshold: a candidate whose stated confidence is below it
	// gets Samples alternatives before checking (default 0.8).
	ConfidenceThreshold float64 `json:"confidence_threshold,omitempty"`
	// Samples is how many alternatives an unsure candidate gets (default 2;
	// -1 for none).
	Samples int `json:"samples,omitempty"`
	// HighStakes treats every candidate as unsure.
	HighStakes bool `json:"high_stakes,omitempty"`
	// Reasoning goes with every model call (model.Request.Reasoning); nil
	// leaves the provider's default.
	Reasoning *model.Reasoning `json:"reasoning,omitempty"`

	// CompactAt turns on compaction: when the next step's request is
	// estimated (EstimateTokens) above this many input tokens, a model call
	// with purpose compact first summarises the middle of the history; the
	// goal and the latest KeepTurns turns stay verbatim. 0: never.
	CompactAt int64 `json:"compact_at,omitempty"`
	// KeepTurns is how many of the latest turns compaction keeps (default 2).
	KeepTurns int `json:"keep_turns,omitempty"`
	// SummaryTokens caps the compaction reply (default 1024).
	SummaryTokens int `json:"summary_tokens,omitempty"`
	// Scratchpad offers the update_scratchpad tool, answered by the core;
	// its latest content is shown every turn and survives compaction.
	Scratchpad bool `json:"scratchpad,omitempty"`
	// Plan asks for a plan first (agent mode): see plan.go and the package
	// documentation for the protocol.
	Plan bool `json:"plan,omitempty"`
	// Subagents offers the spawn_subagent tool (agent mode): see
	// subagent.go and the package documentation for the protocol.
	Subagents *Subagents `json:"subagents,omitempty"`
}

// ClosingReserve is what p keeps back from limits l for the closing turn,
// as Spec.Validate checks it.
func (p Policy) ClosingReserve(l budget.Limits) budget.Usage {
	return p.withDefaults(l.WithDefaults()).Reserve
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
	if p.ConfidenceThreshold == 0 {
		p.ConfidenceThreshold = 0.8
	}
	if p.KeepTurns == 0 {
		p.KeepTurns = 2
	}
	if p.SummaryTokens == 0 {
		p.SummaryTokens = 1024
	}
	if p.Samples == 0 {
		p.Samples = 2 // -1 (none) stays -1, so that defaults apply idempotently
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
	s.validateTools(add)
	s.validateChecks(add)
	if len(s.OutputSchema) > 0 && !isObject(s.OutputSchema) {
		add("output_schema: must be a JSON object (a JSON Schema)")
	}
	s.validateSubagents(add)
	s.validatePolicy(add)
	return errors.Join(errs...)
}

func (s *Spec) validateTools(add func(format string, args ...any)) {
	seen := map[string]bool{FinishTool: true, ScratchpadTool: true, SubmitPlanTool: true, StepDoneTool: true, SpawnTool: true}
	for i, t := range s.Tools {
		switch {
		case !toolName.MatchString(t.Name):
			add("tools[%d]: name %q must match %s", i, t.Name, toolName)
		case t.Name == FinishTool:
			add("tools[%d]: %q is reserved for submitting answers", i, t.Name)
		case t.Name == ScratchpadTool || t.Name == SubmitPlanTool || t.Name == StepDoneTool || t.Name == SpawnTool:
			add("tools[%d]: %q is reserved for the loop's own tools", i, t.Name)
		case seen[t.Name]:
			add("tools[%d]: duplicate tool %q", i, t.Name)
		}
		seen[t.Name] = true
		if len(t.InputSchema) > 0 && !json.Valid(t.InputSchema) {
			add("tools[%d] %q: input schema is not valid JSON", i, t.Name)
		}
	}
	for i, p := range s.Permissions {
		if err := p.Validate(); err != nil {
			add("permissions[%d]: %v", i, err)
		}
	}
	switch s.Mode {
	case "", ModeAgent:
	case ModeGenerate:
		if len(s.Tools) > 0 {
			add("tools: generate mode has no tools (every reply is a candidate); use agent mode for tools")
		}
	default:
		add("mode: %q is not agent or generate", s.Mode)
	}
	if s.Mode == ModeGenerate && (s.Policy.Plan || s.Policy.Scratchpad) {
		add("policy: plan and scratchpad need tools; generate mode has none")
	}
}

func (s *Spec) validateChecks(add func(format string, args ...any)) {
	gates := 0
	for _, c := range s.Checks {
		if c.Tier != verify.Holdout {
			gates++
		}
	}
	if gates == 0 {
		add("checks: no cheap or expensive check given; ratchet never accepts an unchecked answer (holdout checks do not gate; add e.g. an equals or regex check)")
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
		if c.Tier != verify.Cheap && c.Tier != verify.Expensive && c.Tier != verify.Holdout {
			add("checks[%d] %q: tier %q is not cheap, expensive or holdout", i, c.Name, c.Tier)
		}
	}
}

func (s *Spec) validatePolicy(add func(format string, args ...any)) {
	p := s.Policy.withDefaults(s.Budget.WithDefaults())
	if err := s.Budget.Validate(p.Reserve); err != nil {
		add("%w", err)
	}
	if p.Progress.Window < 2 {
		add("progress.window: %d is below 2", p.Progress.Window)
	}
	if p.Progress.Patience < 1 {
		add("progress.patience: %d is below 1", p.Progress.Patience)
	}
	if p.Progress.MaxWaits < 0 {
		add("progress.max_waits: %d is below 0 (0 takes the default, %d)", p.Progress.MaxWaits, progress.DefaultMaxWaits)
	}
	if !(p.ConfidenceThreshold > 0 && p.ConfidenceThreshold <= 1) {
		add("policy.confidence_threshold: %v is not in (0, 1]", p.ConfidenceThreshold)
	}
	if p.Samples < -1 || p.Samples > 16 {
		add("policy.samples: %d is not between -1 (none) and 16", s.Policy.Samples)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max_output_tokens", p.MaxOutputTokens}, {"closing_output_tokens", p.ClosingOutputTokens}, {"max_reply_bytes", p.MaxReplyBytes}, {"max_feedback_bytes", p.MaxFeedbackBytes}, {"keep_turns", p.KeepTurns}, {"summary_tokens", p.SummaryTokens}, {"compact_at", int(min(p.CompactAt, 1<<30))}} {
		if f.v < 0 {
			add("policy.%s: %d is negative", f.name, f.v)
		}
	}
}
