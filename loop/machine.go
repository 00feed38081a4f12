package loop

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/chunk"
	"github.com/ratchetloop/ratchet/internal/jsonvalid"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

var (
	//go:embed prompts/system.txt
	systemPrompt string
	//go:embed prompts/reflect.txt
	reflectPrompt string
	//go:embed prompts/widen.txt
	widenPrompt string
	//go:embed prompts/closing.txt
	closingPrompt string
	//go:embed prompts/generate.txt
	generatePrompt string
	//go:embed prompts/closing_generate.txt
	closingGeneratePrompt string
)

// Phase is what the machine is waiting for.
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

// Errors returned by Step. They mean the shell broke the protocol; the
// machine's state is unchanged.
var (
	ErrStopped    = errors.New("loop: run has already stopped")
	ErrUnexpected = errors.New("loop: unexpected event")
)

var finishSpec = model.ToolSpec{
	Name:        FinishTool,
	Description: "Submit your answer. It is accepted only after independent checks pass; if one fails you will be told why. Do not call it in the same turn as other tools.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"The complete answer."},"confidence":{"type":"number","minimum":0,"maximum":1,"description":"How sure you are that the answer is correct and complete, from 0 to 1."}},"required":["answer","confidence"],"additionalProperties":false}`),
}

// Machine is the deterministic loop core. It is not safe for concurrent use:
// the shell owns it from one goroutine, feeding Events with Step, carrying
// out Ready's commands, then calling Advance.
type Machine struct {
	spec   Spec // defaults applied
	keyFn  progress.KeyFunc
	tools  []model.ToolSpec // spec tools + finish
	system string
	known  map[string]bool
	ready  Ready
	// commands sizes the arrays commands are emitted into (see Advance).
	// Its chunks stay small: a command's Request may hold a copy of the
	// history (a pinned scratchpad or plan), which a chunk keeps alive.
	commands chunk.Sizer
	// observed is reused for each turn's progress observation (a KeyFunc
	// must not keep it), awaiting for the one model call in flight, and
	// outcomes for the copies of a turn's tool results, which are read
	// only until the turn completes.
	observed []progress.Call
	awaiting [1]string
	outcomes []ToolOutcome
	st       state
}

// pendingCall is one tool_use of the reply being processed.
type pendingCall struct {
	ID       string
	Name     string
	Args     json.RawMessage // may be invalid JSON: see MarshalJSON
	Result   *ToolOutcome    // set when known
	Dispatch bool
	Approved bool // a person approved it (a permission rule said ask)
	// Spawn is the child a spawn_subagent call started (subagent.go).
	Spawn *spawned
	// From is the model's own ID when another call of the reply had it
	// too and this one was given ID instead (the model is told).
	From string
}

// pendingCallJSON is pendingCall's snapshot form: arguments as a string,
// since a model's arguments may be invalid JSON, which a json.RawMessage
// field cannot hold.
type pendingCallJSON struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Args     string       `json:"args"`
	Result   *ToolOutcome `json:"result,omitempty"`
	Dispatch bool         `json:"dispatch,omitempty"`
	Approved bool         `json:"approved,omitempty"`
	Spawn    *spawned     `json:"spawn,omitempty"`
	From     string       `json:"from,omitempty"`
}

func (c pendingCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(pendingCallJSON{c.ID, c.Name, string(c.Args), c.Result, c.Dispatch, c.Approved, c.Spawn, c.From})
}

func (c *pendingCall) UnmarshalJSON(data []byte) error {
	var j pendingCallJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*c = pendingCall{j.ID, j.Name, json.RawMessage(j.Args), j.Result, j.Dispatch, j.Approved, j.Spawn, j.From}
	return nil
}

// state is everything that changes; it is what Snapshot serialises.
type state struct {
	Phase Phase        `json:"phase"`
	Start time.Time    `json:"start"`
	Usage budget.Usage `json:"usage"`
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
	// Awaiting lists the commands in flight: one model call, the sample
	// calls of a search, or one Verify command per candidate being checked.
	Awaiting []string        `json:"awaiting,omitempty"`
	History  []model.Message `json:"history"`
	// HistoryBytes sizes History for the token estimate without rescanning it.
	HistoryBytes int64         `json:"history_bytes"`
	Calls        []pendingCall `json:"calls,omitempty"`
	Outbox       []model.Block `json:"outbox,omitempty"`
	Attempts     []Attempt     `json:"attempts,omitempty"`
	// Abandoned lists Verify commands whose answers no longer matter (their
	// search was cut off by the time budget); their events are dropped.
	Abandoned []string `json:"abandoned,omitempty"`
	// Search is the judging of a submitted candidate, while it lasts.
	Search  *search          `json:"search,omitempty"`
	Monitor progress.Monitor `json:"monitor"`
	Fires   int              `json:"fires"`
	// Call describes the model call(s) in flight.
	Call callParams `json:"call"`
	// Closing is set once the reserved turn has begun; ClosingDim says why.
	Closing    bool             `json:"closing,omitempty"`
	ClosingDim budget.Dimension `json:"closing_dim,omitempty"`
	Question   string           `json:"question,omitempty"`
	// Approving is the tool call whose approval Question asks for.
	Approving string           `json:"approving,omitempty"`
	StalledOn progress.Pattern `json:"stalled_on,omitempty"`
	Result    *Result          `json:"result,omitempty"`

	// Context management (context.go): the summary of the compacted
	// middle, the compaction in flight, the step of the latest compaction
	// attempt and whether it failed, the scratchpad.
	Summary       string      `json:"summary,omitempty"`
	Compact       *compaction `json:"compact,omitempty"`
	CompactStep   int         `json:"compact_step,omitempty"`
	CompactFailed bool        `json:"compact_failed,omitempty"`
	Scratchpad    *Scratchpad `json:"scratchpad,omitempty"`
	// Plan is the plan being executed in plan mode (plan.go).
	Plan *plan `json:"plan,omitempty"`
	// Children counts the sub-agents started (subagent.go).
	Children int `json:"children,omitempty"`
}

// suspended is the phase and commands in flight when a run was cancelled.
type suspended struct {
	Phase    Phase    `json:"phase"`
	Awaiting []string `json:"awaiting,omitempty"`
}

