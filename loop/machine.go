package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
)

// Errors returned by Step. They mean the shell broke the protocol; the
// machine's state is unchanged.
var (
	ErrStopped    = errors.New("loop: run has already stopped")
	ErrUnexpected = errors.New("loop: unexpected event")
)

// Machine is the deterministic loop core. It is not safe for concurrent use:
// the shell owns it from one goroutine, feeding Events with Step, carrying
// out Ready's commands, then calling Advance.
//
// Step dispatches each event to the handler of the phase the machine is
// in (phase.go); the sub-protocols (search, compaction, plan, children,
// the intervention ladder, approvals) are types the state holds, each with
// its own share of it, which say what notes and commands they want; only
// the machine emits them.
type Machine struct {
	spec  Spec // defaults applied
	keyFn progress.KeyFunc
	req   requests
	ready Ready
	st    state
	// observed is the scratch a turn's calls are shown to progress
	// detection in: a KeyFunc must not keep an observation's slices.
	observed []progress.Call
}

// state is everything that changes; it is what Snapshot serialises.
type state struct {
	Phase phase        `json:"phase"`
	Start time.Time    `json:"start"`
	Usage budget.Usage `json:"usage"`
	// ByModel shares Usage's model calls, tokens and cost among the
	// models of a fallback chain, in the order they first answered.
	ByModel []ModelUsage `json:"by_model,omitempty"`
	// Last is the latest event time seen. Paused is the time that does not
	// count against the time budget: spent waiting for a person, or with
	// no process running the run (between the last event before a crash or
	// a cancellation and the resume).
	Last   time.Time     `json:"last"`
	Paused time.Duration `json:"paused,omitempty"`
	// Suspended is what a cancellation interrupted, kept so that the run
	// can be resumed.
	Suspended *suspended `json:"suspended,omitempty"`
	// MaxCallCost is the costliest model call so far, the projection for
	// the next one.
	MaxCallCost budget.Micros `json:"max_call_cost,omitempty"`
	Step        int           `json:"step"`
	CallSeq     int           `json:"call_seq"`
	// Awaiting lists the model calls in flight: one, or the samples of a
	// search; Call says how they were asked.
	Awaiting []string   `json:"awaiting,omitempty"`
	Call     callParams `json:"call"`
	History  history    `json:"history"`
	// Calls are the tool calls of the turn being carried out; Outbox is
	// what the next user message will say.
	Calls    []pendingCall `json:"calls,omitempty"`
	Outbox   []model.Block `json:"outbox,omitempty"`
	Attempts []Attempt     `json:"attempts,omitempty"`
	// Search is the judging of a submitted candidate, while it lasts.
	Search *search `json:"search,omitempty"`
	// Abandoned lists Verify commands whose answers no longer matter (their
	// search was cut off by the time budget); their events are dropped.
	Abandoned []string `json:"abandoned,omitempty"`
	Ladder    ladder   `json:"ladder"`
	// Closing is the dimension whose spending began the closing turn.
	Closing budget.Dimension `json:"closing,omitempty"`
	// Question is the question put to a stuck run's person; Approval the
	// tool call a person is asked to approve.
	Question string    `json:"question,omitempty"`
	Approval *approval `json:"approval,omitempty"`
	// Overridden are the guardrails a person let the run go on past.
	Overridden []string `json:"overridden,omitempty"`
	// Hold is the end a person is asked about first (hold.go). Asked and
	// Answered count the questions put to a person about the run, stuck
	// or held, and the answers that came.
	Hold       *hold      `json:"hold,omitempty"`
	Asked      int        `json:"asked,omitempty"`
	Answered   int        `json:"answered,omitempty"`
	Context    compactor  `json:"context"`
	Scratchpad Scratchpad `json:"scratchpad"`
	Plan       plan       `json:"plan"`
	Children   children   `json:"children"`
	// Refused counts the model's refusals in a row (turn.go): the first is
	// an observation, the next ends the run failed with its text.
	Refused int `json:"refused,omitempty"`
	// Inbox holds what a person sent the run for its next model turn.
	Inbox  inbox   `json:"inbox,omitzero"`
	Result *Result `json:"result,omitempty"`
}

