package looptest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
)

// renderCall prints a CallModel command, checking the invariants of every
// request.
func (d *Driver) renderCall(b *strings.Builder, c loop.Command, deadline string) {
	d.lastRequest, d.modelCall = c.Request, c.ID
	names := make([]string, len(c.Request.Tools))
	for i, t := range c.Request.Tools {
		names[i] = t.Name
	}
	// Invariants of every request, checked in every script.
	if want := model.EstimateTokens(*c.Request); c.InputEstimate != want {
		fmt.Fprintf(b, "error: %s input estimate %d, but EstimateTokens says %d\n", c.ID, c.InputEstimate, want)
	}
	if err := CheckPairing(c.Request.Messages); err != nil {
		fmt.Fprintf(b, "error: %s: %v\n", c.ID, err)
	}
	est := ""
	if d.showTokens {
		est = fmt.Sprintf(" est=%d", c.InputEstimate)
	}
	if len(c.Overridden) > 0 {
		est += " overridden=(" + strings.Join(c.Overridden, ",") + ")"
	}
	fmt.Fprintf(b, "call_model %s purpose=%s messages=%d tools=(%s) max_out=%d%s%s\n",
		c.ID, c.Request.Purpose, len(c.Request.Messages), strings.Join(names, ","), c.Request.MaxOutputTokens, est, deadline)
}

func (d *Driver) render(rd loop.Ready) string {
	var b strings.Builder
	for _, n := range rd.Notes {
		switch n.Type {
		case loop.NoteIntervention:
			fmt.Fprintf(&b, "note %s %s/%s: %s\n", n.Type, n.Rung, n.Pattern, n.Text)
		case loop.NoteObservation, loop.NoteClosing, loop.NoteContext, loop.NoteEscalation:
			fmt.Fprintf(&b, "note %s %s: %s\n", n.Type, n.Problem, n.Text)
		default:
			fmt.Fprintf(&b, "note %s: %s\n", n.Type, indent(n.Text))
		}
	}
	for _, c := range rd.Commands {
		deadline := ""
		if !c.Deadline.IsZero() {
			deadline = " deadline=+" + c.Deadline.Sub(Epoch).String()
		}
		switch c.Type {
		case loop.CallModel:
			d.renderCall(&b, c, deadline)
		case loop.RunTools:
			fmt.Fprintf(&b, "run_tools %s%s\n", c.ID, deadline)
			for _, call := range c.Calls {
				fmt.Fprintf(&b, "  %s %s %s\n", call.ID, call.Name, call.Args)
			}
		case loop.Verify:
			d.pending = c.ID
			fmt.Fprintf(&b, "verify %s checks=(%s) answer=%q confidence=%.2f%s\n", c.ID, strings.Join(c.Checks, ","), c.Candidate.Answer, c.Candidate.Confidence, deadline)
		case loop.AskHuman:
			fmt.Fprintf(&b, "ask_human %s: %s\n", c.ID, c.Question)
		case loop.RunChild:
			ch := c.Child
			checks := make([]string, len(ch.Checks))
			for i, k := range ch.Checks {
				checks[i] = k.Name + ":" + string(k.Tier)
			}
			fmt.Fprintf(&b, "run_child %s%s goal=%q tools=(%s) checks=(%s)\n", c.ID, deadline, ch.Goal, strings.Join(ch.Tools, ","), strings.Join(checks, ","))
			fmt.Fprintf(&b, "  budget: %s\n", limits(ch.Budget))
			fmt.Fprintf(&b, "  policy: max_out=%d closing_out=%d subagents=%v plan=%v\n", ch.Policy.MaxOutputTokens, ch.Policy.ClosingOutputTokens, ch.Policy.Subagents != nil, ch.Policy.Plan)
		case loop.Finish:
			r := c.Result
			fmt.Fprintf(&b, "finish %s: %s\n", r.Status, r.Reason)
			if r.Best != nil {
				fmt.Fprintf(&b, "  best: attempt %d %q accepted=%v\n", r.Best.N, r.Best.Answer, r.Best.Accepted)
			}
			for _, a := range r.Attempts {
				fmt.Fprintf(&b, "  - %s\n", a.Summary)
			}
			if r.Question != "" {
				fmt.Fprintf(&b, "  question: %s\n", r.Question)
			}
			if r.Asked > 0 {
				fmt.Fprintf(&b, "  people: asked %d, answered %d\n", r.Asked, r.Answered)
			}
			fmt.Fprintf(&b, "  usage: %s\n", budget.Report(r.Limits, r.Usage))
			writeByModel(&b, r.ByModel)
		}
	}
	if b.Len() == 0 {
		return "(nothing)\n"
	}
	return b.String()
}

func renderMessages(r *model.Request) string {
	if r == nil {
		return "(no request yet)\n"
	}
	var b strings.Builder
	for i, m := range r.Messages {
		fmt.Fprintf(&b, "%d %s:\n", i, m.Role)
		for _, bl := range m.Content {
			switch bl.Type {
			case model.Text:
				fmt.Fprintf(&b, "  text: %s\n", indent(bl.Text))
			case model.ToolUse:
				fmt.Fprintf(&b, "  tool_use %s %s %s\n", bl.ID, bl.Name, bl.Input)
			case model.ToolResult:
				mark := ""
				if bl.IsError {
					mark = " error"
				}
				fmt.Fprintf(&b, "  tool_result %s%s: %s\n", bl.ID, mark, indent(bl.Text))
			}
		}
	}
	return b.String()
}

// CheckPairing reports a request whose tool calls and results do not pair
// up as providers require: every tool_use answered by a tool_result with
// its ID in the next message, and every tool_result answering a tool_use
// of the message before it.
func CheckPairing(msgs []model.Message) error {
	ids := func(m model.Message, t model.BlockType) []string {
		var out []string
		for _, b := range m.Content {
			if b.Type == t {
				out = append(out, b.ID)
			}
		}
		return out
	}
	for i, m := range msgs {
		for _, id := range ids(m, model.ToolUse) {
			if i+1 >= len(msgs) || !slices.Contains(ids(msgs[i+1], model.ToolResult), id) {
				if i+1 < len(msgs) || m.Role != model.Assistant {
					return fmt.Errorf("message %d: tool_use %s has no tool_result in the next message", i, id)
				}
			}
		}
		for _, id := range ids(m, model.ToolResult) {
			if i == 0 || !slices.Contains(ids(msgs[i-1], model.ToolUse), id) {
				return fmt.Errorf("message %d: tool_result %s answers no tool_use of the message before", i, id)
			}
		}
	}
	return nil
}

// Lines returns n numbered lines of 60 bytes each, a large tool output.
func Lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%05d %s\n", i, strings.Repeat("y", 53))
	}
	return b.String()
}

// limits lists l's finite limits.
func limits(l budget.Limits) string {
	var parts []string
	for _, d := range budget.Dimensions {
		if v := l.Limit(d); v >= 0 {
			parts = append(parts, string(d)+"="+budget.Format(d, v))
		}
	}
	return strings.Join(parts, " ")
}

func indent(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") }

// writeByModel writes a fallback chain's usage by model, a line each.
func writeByModel(b *strings.Builder, by []loop.ModelUsage) {
	for _, u := range by {
		unknown := ""
		if u.CostUnknown {
			unknown = " (cost unknown)"
		}
		fmt.Fprintf(b, "  by model %s: model_calls=%d input_tokens=%d output_tokens=%d cost=%s%s\n", u.Model, u.ModelCalls, u.InputTokens, u.OutputTokens, u.Cost, unknown)
	}
}
