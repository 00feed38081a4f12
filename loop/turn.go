package loop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
)

// A turn: the machine asks the model for its next step, takes the reply's
// tool calls (or candidate), answers the calls the core handles itself,
// screens the rest and sends them to the shell, and once every call has a
// result it watches for lack of progress and asks again.

// pendingCall is one tool_use of the reply being carried out.
type pendingCall struct {
	ID       string
	Name     string
	Args     json.RawMessage // may be invalid JSON: see MarshalJSON
	Result   *ToolOutcome    // set when known
	Dispatch bool
	Approved bool // a person approved it (a permission rule said ask)
	// Spawn is the child a spawn_subagent call started.
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

func callIndex(calls []pendingCall, id string) int {
	return slices.IndexFunc(calls, func(c pendingCall) bool { return c.ID == id })
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

// nextTurn begins the next step: a plan step's check first if one is due;
// the closing turn if the budget has no room for another; a compaction if
// the history has grown past its threshold; else the step's model call.
func (m *Machine) nextTurn() {
	if p := &m.st.Plan; p.Due {
		p.startCheck()
		m.st.Phase = phasePlanCheck
		m.ready.emit(p.command(m.st.deadline(m.spec.Budget.Time, m.spec.Policy.Reserve.Time)))
		return
	}
	need := m.req.turnNeed(&m.st)
	if d, over := budget.Exceeds(m.spec.Budget, m.st.Usage, need); over {
		m.closeTurn(d)
		return
	}
	m.st.flushOutbox()
	if m.maybeCompact(need) {
		return
	}
	m.callModel(model.PurposeStep, 1, m.spec.Policy.MaxOutputTokens, m.spec.Policy.Reserve.Time)
}

// closeTurn begins the reserved last turn, because d is spent: the model
// is told, and may only finish. If even that turn does not fit, the run
// ends without it.
func (m *Machine) closeTurn(d budget.Dimension) {
	m.st.Plan.Due = false // no more plan checks: the closing turn may only finish
	m.st.Closing = d
	used := fmt.Sprintf("%s: %s of %s used", d, budget.Format(d, m.st.Usage.Get(d)), budget.Format(d, m.spec.Budget.Limit(d)))
	tmpl := closingPrompt
	if m.spec.Mode == ModeGenerate {
		tmpl = closingGeneratePrompt
	}
	text := fmt.Sprintf(strings.TrimSpace(tmpl), used)
	m.ready.note(Note{Type: NoteClosing, Step: m.st.Step, Text: text, Problem: string(d)})
	m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
	m.st.flushOutbox()

	est := m.req.estimate(&m.st, true)
	// The closing call is projected to cost as much as the costliest call
	// so far: if even that does not fit, the run ends without it.
	spent, over := budget.Exceeds(m.spec.Budget, m.st.Usage, budget.Usage{Steps: 1, ModelCalls: 1, InputTokens: est, OutputTokens: 1, Cost: m.st.MaxCallCost})
	if !over && m.spec.Budget.Time > 0 && m.st.Usage.Time >= m.spec.Budget.Time {
		spent, over = budget.Time, true
	}
	if over {
		reason := fmt.Sprintf("%s budget spent and no room left for a closing turn (%s also spent)", d, spent)
		if left, ok := budget.Remaining(m.spec.Budget, m.st.Usage, d); ok && left > 0 && (d == budget.InputTokens || d == budget.TotalTokens) {
			// Not spent: the request itself is larger than what is left.
			reason = fmt.Sprintf("the next request (about %d input tokens) does not fit in the %s left of the %s budget (%s), not even as a closing turn", est, budget.Format(d, left), d, used)
		}
		m.end(Exhausted(d), reason)
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
	m.callModel(model.PurposeClosing, 1, int(max(maxOut, 1)), 0)
}

// callModel issues n model calls for purpose p, each reply capped at maxOut
// tokens and its deadline keeping keep of the time budget, and waits for
// them in the phase that takes their replies. A step or the closing turn
// is a step of the run; a compaction or a sample is not.
func (m *Machine) callModel(p model.Purpose, n, maxOut int, keep time.Duration) {
	ids := m.st.Awaiting[:0] // empty, or a reply's whose array is free again
	for range n {
		ids = append(ids, m.st.nextCallID())
	}
	m.st.Call = callParams{Purpose: p, MaxOut: maxOut, Keep: keep}
	m.st.Awaiting = ids
	switch p {
	case model.PurposeClosing:
		m.st.Phase = phaseClosing
	case model.PurposeCompact:
		m.st.Phase = phaseCompact
	case model.PurposeSample:
		m.st.Phase = phaseSample
	default:
		m.st.Phase = phaseTurn
	}
	if p == model.PurposeStep || p == model.PurposeClosing {
		m.st.Step++
		m.st.Usage.Steps++
	}
	for _, id := range ids {
		m.ready.emit(m.req.command(&m.st, id))
	}
}

// onReply takes a model's reply to a step, or to the closing turn, which
// may only finish. r is the event's and is only read: the machine keeps
// slices of it, never writes through it.
func (m *Machine) onReply(r *model.Response, closing bool) {
	m.st.Awaiting = m.st.Awaiting[:0] // the next call's ID goes in its array
	m.st.charge(r)
	shape := shapeOf(r)
	if r.StopReason != "refusal" {
		m.st.Refused = 0
	}
	switch {
	case r.StopReason == "refusal" && len(shape.uses) == 0:
		// A refusal (the provider's stop reason: OpenAI's refusal, a
		// safety stop) is no answer to check: the model is told once, and a
		// second in a row ends the run with the refusal's words.
		text := strings.TrimSpace(replyText(r.Content))
		m.st.History.append(model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock(cmp.Or(text, "[refusal]"))}})
		if m.st.Refused++; m.st.Refused > 1 {
			m.end(Failed, "the model refused: "+clip(cmp.Or(text, "no reason given"), 500))
			return
		}
		m.malformed("refusal", "Your reply was a refusal ("+clip(cmp.Or(text, "no reason given"), 300)+"). The task stands: if part of it is what you cannot do, say which part and do the rest.", closing)
		return
	case shape.size > m.spec.Policy.MaxReplyBytes:
		m.st.History.append(model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock(fmt.Sprintf("[reply of %d bytes discarded]", shape.size))}})
		m.malformed("oversized_reply", fmt.Sprintf("Your reply was %d bytes, over the limit of %d, and was discarded unread. Keep replies shorter: act in smaller steps.", shape.size, m.spec.Policy.MaxReplyBytes), closing)
		return
	case r.StopReason == "max_tokens":
		content, text := cutOff(r.Content, m.spec.Mode, m.st.Call.MaxOut)
		m.st.History.append(model.Message{Role: model.Assistant, Content: content})
		m.malformed("cut_off", text, closing)
		return
	case m.spec.Mode == ModeGenerate:
		m.st.History.append(model.Message{Role: model.Assistant, Content: textOnly(r.Content)})
		answer, conf, stated := ExtractCandidate(replyText(r.Content))
		if answer == "" {
			m.malformed("no_answer", "Your reply held no answer. Reply with the artifact in a fenced code block, then a final line CONFIDENCE: x.", closing)
			return
		}
		m.submit(answer, conf, "", statedNote(stated), closing)
		return
	case len(shape.uses) == 0 && !shape.text:
		m.st.History.append(model.Message{Role: model.Assistant, Content: []model.Block{model.TextBlock("[empty reply]")}})
		m.malformed("empty_reply", "Your reply was empty. Call a tool, or call `finish` with your answer and confidence.", closing)
		return
	case len(shape.uses) == 0:
		m.st.History.append(model.Message{Role: model.Assistant, Content: textOnly(r.Content)})
		m.malformed("no_action", "Your reply called no tool. To act, call a tool; to answer, call `finish` with your answer and confidence. A plain-text answer is not submitted.", closing)
		return
	}
	content, calls := takeCalls(m.st.Calls[:0], r, shape.uses, m.st.Step)
	m.st.History.append(model.Message{Role: model.Assistant, Content: content})
	m.st.Calls = calls
	for _, c := range calls {
		if c.From != "" {
			m.ready.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "duplicate_call_id", Text: renamedText(c.From, c.ID)})
		}
	}
	finishes := 0
	for _, c := range calls {
		if c.Name == FinishTool {
			finishes++
		}
	}
	switch {
	case finishes == len(calls):
		m.onFinish(closing)
		return
	case finishes > 0:
		const text = "finish ignored: this reply also called other tools. A reply may call tools or finish, not both. Read the tool results, then call finish again in a later turn."
		for i := range m.st.Calls {
			if m.st.Calls[i].Name == FinishTool {
				m.st.Calls[i].Result = &ToolOutcome{Output: text, IsError: true, Outcome: "protocol"}
			}
		}
		m.ready.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "tools_and_finish", Text: text})
	}
	if !closing {
		m.ready.note(m.st.answerCoreTools(&m.spec)...)
	}
	m.dispatchTools(closing)
}

