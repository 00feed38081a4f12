package loop

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

// Phase is what the machine is waiting for, as the shell sees it.
type Phase string

const (
	PhaseNew     Phase = "new"     // waiting for EventStart
	PhaseModel   Phase = "model"   // waiting for a model reply
	PhaseSample  Phase = "sample"  // waiting for alternative candidates
	PhaseTools   Phase = "tools"   // waiting for tool results
	PhaseVerify  Phase = "verify"  // waiting for verdicts
	PhaseHuman   Phase = "human"   // waiting for a person
	PhaseStopped Phase = "stopped" // the run has a Result
)

// phase is the machine's own phase: what it waits for and why. Each has
// one handler (handle); none is inferred from other state.
type phase string

const (
	phaseNew       phase = "new"        // EventStart
	phaseTurn      phase = "turn"       // the reply to a step
	phaseClosing   phase = "closing"    // the reply to the closing turn, which may only finish
	phaseCompact   phase = "compact"    // the summary of the history's middle
	phaseSample    phase = "sample"     // alternatives to an unsure candidate
	phaseTools     phase = "tools"      // tool results and sub-agents' results
	phaseApproval  phase = "approval"   // a person's approval of a tool call
	phaseEscalated phase = "escalated"  // a person's answer for a stuck run
	phasePlanCheck phase = "plan_check" // the verdict on a plan step's result
	phaseChecks    phase = "checks"     // verdicts on candidates
	phaseStopped   phase = "stopped"    // nothing: the run has a Result
)

// phases says, for each phase, what it shows the shell and the events its
// handler takes (EventCancel, EventResume and EventUserMessage are taken
// in any phase, EventFork in phaseTurn: inbox.go; EventGuardrail in the
// phases waiting for a model: see acceptTrip).
var phases = map[phase]struct {
	waiting Phase
	events  []EventType
}{
	phaseNew:       {PhaseNew, []EventType{EventStart}},
	phaseTurn:      {PhaseModel, []EventType{EventModelReply, EventModelError}},
	phaseClosing:   {PhaseModel, []EventType{EventModelReply, EventModelError}},
	phaseCompact:   {PhaseModel, []EventType{EventModelReply, EventModelError}},
	phaseSample:    {PhaseSample, []EventType{EventModelReply, EventModelError}},
	phaseTools:     {PhaseTools, []EventType{EventToolResult, EventChildResult}},
	phaseApproval:  {PhaseHuman, []EventType{EventHumanReply, EventHumanUnavailable}},
	phaseEscalated: {PhaseHuman, []EventType{EventHumanReply, EventHumanUnavailable}},
	phasePlanCheck: {PhaseVerify, []EventType{EventVerdict, EventCheckError}},
	phaseChecks:    {PhaseVerify, []EventType{EventVerdict, EventCheckError}},
	phaseStopped:   {PhaseStopped, nil},
}

func (p phase) waiting() Phase { return phases[p].waiting }

func (p phase) waitsFor(t EventType) bool { return slices.Contains(phases[p].events, t) }

// handle passes an accepted event to the handler of the current phase.
func (m *Machine) handle(ev *Event) {
	switch ev.Type {
	case EventCancel:
		// The run ends cancelled, keeping what it interrupted for a resume.
		reason := ev.Text
		if reason == "" {
			reason = "the run was cancelled"
		}
		interrupted := suspended{Phase: m.st.Phase, Awaiting: m.st.Awaiting}
		m.stop(Cancelled, reason)
		if interrupted.Phase != phaseNew {
			m.st.Suspended = &interrupted
		}
		return
	case EventResume:
		m.resume()
		return
	case EventUserMessage:
		m.st.Inbox.add(ev.Text)
		return
	case EventFork:
		fork(m, ev)
		return
	case EventGuardrail:
		tripped(m, ev)
		return
	}
	switch m.st.Phase {
	case phaseNew:
		m.st.begin(ev.At, m.spec)
		m.nextTurn()
	case phaseTurn:
		m.stepTurn(ev)
	case phaseClosing:
		m.stepClosing(ev)
	case phaseCompact:
		m.stepCompact(ev)
	case phaseSample:
		m.stepSample(ev)
	case phaseTools:
		m.stepTools(ev)
	case phaseApproval:
		m.stepApproval(ev)
	case phaseEscalated:
		m.stepEscalated(ev)
	case phasePlanCheck:
		m.stepPlanCheck(ev)
	case phaseChecks:
		m.stepChecks(ev)
	}
}

// begin starts the run at the time at: the goal is the history's first
// message.
func (st *state) begin(at time.Time, spec Spec) {
	st.Start = at
	if steps := spec.Budget.Steps; steps > 0 {
		// Room for a tool loop's two messages a step, up to a point: a
		// logged request keeps the history array it was built on, so
		// every doubling would leave a copy alive.
		st.History.Messages = make([]model.Message, 0, min(2*steps+2, 256))
	}
	st.History.append(model.Message{Role: model.User, Content: []model.Block{model.TextBlock(spec.Goal)}})
}

