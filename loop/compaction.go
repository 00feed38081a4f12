package loop

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

// Compaction keeps a long run's requests small: when the next step's
// request would be estimated above Policy.CompactAt tokens, the middle of
// the history is summarised by a model call (charged to the budget), or,
// when that cannot be had, old tool outputs in it are cut short.

//go:embed prompts/compact.txt
var compactPrompt string

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

// compactor is compaction's share of the state: the summary of what was
// compacted so far, the call in flight, and when the latest attempt was
// made and whether it failed.
type compactor struct {
	Summary string      `json:"summary,omitempty"`
	Job     *compaction `json:"job,omitempty"`
	Step    int         `json:"step,omitempty"`
	Failed  bool        `json:"failed,omitempty"`
}

// compaction is a compaction call in flight: messages [From, To) of the
// history are being summarised; Before is the estimated input tokens of
// the step request they were part of.
type compaction struct {
	From   int   `json:"from"`
	To     int   `json:"to"`
	Before int64 `json:"before"`
}

// due reports whether a step request estimated at est tokens should be
// compacted first at step, under threshold at (0: never).
func (c *compactor) due(at int64, step int, est int64) bool {
	if at <= 0 {
		return false
	}
	if c.Step > 0 && (step <= c.Step || (c.Failed && step < c.Step+compactRetry)) {
		return false // just tried: give the run some turns first
	}
	return est > at
}

// begin picks the middle of h to summarise, keeping the latest keepTurns
// turns, and records the attempt at step. It reports false when there is
// no middle worth a call.
func (c *compactor) begin(h *history, keepTurns, step int, est int64) bool {
	cut := h.keepFrom(keepTurns)
	if cut < 2 {
		return false // no middle: the goal and the kept turns are all there is
	}
	var middle int64
	for _, msg := range h.Messages[1:cut] {
		middle += model.MessageWeight(msg)
	}
	if middle*minMiddle < h.Bytes {
		return false // too little to gain: the kept turns are most of it
	}
	c.Job, c.Step = &compaction{From: 1, To: cut, Before: est}, step
	return true
}

// need is what the compaction call is projected to use, costing as much
// as the costliest call so far.
func (c *compactor) need(goal, pad string, h *history, summaryTokens int, callCost budget.Micros) budget.Usage {
	return budget.Usage{
		ModelCalls:   1,
		InputTokens:  model.EstimateTokens(model.Request{System: compactPrompt, Messages: c.request(goal, pad, h)}),
		OutputTokens: int64(summaryTokens),
		Cost:         callCost,
	}
}