// New returns a machine for spec, which must be valid.
func New(spec Spec) (*Machine, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec.Budget = spec.Budget.WithDefaults()
	spec.Policy = spec.Policy.withDefaults(spec.Budget)
	m := &Machine{spec: spec, commands: chunk.Sizer{Limit: 8}}
	m.init()
	m.st = state{Phase: PhaseNew, Monitor: progress.NewMonitor(spec.Policy.Progress)}
	return m, nil
}

func (m *Machine) init() {
	m.keyFn = m.spec.Policy.Key
	if m.keyFn == nil {
		m.keyFn = progress.DefaultKey
	}
	m.known = map[string]bool{}
	m.system = systemPrompt
	if m.spec.Mode == ModeGenerate {
		m.system = generatePrompt
	} else {
		m.tools = append([]model.ToolSpec(nil), m.spec.Tools...)
		if m.spec.Policy.Scratchpad {
			m.tools = append(m.tools, scratchpadSpec)
			m.system += strings.TrimRight(scratchpadPrompt, "\n") + "\n"
		}
		if m.spec.Policy.Plan {
			m.tools = append(m.tools, submitPlanSpec, stepDoneSpec)
		}
		if m.spec.Policy.Subagents != nil {
			m.tools = append(m.tools, spawnSpec(m.spec.Policy.Subagents))
		}
		m.tools = append(m.tools, finishSpec)
		for _, t := range m.tools {
			m.known[t.Name] = true
		}
	}
	if m.spec.Instructions != "" {
		m.system += "\n" + m.spec.Instructions
	}
}

// Phase reports what the machine is waiting for.
func (m *Machine) Phase() Phase { return m.st.Phase }

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
func (m *Machine) Ready() Ready {
	rd := Ready{Notes: m.ready.Notes}
	if len(m.ready.Commands) > 0 {
		// Clipped: appending to what is returned must not write where the
		// next commands will go.
		rd.Commands = slices.Clip(m.ready.Commands)
	}
	return rd
}

// Advance acknowledges that the last Ready has been recorded and carried out.
//
// The commands stay where they are, since a log may point at them, and the
// next ones are written after them in the same array until it is full.
func (m *Machine) Advance() {
	m.ready = Ready{Commands: m.ready.Commands[len(m.ready.Commands):]}
}

// Abort ends the run failed, for a shell that cannot go on (it broke the
// protocol, say): the Result still carries the attempts and usage so far.
// It does nothing once the run has stopped.
func (m *Machine) Abort(reason string) {
	if m.st.Phase != PhaseStopped {
		m.stop(Failed, reason)
	}
}

// Step feeds one event to the machine.
func (m *Machine) Step(ev Event) error {
	if m.st.Phase == PhaseStopped && (ev.Type != EventResume || m.st.Suspended == nil) {
		return ErrStopped
	}
	if i := slices.Index(m.st.Abandoned, ev.Call); i >= 0 && ev.Call != "" && (ev.Type == EventVerdict || ev.Type == EventCheckError) {
		// The answer to a check the run gave up waiting for: nothing to do.
		m.st.Abandoned = slices.Delete(m.st.Abandoned, i, i+1)
		return nil
	}
	if err := m.accept(ev); err != nil {
		return err
	}
	if (ev.Type == EventResume || ev.Type == EventHumanReply) && ev.At.After(m.st.Last) {
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
	// The commonest events are handled here, the rest apart, so that a
	// run's stack holds the locals of only the branch it takes.
	switch {
	case ev.Type == EventModelReply && m.st.Phase == PhaseModel && m.st.Call.Purpose != model.PurposeCompact:
		m.onReply(ev.Reply)
	case ev.Type == EventToolResult:
		m.onToolResult(ev.Call, ev.Tool)
	case ev.Type == EventVerdict:
		// Not in stepOther, whose frame is large: a verdict can end the
		// run, whose summary is written at the deepest point of a step.
		m.verdictEvent(ev.Call, ev.Verdict)
	default:
		m.stepOther(&ev)
	}
	return nil
}

func (m *Machine) verdictEvent(call string, v *verify.Verdict) {
	if m.isPlanCheck(call) {
		m.onPlanVerdict(*v)
		return
	}
	m.onVerdict(call, *v)
}

// stepOther handles the events Step does not.
func (m *Machine) stepOther(ev *Event) {
	switch ev.Type {
	case EventResume:
		m.resume()
	case EventStart:
		m.st.Start = ev.At
		if steps := m.spec.Budget.Steps; steps > 0 {
			// Room for a tool loop's two messages a step, up to a point: a
			// logged request keeps the history array it was built on, so
			// every doubling would leave a copy alive.
			m.st.History = make([]model.Message, 0, min(2*steps+2, 256))
		}
		m.appendHistory(model.Message{Role: model.User, Content: []model.Block{model.TextBlock(m.spec.Goal)}})
		m.nextTurn()
	case EventCancel:
		reason := "the run was cancelled"
		if t := ev.Detail().Text; t != "" {
			reason = t
		}
		interrupted := suspended{Phase: m.st.Phase, Awaiting: m.st.Awaiting}
		m.stop(Cancelled, reason)
		if interrupted.Phase != PhaseNew {
			m.st.Suspended = &interrupted
		}
	case EventModelReply:
		if m.st.Phase == PhaseModel && m.st.Call.Purpose == model.PurposeCompact {
			m.onCompacted(*ev.Reply)
		} else if m.st.Phase == PhaseSample {
			m.onSample(ev.Call, ev.Reply, nil)
		} else {
			m.onReply(ev.Reply)
		}
	case EventModelError:
		if m.st.Phase == PhaseModel && m.st.Call.Purpose == model.PurposeCompact && m.onCompactError(*ev.Error) {
			break
		}
		if m.st.Phase == PhaseSample {
			m.onSample(ev.Call, nil, ev.Error)
		} else {
			m.onModelError(*ev.Error)
		}
	case EventChildResult:
		m.onChildResult(ev.Call, *ev.Child)
	case EventCheckError:
		if m.isPlanCheck(ev.Call) {
			// A step check that could not run counts as not passed.
			m.onPlanVerdict(verify.Verdict{Check: m.st.Plan.Steps[m.st.Plan.Current].Check, Detail: "the check could not run: " + ev.Error.Message})
			break
		}
		if m.onHoldoutError(ev.Call, *ev.Error) {
			break
		}
		if ev.Error.Kind == FailDeadline {
			m.onCheckDeadline(ev.Error.Message)
		} else {
			m.stop(Failed, "a check could not run: "+ev.Error.Message)
		}
	case EventHumanReply:
		if m.st.Approving != "" {
			m.onApproval(*ev)
			break
		}
		m.st.Fires = 0
		m.st.Monitor.Reset()
		m.st.Outbox = append(m.st.Outbox, model.TextBlock("You were stuck, so a person was asked: "+m.st.Question+"\nTheir answer: "+ev.Detail().Text))
		m.st.Question = ""
		m.nextTurn()
	case EventHumanUnavailable:
		if m.st.Approving != "" {
			m.refuseApproval("nobody could approve it now")
			break
		}
		m.stop(Escalated, "stopped making progress ("+string(m.st.StalledOn)+") and no person could answer now")
	}
}

// accept checks that ev is well formed and expected in the current phase.
func (m *Machine) accept(ev Event) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s %s", ErrUnexpected, ev.Type, why) }
	if m.st.Phase == PhaseNew && ev.Type != EventStart && ev.Type != EventCancel {
		return bad("before start")
	}
	switch ev.Type {
	case EventStart:
		if m.st.Phase != PhaseNew {
			return bad("after start")
		}
	case EventCancel, EventResume:
	case EventModelReply, EventModelError:
		if (m.st.Phase != PhaseModel && m.st.Phase != PhaseSample) || !slices.Contains(m.st.Awaiting, ev.Call) {
			return bad("for call " + strconv.Quote(ev.Call))
		}
		if (ev.Type == EventModelReply && ev.Reply == nil) || (ev.Type == EventModelError && ev.Detail().Error == nil) {
			return bad("without payload")
		}
	case EventToolResult:
		if m.st.Phase != PhaseTools || ev.Tool == nil {
			return bad("outside a tool turn or without payload")
		}
		i := m.callIndex(ev.Call)
		if i < 0 || !m.st.Calls[i].Dispatch || m.st.Calls[i].Result != nil {
			return bad("for call " + strconv.Quote(ev.Call) + " (unknown or already answered)")
		}
	case EventChildResult:
		if m.st.Phase != PhaseTools || ev.Detail().Child == nil {
			return bad("outside a tool turn or without payload")
		}
		if i := m.childIndex(ev.Call); i < 0 || m.st.Calls[i].Result != nil {
			return bad("for command " + strconv.Quote(ev.Call) + " (unknown or already answered)")
		}
	case EventVerdict, EventCheckError:
		if m.st.Phase != PhaseVerify || !slices.Contains(m.st.Awaiting, ev.Call) {
			return bad("for command " + strconv.Quote(ev.Call))
		}
		if (ev.Type == EventVerdict && ev.Detail().Verdict == nil) || (ev.Type == EventCheckError && ev.Detail().Error == nil) {
			return bad("without payload")
		}
		if ev.Type == EventVerdict && !m.awaitingCheck(ev.Call, ev.Verdict.Check) {
			return bad("for check " + strconv.Quote(ev.Verdict.Check))
		}
	case EventHumanReply, EventHumanUnavailable:
		if m.st.Phase != PhaseHuman {
			return bad("while not waiting for a person")
		}
	default:
		return bad("(unknown type)")
	}
	return nil
}

