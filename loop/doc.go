// Package loop is ratchet's deterministic loop core: a state machine that
// takes Events (Machine.Step), returns Notes and Commands (Machine.Ready)
// and holds no I/O, clock, randomness or goroutines. The shell (package
// runner, or the looptest scripts) carries out the commands and feeds the
// results back; replaying a run's events reproduces its notes and commands.
//
// # Phases and sub-protocols
//
// The machine is always in one phase, an explicit value, and Step hands
// each event to that phase's handler (phase.go), as raft hands a message to
// the step function of its role:
//
//	new         EventStart: the goal is the first message; the first turn begins
//	turn        the reply to a step: tool calls, a candidate, or a protocol problem
//	closing     the reply to the reserved closing turn, which may only finish
//	compact     the summary of the history's middle (see Compaction)
//	sample      alternatives to an unsure candidate
//	tools       tool results and sub-agents' Results
//	approval    a person's answer about a tool call a permission rule asks about
//	escalated   a person's answer for a run the ladder could not unstick, or
//	            for a held one: about to end exhausted, on a check that
//	            could not run, or on a guardrail's trip (see A person can
//	            always be asked)
//	plan_check  the verdict on a plan step's result
//	checks      verdicts on candidates, tier by tier
//	stopped     nothing: the run has its Result (a resume may carry on a cancelled one)
//
// Phase reports the coarser Phase the shell sees (model, tools, verify,
// human…). Cancel, resume and a person's message (EventUserMessage) are
// taken in any phase; a fork's start (EventFork) only while a step's model
// call is in flight; a guardrail's trip in any phase waiting for a model.
// The sub-protocols are types the state holds, each with its share of it
// and its own tests: search (a candidate's alternatives and checks),
// compactor, plan, children (sub-agents), ladder (the interventions),
// approval and the inbox (messages for the next turn). Each
// says what notes and commands it wants, or what it decided; only the
// machine emits them. TestShape keeps the machine itself to 40 methods.
//
// # A person can always be asked (Policy.Escalate)
//
// With Escalate, a run that would end exhausted:<dim> (wherever that end
// is reached: no room for the closing turn, or the closing turn did not
// finish done) or failed because a check could not run does not end: it
// is held (hold.go) and asks a person one specific question, "Raise steps
// from 8 to 16, or stop?", or, for a check, to fix it and retry. The
// answer is text read by a pure parser: "raise steps to 16" (several
// limits at once: "raise steps to 16, cost to 0.50"), "retry" (after a
// check), "stop". A raise sets the spec's limits and the run carries on
// with the next turn; the model is told. An answer not understood is
// noted (NoteEscalation, not_understood) and the question is put again,
// saying why. Since the raise is read from the logged human_reply event,
// replaying the log raises the same limits. Nobody to answer ends the
// run escalated with the question; Result.Asked and Result.Answered
// count the questions and the answers acted on.
//
// # Guardrails and typed answers
//
// Guardrails are the shell's; the core sees a trip as EventGuardrail
// answering the model call it stopped, and ends the run with the status
// guardrail:<name> — or, when the trip says Escalate, holds it as above:
// "continue" lets the run go on past that guardrail (Command.Overridden),
// "stop" ends it guardrail:<name> (guardrail.go). With Spec.OutputSchema
// the answer is typed: finish's answer argument is the schema, the
// candidate is the value's compact JSON, and the shell's cheap check
// OutputCheck validates it (output.go).
//
// # Context management
//
// Token accounting. Before every model call the core estimates the
// request's input tokens without a tokenizer ([model.EstimateTokens]: bytes/4
// plus a fixed overhead per message, block and tool) and records it on the
// command as Command.InputEstimate, next to which the reply's usage is
// logged. Against real tokenizer counts (cl100k_base and o200k_base) the
// estimate is 0.73–1.19 of the true count per kind of text and 0.89 over a
// mix: high on prose, low on JSON, logs and YAML (TestEstimateCalibration).
// The same estimate projects the budget for the next and the closing turn.
//
// Compaction (Policy.CompactAt). When the next step's request would be
// estimated above CompactAt tokens, the core first issues a CallModel with
// purpose compact: one user message holding the goal, the previous summary,
// the scratchpad and a plain-text transcript of the history's middle, with
// the prompt in prompts/compact.txt (task, facts found, files changed,
// what failed, open questions). The middle is everything between the goal
// (the first message) and the latest KeepTurns turns; a turn begins with an
// assistant message, and its tool results follow in the next message, so a
// tool_use is never separated from its tool_result. The summary arrives as
// the model_reply event and becomes a second block of the first message,
// after the goal, which stays verbatim and first; a NoteContext says which
// messages were compacted and the estimate before and after. The call is
// charged to the budget like any model call (model calls, tokens, cost, but
// not steps) and is made only if the budget has room for it, the next
// step and the closing turn. When it cannot be made, fails or returns no
// summary, the run goes on: old tool outputs in the middle are cut to their
// first 512 bytes instead (a NoteContext with problem compact_skipped or
// compact_failed), and no compaction is tried for three steps.
//
// Scratchpad (Policy.Scratchpad). The update_scratchpad tool (sections plan,
// findings, open_questions) is answered by the core itself and never sent
// to the shell. The latest scratchpad is pinned to the end of every step
// request as a text block of the last user message; it is not part of the
// history, so it never piles up, and it survives compaction.
//
// # Plan-then-execute (Policy.Plan)
//
//  1. The first turn offers only submit_plan. Its arguments are
//     {"steps": [{"do": string, "check": string}, …]}, 1 to 20 steps, where
//     check is the name of one of the task's cheap or expensive checks, or
//     "none". The core validates them; any other tool is refused with an
//     observation (plan_first) until a plan is accepted.
//  2. The current step ("[Plan: step i of n] …") is pinned to every request,
//     like the scratchpad. The model works with the ordinary tools and
//     calls step_done {"result": string} when the step is done.
//  3. A step whose check is "none" is done at once. Otherwise, after the
//     turn's tools have run, the core issues a Verify command with ID
//     "p<N>" that runs that one check on the step's result (phase
//     plan_check). A pass moves on to the next step.
//  4. A failed check is fed back and the next turn is a replan: only
//     submit_plan is offered, and its steps replace those not yet done.
//     submit_plan may also be called while executing, to replan at will.
//  5. finish is accepted at any time and is checked like any candidate: the
//     plan structures the work; the task's checks still gate done.
//
// Plan progress is recorded as NotePlan notes; the plan, scratchpad and
// any compaction in flight are part of the Snapshot, and Pending reissues
// a compaction call or a step check after Restore.
//
// # Sub-agents (Policy.Subagents)
//
//  1. The spawn_subagent tool is offered beside the ordinary tools. Its
//     arguments are {"goal": string, "tools": [string], "checks": [string],
//     "budget": {"steps", "model_calls", "tool_calls", "total_tokens":
//     integer, "cost_usd", "time_seconds": number}}; only goal is required.
//     tools and checks must come from Subagents.Tools and Subagents.Checks
//     (default: all of them) and the checks must include a cheap or
//     expensive one. The core validates the call and answers a bad one
//     with an observation (bad_spawn); it is never sent to the shell.
//  2. The core carves the child's limits once the turn's ordinary calls are
//     counted, in call order. For each dimension the parent limits, the
//     child gets the least of: what it asked for, Subagents.Budget (default
//     and cap), and an equal share of what is left: the parent's limit less
//     its usage, less what the children in flight were given, less what it
//     keeps for its own next turn and closing turn (the projection nextTurn
//     makes), divided among the turn's children not yet carved. Time is not
//     shared, since children run in parallel: a child gets at most the
//     parent's time left before its closing reserve. A child that would get
//     less than a working minimum (2 steps and model calls, 1 tool call if
//     it has tools, 2000 tokens, 1 s, and a cost share of 1 micro-USD and
//     of two calls at the parent's costliest so far, since a child's first
//     call is projected to cost nothing) is refused with an observation
//     (spawn_budget), as is one past Subagents.MaxChildren (spawn_limit; at
//     most MaxChildrenCeiling). So the carves of the children in flight
//     never add up to more than the parent has left.
//  3. Each child started is a RunChild command with ID "c<N>" (N counts the
//     run's children) carrying the Child: goal, tool and check names, the
//     parent's permissions, the carved Budget and a Policy (the parent's,
//     without sub-agents, plan mode or escalation, output caps fitted to
//     the budget). RunChild commands are issued together with the turn's
//     RunTools command; the shell runs them all in parallel. A NoteSubagent
//     records the carve.
//  4. The shell answers each with EventChildResult (Call: the command ID),
//     carrying the child's Result. The core adds the child's usage, time
//     aside, to the run's: the carve is released, and the run pays what the
//     child spent. (Steps, model calls and tool calls of a child stay within
//     its carve by construction; tokens and cost are projected before each
//     call and can overshoot, in the child as in any run: the note says so.)
//     The spawn call's tool_result is a compact rendering: status, reason,
//     the accepted or best answer (head and tail of 8000 bytes), usage. A
//     child that did not end done is an observation for the parent
//     (is_error), never the parent's failure.
//  5. The children in flight are part of the Snapshot; Pending and a
//     resume issue their RunChild commands again, and the shell must carry
//     on a child's run that exists rather than start another.
package loop
