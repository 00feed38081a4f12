package loop

import (
	"encoding/json"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// EventType names an input to the machine.
type EventType string

const (
	// EventStart begins the run; its At is the run's start time.
	EventStart EventType = "start"
	// EventModelReply answers a CallModel command (Call is its ID).
	EventModelReply EventType = "model_reply"
	// EventModelError says a CallModel command failed after the shell's
	// retries. Error.Kind "deadline" means the time budget cut it.
	EventModelError EventType = "model_error"
	// EventToolResult answers one call of a RunTools command (Call is the tool
	// call's ID).
	EventToolResult EventType = "tool_result"
	// EventVerdict carries one check's verdict for a Verify command (Call is
	// its ID, Verdict.Check the check's name).
	EventVerdict EventType = "verdict"
	// EventCheckError says a check could not run (infrastructure).
	EventCheckError EventType = "check_error"
	// EventHumanReply answers an AskHuman command.
	EventHumanReply EventType = "human_reply"
	// EventHumanUnavailable says no person can answer now: the run ends
	// escalated, handing over its question.
	EventHumanUnavailable EventType = "human_unavailable"
	// EventCancel ends the run cancelled. A cancelled run can be resumed.
	EventCancel EventType = "cancel"
	// EventResume says a new process drives the run: the machine issues
	// again the commands that were in flight (see Pending), and a cancelled
	// run carries on from where it was cancelled. The time since the last
	// event does not count against the time budget.
	EventResume EventType = "resume"
	// EventChildResult answers a RunChild command (Call is its ID): Child
	// is the sub-agent's Result, whose usage is charged to this run.
	EventChildResult EventType = "child_result"
	// EventUserMessage is a message a person sent the running run (Text):
	// taken in any phase once the run has started, it waits in the inbox
	// and the next model turn's request carries it, after what answers the
	// turn before (inbox.go).
	EventUserMessage EventType = "user_message"
	// EventFork begins a run forked from another's log: the entries up to
	// a step's model call were copied, and this event carries the run on
	// from there as EventResume would (the call is issued again, and the
	// time since the last event does not count). Limits, when set, is the
	// fork's budget; Text, when set, is a user message the re-issued call
	// carries. It is taken only while a step's model call is in flight.
	EventFork EventType = "fork"
)

// Event is the machine's only input. Time arrives here, never from a clock.
type Event struct {
	Type EventType `json:"type"`
	At   time.Time `json:"at"`
	// Call is the ID of the command or tool call this event answers.
	Call  string          `json:"call,omitempty"`
	Reply *model.Response `json:"reply,omitempty"`
	Tool  *ToolOutcome    `json:"tool,omitempty"`
	// Verdict answers a Verify command (EventVerdict).
	Verdict *verify.Verdict `json:"verdict,omitempty"`
	// Error says what failed (EventModelError, EventCheckError).
	Error *Failure `json:"error,omitempty"`
	// Text is a person's answer, a cancellation reason, or a message a
	// person sent the run (EventUserMessage, EventFork).
	Text string `json:"text,omitempty"`
	// Approved answers an AskHuman command that carries an Approval: true
	// runs the call, false refuses it (Text may say why). When nil, Text is
	// read: "approve" or "yes" approves, anything else refuses.
	Approved *bool `json:"approved,omitempty"`
	// Child is a sub-agent's Result (EventChildResult).
	Child *Result `json:"child,omitempty"`
	// Limits is a fork's budget (EventFork); nil keeps the run's.
	Limits *budget.Limits `json:"limits,omitempty"`
	// Guardrail is the guardrail that tripped (EventGuardrail, guardrail.go).
	Guardrail *GuardrailTrip `json:"guardrail,omitempty"`
}

// ToolOutcome is what one tool call produced, already trimmed by the shell.
type ToolOutcome struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Outcome classifies the result (ok, tool_error, invalid_args, timeout…).
	Outcome string `json:"outcome,omitempty"`
}

// Failure describes an infrastructure failure reported by the shell.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Billed is what the failed model call's attempts were billed
	// (model.Hooks.OnBilled); the machine charges it like a reply's usage.
	Billed *model.Usage `json:"billed,omitempty"`
}

// Failure kinds the machine distinguishes.
const (
	FailDeadline = "deadline" // the command's deadline (from the time budget) passed
)

// CommandType names a duty the shell must carry out.
type CommandType string

