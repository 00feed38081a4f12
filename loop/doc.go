// Package loop is ratchet's deterministic loop core: a state machine that
// takes Events (Machine.Step), returns Notes and Commands (Machine.Ready)
// and holds no I/O, clock, randomness or goroutines. The shell (package
// runner, or the looptest scripts) carries out the commands and feeds the
// results back; replaying a run's events reproduces its notes and commands.
//
// # Context management
//
// Token accounting. Before every model call the core estimates the
// request's input tokens without a tokenizer ([EstimateTokens]: bytes/4
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
//     "p<N>" that runs that one check on the step's result. A pass moves on
//     to the next step.
//  4. A failed check is fed back and the next turn is a replan: only
//     submit_plan is offered, and its steps replace those not yet done.
//     submit_plan may also be called while executing, to replan at will.
//  5. finish is accepted at any time and is checked like any candidate: the
//     plan structures the work; the task's checks still gate done.
//
// Plan progress is recorded as NotePlan notes; the plan, scratchpad and
// any compaction in flight are part of the Snapshot, and Pending reissues
// a compaction call or a step check after Restore.
package loop