// suspended is the phase and model calls in flight when a run was
// cancelled.
type suspended struct {
	Phase    phase    `json:"phase"`
	Awaiting []string `json:"awaiting,omitempty"`
}

// New returns a machine for spec, which must be valid.
func New(spec Spec) (*Machine, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec.Budget = spec.Budget.WithDefaults()
	spec.Policy = spec.Policy.withDefaults(spec.Budget)
	m := newMachine(spec)
	m.st = state{Phase: phaseNew, Ladder: ladder{Monitor: progress.NewMonitor(spec.Policy.Progress)}}
	return m, nil
}

// Phase reports what the machine is waiting for.
func (m *Machine) Phase() Phase { return m.st.Phase.waiting() }

// Spec returns the spec with defaults applied.
func (m *Machine) Spec() Spec { return m.spec }

// Usage reports what the run has consumed so far.
func (m *Machine) Usage() budget.Usage { return m.st.Usage }

// Result returns the final result once the phase is PhaseStopped.
func (m *Machine) Result() (Result, bool) {
	if m.st.Result == nil {
		return Result{}, false
	}
	return *m.st.Result, true
}

// Ready returns the notes and commands produced since the last Advance.
func (m *Machine) Ready() Ready { return m.ready }

// Advance acknowledges that the last Ready has been recorded and carried
// out. What Ready returned stays the shell's: a log may point into it.
func (m *Machine) Advance() { m.ready = Ready{} }

// Abort ends the run failed, for a shell that cannot go on (it broke the
// protocol, say): the Result still carries the attempts and usage so far.
// It does nothing once the run has stopped.
func (m *Machine) Abort(reason string) {
	if m.st.Phase != phaseStopped {
		m.stop(Failed, reason)
	}
}

// Step feeds one event to the machine: it is checked, its time is taken,
// and the handler of the current phase acts on it.
func (m *Machine) Step(ev Event) error {
	if m.st.Phase == phaseStopped && (ev.Type != EventResume || m.st.Suspended == nil) {
		return ErrStopped
	}
	if i := slices.Index(m.st.Abandoned, ev.Call); i >= 0 && ev.Call != "" && (ev.Type == EventVerdict || ev.Type == EventCheckError) {
		// The answer to a check the run gave up waiting for: nothing to do.
		m.st.Abandoned = slices.Delete(m.st.Abandoned, i, i+1)
		return nil
	}
	if err := m.accept(&ev); err != nil {
		return err
	}
	if (ev.Type == EventResume || ev.Type == EventFork || ev.Type == EventHumanReply) && ev.At.After(m.st.Last) {
		// Nothing ran since the last event: a person was thinking, or no
		// process was driving the run.
		m.st.Paused += ev.At.Sub(m.st.Last)
	}
	if ev.At.After(m.st.Last) {
		m.st.Last = ev.At
	}
	if !m.st.Start.IsZero() {
		if el := ev.At.Sub(m.st.Start) - m.st.Paused; el > m.st.Usage.Time {
			m.st.Usage.Time = el
		}
	}
	if ev.Type == EventModelError && ev.Error.Billed != nil {
		// Every phase that calls a model charges a failed call's billed
		// attempts here, before it decides what the failure means.
		m.st.charge(&model.Response{Usage: *ev.Error.Billed})
	}
	m.handle(&ev)
	return nil
}

