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

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

// Context management keeps a long run's requests small: the core estimates
// every request's size before sending it, compacts the middle of the
// history into a summary past a threshold, and pins a scratchpad (and, in
// plan mode, the current plan step) to every request.

var (
	//go:embed prompts/compact.txt
	compactPrompt string
	//go:embed prompts/scratchpad.txt
	scratchpadPrompt string
)

// The token estimate is tokenizer-free: the bytes a request carries (the
// system prompt; each tool's name, description and schema; each block's
// text, arguments, tool name and call ID) plus a fixed overhead per tool,
// message and block for the provider's framing, divided by BytesPerToken
// and rounded up. Byte-pair tokenizers average about 4 bytes per token on
// English prose and 3 to 4 on code and JSON, so the estimate is close for
// prose and errs low on dense JSON; TestEstimateCalibration measures it
// against real tokenizer counts.
const (
	BytesPerToken   = 4
	MessageOverhead = 16 // bytes per message: role and turn markers
	BlockOverhead   = 8  // bytes per content block: its type and separators
	ToolOverhead    = 32 // bytes per tool definition: the JSON around it
)

// EstimateTokens estimates req's input tokens as described above. It is
// what a CallModel command's InputEstimate holds.
func EstimateTokens(req model.Request) int64 {
	n := int64(len(req.System)) + toolsWeight(req.Tools)
	for _, msg := range req.Messages {
		n += messageWeight(msg)
	}
	return tokensOf(n)
}

func tokensOf(weight int64) int64 { return (weight + BytesPerToken - 1) / BytesPerToken }

func blockWeight(b model.Block) int64 {
	return int64(len(b.Text)+len(b.Input)+len(b.Name)+len(b.ID)) + BlockOverhead
}

func messageWeight(msg model.Message) int64 {
	n := int64(MessageOverhead)
	for _, b := range msg.Content {
		n += blockWeight(b)
	}
	return n
}

func toolsWeight(tools []model.ToolSpec) int64 {
	var n int64
	for _, t := range tools {
		n += int64(len(t.Name)+len(t.Description)+len(t.InputSchema)) + ToolOverhead
	}
	return n
}

// --- compaction ---

// compaction is a compaction call in flight: messages [From, To) of the
// history are being summarised; Before is the estimated input tokens of
// the step request they were part of.
type compaction struct {
	From   int   `json:"from"`
	To     int   `json:"to"`
	Before int64 `json:"before"`
}

// summaryHeader introduces the summary, which follows the goal in the
// first message.
const summaryHeader = "Summary of your earlier work (older turns were summarised to save context; the goal above and the latest turns below are verbatim):\n"

// elisionMark ends an old tool output cut by the fallback trimming.
const elisionMark = " bytes of this old tool output elided to save context; call the tool again if you need them]"

// minMiddle: the middle must be at least 1/minMiddle of the history for a
// compaction to be worth its call.
const minMiddle = 4

// compactRetry is how many steps after a failed or skipped compaction the
// next may be tried.
const compactRetry = 3

// elideKeep is how much of an old tool output the fallback keeps.
const elideKeep = 512

// keepFrom returns the index of the first message of the latest KeepTurns
// turns, each beginning with an assistant message, or 0 if there are fewer
// turns. Cutting there never separates a tool_use from its tool_result,
// which follow it in the next user message.
func (m *Machine) keepFrom() int {
	k := m.spec.Policy.KeepTurns
	h := m.st.History
	for i := len(h) - 1; i >= 1; i-- {
		if h[i].Role == model.Assistant {
			if k--; k == 0 {
				return i
			}
		}
	}
	return 0
}

// maybeCompact starts a compaction call when the next step's request would
// be over the threshold, the history has a middle to summarise and the
// budget has room for the call beside the step and the closing turn. It
// reports whether it issued the call. When the budget has no room it falls
// back to trimming old tool outputs.
func (m *Machine) maybeCompact(need budget.Usage) bool {
	if m.spec.Policy.CompactAt <= 0 || m.st.Closing {
		return false
	}
	if m.st.CompactStep > 0 && (m.st.Step <= m.st.CompactStep || (m.st.CompactFailed && m.st.Step < m.st.CompactStep+compactRetry)) {
		return false // just tried: give the run some turns first
	}
	est := m.estimateInput()
	if est <= m.spec.Policy.CompactAt {
		return false
	}
	return m.compact(need, est)
}