// cutOff reads a reply that reached its output limit of maxOut tokens: it
// may end inside its answer or a tool call's arguments, so nothing in it is
// run or submitted. It returns the reply's text for the history and what
// the model is told, with how to fit the next reply in the limit.
func cutOff(blocks []model.Block, mode Mode, maxOut int) (content []model.Block, text string) {
	if content = textOnly(blocks); len(content) == 0 {
		content = []model.Block{model.TextBlock("[reply cut off]")}
	}
	if mode == ModeGenerate {
		return content, fmt.Sprintf("Your reply was cut off at the output limit of %d tokens, so it was not submitted. Reply again with the whole artifact in fewer tokens: no explanation before it, then the final line CONFIDENCE: x.", maxOut)
	}
	return content, fmt.Sprintf("Your reply was cut off at the output limit of %d tokens, so none of its tool calls ran and no finish was taken. Act in smaller pieces: one tool call at a time, and a long file written in parts.", maxOut)
}

// replyShape is what onReply reads of a reply first: its size, the
// indices of its tool calls, and whether it says anything.
type replyShape struct {
	size int
	uses []int
	text bool
}

func shapeOf(r *model.Response) replyShape {
	var s replyShape
	for i, b := range r.Content {
		s.size += len(b.Text) + len(b.Input)
		switch b.Type {
		case model.ToolUse:
			s.uses = append(s.uses, i)
		case model.Text:
			s.text = s.text || strings.TrimSpace(b.Text) != ""
		}
	}
	return s
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

// takeCalls reads the tool calls of reply r, at indices uses of its
// content, at step: the content for the history and the turn's calls,
// appended to calls (the last turn's, answered, whose array is reused). The
// history's copy gives every tool_use a unique, non-empty ID so each gets
// its result, and an object input, which providers require when the
// history is sent back; the raw arguments stay in the calls, quoted in the
// error the model sees.
func takeCalls(calls []pendingCall, r *model.Response, uses []int, step int) ([]model.Block, []pendingCall) {
	content, copied := r.Content, false
	edit := func(i int) *model.Block {
		if !copied {
			content, copied = slices.Clone(r.Content), true
		}
		return &content[i]
	}
	var taken []string // IDs in use, the model's own and the generated; built when first needed
	for n, i := range uses {
		var from string
		if id := content[i].ID; id == "" || slices.ContainsFunc(uses[:n], func(j int) bool { return content[j].ID == id }) {
			if taken == nil {
				for _, j := range uses {
					taken = append(taken, r.Content[j].ID)
				}
			}
			edit(i).ID = freshCallID(&taken, step, n+1)
			from = id
		}
		if !isObject(content[i].Input) {
			edit(i).Input = json.RawMessage(`{}`)
		}
		calls = append(calls, pendingCall{ID: content[i].ID, Name: content[i].Name, Args: r.Content[i].Input, From: from})
	}
	return content, calls
}

// renamed tells the model, after the turn's tool results (providers want
// those first), which of its calls shared an ID and were answered under a
// new one.
func renamed(calls []pendingCall) []model.Block {
	var blocks []model.Block
	for _, c := range calls {
		if c.From != "" {
			blocks = append(blocks, model.TextBlock(renamedText(c.From, c.ID)))
		}
	}
	return blocks
}

func renamedText(from, to string) string {
	return fmt.Sprintf("Your reply gave the id %q to more than one tool call; each was run and answered, the repeat under the id %q. Give each call its own id.", from, to)
}

// freshCallID returns an ID for the step's nth call that is not among
// taken, and adds it there.
func freshCallID(taken *[]string, step, n int) string {
	fresh := fmt.Sprintf("s%d_%d", step, n)
	for k := 2; slices.Contains(*taken, fresh); k++ {
		fresh = fmt.Sprintf("s%d_%d_%d", step, n, k)
	}
	*taken = append(*taken, fresh)
	return fresh
}

// onFinish takes a reply whose only calls are finish: it submits the
// candidate, or answers the calls with what is wrong.
func (m *Machine) onFinish(closing bool) {
	answer, conf, problem, text := finishOnly(m.st.Calls, len(m.spec.OutputSchema) > 0)
	if problem == "" {
		id := m.st.Calls[0].ID
		m.st.Calls = m.st.Calls[:0]
		m.submit(answer, conf, id, "", closing)
		return
	}
	for _, c := range m.st.Calls {
		m.st.Outbox = append(m.st.Outbox, model.Block{Type: model.ToolResult, ID: c.ID, Text: text, IsError: true})
	}
	m.st.Outbox = append(m.st.Outbox, renamed(m.st.Calls)...)
	m.st.Calls = m.st.Calls[:0]
	m.ready.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: problem, Text: text})
	if closing {
		m.end(exhausted(m.st.Closing, "the closing reply's finish was malformed ("+problem+")"))
		return
	}
	if m.observe(progress.Observation{Kind: progress.Malformed, Problem: problem}) {
		m.nextTurn()
	}
}