// request is the compaction call's messages: one user message holding the
// goal, the earlier summary, the scratchpad and the transcript of the
// middle as plain text. A transcript rather than the messages themselves
// needs no tool definitions and cannot break tool_use/tool_result pairing.
func (c *compactor) request(goal, pad string, h *history) []model.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "The agent's goal:\n<goal>\n%s\n</goal>\n\n", goal)
	if c.Summary != "" {
		fmt.Fprintf(&b, "A summary of the work before this transcript, to fold into yours:\n<summary>\n%s\n</summary>\n\n", c.Summary)
	}
	if pad != "" {
		fmt.Fprintf(&b, "The agent's scratchpad, which it keeps anyway:\n<scratchpad>\n%s\n</scratchpad>\n\n", pad)
	}
	b.WriteString("The transcript to summarise:\n<transcript>\n")
	for _, msg := range h.Messages[c.Job.From:c.Job.To] {
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

// apply ends the call in flight with reply r: its summary takes the place
// of the middle of h, after the goal; the latest turns stay as they are.
// It returns the summary, or "" when the reply held none and h is
// unchanged.
func (c *compactor) apply(r model.Response, h *history, goal string, summaryTokens int) string {
	j := c.Job
	c.Job = nil
	summary := strings.TrimSpace(replyText(r.Content))
	if summary == "" {
		c.Failed = true
		return ""
	}
	summary = clip(summary, 8*summaryTokens)
	next := make([]model.Message, 0, 1+len(h.Messages)-j.To)
	next = append(next, model.Message{Role: model.User, Content: []model.Block{model.TextBlock(goal), model.TextBlock(summaryHeader + summary)}})
	next = append(next, h.Messages[j.To:]...)
	h.set(next)
	c.Summary = summary
	return summary
}

// elide is the fallback when no summary can be had: tool outputs in
// messages [1, to) of h are cut to their first elideKeep bytes. It
// returns how many were cut.
func elide(h *history, to int) int {
	msgs := slices.Clone(h.Messages) // the shell may still hold the old ones
	n := 0
	for i := 1; i < to; i++ {
		var content []model.Block
		for k, b := range msgs[i].Content {
			if b.Type != model.ToolResult || len(b.Text) <= elideKeep+len(elisionMark)+16 || strings.HasSuffix(b.Text, elisionMark) {
				continue
			}
			if content == nil {
				content = slices.Clone(msgs[i].Content)
			}
			kept := strings.TrimSuffix(clip(b.Text, elideKeep), "…")
			content[k].Text = kept + "\n[… " + strconv.Itoa(len(b.Text)-len(kept)) + elisionMark
			n++
		}
		if content != nil {
			msgs[i].Content = content
		}
	}
	h.set(msgs)
	return n
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

// maybeCompact starts a compaction call when the next step's request would
// be over the threshold, the history has a middle to summarise and the
// budget has room for the call beside need, the step and the closing
// turn. It reports whether it issued the call. When the budget has no
// room it falls back to trimming old tool outputs.
func (m *Machine) maybeCompact(need budget.Usage) bool {
	pol := &m.spec.Policy
	c := &m.st.Context
	est := m.req.estimate(&m.st, false)
	if !c.due(pol.CompactAt, m.st.Step, est) || !c.begin(&m.st.History, pol.KeepTurns, m.st.Step, est) {
		return false
	}
	need = need.Add(c.need(m.spec.Goal, m.st.Scratchpad.text(), &m.st.History, pol.SummaryTokens, m.st.MaxCallCost))
	if d, over := budget.Exceeds(m.spec.Budget, m.st.Usage, need); over {
		to := c.Job.To
		c.Job, c.Failed = nil, true
		m.ready.note(m.st.trim(&m.req, to, "compact_skipped", fmt.Sprintf("compaction skipped: a summarising call would leave too little %s for the next turn and the closing turn", d)))
		return false
	}
	c.Failed = false
	m.callModel(model.PurposeCompact, 1, pol.SummaryTokens, pol.Reserve.Time)
	return true
}

// stepCompact is the handler of phaseCompact: the summary arrives, or the
// call failed and the run goes on with old tool outputs trimmed instead. A
// deadline is handled as for any call.
func (m *Machine) stepCompact(ev *Event) {
	c := &m.st.Context
	j := *c.Job
	m.st.Awaiting = nil
	switch {
	case ev.Type == EventModelError && ev.Error.Kind == FailDeadline:
		c.Job = nil
		m.closeTurn(budget.Time)
		return
	case ev.Type == EventModelError:
		c.Job, c.Failed = nil, true
		m.ready.note(m.st.trim(&m.req, j.To, "compact_failed", "the compaction call failed: "+clip(ev.Error.Message, 200)))
	default:
		m.st.charge(ev.Reply)
		was := len(m.st.History.Messages)
		summary := c.apply(*ev.Reply, &m.st.History, m.spec.Goal, m.spec.Policy.SummaryTokens)
		if summary == "" {
			m.ready.note(m.st.trim(&m.req, j.To, "compact_failed", "the compaction reply held no summary"))
			break
		}
		after := m.req.estimate(&m.st, false)
		m.ready.note(Note{Type: NoteContext, Step: m.st.Step, Problem: "compacted", TokensBefore: j.Before, TokensAfter: after,
			Text: fmt.Sprintf("compacted messages %d–%d of %d into a summary of %d bytes: ~%d → ~%d input tokens", j.From, j.To-1, was, len(summary), j.Before, after)})
	}
	m.nextTurn()
}