// compact begins compacting the history, estimated at est input tokens,
// if that gains enough and fits the budget with need; it reports whether
// it did.
func (m *Machine) compact(need budget.Usage, est int64) bool {
	pol := &m.spec.Policy
	cut := m.keepFrom()
	if cut < 2 {
		return false // no middle: the goal and the kept turns are all there is
	}
	var middle int64
	for _, msg := range m.st.History[1:cut] {
		middle += messageWeight(msg)
	}
	if middle*minMiddle < m.st.HistoryBytes {
		return false // too little to gain: the kept turns are most of it
	}
	m.st.Compact = &compaction{From: 1, To: cut, Before: est}
	m.st.CompactStep = m.st.Step
	need.ModelCalls++
	need.InputTokens += EstimateTokens(model.Request{System: compactPrompt, Messages: m.compactMessages()})
	need.OutputTokens += int64(pol.SummaryTokens)
	need.Cost += m.st.MaxCallCost
	if d, over := budget.Exceeds(m.spec.Budget, m.st.Usage, need); over {
		m.st.Compact = nil
		m.st.CompactFailed = true
		m.elide(cut, "compact_skipped", fmt.Sprintf("compaction skipped: a summarising call would leave too little %s for the next turn and the closing turn", d))
		return false
	}
	m.st.CompactFailed = false
	m.st.CallSeq++
	m.st.Usage.ModelCalls++
	id := "m" + strconv.Itoa(m.st.CallSeq)
	m.st.Awaiting = []string{id}
	m.st.Phase = PhaseModel
	m.st.Call = callParams{Purpose: model.PurposeCompact, MaxOut: pol.SummaryTokens, Keep: pol.Reserve.Time}
	m.emit(m.modelCommand(id))
	return true
}

// compactMessages is the compaction request: one user message holding the
// goal, the earlier summary, the scratchpad and the transcript of the
// middle as plain text. A transcript rather than the messages themselves
// needs no tool definitions and cannot break tool_use/tool_result pairing.
func (m *Machine) compactMessages() []model.Message {
	j := m.st.Compact
	var b strings.Builder
	fmt.Fprintf(&b, "The agent's goal:\n<goal>\n%s\n</goal>\n\n", m.spec.Goal)
	if m.st.Summary != "" {
		fmt.Fprintf(&b, "A summary of the work before this transcript, to fold into yours:\n<summary>\n%s\n</summary>\n\n", m.st.Summary)
	}
	if pad := m.scratchpadText(); pad != "" {
		fmt.Fprintf(&b, "The agent's scratchpad, which it keeps anyway:\n<scratchpad>\n%s\n</scratchpad>\n\n", pad)
	}
	b.WriteString("The transcript to summarise:\n<transcript>\n")
	for _, msg := range m.st.History[j.From:j.To] {
		for _, bl := range msg.Content {
			switch bl.Type {
			case model.Text:
				fmt.Fprintf(&b, "[%s] %s\n", msg.Role, headTail(bl.Text, 2000))
			case model.ToolUse:
				fmt.Fprintf(&b, "[assistant calls %s, id %s] %s\n", bl.Name, bl.ID, headTail(string(bl.Input), 1000))
			case model.ToolResult:
				mark := ""
				if bl.IsError {
					mark = ", an error"
				}
				fmt.Fprintf(&b, "[result of %s%s] %s\n", bl.ID, mark, headTail(bl.Text, 2000))
			}
		}
	}
	b.WriteString("</transcript>\n\nWrite the summary now.")
	return []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock(b.String())}}}
}

// headTail keeps at most n bytes of s, its head and tail, marking the cut.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := clip(s, n*3/4)
	tail := s[len(s)-n/4:]
	for tail != "" && !utf8RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s [… %d bytes cut …] %s", strings.TrimSuffix(head, "…"), len(s)-len(head)-len(tail)+len("…"), tail)
}

// onCompacted takes the compaction reply: the summary replaces the middle
// of the history, after the goal; the latest turns stay as they are.
func (m *Machine) onCompacted(r model.Response) {
	m.st.Awaiting = nil
	m.charge(r.Usage)
	j := m.st.Compact
	m.st.Compact = nil
	summary := strings.TrimSpace(replyText(r.Content))
	if summary == "" {
		m.st.CompactFailed = true
		m.elide(j.To, "compact_failed", "the compaction reply held no summary")
		m.nextTurn()
		return
	}
	summary = clip(summary, 8*m.spec.Policy.SummaryTokens)
	h := m.st.History
	next := make([]model.Message, 0, 1+len(h)-j.To)
	next = append(next, model.Message{Role: model.User, Content: []model.Block{model.TextBlock(m.spec.Goal), model.TextBlock(summaryHeader + summary)}})
	next = append(next, h[j.To:]...)
	m.setHistory(next)
	m.st.Summary = summary
	after := m.estimateInput()
	m.note(Note{Type: NoteContext, Step: m.st.Step, Problem: "compacted", TokensBefore: j.Before, TokensAfter: after,
		Text: fmt.Sprintf("compacted messages %d–%d of %d into a summary of %d bytes: ~%d → ~%d input tokens", j.From, j.To-1, len(h), len(summary), j.Before, after)})
	m.nextTurn()
}

