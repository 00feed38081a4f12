package loop

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/jsonvalid"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/progress"
)

// What the model is sent: the system prompt, the tools on offer, the
// history with the pinned block (the scratchpad and the current plan step)
// added at its end, and the estimate of its size.

var (
	//go:embed prompts/system.txt
	systemPrompt string
	//go:embed prompts/closing.txt
	closingPrompt string
	//go:embed prompts/generate.txt
	generatePrompt string
	//go:embed prompts/closing_generate.txt
	closingGeneratePrompt string
)

// requests builds what the model is sent from the state and the parts of
// the spec derived once: the system prompt and the tools on offer.
type requests struct {
	spec   *Spec
	system string
	tools  []model.ToolSpec // spec tools, the core's own, finish
	finish model.ToolSpec   // finish, shaped by the output schema
	known  map[string]bool  // names of tools
}

// newMachine returns a machine for spec, defaults applied.
func newMachine(spec Spec) *Machine {
	m := &Machine{spec: spec, keyFn: spec.Policy.Key}
	if m.keyFn == nil {
		m.keyFn = progress.DefaultKey
	}
	r := requests{spec: &m.spec, system: systemPrompt, known: map[string]bool{}, finish: finishSpecFor(spec.OutputSchema)}
	if spec.Mode == ModeGenerate {
		r.system = generatePrompt
	} else {
		r.tools = slices.Clone(spec.Tools)
		if spec.Policy.Scratchpad {
			r.tools = append(r.tools, scratchpadSpec)
			r.system += strings.TrimRight(scratchpadPrompt, "\n") + "\n"
		}
		if spec.Policy.Plan {
			r.tools = append(r.tools, submitPlanSpec, stepDoneSpec)
		}
		if spec.Policy.Subagents != nil {
			r.tools = append(r.tools, spawnSpec(spec.Policy.Subagents))
		}
		r.tools = append(r.tools, r.finish)
		for _, t := range r.tools {
			r.known[t.Name] = true
		}
	}
	if len(spec.OutputSchema) > 0 {
		r.system += "\n" + outputPrompt(spec.OutputSchema, spec.Mode)
	}
	if spec.Instructions != "" {
		r.system += "\n" + spec.Instructions
	}
	m.req = r
	return m
}

