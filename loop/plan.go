package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// Plan-then-execute (Policy.Plan). The first turn offers only submit_plan:
// the model sends its plan as steps, each {do, check}, where check names
// one of the task's gate checks or is "none". The core validates the plan
// and then pins the current step to every request; the model works on it
// with the ordinary tools and calls step_done with the step's result. A
// step whose check is "none" is done at once; otherwise the core runs that
// check on the result (a Verify command with ID "p<N>") once the turn's
// tools have run. A pass moves on to the next step; a failure is fed back
// and the next turn is a replan: only submit_plan is offered, and the new
// steps replace the ones not yet done. submit_plan may also be called
// while executing, to replan at will. finish is accepted at any time and
// is checked like any candidate: the plan structures the work, the checks
// still gate done.

// Plan tool names; the core answers them itself.
const (
	SubmitPlanTool = "submit_plan"
	StepDoneTool   = "step_done"
)

// maxPlanSteps bounds a plan's length.
const maxPlanSteps = 20

var submitPlanSpec = model.ToolSpec{
	Name:        SubmitPlanTool,
	Description: "Submit your plan: the steps to reach the goal, in order. Each step says what to do and which check proves it done: the name of one of the task's checks, or \"none\". Steps are then worked on one at a time.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"array","minItems":1,"maxItems":20,"items":{"type":"object","properties":{"do":{"type":"string","description":"What to do in this step."},"check":{"type":"string","description":"The name of one of the task's checks that this step's result must pass, or \"none\"."}},"required":["do","check"],"additionalProperties":false}}},"required":["steps"],"additionalProperties":false}`),
}

var stepDoneSpec = model.ToolSpec{
	Name:        StepDoneTool,
	Description: "Say that the current plan step is done. result is what the step produced; the step's check runs on it.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"result":{"type":"string","description":"What the step produced (the text its check judges)."}},"required":["result"],"additionalProperties":false}`),
}

// PlanStep is one step of a plan.
type PlanStep struct {
	Do    string `json:"do"`
	Check string `json:"check"` // a gate check's name, or "none"
	// Result is what step_done reported; Done is set once its check passed.
	Result string `json:"result,omitempty"`
	Done   bool   `json:"done,omitempty"`
}

// plan is the plan being executed.
type plan struct {
	Steps   []PlanStep `json:"steps"`
	Current int        `json:"current"` // index of the step being worked on
	Replan  bool       `json:"replan,omitempty"`
	Replans int        `json:"replans,omitempty"`
	// Due says the current step's check must run before the next turn;
	// CheckID is its Verify command while it runs.
	Due     bool   `json:"due,omitempty"`
	CheckID string `json:"check_id,omitempty"`
	Checks  int    `json:"checks,omitempty"` // Verify commands issued, for IDs
}

// planning reports whether the next step turn must produce a plan.
func (m *Machine) planning() bool {
	return m.spec.Policy.Plan && (m.st.Plan == nil || m.st.Plan.Replan)
}

// gateChecks are the names a plan step's check may take.
func (m *Machine) gateChecks() []string {
	var names []string
	for _, c := range m.spec.Checks {
		if c.Tier != verify.Holdout {
			names = append(names, c.Name)
		}
	}
	return names
}