// onCompactError takes a failed compaction call: the run goes on, with old
// tool outputs trimmed instead. A deadline is handled like any call's.
func (m *Machine) onCompactError(f Failure) bool {
	j := m.st.Compact
	m.st.Compact = nil
	if f.Kind == FailDeadline {
		return false
	}
	m.st.Awaiting = nil
	m.st.CompactFailed = true
	m.elide(j.To, "compact_failed", "the compaction call failed: "+clip(f.Message, 200))
	m.nextTurn()
	return true
}

// elide is the fallback when no summary can be had: tool outputs in
// messages [1, to) are cut to their first elideKeep bytes.
func (m *Machine) elide(to int, problem, why string) {
	before := m.estimateInput()
	h := slices.Clone(m.st.History) // the shell may still hold the old one
	n := 0
	for i := 1; i < to; i++ {
		var content []model.Block
		for k, b := range h[i].Content {
			if b.Type != model.ToolResult || len(b.Text) <= elideKeep+len(elisionMark)+16 || strings.HasSuffix(b.Text, elisionMark) {
				continue
			}
			if content == nil {
				content = slices.Clone(h[i].Content)
			}
			kept := strings.TrimSuffix(clip(b.Text, elideKeep), "…")
			content[k].Text = kept + "\n[… " + strconv.Itoa(len(b.Text)-len(kept)) + elisionMark
			n++
		}
		if content != nil {
			h[i].Content = content
		}
	}
	m.setHistory(h)
	after := m.estimateInput()
	m.note(Note{Type: NoteContext, Step: m.st.Step, Problem: problem, TokensBefore: before, TokensAfter: after,
		Text: fmt.Sprintf("%s; fell back to trimming: old tool outputs in messages 1–%d cut to %d bytes (%d cut now): ~%d → ~%d input tokens", why, to-1, elideKeep, n, before, after)})
}

// setHistory replaces the history and sizes it again.
func (m *Machine) setHistory(h []model.Message) {
	m.st.History = h
	m.st.HistoryBytes = 0
	for _, msg := range h {
		m.st.HistoryBytes += messageWeight(msg)
	}
}

// --- the scratchpad and the pinned block ---

// ScratchpadTool is the name of the tool that updates the scratchpad; the
// core answers it itself.
const ScratchpadTool = "update_scratchpad"

// maxScratchpadSection bounds one section of the scratchpad.
const maxScratchpadSection = 4000

var scratchpadSpec = model.ToolSpec{
	Name:        ScratchpadTool,
	Description: "Replace sections of your scratchpad: your plan, the findings that matter, your open questions. Give only the sections to change; an empty string clears one. The scratchpad is shown to you every turn and survives when older turns are summarised.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"plan":{"type":"string"},"findings":{"type":"string"},"open_questions":{"type":"string"}},"additionalProperties":false,"minProperties":1}`),
}

// Scratchpad is the model's own notes, kept by the core.
type Scratchpad struct {
	Plan          string `json:"plan,omitempty"`
	Findings      string `json:"findings,omitempty"`
	OpenQuestions string `json:"open_questions,omitempty"`
}

