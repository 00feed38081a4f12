package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// plan is plan mode's share of the state: the plan being executed, from
// its first submit_plan on (no steps before).
type plan struct {
	Steps   []PlanStep `json:"steps,omitempty"`
	Current int        `json:"current,omitempty"` // index of the step being worked on
	Replan  bool       `json:"replan,omitempty"`
	Replans int        `json:"replans,omitempty"`
	// Due says the current step's check must run before the next turn;
	// CheckID is its Verify command while it runs.
	Due     bool   `json:"due,omitempty"`
	CheckID string `json:"check_id,omitempty"`
	Checks  int    `json:"checks,omitempty"` // Verify commands issued, for IDs
}

// planning reports whether the next step turn must produce a plan.
func (p *plan) planning() bool { return len(p.Steps) == 0 || p.Replan }

// gateChecks are the names a plan step's check may take.
func gateChecks(checks []Check) []string {
	var names []string
	for _, c := range checks {
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

// tool answers submit_plan or step_done at step, given the names a step's
// check may take, with the notes it leads to.
func (p *plan) tool(name string, args json.RawMessage, checks []string, step int) (*ToolOutcome, []Note) {
	bad := func(text string) (*ToolOutcome, []Note) {
		return &ToolOutcome{Output: text, IsError: true, Outcome: "invalid_args"},
			[]Note{{Type: NoteObservation, Step: step, Problem: "plan_protocol", Text: text}}
	}
	if name == SubmitPlanTool {
		if p.Due {
			return bad("plan not replaced: step_done was called in this turn; wait for the step's check")
		}
		steps, err := parsePlan(args, checks)
		if err != nil {
			return bad("plan rejected: " + err.Error())
		}
		if p.Replan || len(p.Steps) > 0 {
			p.Replans++
		}
		p.Steps = append(p.Steps[:p.Current:p.Current], steps...)
		p.Replan = false
		text := fmt.Sprintf("plan accepted (%d new steps). Work on step %d now: %s", len(steps), p.Current+1, p.Steps[p.Current].Do)
		return &ToolOutcome{Output: text, Outcome: "ok"}, []Note{{Type: NotePlan, Step: step, Text: p.text()}}
	}
	switch {
	case p.planning():
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
		next, note := p.advance(step)
		return &ToolOutcome{Output: fmt.Sprintf("step %d done. ", p.Current) + next, Outcome: "ok"}, []Note{note}
	}
	p.Due = true
	return &ToolOutcome{Output: fmt.Sprintf("step %d submitted: its check %s runs after this turn's tools, and you will be told the outcome", p.Current+1, s.Check), Outcome: "ok"}, nil
}

// advance marks the current step done and says what comes next.
func (p *plan) advance(step int) (string, Note) {
	p.Steps[p.Current].Done = true
	p.Current++
	note := Note{Type: NotePlan, Step: step, Text: fmt.Sprintf("step %d of %d done", p.Current, len(p.Steps))}
	if p.Current >= len(p.Steps) {
		return "Every step of the plan is done: call finish with your answer.", note
	}
	return fmt.Sprintf("Now step %d: %s", p.Current+1, p.Steps[p.Current].Do), note
}

// startCheck gives the due check of the current step its command ID.
func (p *plan) startCheck() {
	p.Checks++
	p.CheckID = fmt.Sprintf("p%d", p.Checks)
}

// command is the Verify command of the check in flight.
func (p *plan) command(deadline time.Time) Command {
	s := p.Steps[p.Current]
	return Command{Type: Verify, ID: p.CheckID, Deadline: deadline,
		Candidate: &verify.Candidate{Answer: s.Result, Confidence: 1}, Checks: []string{s.Check}}
}

// currentCheck is the name of the current step's check.
func (p *plan) currentCheck() string { return p.Steps[p.Current].Check }

// verdict takes the current step's verdict at step: a pass moves on, a
// failure asks for a new plan. It returns what to tell the model, and the
// note, if any, to record; maxDetail caps the failure's detail.
func (p *plan) verdict(v verify.Verdict, maxDetail, step int) (string, Note) {
	p.Due, p.CheckID = false, ""
	n := p.Current + 1
	if v.OK {
		next, note := p.advance(step)
		return fmt.Sprintf("Step %d passed its check %s. ", n, v.Check) + next, note
	}
	detail := clip(strings.TrimSpace(v.Detail), maxDetail)
	if v.Where != "" {
		detail = "at " + v.Where + ": " + detail
	}
	text := fmt.Sprintf("Step %d (%s) failed its check %s: %s\nReplan: call submit_plan with revised steps for the remaining work; the steps done so far (%d) stay done.", n, clip(p.Steps[p.Current].Do, 120), v.Check, detail, p.Current)
	p.Replan = true
	return text, Note{Type: NotePlan, Step: step, Problem: "step_failed", Text: text}
}

// text lists the plan for a note.
func (p *plan) text() string {
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

// focus is the plan's part of the pinned block, given the names a step's
// check may take.
func (p *plan) focus(checks []string) string {
	switch {
	case len(p.Steps) == 0 && !p.Replan:
		return fmt.Sprintf("[Plan] Before acting, call submit_plan with your plan: steps in order, each {do, check}, where check is one of the task's checks (%s) or none.", strings.Join(checks, ", "))
	case p.Replan:
		return fmt.Sprintf("[Plan] Replan: call submit_plan with revised steps for the remaining work (checks: %s, or none).", strings.Join(checks, ", "))
	case p.Current >= len(p.Steps):
		return "[Plan] Every step is done: call finish with your answer."
	}
	s := p.Steps[p.Current]
	return fmt.Sprintf("[Plan: step %d of %d] %s\nCheck: %s. Work on this step only; when it is done, call step_done with its result.", p.Current+1, len(p.Steps), s.Do, s.Check)
}

// stepPlanCheck is the handler of phasePlanCheck: the current step's
// verdict arrives; a check that could not run counts as not passed.
func (m *Machine) stepPlanCheck(ev *Event) {
	p := &m.st.Plan
	v := verify.Verdict{Check: p.currentCheck()}
	if ev.Type == EventVerdict {
		v = *ev.Verdict
	} else {
		v.Detail = "the check could not run: " + ev.Error.Message
	}
	m.st.Usage.Cost += v.Cost
	text, note := p.verdict(v, m.spec.Policy.MaxFeedbackBytes/2, m.st.Step)
	m.ready.note(note)
	m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
	m.nextTurn()
}