const (
	// CallModel: send Request to the model; answer with EventModelReply or
	// EventModelError carrying the command's ID.
	CallModel CommandType = "call_model"
	// RunTools: run Calls (in parallel is fine); answer with one
	// EventToolResult per call, in any order.
	RunTools CommandType = "run_tools"
	// Verify: run the named Checks on Candidate; answer with one EventVerdict
	// per check (or EventCheckError).
	Verify CommandType = "verify"
	// AskHuman: put Question to a person; answer with EventHumanReply or
	// EventHumanUnavailable.
	AskHuman CommandType = "ask_human"
	// Finish: the run is over; Result is final. Cancel anything outstanding.
	Finish CommandType = "finish"
	// RunChild: run the sub-agent Child (in parallel with the turn's other
	// commands); answer with one EventChildResult carrying its Result, a
	// failed one if it could not run. Its run ID is this run's ID, "/" and
	// the command's ID. Issued again after a resume: carry on the child's
	// run if it exists rather than starting another.
	RunChild CommandType = "run_child"
)

// Command is an output of the machine. Deadline, when set, is the latest
// time the work may run, derived from the time budget: the shell must cut
// the work off then (and report FailDeadline for a model call).
type Command struct {
	Type     CommandType `json:"type"`
	ID       string      `json:"id"`
	Deadline time.Time   `json:"deadline,omitzero"`
	// CallModel. Request.Messages is shared with the machine: read-only.
	Request *model.Request `json:"request,omitempty"`
	// Overridden names the guardrails a person let the run go on past
	// (guardrail.go): the shell does not apply them any more.
	Overridden []string `json:"overridden,omitempty"`
	// InputEstimate is the core's estimate of Request's input tokens,
	// made before sending (see model.EstimateTokens); compare it with the
	// reply's usage.
	InputEstimate int64 `json:"input_estimate,omitempty"`
	// RunTools.
	Calls []ToolCall `json:"calls,omitempty"`
	// Verify.
	Candidate *verify.Candidate `json:"candidate,omitempty"`
	Checks    []string          `json:"checks,omitempty"`
	// AskHuman. Approval is set when the question is whether to run that
	// tool call (a permission rule said ask).
	Question string    `json:"question,omitempty"`
	Approval *ToolCall `json:"approval,omitempty"`
	// Finish.
	Result *Result `json:"result,omitempty"`
	// RunChild.
	Child *Child `json:"child,omitempty"`
}

// ToolCall is one call for the shell to run.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// NoteType names something the machine decided, recorded for people and for
// replay checks. Notes are derived: replaying the events reproduces them.
type NoteType string

const (
	// NoteObservation: protocol feedback the machine sent to the model.
	NoteObservation NoteType = "observation"
	// NoteIntervention: the progress monitor fired; Text is what was injected.
	NoteIntervention NoteType = "intervention"
	// NoteAttempt: a candidate was submitted.
	NoteAttempt NoteType = "attempt"
	// NoteRejected: an attempt failed a check; Text is the feedback sent.
	NoteRejected NoteType = "rejected"
	// NoteClosing: the ordinary budget is spent; the reserved turn begins.
	NoteClosing NoteType = "closing"
	// NoteContext: the history was compacted, or trimmed instead (Problem
	// says which: compacted, compact_failed, compact_skipped);
	// TokensBefore and TokensAfter are the estimated input tokens of the
	// next step request before and after.
	NoteContext NoteType = "context"
	// NotePlan: plan mode accepted a plan, finished a step or saw a step
	// fail its check (Problem "step_failed").
	NotePlan NoteType = "plan"
	// NoteSubagent: a sub-agent was started (Text gives the budget carved
	// for it) or ended (Text gives the usage charged to this run).
	NoteSubagent NoteType = "subagent"
	// NoteEscalation: with Policy.Escalate, a run about to end exhausted
	// or on a check that could not run asked a person (Problem "asked",
	// Text the question), who raised limits or said retry ("raised", Text
	// what changed) or gave an answer not understood ("not_understood").
	NoteEscalation NoteType = "escalation"
)

// Note records a decision of the machine.
type Note struct {
	Type NoteType `json:"type"`
	Step int      `json:"step"`
	Text string   `json:"text"`
	// Problem classifies an observation (e.g. "empty_reply", "unknown_tool").
	Problem string `json:"problem,omitempty"`
	// Pattern and Rung describe an intervention.
	Pattern progress.Pattern      `json:"pattern,omitempty"`
	Rung    progress.Intervention `json:"rung,omitempty"`
	Attempt int                   `json:"attempt,omitempty"`
	// TokensBefore and TokensAfter size a context note's change.
	TokensBefore int64 `json:"tokens_before,omitempty"`
	TokensAfter  int64 `json:"tokens_after,omitempty"`
}

// Ready is what the shell must do after a Step, in order: record Notes, then
// carry out Commands, then call Advance.
type Ready struct {
	Notes    []Note
	Commands []Command
}

// Empty reports whether there is nothing to do.
func (r Ready) Empty() bool { return len(r.Notes) == 0 && len(r.Commands) == 0 }