// parsePlan validates submit_plan arguments against the task's check
// names; the error is for the model.
func parsePlan(raw json.RawMessage, checks []string) ([]PlanStep, error) {
	const form = `arguments must be {"steps": [{"do": string, "check": string}, …]}`
	if !isObject(raw) {
		return nil, errors.New(form)
	}
	var f struct {
		Steps []json.RawMessage `json:"steps"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, errors.New(form)
	}
	switch {
	case len(f.Steps) == 0:
		return nil, errors.New(`"steps" is missing or empty; ` + form)
	case len(f.Steps) > maxPlanSteps:
		return nil, fmt.Errorf("the plan has %d steps, more than %d: merge some", len(f.Steps), maxPlanSteps)
	}
	steps := make([]PlanStep, len(f.Steps))
	for i, s := range f.Steps {
		var st struct {
			Do    *string `json:"do"`
			Check *string `json:"check"`
		}
		d := json.NewDecoder(bytes.NewReader(s))
		d.DisallowUnknownFields()
		if !isObject(s) || d.Decode(&st) != nil || st.Do == nil || st.Check == nil {
			return nil, fmt.Errorf("step %d: %s", i+1, `each step must be {"do": string, "check": string}`)
		}
		do, check := strings.TrimSpace(*st.Do), strings.TrimSpace(*st.Check)
		switch {
		case do == "":
			return nil, fmt.Errorf("step %d: \"do\" is empty", i+1)
		case len(do) > 1000:
			return nil, fmt.Errorf("step %d: \"do\" is %d bytes; keep a step under 1000", i+1, len(do))
		case check != "none" && !slices.Contains(checks, check):
			return nil, fmt.Errorf("step %d: check %q is not one of the task's checks (%s) or none", i+1, clip(check, 60), strings.Join(checks, ", "))
		}
		steps[i] = PlanStep{Do: do, Check: check}
	}
	return steps, nil
}

// parseStepDone validates step_done arguments.
func parseStepDone(raw json.RawMessage) (string, error) {
	const form = `arguments must be {"result": string}`
	if !isObject(raw) {
		return "", errors.New(form)
	}
	var f struct {
		Result *string `json:"result"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&f) != nil || f.Result == nil {
		return "", errors.New(form)
	}
	return *f.Result, nil
}

// planTool answers submit_plan and step_done.
func (m *Machine) planTool(name string, args json.RawMessage) *ToolOutcome {
	bad := func(text string) *ToolOutcome {
		m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "plan_protocol", Text: text})
		return &ToolOutcome{Output: text, IsError: true, Outcome: "invalid_args"}
	}
	p := m.st.Plan
	if name == SubmitPlanTool {
		if p != nil && p.Due {
			return bad("plan not replaced: step_done was called in this turn; wait for the step's check")
		}
		steps, err := parsePlan(args, m.gateChecks())
		if err != nil {
			return bad("plan rejected: " + err.Error())
		}
		if p == nil {
			p = &plan{}
			m.st.Plan = p
		}
		if p.Replan || len(p.Steps) > 0 {
			p.Replans++
		}
		p.Steps = append(p.Steps[:p.Current:p.Current], steps...)
		p.Replan = false
		text := fmt.Sprintf("plan accepted (%d new steps). Work on step %d now: %s", len(steps), p.Current+1, p.Steps[p.Current].Do)
		m.note(Note{Type: NotePlan, Step: m.st.Step, Text: m.planText()})
		return &ToolOutcome{Output: text, Outcome: "ok"}
	}
	switch {
	case p == nil || p.Replan:
		return bad("step_done ignored: there is no plan; call submit_plan first")
	case p.Current >= len(p.Steps):
		return bad("step_done ignored: every step of the plan is done; call finish with your answer")
	case p.Due:
		return bad("step_done ignored: it was already called in this turn")
	}
	result, err := parseStepDone(args)
	if err != nil {
		return bad("step_done rejected: " + err.Error())
	}
	s := &p.Steps[p.Current]
	s.Result = result
	if s.Check == "none" {
		return &ToolOutcome{Output: fmt.Sprintf("step %d done. ", p.Current+1) + m.advancePlan(), Outcome: "ok"}
	}
	p.Due = true
	return &ToolOutcome{Output: fmt.Sprintf("step %d submitted: its check %s runs after this turn's tools, and you will be told the outcome", p.Current+1, s.Check), Outcome: "ok"}
}

// advancePlan marks the current step done and says what comes next.
func (m *Machine) advancePlan() string {
	p := m.st.Plan
	p.Steps[p.Current].Done = true
	p.Current++
	m.note(Note{Type: NotePlan, Step: m.st.Step, Text: fmt.Sprintf("step %d of %d done", p.Current, len(p.Steps))})
	if p.Current >= len(p.Steps) {
		return "Every step of the plan is done: call finish with your answer."
	}
	return fmt.Sprintf("Now step %d: %s", p.Current+1, p.Steps[p.Current].Do)
}

