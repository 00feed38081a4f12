package loop

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ratchetloop/ratchet/model"
)

// The scratchpad (Policy.Scratchpad) is the model's own notes, kept by the
// core: the update_scratchpad tool is answered by the core itself, and the
// latest scratchpad is pinned to every step request (see pinned).

//go:embed prompts/scratchpad.txt
var scratchpadPrompt string

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

// update answers one update_scratchpad call, with the observation to
// note ("" when it succeeded).
func (p *Scratchpad) update(args json.RawMessage) (*ToolOutcome, string) {
	pad, err := parseScratchpad(args, *p)
	if err != nil {
		text := "scratchpad not updated: " + err.Error()
		return &ToolOutcome{Output: text, IsError: true, Outcome: "invalid_args"}, text
	}
	*p = pad
	return &ToolOutcome{Output: "scratchpad updated; it is shown to you every turn.", Outcome: "ok"}, ""
}

// text renders the scratchpad, "" when it is empty.
func (p *Scratchpad) text() string {
	var b strings.Builder
	for _, s := range [][2]string{{"Plan", p.Plan}, {"Findings", p.Findings}, {"Open questions", p.OpenQuestions}} {
		if s[1] != "" {
			fmt.Fprintf(&b, "%s:\n%s\n", s[0], s[1])
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
