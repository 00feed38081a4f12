package loop

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

// The state's own bookkeeping: usage, call IDs, the next user message,
// the commands of the calls in flight.

// deadline is when the time budget, limit, less keep runs out: the run's
// start plus the limit and the time paused, less keep.
func (st *state) deadline(limit, keep time.Duration) time.Time {
	if limit < 0 {
		return time.Time{}
	}
	return st.Start.Add(st.Paused + limit - keep)
}

// charge adds one reply's usage, and to its model's share when a
// fallback chain says which of its models answered (Response.Via).
func (st *state) charge(r *model.Response) {
	u := r.Usage
	if r.Via != "" {
		st.ByModel = addModelUsage(st.ByModel, r.Via, u)
	}
	// Cached input is still input the model read: the token budget bounds
	// what a run makes the model process (the cost budget prices the
	// cache's discount).
	st.Usage.InputTokens += u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	st.Usage.OutputTokens += u.OutputTokens
	st.Usage.Cost += u.Cost
	st.MaxCallCost = max(st.MaxCallCost, u.Cost)
	if !u.CostKnown {
		st.Usage.CostUnknown = true
	}
}

// addModelUsage adds one call's usage u to name's entry of by.
func addModelUsage(by []ModelUsage, name string, u model.Usage) []ModelUsage {
	return addModelShare(by, ModelUsage{Model: name, ModelCalls: 1, InputTokens: u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
		OutputTokens: u.OutputTokens, Cost: u.Cost, CostUnknown: !u.CostKnown})
}

// addModelShare adds share to its model's entry of by, adding the entry
// at the end the first time the model answers.
func addModelShare(by []ModelUsage, share ModelUsage) []ModelUsage {
	i := 0
	for i < len(by) && by[i].Model != share.Model {
		i++
	}
	if i == len(by) {
		by = append(by, ModelUsage{Model: share.Model})
	}
	e := &by[i]
	e.ModelCalls += share.ModelCalls
	e.InputTokens += share.InputTokens
	e.OutputTokens += share.OutputTokens
	e.Cost += share.Cost
	e.CostUnknown = e.CostUnknown || share.CostUnknown
	return by
}

// nextCallID counts a model call and returns its ID.
func (st *state) nextCallID() string {
	st.CallSeq++
	st.Usage.ModelCalls++
	return "m" + strconv.Itoa(st.CallSeq)
}

// flushOutbox sends what the next user message says to the history:
// the outbox, then the messages a person sent (inbox.go).
func (st *state) flushOutbox() {
	if msgs := st.Inbox.take(); len(msgs) > 0 {
		st.Outbox = append(st.Outbox, msgs...)
	}
	if len(st.Outbox) > 0 {
		st.History.append(model.Message{Role: model.User, Content: st.Outbox})
		st.Outbox = nil
	}
}

// addAttempt records a candidate submitted at the current step.
func (st *state) addAttempt(answer string, conf float64, sample bool) int {
	n := len(st.Attempts) + 1
	st.Attempts = append(st.Attempts, Attempt{N: n, Step: st.Step, Answer: answer, Confidence: conf, Sample: sample})
	return n
}

// answerSearch ends the search, telling the model text: as the result of
// its finish call, or as a message in generate mode.
func (st *state) answerSearch(text string) {
	if id := st.Search.FinishID; id != "" {
		st.Outbox = append(st.Outbox, model.Block{Type: model.ToolResult, ID: id, Text: text, IsError: true})
	} else {
		st.Outbox = append(st.Outbox, model.TextBlock(text))
	}
	st.Search = nil
}

// toolCommands are the commands of the turn's calls in flight: one
// RunTools for the dispatched calls, then a RunChild per sub-agent.
func (st *state) toolCommands(deadline time.Time) []Command {
	var calls []ToolCall
	var children []Command
	for _, c := range st.Calls {
		switch {
		case c.Result != nil:
		case c.Dispatch:
			calls = append(calls, ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
		case c.Spawn != nil:
			children = append(children, c.Spawn.command(deadline))
		}
	}
	if len(calls) == 0 {
		return children
	}
	return append([]Command{{Type: RunTools, ID: "t" + strconv.Itoa(st.Step), Deadline: deadline, Calls: calls}}, children...)
}

// answerCoreTools answers the calls the core handles itself
// (update_scratchpad, submit_plan, step_done), before the rest are
// dispatched to the shell; in plan mode, before a plan is accepted, it
// refuses every other tool. It returns the notes they lead to.
func (st *state) answerCoreTools(spec *Spec) []Note {
	pol := &spec.Policy
	planning := pol.Plan && st.Plan.planning()
	var notes []Note
	for i := range st.Calls {
		c := &st.Calls[i]
		switch {
		case c.Result != nil:
		case planning && c.Name != SubmitPlanTool:
			notes = append(notes, refuse(c, "plan_first", fmt.Sprintf("tool %q not run: plan first. Call submit_plan with your plan; tools are offered once it is accepted.", c.Name), st.Step))
		case c.Name == ScratchpadTool && pol.Scratchpad:
			var problem string
			if c.Result, problem = st.Scratchpad.update(c.Args); problem != "" {
				notes = append(notes, Note{Type: NoteObservation, Step: st.Step, Problem: "bad_scratchpad", Text: problem})
			}
		case (c.Name == SubmitPlanTool || c.Name == StepDoneTool) && pol.Plan:
			var more []Note
			c.Result, more = st.Plan.tool(c.Name, c.Args, gateChecks(spec.Checks), st.Step)
			notes = append(notes, more...)
		}
	}
	return notes
}

// refuse answers call c, which is not run, with text: the observation
// noted at step as problem.
func refuse(c *pendingCall, problem, text string, step int) Note {
	c.Result = &ToolOutcome{Output: text, IsError: true, Outcome: problem}
	return Note{Type: NoteObservation, Step: step, Problem: problem, Text: text}
}

// trim cuts old tool outputs in messages [1, to) of the history, and
// says why in the note it returns.
func (st *state) trim(r *requests, to int, problem, why string) Note {
	before := r.estimate(st, false)
	n := elide(&st.History, to)
	after := r.estimate(st, false)
	return Note{Type: NoteContext, Step: st.Step, Problem: problem, TokensBefore: before, TokensAfter: after,
		Text: fmt.Sprintf("%s; fell back to trimming: old tool outputs in messages 1–%d cut to %d bytes (%d cut now): ~%d → ~%d input tokens", why, to-1, elideKeep, n, before, after)}
}

// exhausted is the end of a run whose closing turn, begun because d was
// spent, did not finish: why says what it did instead.
func exhausted(d budget.Dimension, why string) (Status, string) {
	return Exhausted(d), fmt.Sprintf("%s budget spent; %s", d, why)
}