// parseScratchpad validates update_scratchpad arguments and applies them
// to old; the error is for the model.
func parseScratchpad(raw json.RawMessage, old Scratchpad) (Scratchpad, error) {
	const form = `arguments must be a JSON object with one or more of "plan", "findings", "open_questions", each a string`
	if !isObject(raw) {
		return old, errors.New(form)
	}
	var f struct {
		Plan          *string `json:"plan"`
		Findings      *string `json:"findings"`
		OpenQuestions *string `json:"open_questions"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return old, fmt.Errorf("unexpected argument %s; %s", name, form)
		}
		return old, errors.New(form)
	}
	if f.Plan == nil && f.Findings == nil && f.OpenQuestions == nil {
		return old, errors.New("nothing to update; " + form)
	}
	for _, s := range []struct {
		name string
		v    *string
		dst  *string
	}{{"plan", f.Plan, &old.Plan}, {"findings", f.Findings, &old.Findings}, {"open_questions", f.OpenQuestions, &old.OpenQuestions}} {
		if s.v == nil {
			continue
		}
		if len(*s.v) > maxScratchpadSection {
			return Scratchpad{}, fmt.Errorf("%q is %d bytes, over the limit of %d: keep the scratchpad short", s.name, len(*s.v), maxScratchpadSection)
		}
		*s.dst = strings.TrimSpace(*s.v)
	}
	return old, nil
}

// updateScratchpad answers one update_scratchpad call.
func (m *Machine) updateScratchpad(args json.RawMessage) *ToolOutcome {
	old := Scratchpad{}
	if m.st.Scratchpad != nil {
		old = *m.st.Scratchpad
	}
	pad, err := parseScratchpad(args, old)
	if err != nil {
		text := "scratchpad not updated: " + err.Error()
		m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "bad_scratchpad", Text: text})
		return &ToolOutcome{Output: text, IsError: true, Outcome: "invalid_args"}
	}
	m.st.Scratchpad = &pad
	return &ToolOutcome{Output: "scratchpad updated; it is shown to you every turn.", Outcome: "ok"}
}

func (m *Machine) scratchpadText() string {
	p := m.st.Scratchpad
	if p == nil || *p == (Scratchpad{}) {
		return ""
	}
	var b strings.Builder
	for _, s := range [][2]string{{"Plan", p.Plan}, {"Findings", p.Findings}, {"Open questions", p.OpenQuestions}} {
		if s[1] != "" {
			fmt.Fprintf(&b, "%s:\n%s\n", s[0], s[1])
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// answerCoreTools answers the calls the core handles itself
// (update_scratchpad, submit_plan, step_done), before the rest are
// dispatched to the shell. In the closing turn they are left to dispatch,
// which refuses every tool.
func (m *Machine) answerCoreTools() {
	if m.st.Closing {
		return
	}
	planning := m.planning()
	for i := range m.st.Calls {
		c := &m.st.Calls[i]
		if c.Result != nil {
			continue
		}
		switch {
		case planning && c.Name != SubmitPlanTool:
			text := fmt.Sprintf("tool %q not run: plan first. Call submit_plan with your plan; tools are offered once it is accepted.", c.Name)
			m.note(Note{Type: NoteObservation, Step: m.st.Step, Problem: "plan_first", Text: text})
			c.Result = &ToolOutcome{Output: text, IsError: true, Outcome: "protocol"}
		case c.Name == ScratchpadTool && m.spec.Policy.Scratchpad:
			c.Result = m.updateScratchpad(c.Args)
		case (c.Name == SubmitPlanTool || c.Name == StepDoneTool) && m.spec.Policy.Plan:
			c.Result = m.planTool(c.Name, c.Args)
		}
	}
}

// pinned is the text added to the end of every step request: the
// scratchpad and the plan's current step. It is not part of the history,
// so it never piles up and always shows the latest value.
func (m *Machine) pinned() string {
	var parts []string
	if m.spec.Policy.Scratchpad {
		if pad := m.scratchpadText(); pad != "" {
			parts = append(parts, "[Your scratchpad]\n"+pad)
		} else {
			parts = append(parts, "[Your scratchpad is empty: update_scratchpad keeps notes that survive.]")
		}
	}
	if f := m.planFocus(); f != "" && !m.st.Closing {
		parts = append(parts, f) // the closing turn may only finish
	}
	return strings.Join(parts, "\n\n")
}

// stepMessages is the history with the pinned block added to its last
// user message (or as one of its own after an assistant message).
func (m *Machine) stepMessages(pin string) []model.Message {
	h := m.st.History
	msgs := h[:len(h):len(h)] // capped: the shell cannot see or clobber later appends
	if pin == "" {
		return msgs
	}
	if last := len(h) - 1; last >= 0 && h[last].Role == model.User {
		msgs = slices.Clone(msgs)
		msgs[last].Content = append(slices.Clip(h[last].Content), model.TextBlock(pin))
		return msgs
	}
	return append(msgs, model.Message{Role: model.User, Content: []model.Block{model.TextBlock(pin)}})
}

// pinnedWeight sizes the pinned block as stepMessages adds it.
func (m *Machine) pinnedWeight(pin string) int64 {
	if pin == "" {
		return 0
	}
	n := int64(len(pin) + BlockOverhead)
	if h := m.st.History; len(h) == 0 || h[len(h)-1].Role != model.User {
		n += MessageOverhead
	}
	return n
}

// stepTools are the tools a step turn offers.
func (m *Machine) stepTools() []model.ToolSpec {
	if m.planning() {
		return []model.ToolSpec{submitPlanSpec}
	}
	return m.tools
}

// estimateInput estimates the next step request's input tokens, as
// EstimateTokens would, without rescanning the history.
func (m *Machine) estimateInput() int64 {
	var tools []model.ToolSpec
	if m.spec.Mode != ModeGenerate {
		tools = m.stepTools()
	}
	return tokensOf(int64(len(m.system)) + toolsWeight(tools) + m.st.HistoryBytes + m.pinnedWeight(m.pinned()))
}