func (m *Machine) callIndex(id string) int {
	for i, c := range m.st.Calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// --- model turns ---

func (m *Machine) nextTurn() {
	if m.planCheck() {
		return
	}
	var need budget.Usage
	if !m.st.Closing {
		need = m.turnNeed()
		if d, over := budget.Exceeds(m.spec.Budget, m.st.Usage, need); over {
			m.beginClosing(d)
		}
	}
	if len(m.st.Outbox) > 0 {
		m.appendHistory(model.Message{Role: model.User, Content: m.st.Outbox})
		m.st.Outbox = nil
	}
	if m.st.Closing {
		m.closingTurn()
		return
	}
	if m.maybeCompact(need) {
		return
	}
	m.callModel(model.PurposeStep, m.tools, m.spec.Policy.MaxOutputTokens, m.spec.Policy.Reserve.Time)
}

// beginClosing marks the reserved last turn, begun because d is spent.
func (m *Machine) beginClosing(d budget.Dimension) {
	m.st.Closing, m.st.ClosingDim = true, d
	used := fmt.Sprintf("%s: %s of %s used", d, budget.Format(d, m.st.Usage.Get(d)), budget.Format(d, m.spec.Budget.Limit(d)))
	tmpl := closingPrompt
	if m.spec.Mode == ModeGenerate {
		tmpl = closingGeneratePrompt
	}
	text := fmt.Sprintf(strings.TrimSpace(tmpl), used)
	m.note(Note{Type: NoteClosing, Step: m.st.Step, Text: text, Problem: string(d)})
	m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
}

func (m *Machine) closingTurn() {
	est := m.estimateInput()
	// The closing call is projected to cost as much as the costliest call
	// so far: if even that does not fit, the run ends without it.
	d, over := budget.Exceeds(m.spec.Budget, m.st.Usage, budget.Usage{Steps: 1, ModelCalls: 1, InputTokens: est, OutputTokens: 1, Cost: m.st.MaxCallCost})
	if !over && m.spec.Budget.Time > 0 && m.st.Usage.Time >= m.spec.Budget.Time {
		d, over = budget.Time, true
	}
	if over {
		m.stop(Exhausted(m.st.ClosingDim), fmt.Sprintf("%s budget spent and no room left for a closing turn (%s also spent)", m.st.ClosingDim, d))
		return
	}
	maxOut := int64(m.spec.Policy.ClosingOutputTokens)
	for _, dim := range []budget.Dimension{budget.OutputTokens, budget.TotalTokens} {
		if left, ok := budget.Remaining(m.spec.Budget, m.st.Usage, dim); ok {
			if dim == budget.TotalTokens {
				left -= est
			}
			maxOut = min(maxOut, left)
		}
	}
	var tools []model.ToolSpec
	if m.spec.Mode != ModeGenerate {
		tools = []model.ToolSpec{finishSpec}
	}
	m.callModel(model.PurposeClosing, tools, int(max(maxOut, 1)), 0)
}

// deadline is when the time budget less keep runs out: the run's start
// plus the time limit and the time paused, less keep.
func (m *Machine) deadline(keep time.Duration) time.Time {
	if m.spec.Budget.Time < 0 {
		return time.Time{}
	}
	return m.st.Start.Add(m.st.Paused + m.spec.Budget.Time - keep)
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
		m.emit(c)
	}
}