// accept checks that ev is well formed and one the current phase waits
// for, answering a command or call in flight.
func (m *Machine) accept(ev *Event) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s %s", ErrUnexpected, ev.Type, why) }
	if m.st.Phase == phaseNew && ev.Type != EventStart && ev.Type != EventCancel {
		return bad("before start")
	}
	wanted := m.st.Phase.waitsFor(ev.Type)
	switch ev.Type {
	case EventStart:
		if !wanted {
			return bad("after start")
		}
	case EventCancel, EventResume:
	case EventUserMessage, EventFork:
		if why := acceptSteer(ev, m.st.Phase, m.st.Awaiting, m.spec.Policy.Reserve); why != "" {
			return bad(why)
		}
	case EventModelReply, EventModelError:
		if !wanted || !slices.Contains(m.st.Awaiting, ev.Call) {
			return bad("for call " + strconv.Quote(ev.Call))
		}
		if (ev.Type == EventModelReply && ev.Reply == nil) || (ev.Type == EventModelError && ev.Error == nil) {
			return bad("without payload")
		}
	case EventToolResult:
		if !wanted || ev.Tool == nil {
			return bad("outside a tool turn or without payload")
		}
		if i := callIndex(m.st.Calls, ev.Call); i < 0 || !m.st.Calls[i].Dispatch || m.st.Calls[i].Result != nil {
			return bad("for call " + strconv.Quote(ev.Call) + " (unknown or already answered)")
		}
	case EventChildResult:
		if !wanted || ev.Child == nil {
			return bad("outside a tool turn or without payload")
		}
		if i := childIndex(m.st.Calls, ev.Call); i < 0 || m.st.Calls[i].Result != nil {
			return bad("for command " + strconv.Quote(ev.Call) + " (unknown or already answered)")
		}
	case EventVerdict, EventCheckError:
		plan := m.st.Phase == phasePlanCheck
		if !wanted || (plan && ev.Call != m.st.Plan.CheckID) || (!plan && m.st.Search.job(ev.Call) < 0) {
			return bad("for command " + strconv.Quote(ev.Call))
		}
		if (ev.Type == EventVerdict && ev.Verdict == nil) || (ev.Type == EventCheckError && ev.Error == nil) {
			return bad("without payload")
		}
		if ev.Type == EventVerdict && ((plan && ev.Verdict.Check != m.st.Plan.currentCheck()) ||
			(!plan && !m.st.Search.due(ev.Call, ev.Verdict.Check, m.st.Attempts, m.spec.Checks))) {
			return bad("for check " + strconv.Quote(ev.Verdict.Check))
		}
	case EventHumanReply, EventHumanUnavailable:
		if !wanted {
			return bad("while not waiting for a person")
		}
	case EventGuardrail:
		if why := acceptTrip(&m.st, ev); why != "" {
			return bad(why)
		}
	default:
		return bad("(unknown type)")
	}
	return nil
}

// Pending returns the commands in flight, built again from the state: what
// a shell must carry out (again) after Restore, or to resume a run whose
// process died. Answers that already arrived are not asked for twice.
func (m *Machine) Pending() []Command {
	switch m.st.Phase {
	case phaseTurn, phaseClosing, phaseCompact, phaseSample:
		out := make([]Command, len(m.st.Awaiting))
		for i, id := range m.st.Awaiting {
			out[i] = m.req.command(&m.st, id)
		}
		return out
	case phaseTools:
		return m.st.toolCommands(m.st.deadline(m.spec.Budget.Time, m.spec.Policy.Reserve.Time))
	case phasePlanCheck:
		return []Command{m.st.Plan.command(m.st.deadline(m.spec.Budget.Time, m.spec.Policy.Reserve.Time))}
	case phaseChecks:
		s := m.st.Search
		keep := m.spec.Policy.Reserve.Time
		if s.Closing {
			keep = 0
		}
		var out []Command
		for _, j := range s.Running {
			c := s.command(j, m.st.Attempts, m.spec.Checks, m.st.deadline(m.spec.Budget.Time, keep))
			c.Checks = slices.DeleteFunc(c.Checks, func(name string) bool { return !s.due(j.ID, name, m.st.Attempts, m.spec.Checks) })
			out = append(out, c)
		}
		return out
	case phaseApproval:
		return []Command{m.st.Approval.command(m.st.Step, m.st.Calls[callIndex(m.st.Calls, m.st.Approval.Call)])}
	case phaseEscalated:
		if h := m.st.Hold; h != nil {
			return []Command{escalationCommand(m.st.Step, h.question())}
		}
		return []Command{escalationCommand(m.st.Step, m.st.Question)}
	}
	return nil
}

