package loop

import (
	"fmt"
	"slices"
)

// Guardrails are the shell's: a check with a verdict on what goes to the
// model (input) or comes back from it (output). The core sees only a trip,
// as EventGuardrail answering the model call it stopped, and ends the run
// with the status Guardrail(name) — or, when the trip says Escalate, asks
// a person first (a hold, hold.go): "continue" lets the run go on past the
// guardrail (the stopped calls are made again, and every model call from
// then on names it in Command.Overridden: the shell no longer applies it),
// "stop" ends the run with the guardrail's status, and nobody to answer
// ends it escalated.

// EventGuardrail says a guardrail tripped on a model call in flight (Call
// is the call's ID; Guardrail says which and why). Reply, for an output
// guardrail, is the reply it stopped, whose usage is charged; the core
// never reads its content.
const EventGuardrail EventType = "guardrail"

// NoteGuardrail: a guardrail tripped; Text says which, on what and why.
const NoteGuardrail NoteType = "guardrail"

// GuardrailTrip is a tripped guardrail.
type GuardrailTrip struct {
	Name string `json:"name"`
	// Stage is GuardInput (the request to the model) or GuardOutput (its
	// reply).
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	// Escalate asks a person before the run ends.
	Escalate bool `json:"escalate,omitempty"`
}

// Guardrail stages.
const (
	GuardInput  = "input"
	GuardOutput = "output"
)

// Guardrail is the status of a run a guardrail named name ended.
func Guardrail(name string) Status { return Status("guardrail:" + name) }

// modelPhases are the phases waiting for model calls, which a guardrail
// trip may answer.
var modelPhases = []phase{phaseTurn, phaseClosing, phaseCompact, phaseSample}

// acceptTrip checks a guardrail event: a trip of a model call in flight.
func acceptTrip(st *state, ev *Event) string {
	switch {
	case !slices.Contains(modelPhases, st.Phase) || !slices.Contains(st.Awaiting, ev.Call):
		return "for call " + fmt.Sprintf("%q", ev.Call)
	case ev.Guardrail == nil || ev.Guardrail.Name == "":
		return "without payload"
	}
	return ""
}

// tripped takes a guardrail trip: the run ends with the guardrail's
// status, or a person is asked first, the interrupted calls kept to be
// issued again if they say continue.
func tripped(m *Machine, ev *Event) {
	g := ev.Guardrail
	if ev.Reply != nil {
		m.st.charge(ev.Reply)
	}
	why := clip(g.Reason, 500)
	if why == "" {
		why = "no reason given"
	}
	reason := fmt.Sprintf("guardrail %s tripped on the model's %s: %s", g.Name, g.Stage, why)
	m.ready.note(Note{Type: NoteGuardrail, Step: m.st.Step, Problem: g.Name, Text: reason})
	if !g.Escalate {
		m.stop(Guardrail(g.Name), reason)
		return
	}
	// An input trip stopped its call before it was made; the others of a
	// batch (sampled alternatives) may have been.
	made := len(m.st.Awaiting)
	if g.Stage == GuardInput {
		made--
	}
	h := &hold{Status: Guardrail(g.Name), Reason: reason, Guardrail: g.Name, Made: made,
		Interrupted: &suspended{Phase: m.st.Phase, Awaiting: m.st.Awaiting},
		Question: fmt.Sprintf("The run was stopped: %s. Answer \"continue\" to let the run go on without guardrail %s (the model call is made again), or \"stop\" to end the run %s.",
			reason, g.Name, Guardrail(g.Name))}
	m.st.Awaiting = nil
	m.st.Hold = h
	m.st.Asked++
	m.ready.note(Note{Type: NoteEscalation, Step: m.st.Step, Problem: "asked", Text: h.Question})
	m.st.Phase = phaseEscalated
	m.ready.emit(escalationCommand(m.st.Step, h.Question))
}

// letThrough carries on after a person said continue to a guardrail's
// hold: the guardrail is overridden from now on, and the interrupted model
// calls are issued again; those that had been made count again.
func letThrough(m *Machine, h *hold) {
	m.st.Hold = nil
	m.st.Phase, m.st.Awaiting = h.Interrupted.Phase, h.Interrupted.Awaiting
	m.st.Usage.ModelCalls += h.Made
	if !slices.Contains(m.st.Overridden, h.Guardrail) {
		m.st.Overridden = append(m.st.Overridden, h.Guardrail)
	}
	for _, c := range m.Pending() {
		m.ready.emit(c)
	}
}