func (m *Machine) callModel(p model.Purpose, tools []model.ToolSpec, maxOut int, keep time.Duration) {
	m.st.CallSeq++
	m.st.Step++
	m.st.Usage.Steps++
	m.st.Usage.ModelCalls++
	id := "m" + strconv.Itoa(m.st.CallSeq)
	m.awaiting[0] = id
	m.st.Awaiting = m.awaiting[:]
	m.st.Phase = PhaseModel
	m.st.Call = callParams{Purpose: p, MaxOut: maxOut, Keep: keep}
	m.emit(m.modelCommand(id))
}

// callParams are what a model call in flight was asked with beyond the
// state itself, so that Pending can issue it again after a Restore.
type callParams struct {
	Purpose model.Purpose `json:"purpose"`
	MaxOut  int           `json:"max_out"`
	// Keep is the time the call must leave of the budget: its deadline is
	// computed when the command is built, so that it moves with pauses.
	Keep time.Duration `json:"keep,omitempty"`
}

// modelCommand builds the CallModel command id of the current turn.
func (m *Machine) modelCommand(id string) Command {
	c := m.st.Call
	req := &model.Request{
		System:          m.system,
		MaxOutputTokens: c.MaxOut,
		Purpose:         c.Purpose,
	}
	var est int64
	switch c.Purpose {
	case model.PurposeSample:
		req.Messages, req.Tools = m.sampleRequest()
		est = EstimateTokens(*req)
	case model.PurposeCompact:
		req.System, req.Messages = compactPrompt, m.compactMessages()
		est = EstimateTokens(*req)
	default:
		pin := m.pinned()
		req.Messages = m.stepMessages(pin)
		switch {
		case m.spec.Mode == ModeGenerate:
		case c.Purpose == model.PurposeClosing:
			req.Tools = []model.ToolSpec{finishSpec}
		default:
			req.Tools = m.stepTools()
		}
		// Sized as EstimateTokens would, without rescanning the history.
		est = tokensOf(int64(len(req.System)) + toolsWeight(req.Tools) + m.st.HistoryBytes + m.pinnedWeight(pin))
	}
	return Command{Type: CallModel, ID: id, Deadline: m.deadline(c.Keep), Request: req, InputEstimate: est}
}

// Pending returns the commands in flight, built again from the state: what
// a shell must carry out (again) after Restore, or to resume a run whose
// process died. Answers that already arrived are not asked for twice.
func (m *Machine) Pending() []Command {
	switch m.st.Phase {
	case PhaseModel, PhaseSample:
		out := make([]Command, len(m.st.Awaiting))
		for i, id := range m.st.Awaiting {
			out[i] = m.modelCommand(id)
		}
		return out
	case PhaseTools:
		var calls []ToolCall
		var children []Command
		for _, c := range m.st.Calls {
			switch {
			case c.Result != nil:
			case c.Dispatch:
				calls = append(calls, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
			case c.Spawn != nil:
				children = append(children, m.childCommand(*c.Spawn))
			}
		}
		if len(calls) == 0 {
			return children
		}
		return append([]Command{{Type: RunTools, ID: "t" + strconv.Itoa(m.st.Step), Deadline: m.deadline(m.spec.Policy.Reserve.Time), Calls: calls}}, children...)
	case PhaseVerify:
		if m.st.Plan != nil && m.st.Plan.CheckID != "" {
			return []Command{m.planCommand()}
		}
		var out []Command
		for _, id := range m.st.Awaiting {
			n, t, _ := m.parseVerifyID(id)
			c := m.verifyCommand(n, t)
			c.Checks = slices.DeleteFunc(c.Checks, func(name string) bool { return !m.awaitingCheck(id, name) })
			out = append(out, c)
		}
		return out
	case PhaseHuman:
		return []Command{m.askCommand()}
	}
	return nil
}

func (m *Machine) appendHistory(msg model.Message) {
	m.st.History = append(m.st.History, msg)
	m.st.HistoryBytes += messageWeight(msg)
}

func (m *Machine) onModelError(f Failure) {
	m.st.Awaiting = nil
	if f.Kind != FailDeadline {
		m.stop(Failed, "model call failed: "+f.Message)
		return
	}
	if m.st.Closing {
		m.stop(Exhausted(budget.Time), "the closing turn was cut off by the time limit")
		return
	}
	m.beginClosing(budget.Time)
	m.nextTurn()
}

// textOnly keeps a reply's text blocks: anything else in a turn that calls
// no tool (a stray tool_result, a tool_use in generate mode) would need a
// pairing the history cannot give it.
func textOnly(blocks []model.Block) []model.Block {
	for _, b := range blocks {
		if b.Type != model.Text {
			return slices.DeleteFunc(slices.Clone(blocks), func(b model.Block) bool { return b.Type != model.Text })
		}
	}
	return blocks
}

// charge adds one reply's usage.
func (m *Machine) charge(u model.Usage) {
	// Cached input is still input the model read: the token budget bounds
	// what a run makes the model process (the cost budget prices the
	// cache's discount).
	m.st.Usage.InputTokens += u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	m.st.Usage.OutputTokens += u.OutputTokens
	m.st.Usage.Cost += u.Cost
	m.st.MaxCallCost = max(m.st.MaxCallCost, u.Cost)
	if !u.CostKnown {
		m.st.Usage.CostUnknown = true
	}
}

// onReply takes a model's reply to a step. r is the event's and is only
// read: the machine keeps slices of it, never writes through it.
func (m *Machine) onReply(r *model.Response) {
	m.st.Awaiting = nil
	m.charge(r.Usage)

	size := 0
	var uses []int
	hasText := false
	for i, b := range r.Content {
		size += len(b.Text) + len(b.Input)
		switch b.Type {
		case model.ToolUse:
			uses = append(uses, i)
		case model.Text:
			hasText = hasText || strings.TrimSpace(b.Text) != ""
		}
	}
	if size > m.spec.Policy.MaxReplyBytes || m.spec.Mode == ModeGenerate || len(uses) == 0 {
		m.onReplyWithoutCalls(r, size, len(uses) > 0, hasText)
		return
	}
	// Taking the calls and acting on them are apart, so that the deep
	// work of acting (parsing a finish, checking arguments) does not sit on
	// onCalls' frame.
	switch finishes := m.onCalls(r, uses); {
	case finishes == len(uses):
		m.onFinish()
		return
	case finishes > 0:
		m.dropFinishes()
	}
	m.answerCoreTools()
	m.dispatchTools()
}

// freshCallID returns an ID for the step's nth call that is not among
// taken, and adds it there.
func (m *Machine) freshCallID(taken *[]string, n int) string {
	fresh := fmt.Sprintf("s%d_%d", m.st.Step, n)
	for k := 2; slices.Contains(*taken, fresh); k++ {
		fresh = fmt.Sprintf("s%d_%d_%d", m.st.Step, n, k)
	}
	*taken = append(*taken, fresh)
	return fresh
}

// onReplyWithoutCalls answers a reply whose calls are not run: one too
// big, one in generate mode, or one that calls nothing.
func (m *Machine) onReplyWithoutCalls(r *model.Response, size int, calls, hasText bool) {
	switch {
	case size > m.spec.Policy.MaxReplyBytes:
		m.appendHistory(model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock(fmt.Sprintf("[reply of %d bytes discarded]", size))}})
		m.malformed("oversized_reply", fmt.Sprintf("Your reply was %d bytes, over the limit of %d, and was discarded unread. Keep replies shorter: act in smaller steps.", size, m.spec.Policy.MaxReplyBytes))
		return
	case m.spec.Mode == ModeGenerate:
		m.appendHistory(model.Message{Role: model.Assistant, Content: textOnly(r.Content)})
		answer, conf, stated := ExtractCandidate(replyText(r.Content))
		if answer == "" {
			m.malformed("no_answer", "Your reply held no answer. Reply with the artifact in a fenced code block, then a final line CONFIDENCE: x.")
			return
		}
		m.submit(answer, conf, "", statedNote(stated))
		return
	case !calls && !hasText:
		m.appendHistory(model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock("[empty reply]")}})
		m.malformed("empty_reply", "Your reply was empty. Call a tool, or call `finish` with your answer and confidence.")
	case !calls:
		m.appendHistory(model.Message{Role: model.Assistant, Content: textOnly(r.Content)})
		m.malformed("no_action", "Your reply called no tool. To act, call a tool; to answer, call `finish` with your answer and confidence. A plain-text answer is not submitted.")
	}
}