func (r *requests) toolList() string {
	names := make([]string, len(r.tools))
	for i, t := range r.tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// command builds the CallModel command id of the call in flight.
func (r *requests) command(st *state, id string) Command {
	c := st.Call
	req := &model.Request{System: r.system, MaxOutputTokens: c.MaxOut, Purpose: c.Purpose, Reasoning: r.spec.Policy.Reasoning}
	var est int64
	switch c.Purpose {
	case model.PurposeSample:
		req.Messages, req.Tools = sampleRequest(st.History.Messages, r.spec.Mode, r.finish)
		est = model.EstimateTokens(*req)
	case model.PurposeCompact:
		req.System, req.Messages = compactPrompt, st.Context.request(r.spec.Goal, st.Scratchpad.text(), &st.History)
		est = model.EstimateTokens(*req)
	default:
		closing := c.Purpose == model.PurposeClosing
		pin := r.pinned(st, closing)
		req.Messages = r.stepMessages(st, pin)
		switch {
		case r.spec.Mode == ModeGenerate:
			req.OutputSchema = r.spec.OutputSchema
		case closing:
			req.Tools = []model.ToolSpec{r.finish}
		default:
			req.Tools = r.offered(st)
		}
		// Sized as EstimateTokens would, without rescanning the history.
		est = model.TokensOf(int64(len(req.System)) + model.ToolsWeight(req.Tools) + st.History.Bytes + r.pinnedWeight(st, pin))
	}
	return Command{Type: CallModel, ID: id, Deadline: st.deadline(r.spec.Budget.Time, c.Keep), Request: req, InputEstimate: est, Overridden: slices.Clip(st.Overridden)}
}

// pinned is the text added to the end of every step request: the
// scratchpad and, but in the closing turn, which may only finish, the
// plan's current step. It is not part of the history, so it never piles
// up and always shows the latest value.
func (r *requests) pinned(st *state, closing bool) string {
	var parts []string
	if r.spec.Policy.Scratchpad {
		if pad := st.Scratchpad.text(); pad != "" {
			parts = append(parts, "[Your scratchpad]\n"+pad)
		} else {
			parts = append(parts, "[Your scratchpad is empty: update_scratchpad keeps notes that survive.]")
		}
	}
	if r.spec.Policy.Plan && !closing {
		parts = append(parts, st.Plan.focus(gateChecks(r.spec.Checks)))
	}
	return strings.Join(parts, "\n\n")
}

// stepMessages is the history with the pinned block added to its last
// user message (or as one of its own after an assistant message).
func (r *requests) stepMessages(st *state, pin string) []model.Message {
	h := st.History.Messages
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
func (r *requests) pinnedWeight(st *state, pin string) int64 {
	if pin == "" {
		return 0
	}
	n := int64(len(pin) + model.BlockOverhead)
	if h := st.History.Messages; len(h) == 0 || h[len(h)-1].Role != model.User {
		n += model.MessageOverhead
	}
	return n
}

// offered are the tools a step turn offers: only submit_plan until plan
// mode has a plan.
func (r *requests) offered(st *state) []model.ToolSpec {
	if r.spec.Policy.Plan && st.Plan.planning() {
		return []model.ToolSpec{submitPlanSpec}
	}
	return r.tools
}

// estimateInput estimates the next step request's input tokens (the
// closing turn's, if closing), as EstimateTokens would, without
// rescanning the history.
func (r *requests) estimate(st *state, closing bool) int64 {
	var tools []model.ToolSpec
	if r.spec.Mode != ModeGenerate {
		tools = r.offered(st)
	}
	return model.TokensOf(int64(len(r.system)) + model.ToolsWeight(tools) + st.History.Bytes + r.pinnedWeight(st, r.pinned(st, closing)))
}

// turnNeed is what the run keeps for itself: the closing reserve and one
// more ordinary turn, projected as nextTurn projects it.
func (r *requests) turnNeed(st *state) budget.Usage {
	pol := &r.spec.Policy
	need := pol.Reserve
	need.Steps++
	need.ModelCalls++
	need.InputTokens += 2 * r.estimate(st, false) // this turn and the closing turn
	need.OutputTokens += int64(pol.MaxOutputTokens)
	// Prices are unknown here, so project this turn and the closing one
	// to cost as much as the costliest call so far.
	need.Cost = st.MaxCallCost + max(need.Cost, st.MaxCallCost)
	if len(r.spec.Tools) > 0 {
		need.ToolCalls++
	}
	return need
}

// screen checks call c before it is dispatched (closing: in the closing
// turn; budgetSpent: no tool calls are left). A call that may not run
// gets the problem and the text to answer it with; otherwise rule is the
// permission rule that matched, if any.
func (r *requests) screen(c *pendingCall, budgetSpent, closing bool) (rule *Permission, problem, text string) {
	switch {
	case closing:
		return nil, "closing_turn", fmt.Sprintf("tool %q not run: this is the closing turn and tools are no longer available", c.Name)
	case !r.known[c.Name]:
		return nil, "unknown_tool", fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, r.toolList())
	case len(bytes.TrimSpace(c.Args)) == 0:
		c.Args = json.RawMessage(`{}`) // some providers omit the arguments of a call that takes none
	}
	switch {
	case !jsonvalid.Valid(c.Args):
		return nil, "invalid_json", fmt.Sprintf("tool %q not run: its arguments are not valid JSON: %s", c.Name, clip(string(c.Args), 200))
	case budgetSpent && !(c.Name == SpawnTool && r.spec.Policy.Subagents != nil):
		return nil, "tool_budget", fmt.Sprintf("tool %q not run: the tool-call budget is spent", c.Name)
	}
	if !c.Approved {
		if rule = permissionFor(r.spec.Permissions, c.Name, c.Args); rule != nil && rule.Action == Deny {
			return nil, "denied", fmt.Sprintf("tool %q not run: the task's permissions refuse this call (rule: %s); do it another way or finish", c.Name, rule)
		}
	}
	return rule, "", ""
}