// malformed answers a reply that broke the protocol with an observation.
func (m *Machine) malformed(problem, text string, closing bool) {
	m.ready.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: problem, Text: text})
	m.st.Outbox = append(m.st.Outbox, model.TextBlock(text))
	if closing {
		m.end(exhausted(m.st.Closing, "the closing reply did not finish ("+problem+")"))
		return
	}
	if m.observe(progress.Observation{Kind: progress.Malformed, Problem: problem}) {
		m.nextTurn()
	}
}

// dispatchTools screens the turn's calls not yet answered and sends them
// to the shell, with the turn's sub-agents; a call a permission rule says
// to ask about is put to a person first, one at a time.
func (m *Machine) dispatchTools(closing bool) {
	budgetLeft := int64(-1)
	if left, ok := budget.Remaining(m.spec.Budget, m.st.Usage, budget.ToolCalls); ok {
		budgetLeft = max(left, 0)
	}
	var spawns []int // spawn_subagent calls, started once the tools are counted
	ran := 0
	for i := range m.st.Calls {
		c := &m.st.Calls[i]
		if c.Result != nil {
			continue
		}
		rule, problem, text := m.req.screen(c, budgetLeft == 0, closing)
		switch {
		case problem != "":
			m.ready.note(refuse(c, problem, text, m.st.Step))
		case rule != nil && rule.Action == Ask:
			m.st.Approval = newApproval(c, rule)
			m.st.Phase = phaseApproval
			m.ready.emit(m.st.Approval.command(m.st.Step, *c))
			return
		case c.Name == SpawnTool && m.spec.Policy.Subagents != nil:
			spawns = append(spawns, i)
		default:
			if budgetLeft > 0 {
				budgetLeft--
			}
			c.Dispatch = true
			ran++
		}
	}
	m.st.Usage.ToolCalls += ran
	if len(spawns) > 0 {
		m.ready.note(m.st.Children.spawn(m.st.Calls, spawns, &m.spec, m.st.Usage, m.req.turnNeed(&m.st), m.st.MaxCallCost, m.st.Step)...)
	}
	cmds := m.st.toolCommands(m.st.deadline(m.spec.Budget.Time, m.spec.Policy.Reserve.Time))
	if len(cmds) == 0 {
		m.completeTools(closing)
		return
	}
	m.st.Phase = phaseTools
	if len(m.ready.Commands) == 0 {
		m.ready.Commands = cmds // fresh: the step takes them without a copy
	} else {
		m.ready.Commands = append(m.ready.Commands, cmds...)
	}
}