// onCalls takes the tool calls of reply r, at indices uses of its content,
// into the history and the turn's calls, and returns how many call finish.
func (m *Machine) onCalls(r *model.Response, uses []int) (finishes int) {
	// The history copy gives every tool_use a unique, non-empty ID so each
	// gets its result, and an object input, which providers require when
	// the history is sent back; the raw arguments stay in the calls, quoted
	// in the error the model sees.
	content, copied := r.Content, false
	edit := func(i int) *model.Block {
		if !copied {
			content, copied = slices.Clone(r.Content), true
		}
		return &content[i]
	}
	m.st.Calls = m.st.Calls[:0]
	var taken []string // IDs in use, the model's own and the generated; built when first needed
	for n, i := range uses {
		var from string
		if id := content[i].ID; id == "" || slices.ContainsFunc(uses[:n], func(j int) bool { return content[j].ID == id }) {
			if taken == nil {
				for _, j := range uses {
					taken = append(taken, r.Content[j].ID)
				}
			}
			edit(i).ID = m.freshCallID(&taken, n+1)
			from = id
		}
		if !isObject(content[i].Input) {
			edit(i).Input = json.RawMessage(`{}`)
		}
		m.st.Calls = append(m.st.Calls, pendingCall{ID: content[i].ID, Name: content[i].Name, Args: r.Content[i].Input, From: from})
		if from != "" {
			m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "duplicate_call_id", Text: renamedText(from, content[i].ID)})
		}
		if content[i].Name == FinishTool {
			finishes++
		}
	}
	m.appendHistory(model.Message{Role: model.Assistant, Content: content})
	return finishes
}

func (m *Machine) dropFinishes() {
	const text = "finish ignored: this reply also called other tools. A reply may call tools or finish, not both. Read the tool results, then call finish again in a later turn."
	for i := range m.st.Calls {
		if m.st.Calls[i].Name == FinishTool {
			m.st.Calls[i].Result = &ToolOutcome{Output: text, IsError: true, Outcome: "protocol"}
		}
	}
	m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "tools_and_finish", Text: text})
}

