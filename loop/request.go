package loop

import (
	_ "embed"
	"slices"
	"strings"

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

// newMachine returns a machine for spec, defaults applied, with the parts
// derived from it: the system prompt and the tools on offer.
func newMachine(spec Spec) *Machine {
	m := &Machine{spec: spec, keyFn: spec.Policy.Key, known: map[string]bool{}, system: systemPrompt}
	if m.keyFn == nil {
		m.keyFn = progress.DefaultKey
	}
	if spec.Mode == ModeGenerate {
		m.system = generatePrompt
	} else {
		m.tools = slices.Clone(spec.Tools)
		if spec.Policy.Scratchpad {
			m.tools = append(m.tools, scratchpadSpec)
			m.system += strings.TrimRight(scratchpadPrompt, "\n") + "\n"
		}
		if spec.Policy.Plan {
			m.tools = append(m.tools, submitPlanSpec, stepDoneSpec)
		}
		if spec.Policy.Subagents != nil {
			m.tools = append(m.tools, spawnSpec(spec.Policy.Subagents))
		}
		m.tools = append(m.tools, finishSpec)
		for _, t := range m.tools {
			m.known[t.Name] = true
		}
	}
	if spec.Instructions != "" {
		m.system += "\n" + spec.Instructions
	}
	return m
}

func (m *Machine) toolList() string {
	names := make([]string, len(m.tools))
	for i, t := range m.tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// modelCommand builds the CallModel command id of the call in flight.
func (m *Machine) modelCommand(id string) Command {
	c := m.st.Call
	req := &model.Request{System: m.system, MaxOutputTokens: c.MaxOut, Purpose: c.Purpose}
	var est int64
	switch c.Purpose {
	case model.PurposeSample:
		req.Messages, req.Tools = sampleRequest(m.st.History.Messages, m.spec.Mode)
		est = EstimateTokens(*req)
	case model.PurposeCompact:
		req.System, req.Messages = compactPrompt, m.st.Context.request(m.spec.Goal, m.st.Scratchpad.text(), &m.st.History)
		est = EstimateTokens(*req)
	default:
		closing := c.Purpose == model.PurposeClosing
		pin := m.pinned(closing)
		req.Messages = m.stepMessages(pin)
		switch {
		case m.spec.Mode == ModeGenerate:
		case closing:
			req.Tools = []model.ToolSpec{finishSpec}
		default:
			req.Tools = m.offered()
		}
		// Sized as EstimateTokens would, without rescanning the history.
		est = tokensOf(int64(len(req.System)) + toolsWeight(req.Tools) + m.st.History.Bytes + m.pinnedWeight(pin))
	}
	return Command{Type: CallModel, ID: id, Deadline: m.deadline(c.Keep), Request: req, InputEstimate: est}
}

// pinned is the text added to the end of every step request: the
// scratchpad and, but in the closing turn, which may only finish, the
// plan's current step. It is not part of the history, so it never piles
// up and always shows the latest value.
func (m *Machine) pinned(closing bool) string {
	var parts []string
	if m.spec.Policy.Scratchpad {
		if pad := m.st.Scratchpad.text(); pad != "" {
			parts = append(parts, "[Your scratchpad]\n"+pad)
		} else {
			parts = append(parts, "[Your scratchpad is empty: update_scratchpad keeps notes that survive.]")
		}
	}
	if m.spec.Policy.Plan && !closing {
		parts = append(parts, m.st.Plan.focus(gateChecks(m.spec.Checks)))
	}
	return strings.Join(parts, "\n\n")
}

// stepMessages is the history with the pinned block added to its last
// user message (or as one of its own after an assistant message).
func (m *Machine) stepMessages(pin string) []model.Message {
	h := m.st.History.Messages
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
	if h := m.st.History.Messages; len(h) == 0 || h[len(h)-1].Role != model.User {
		n += MessageOverhead
	}
	return n
}

// offered are the tools a step turn offers: only submit_plan until plan
// mode has a plan.
func (m *Machine) offered() []model.ToolSpec {
	if m.spec.Policy.Plan && m.st.Plan.planning() {
		return []model.ToolSpec{submitPlanSpec}
	}
	return m.tools
}

// estimateInput estimates the next step request's input tokens (the
// closing turn's, if closing), as EstimateTokens would, without
// rescanning the history.
func (m *Machine) estimateInput(closing bool) int64 {
	var tools []model.ToolSpec
	if m.spec.Mode != ModeGenerate {
		tools = m.offered()
	}
	return tokensOf(int64(len(m.system)) + toolsWeight(tools) + m.st.History.Bytes + m.pinnedWeight(m.pinned(closing)))
}