// emit and note add to what the step hands the driver.
func (r *Ready) emit(c Command) { r.Commands = append(r.Commands, c) }

func (r *Ready) note(ns ...Note) { r.Notes = append(r.Notes, ns...) }

// stop ends the run with status s and its Result.
func (m *Machine) stop(s Status, reason string) {
	question := m.st.Question
	switch {
	case m.st.Approval != nil:
		question = m.st.Approval.Question
	case m.st.Hold != nil:
		question = m.st.Hold.question()
	}
	res := &Result{
		Status:   s,
		Reason:   reason,
		Attempts: append([]Attempt{}, m.st.Attempts...), // [] rather than null in JSON
		Usage:    m.st.Usage,
		ByModel:  slices.Clone(m.st.ByModel),
		Limits:   m.spec.Budget,
		Question: question,
		Asked:    m.st.Asked,
		Answered: m.st.Answered,
	}
	for i := range res.Attempts {
		if res.Attempts[i].Summary == "" {
			res.Attempts[i].Summary = attemptHead(res.Attempts[i]) + "not fully checked"
		}
	}
	if b := best(m.st.Attempts); b != nil {
		best := res.Attempts[b.N-1]
		res.Best = &best
	}
	m.st.Result = res
	m.st.Phase = phaseStopped
	m.st.Awaiting = nil
	m.ready.emit(Command{Type: Finish, ID: "end", Result: res})
}

// end ends the run with s for reason, unless a person is to be asked
// first: then the run waits for the answer in phaseEscalated, its
// candidates in judging left unjudged, as when checks run out of time.
// It takes the ends a person may be asked about: exhausted, and failed
// because a check could not run or a model call failed for good (the
// failures that go through end).
func (m *Machine) end(s Status, reason string) {
	h := holdFor(s, reason, &m.spec.Policy, m.spec.Budget, m.st.Usage)
	if h == nil {
		m.stop(s, reason)
		return
	}
	if sr := m.st.Search; sr != nil {
		for _, j := range sr.Running {
			m.st.Abandoned = append(m.st.Abandoned, j.ID)
		}
		m.st.answerSearch("Not judged: " + clip(reason, 200) + ".")
	}
	m.st.Awaiting = nil
	m.st.Hold = h
	m.st.Asked++
	m.ready.note(Note{Type: NoteEscalation, Step: m.st.Step, Problem: "asked", Text: h.Question})
	m.st.Phase = phaseEscalated
	m.ready.emit(escalationCommand(m.st.Step, h.Question))
}

// --- snapshots ---

// SnapshotVersion is the version of the Snapshot format. Version 3 holds
// the machine's phases and sub-protocols apart; a shell holding an older
// snapshot rebuilds the machine from its event log instead
// (ErrSnapshotVersion).
const SnapshotVersion = 3

// ErrSnapshotVersion is wrapped by Restore's error for a snapshot written
// by a build with another SnapshotVersion. Snapshots are a cache of the
// event log: replay the events from the start instead.
var ErrSnapshotVersion = errors.New("loop: snapshot of another version")

type snapshot struct {
	Version int   `json:"version"`
	Spec    Spec  `json:"spec"`
	State   state `json:"state"`
}

// Snapshot serialises the machine. Take it after Advance: outputs not yet
// acknowledged are not included.
func (m *Machine) Snapshot() ([]byte, error) {
	return json.Marshal(snapshot{Version: SnapshotVersion, Spec: m.spec, State: m.st})
}

// Restore rebuilds a machine from a Snapshot. key is the progress key
// function the run used (nil for the default), since functions are not
// serialised.
func Restore(data []byte, key progress.KeyFunc) (*Machine, error) {
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("loop: restore: %w", err)
	}
	if v.Version != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrSnapshotVersion, v.Version, SnapshotVersion)
	}
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("loop: restore: %w", err)
	}
	s.Spec.Policy.Key = key
	m := newMachine(s.Spec)
	m.st = s.State
	if m.st.Ladder.Monitor.Seen == nil {
		m.st.Ladder.Monitor.Seen = map[progress.Key]bool{}
	}
	return m, nil
}