func (m *Machine) dispatchTools() {
	budgetLeft := int64(-1)
	if left, ok := budget.Remaining(m.spec.Budget, m.st.Usage, budget.ToolCalls); ok {
		budgetLeft = max(left, 0)
	}
	var run []ToolCall
	var spawns []int // spawn_subagent calls, started once the tools are counted
	for i := range m.st.Calls {
		c := &m.st.Calls[i]
		if c.Result != nil {
			continue
		}
		rule, refused := m.screen(c, budgetLeft == 0)
		if refused {
			continue
		}
		if rule != nil && rule.Action == Ask {
			m.askApproval(c, rule)
			return
		}
		if m.isSpawn(c.Name) {
			spawns = append(spawns, i)
			continue
		}
		if budgetLeft > 0 {
			budgetLeft--
		}
		c.Dispatch = true
		run = append(run, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	m.st.Usage.ToolCalls += len(run)
	var children []Command
	if len(spawns) > 0 {
		children = m.spawnChildren(spawns)
	}
	if len(run) == 0 && len(children) == 0 {
		m.completeTools()
		return
	}
	m.st.Phase = PhaseTools
	m.emitTools(run, children)
}

// askApproval asks a person whether call c may run, as rule says. One
// specific question at a time; the turn's calls run together once every
// approval is in.
func (m *Machine) askApproval(c *pendingCall, rule *Permission) {
	m.st.Approving, m.st.Question = c.ID, approvalQuestion(c, rule)
	m.st.Phase = PhaseHuman
	m.emit(m.askCommand())
}

// emitTools issues the commands of a turn's dispatched calls; apart from
// dispatchTools, whose stack frame would otherwise hold each Command.
func (m *Machine) emitTools(run []ToolCall, children []Command) {
	if len(run) > 0 {
		m.emit(Command{Type: RunTools, ID: "t" + strconv.Itoa(m.st.Step), Deadline: m.deadline(m.spec.Policy.Reserve.Time), Calls: run})
	}
	for _, c := range children {
		m.emit(c)
	}
}

// screen checks call c before it is dispatched. A call that may not run
// is answered with why, and refused is true; otherwise rule is the
// permission rule that matched, if any. Apart from dispatchTools so that
// the formatting of rare refusals does not weigh on every step's stack.
func (m *Machine) screen(c *pendingCall, budgetSpent bool) (rule *Permission, refused bool) {
	var problem, text string
	switch {
	case m.st.Closing:
		problem, text = "closing_turn", fmt.Sprintf("tool %q not run: this is the closing turn and tools are no longer available", c.Name)
	case !m.known[c.Name]:
		problem, text = "unknown_tool", fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, m.toolList())
	case len(bytes.TrimSpace(c.Args)) == 0:
		c.Args = json.RawMessage(`{}`) // some providers omit the arguments of a call that takes none
	}
	switch {
	case problem != "":
	case !jsonvalid.Valid(c.Args):
		problem, text = "invalid_json", fmt.Sprintf("tool %q not run: its arguments are not valid JSON: %s", c.Name, clip(string(c.Args), 200))
	case budgetSpent && !m.isSpawn(c.Name):
		problem, text = "tool_budget", fmt.Sprintf("tool %q not run: the tool-call budget is spent", c.Name)
	}
	if problem == "" && !c.Approved {
		if rule = m.permission(c.Name, c.Args); rule != nil && rule.Action == Deny {
			problem, text = "denied", fmt.Sprintf("tool %q not run: the task's permissions refuse this call (rule: %s); do it another way or finish", c.Name, rule)
		}
	}
	if problem == "" {
		return rule, false
	}
	c.Result = &ToolOutcome{Output: text, IsError: true, Outcome: problem}
	m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: problem, Text: text})
	return nil, true
}

// askCommand is the AskHuman command for the current question.
func (m *Machine) askCommand() Command {
	c := Command{Type: AskHuman, ID: "h" + strconv.Itoa(m.st.Step), CommandDetail: &CommandDetail{Question: m.st.Question}}
	if i := m.callIndex(m.st.Approving); m.st.Approving != "" && i >= 0 {
		pc := m.st.Calls[i]
		c.ID = "h" + strconv.Itoa(m.st.Step) + "." + pc.ID
		c.Approval = &ToolCall{ID: pc.ID, Name: pc.Name, Args: pc.Args}
	}
	return c
}

// onApproval applies a person's answer about the call being approved and
// goes on dispatching the turn's calls.
func (m *Machine) onApproval(ev Event) {
	ok, why := approved(ev)
	if !ok {
		reason := "a person refused this call"
		if why = strings.TrimSpace(why); why != "" && !strings.EqualFold(why, "deny") {
			reason += ": " + why
		}
		m.refuseApproval(reason)
		return
	}
	m.st.Calls[m.callIndex(m.st.Approving)].Approved = true
	m.st.Approving, m.st.Question = "", ""
	m.dispatchTools()
}

// refuseApproval answers the call being approved with the reason it was
// not run, and goes on dispatching the turn's calls.
func (m *Machine) refuseApproval(reason string) {
	c := &m.st.Calls[m.callIndex(m.st.Approving)]
	m.st.Approving, m.st.Question = "", ""
	text := fmt.Sprintf("tool %q not run: %s", c.Name, reason)
	c.Result = &ToolOutcome{Output: text, IsError: true, Outcome: "denied"}
	m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "denied", Text: text})
	m.dispatchTools()
}

func (m *Machine) toolList() string {
	names := make([]string, len(m.tools))
	for i, t := range m.tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// onToolResult takes the outcome of call id, copied: a driver may reuse
// the value it pointed at for the next result.
func (m *Machine) onToolResult(id string, out *ToolOutcome) {
	i := m.callIndex(id)
	if len(m.outcomes) < len(m.st.Calls) {
		m.outcomes = make([]ToolOutcome, len(m.st.Calls))
	}
	m.outcomes[i] = *out
	m.st.Calls[i].Result = &m.outcomes[i]
	for _, c := range m.st.Calls {
		if c.Result == nil {
			return
		}
	}
	m.completeTools()
}

// completeTools answers every call of the turn, in call order, watches for
// lack of progress and moves on.
func (m *Machine) completeTools() {
	m.observed = m.observed[:0]
	for _, c := range m.st.Calls {
		m.st.Outbox = append(m.st.Outbox, model.Block{Type: model.ToolResult, ID: c.ID, Text: c.Result.Output, IsError: c.Result.IsError})
		m.observed = append(m.observed, progress.Call{Tool: c.Name, Args: c.Args, Result: c.Result.Output})
	}
	m.tellRenamed()
	obs := progress.Observation{Kind: progress.Action, Calls: m.observed}
	m.st.Calls = m.st.Calls[:0]
	if m.st.Closing {
		m.stopExhausted("the closing turn called tools instead of finishing")
		return
	}
	if m.observe(obs) {
		m.nextTurn()
	}
}

// tellRenamed tells the model, after the turn's tool results (providers
// want those first), which of its calls shared an ID and were answered
// under a new one.
func (m *Machine) tellRenamed() {
	for _, c := range m.st.Calls {
		if c.From != "" {
			m.st.Outbox = append(m.st.Outbox, model.TextBlock(renamedText(c.From, c.ID)))
		}
	}
}

func renamedText(from, to string) string {
	return fmt.Sprintf("Your reply gave the id %q to more than one tool call; each was run and answered, the repeat under the id %q. Give each call its own id.", from, to)
}

// malformed answers a reply that broke the protocol with an observation.
func (m *Machine) malformed(problem, text string) {
	m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: problem, Text: text})
	m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
	if m.st.Closing {
		m.stopExhausted("the closing reply did not finish (" + problem + ")")
		return
	}
	if m.observe(progress.Observation{Kind: progress.Malformed, Problem: problem}) {
		m.nextTurn()
	}
}