// stepTurn takes the reply to a step, or its failure; a call cut off by
// the time budget begins the closing turn.
func (m *Machine) stepTurn(ev *Event) {
	if ev.Type == EventModelReply {
		m.onReply(ev.Reply, false)
		return
	}
	m.st.Awaiting = nil
	if ev.Error.Kind != FailDeadline {
		m.end(Failed, modelFailed+ev.Error.Message)
		return
	}
	m.closeTurn(budget.Time)
}

// stepClosing takes the reply to the closing turn: it may only finish.
func (m *Machine) stepClosing(ev *Event) {
	if ev.Type == EventModelReply {
		m.onReply(ev.Reply, true)
		return
	}
	m.st.Awaiting = nil
	if ev.Error.Kind != FailDeadline {
		m.end(Failed, modelFailed+ev.Error.Message)
		return
	}
	m.end(Exhausted(budget.Time), "the closing turn was cut off by the time limit")
}

// stepTools takes one tool result or a sub-agent's Result; the turn goes
// on once every call has its answer.
func (m *Machine) stepTools(ev *Event) {
	id, out := ev.Call, ev.Tool
	if ev.Type == EventChildResult {
		i := childIndex(m.st.Calls, ev.Call)
		charged, note, res := m.st.Calls[i].Spawn.ended(*ev.Child, m.st.Step)
		m.st.Usage = m.st.Usage.Add(charged)
		for _, share := range ev.Child.ByModel { // charged, so counted among the run's
			m.st.ByModel = addModelShare(m.st.ByModel, share)
		}
		m.ready.note(note)
		id, out = m.st.Calls[i].ID, res
	}
	// Copied: a driver may reuse the value it pointed at for the next.
	res := *out
	m.st.Calls[callIndex(m.st.Calls, id)].Result = &res
	if !slices.ContainsFunc(m.st.Calls, func(c pendingCall) bool { return c.Result == nil }) {
		m.completeTools(false)
	}
}

// stepApproval takes a person's answer about the call awaiting approval,
// then goes on dispatching the turn's calls.
func (m *Machine) stepApproval(ev *Event) {
	a := m.st.Approval
	c := &m.st.Calls[callIndex(m.st.Calls, a.Call)]
	m.st.Approval = nil
	if ok, why := a.answer(ev); ok {
		c.Approved = true
	} else {
		m.ready.note(refuse(c, "denied", fmt.Sprintf("tool %q not run: %s", c.Name, why), m.st.Step))
	}
	m.dispatchTools(false)
}

// stepEscalated takes a person's answer for the stuck run, which starts
// the ladder again, or for a held one (hold.go), which may raise limits
// and carry on; nobody to answer ends the run escalated.
func (m *Machine) stepEscalated(ev *Event) {
	h := m.st.Hold
	switch {
	case ev.Type == EventHumanUnavailable && h != nil:
		m.stop(Escalated, h.Reason+"; a person was asked and none could answer now")
		return
	case ev.Type == EventHumanUnavailable:
		m.stop(Escalated, "stopped making progress ("+string(m.st.Ladder.StalledOn)+") and no person could answer now")
		return
	}
	m.st.Answered++
	if h != nil {
		r := readReply(ev.Text, m.spec.Budget, h.Spent)
		switch {
		case r.Problem != "":
			m.st.Answered-- // an answer not understood is asked again, not counted
			h.Problem = r.Problem
			m.ready.note(Note{Type: NoteEscalation, Step: m.st.Step, Problem: "not_understood", Text: r.Problem})
			m.ready.emit(escalationCommand(m.st.Step, h.question()))
		case r.Stop:
			m.stop(h.Status, h.Reason+"; a person was asked and said stop")
		default:
			// The raise is the logged answer's: replaying the log raises
			// the same limits.
			for _, x := range r.Raise {
				m.spec.Budget.Set(x.Dim, x.To)
			}
			m.ready.note(Note{Type: NoteEscalation, Step: m.st.Step, Problem: "raised", Text: "a person " + r.describe()})
			if h.Interrupted != nil {
				letThrough(m, h)
				return
			}
			m.st.Outbox = append(m.st.Outbox, model.TextBlock("A person was asked and "+r.describe()+". Carry on: tools are offered again, and finish when your answer is ready."))
			m.st.Hold, m.st.Closing = nil, ""
			m.nextTurn()
		}
		return
	}
	m.st.Ladder.helped()
	m.st.Outbox = append(m.st.Outbox, model.TextBlock("You were stuck, so a person was asked: "+m.st.Question+"\nTheir answer: "+ev.Text))
	m.st.Question = ""
	m.nextTurn()
}

// escalationCommand is the AskHuman command putting question to a person
// at step.
func escalationCommand(step int, question string) Command {
	return Command{Type: AskHuman, ID: "h" + strconv.Itoa(step), Question: question}
}

// resume carries on after the shell's process stopped: a cancelled run
// returns to what the cancellation interrupted, and the commands in flight
// are issued again (a resumed shell has no record of carrying them out).
func (m *Machine) resume() {
	if s := m.st.Suspended; s != nil {
		m.st.Phase, m.st.Awaiting = s.Phase, s.Awaiting
		m.st.Suspended, m.st.Result = nil, nil
	}
	for _, c := range m.Pending() {
		m.ready.emit(c)
	}
}