// planCheck issues the current step's check, if one is due. It reports
// whether it did.
func (m *Machine) planCheck() bool {
	p := m.st.Plan
	if p == nil || !p.Due || m.st.Closing {
		if p != nil {
			p.Due = false
		}
		return false
	}
	p.Checks++
	p.CheckID = fmt.Sprintf("p%d", p.Checks)
	m.st.Phase = PhaseVerify
	m.st.Awaiting = []string{p.CheckID}
	m.emit(m.planCommand())
	return true
}

func (m *Machine) planCommand() Command {
	p := m.st.Plan
	s := p.Steps[p.Current]
	return Command{Type: Verify, ID: p.CheckID, Deadline: m.deadline(m.spec.Policy.Reserve.Time),
		Candidate: &verify.Candidate{Answer: s.Result, Confidence: 1}, Checks: []string{s.Check}}
}

// isPlanCheck reports whether id is the plan check in flight.
func (m *Machine) isPlanCheck(id string) bool {
	return m.st.Plan != nil && m.st.Plan.CheckID != "" && id == m.st.Plan.CheckID
}

// onPlanVerdict takes the current step's verdict: a pass moves on, a
// failure asks for a new plan.
func (m *Machine) onPlanVerdict(v verify.Verdict) {
	p := m.st.Plan
	p.Due, p.CheckID = false, ""
	m.st.Awaiting = nil
	m.st.Usage.Cost += v.Cost
	n := p.Current + 1
	if v.OK {
		text := fmt.Sprintf("Step %d passed its check %s. ", n, v.Check) + m.advancePlan()
		m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
		m.nextTurn()
		return
	}
	detail := clip(strings.TrimSpace(v.Detail), m.spec.Policy.MaxFeedbackBytes/2)
	if v.Where != "" {
		detail = "at " + v.Where + ": " + detail
	}
	text := fmt.Sprintf("Step %d (%s) failed its check %s: %s\nReplan: call submit_plan with revised steps for the remaining work; the steps done so far (%d) stay done.", n, clip(p.Steps[p.Current].Do, 120), v.Check, detail, p.Current)
	p.Replan = true
	m.note(Note{Type: NotePlan, Step: m.st.Step, Problem: "step_failed", Text: text})
	m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
	m.nextTurn()
}

// planText lists the plan for a note.
func (m *Machine) planText() string {
	p := m.st.Plan
	var b strings.Builder
	fmt.Fprintf(&b, "plan (%d steps, replans %d):", len(p.Steps), p.Replans)
	for i, s := range p.Steps {
		mark := " "
		if s.Done {
			mark = "x"
		}
		fmt.Fprintf(&b, "\n[%s] %d. %s (check: %s)", mark, i+1, s.Do, s.Check)
	}
	return b.String()
}

// planFocus is the plan's part of the pinned block.
func (m *Machine) planFocus() string {
	if !m.spec.Policy.Plan {
		return ""
	}
	p := m.st.Plan
	switch {
	case p == nil:
		return fmt.Sprintf("[Plan] Before acting, call submit_plan with your plan: steps in order, each {do, check}, where check is one of the task's checks (%s) or none.", strings.Join(m.gateChecks(), ", "))
	case p.Replan:
		return fmt.Sprintf("[Plan] Replan: call submit_plan with revised steps for the remaining work (checks: %s, or none).", strings.Join(m.gateChecks(), ", "))
	case p.Current >= len(p.Steps):
		return "[Plan] Every step is done: call finish with your answer."
	}
	s := p.Steps[p.Current]
	return fmt.Sprintf("[Plan: step %d of %d] %s\nCheck: %s. Work on this step only; when it is done, call step_done with its result.", p.Current+1, len(p.Steps), s.Do, s.Check)
}