// --- attempts and verification ---

// isObject reports whether raw is a valid JSON object.
func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return jsonvalid.Valid(raw)
		}
		return false
	}
	return false
}

// parseFinish validates finish arguments strictly; the error is for the model.
func parseFinish(raw json.RawMessage) (answer string, confidence float64, err error) {
	answer, confidence, ok := scanFinish(raw)
	if !ok {
		if answer, confidence, err = decodeFinish(raw); err != nil {
			return "", 0, err
		}
	}
	if !(confidence >= 0 && confidence <= 1) {
		return "", 0, fmt.Errorf(`"confidence" is %v; it must be between 0 and 1`, confidence)
	}
	return answer, confidence, nil
}

// decodeFinish reads finish arguments of any form with encoding/json and
// says what is wrong with them.
func decodeFinish(raw json.RawMessage) (answer string, confidence float64, err error) {
	const form = `arguments must be a JSON object {"answer": string, "confidence": number from 0 to 1}`
	if !isObject(raw) {
		return "", 0, errors.New(form)
	}
	var fields struct {
		Answer     json.RawMessage `json:"answer"`
		Confidence json.RawMessage `json:"confidence"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fields); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return "", 0, fmt.Errorf("unexpected argument %s; %s", name, form)
		}
		return "", 0, errors.New(form)
	}
	switch a := bytes.TrimSpace(fields.Answer); {
	case a == nil:
		return "", 0, errors.New(`"answer" is missing`)
	case string(a) == "null" || json.Unmarshal(a, &answer) != nil:
		return "", 0, fmt.Errorf(`"answer" must be a string, got %s`, clip(string(a), 40))
	}
	switch c := bytes.TrimSpace(fields.Confidence); {
	case c == nil:
		return "", 0, errors.New(`"confidence" is missing: give a number from 0 to 1`)
	case string(c) == "null" || json.Unmarshal(c, &confidence) != nil:
		return "", 0, fmt.Errorf(`"confidence" must be a number from 0 to 1, got %s`, clip(string(c), 40))
	}
	return answer, confidence, nil
}

func (m *Machine) onFinish() {
	if len(m.st.Calls) > 1 {
		const text = "call finish once per reply, with one answer"
		for i := range m.st.Calls {
			m.st.Calls[i].Result = &ToolOutcome{Output: text, IsError: true, Outcome: "protocol"}
		}
		m.finishProblem("multiple_finish", text)
		return
	}
	c := m.st.Calls[0]
	answer, conf, err := parseFinish(c.Args)
	if err != nil {
		text := "finish rejected: " + err.Error()
		m.st.Calls[0].Result = &ToolOutcome{Output: text, IsError: true, Outcome: "invalid_args"}
		m.finishProblem("bad_finish", text)
		return
	}
	m.st.Calls = m.st.Calls[:0]
	m.submit(answer, conf, c.ID, "")
}

// finishProblem answers a malformed finish-only reply.
func (m *Machine) finishProblem(problem, text string) {
	for _, c := range m.st.Calls {
		m.st.Outbox = append(m.st.Outbox, model.Block{Type: model.ToolResult, ID: c.ID, Text: c.Result.Output, IsError: true})
	}
	m.tellRenamed()
	m.st.Calls = m.st.Calls[:0]
	m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: problem, Text: text})
	if m.st.Closing {
		m.stopExhausted("the closing reply's finish was malformed (" + problem + ")")
		return
	}
	if m.observe(progress.Observation{Kind: progress.Malformed, Problem: problem}) {
		m.nextTurn()
	}
}

// maxEarlier is how many earlier attempts feedback lists, one line each.
const maxEarlier = 5

// feedback shapes a rejection: the latest attempt's failures in full, one
// line per earlier attempt, capped.
func (m *Machine) feedback(a Attempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Not accepted: attempt %d failed %d of %d checks run.\n", a.N, len(a.Failing()), len(a.Verdicts))
	if a.Sample {
		// The model has not seen this alternative in its history.
		fmt.Fprintf(&b, "It was the alternative you proposed when asked, and the most informative failure: %s\n", clip(a.Answer, m.spec.Policy.MaxFeedbackBytes/4))
	}
	budgetFor := m.spec.Policy.MaxFeedbackBytes / 2
	for _, v := range a.Verdicts {
		if v.OK {
			continue
		}
		fmt.Fprintf(&b, "- %s failed", v.Check)
		if v.Where != "" {
			fmt.Fprintf(&b, " at %s", v.Where)
		}
		fmt.Fprintf(&b, ": %s\n", clip(v.Detail, budgetFor))
	}
	if earlier := m.st.Attempts[:a.N-1]; len(earlier) > 0 {
		b.WriteString("Earlier attempts:\n")
		if skip := len(earlier) - maxEarlier; skip > 0 {
			fmt.Fprintf(&b, "- (%d older attempts not shown)\n", skip)
			earlier = earlier[skip:]
		}
		for _, e := range earlier {
			fmt.Fprintf(&b, "- %s\n", clip(e.Summary, 200))
		}
	}
	if m.spec.Mode == ModeGenerate {
		b.WriteString("Fix what failed and reply with the whole artifact again.")
	} else {
		b.WriteString("Fix what failed and call finish again.")
	}
	return clip(b.String(), m.spec.Policy.MaxFeedbackBytes)
}

func summarize(a Attempt, ok bool) string {
	var b strings.Builder
	b.Write(attemptHead(a))
	if ok {
		b.WriteString("passed every check")
		return b.String()
	}
	if len(a.Failing()) == 0 {
		fmt.Fprintf(&b, "passed the %d checks run but was not checked further", len(a.Verdicts))
		return b.String()
	}
	b.WriteString("failed ")
	first := true
	for _, v := range a.Verdicts {
		if v.OK {
			continue
		}
		if !first {
			b.WriteString("; ")
		}
		first = false
		fmt.Fprintf(&b, "%s (%s)", v.Check, clip(firstLine(v.Detail), 100))
	}
	return b.String()
}

// --- progress ---

// observe feeds the monitor and climbs the ladder when it fires. It reports
// whether the loop should go on to the next turn.
func (m *Machine) observe(o progress.Observation) bool {
	pat := m.st.Monitor.Observe(m.keyFn(o))
	if pat == progress.None {
		return true
	}
	return m.intervene(pat, o)
}

// intervene climbs the ladder because the monitor saw pat on o, and
// reports whether the loop should go on to the next turn.
func (m *Machine) intervene(pat progress.Pattern, o progress.Observation) bool {
	m.st.Fires++
	m.st.Monitor.Reset()
	rung := progress.Ladder(m.st.Fires)
	what := describe(pat, m.spec.Policy.Progress, o)
	switch rung {
	case progress.Reflect, progress.Widen:
		tmpl := reflectPrompt
		if rung == progress.Widen {
			tmpl = widenPrompt
		}
		text := fmt.Sprintf(strings.TrimSpace(tmpl), what)
		m.note(Note{Type: NoteIntervention, Step: m.st.Step, Pattern: pat, Rung: rung, Text: text})
		m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
		return true
	}
	m.st.StalledOn = pat
	if !m.spec.Policy.Escalate {
		m.note(Note{Type: NoteIntervention, Step: m.st.Step, Pattern: pat, Rung: rung, Text: "stopped: " + what})
		m.stop(Stalled(pat), fmt.Sprintf("stopped making progress after two interventions: %s", what))
		return false
	}
	q := m.question(what)
	m.note(Note{Type: NoteIntervention, Step: m.st.Step, Pattern: pat, Rung: rung, Text: "escalated: " + q})
	m.st.Question = q
	m.st.Phase = PhaseHuman
	m.emit(m.askCommand())
	return false
}

func describe(p progress.Pattern, cfg progress.Config, o progress.Observation) string {
	var last string
	switch o.Kind {
	case progress.Action:
		names := make([]string, len(o.Calls))
		for i, c := range o.Calls {
			names[i] = c.Tool + " " + string(progress.Canonical(c.Args))
		}
		last = "calling " + clip(strings.Join(names, ", "), 160)
	case progress.Attempt:
		last = "submitting answers that fail " + strings.Join(o.Failing, ", ")
	default:
		last = "sending replies that break the protocol (" + o.Problem + ")"
	}
	switch p {
	case progress.Repeating:
		return fmt.Sprintf("the last %d steps were identical: %s, with the same result", cfg.Window, last)
	case progress.Oscillating:
		return fmt.Sprintf("the run is alternating between two states; the latest step was %s", last)
	default:
		return fmt.Sprintf("the last %d steps produced nothing new; the latest was %s", cfg.Patience, last)
	}
}

// question is the one specific question put to a person on escalation.
func (m *Machine) question(what string) string {
	if best := m.best(); best != nil && !best.Accepted && len(best.Verdicts) > 0 {
		for _, v := range best.Verdicts {
			if !v.OK {
				return fmt.Sprintf("The agent is stuck: %s. Its best answer so far, %q, fails check %s: %s. What should it change, or is the check wrong?",
					what, clip(best.Answer, 120), v.Check, clip(firstLine(v.Detail), 160))
			}
		}
	}
	return fmt.Sprintf("The agent is stuck: %s. Its goal: %q. What should it do instead?", what, clip(m.spec.Goal, 160))
}

// --- ending ---

func (m *Machine) stopExhausted(why string) {
	m.stop(Exhausted(m.st.ClosingDim), fmt.Sprintf("%s budget spent; %s", m.st.ClosingDim, why))
}

func (m *Machine) stop(s Status, reason string) {
	res := &Result{
		Status:   s,
		Reason:   reason,
		Attempts: append([]Attempt{}, m.st.Attempts...), // [] rather than null in JSON
		Usage:    m.st.Usage,
		Limits:   m.spec.Budget,
		Question: m.st.Question,
	}
	for i := range res.Attempts {
		if res.Attempts[i].Summary == "" {
			res.Attempts[i].Summary = string(append(attemptHead(res.Attempts[i]), "not fully checked"...))
		}
	}
	if b := m.best(); b != nil {
		best := res.Attempts[b.N-1]
		res.Best = &best
	}
	m.st.Result = res
	m.st.Phase = PhaseStopped
	m.st.Awaiting = nil
	m.emit(Command{Type: Finish, ID: "end", CommandDetail: &CommandDetail{Result: res}})
}

// attemptHead begins an attempt's summary, as fmt would with "attempt %d
// (step %d, confidence %.2f) answered %q: " but without its stack: it is
// written at every run's end.
func attemptHead(a Attempt) []byte {
	b := append(make([]byte, 0, 128), "attempt "...)
	b = strconv.AppendInt(b, int64(a.N), 10)
	b = append(b, " (step "...)
	b = strconv.AppendInt(b, int64(a.Step), 10)
	b = append(b, ", confidence "...)
	b = strconv.AppendFloat(b, a.Confidence, 'f', 2, 64)
	b = append(b, ") answered "...)
	b = strconv.AppendQuote(b, clip(a.Answer, 60))
	return append(b, ": "...)
}

// best is the accepted attempt, else the one that passed the most checks,
// the later one winning ties.
func (m *Machine) best() *Attempt {
	var best *Attempt
	for i := range m.st.Attempts {
		a := &m.st.Attempts[i]
		if best == nil || a.Accepted || (!best.Accepted && a.passed() >= best.passed()) {
			best = a
		}
	}
	return best
}

func (m *Machine) emit(c Command) {
	m.ready.Commands = append(chunk.Reserve(m.ready.Commands, 1, &m.commands), c)
}

func (m *Machine) note(n Note) { m.ready.Notes = append(m.ready.Notes, n) }

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

// --- snapshots ---

// SnapshotVersion is the version of the Snapshot format.
const SnapshotVersion = 2

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
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("loop: restore: %w", err)
	}
	if s.Version != SnapshotVersion {
		return nil, fmt.Errorf("loop: restore: snapshot version %d, this build reads version %d", s.Version, SnapshotVersion)
	}
	s.Spec.Policy.Key = key
	m := &Machine{spec: s.Spec, st: s.State, commands: chunk.Sizer{Limit: 8}}
	m.init()
	if m.st.Monitor.Seen == nil {
		m.st.Monitor.Seen = map[progress.Key]bool{}
	}
	return m, nil
}