// completeTools answers every call of the turn, in call order, watches for
// lack of progress and moves on; the closing turn's calls end the run.
func (m *Machine) completeTools(closing bool) {
	observed := m.observed[:0]
	for _, c := range m.st.Calls {
		m.st.Outbox = append(m.st.Outbox, model.Block{Type: model.ToolResult, ID: c.ID, Text: c.Result.Output, IsError: c.Result.IsError})
		observed = append(observed, progress.Call{Tool: c.Name, Args: c.Args, Result: c.Result.Output})
	}
	m.observed = observed
	m.st.Outbox = append(m.st.Outbox, renamed(m.st.Calls)...)
	m.st.Calls = m.st.Calls[:0]
	if closing {
		m.end(exhausted(m.st.Closing, "the closing turn called tools instead of finishing"))
		return
	}
	if m.observe(progress.Observation{Kind: progress.Action, Calls: observed}) {
		m.nextTurn()
	}
}

// observe feeds the ladder and acts on the rung it reaches. It reports
// whether the loop should go on to the next turn.
func (m *Machine) observe(o progress.Observation) bool {
	r, fired := m.st.Ladder.observe(m.keyFn(o), o, m.spec.Policy.Progress)
	switch {
	case !fired:
		return true
	case r.Inject != "":
		m.ready.note(r.note(m.st.Step, r.Inject))
		m.st.Outbox = append(m.st.Outbox, model.TextBlock(r.Inject))
		return true
	case !m.spec.Policy.Escalate:
		m.ready.note(r.note(m.st.Step, "stopped: "+r.What))
		m.stop(Stalled(r.Pattern), fmt.Sprintf("stopped making progress after two interventions: %s", r.What))
		return false
	}
	m.st.Question = escalation(r.What, best(m.st.Attempts), m.spec.Goal)
	m.st.Asked++
	m.ready.note(r.note(m.st.Step, "escalated: "+m.st.Question))
	m.st.Phase = phaseEscalated
	m.ready.emit(escalationCommand(m.st.Step, m.st.Question))
	return false
}
