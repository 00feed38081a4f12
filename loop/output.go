package loop

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ratchetloop/ratchet/internal/jsonvalid"
	"github.com/ratchetloop/ratchet/model"
)

// A typed answer: with Spec.OutputSchema, the answer is one JSON value of
// that schema. In agent mode the finish tool's answer argument is the
// schema itself, so the model writes the value as structured arguments,
// and the tool is marked Strict, so that a provider with native
// structured output (OpenAI's strict functions, Anthropic's strict tools)
// holds the arguments to it; in generate mode the system prompt gives the
// schema and the request carries it (model.Request.OutputSchema), so that
// a provider with a JSON response format (OpenAI, Gemini) constrains the
// reply to it, whose whole text is then the answer. The core does not
// validate the value: the shell's cheap check named OutputCheck does, and
// its failure (the JSON path and the rule) is fed back like any other.

// OutputCheck is the name of the cheap check that validates a typed answer
// against Spec.OutputSchema (the runner adds it).
const OutputCheck = "output_schema"

// finishSpecFor is the finish tool for a spec with output schema schema
// (none: the plain finish tool). The schema's own definitions move to the
// tool schema's root, where its "#/$defs/…" references point.
func finishSpecFor(schema json.RawMessage) model.ToolSpec {
	if len(schema) == 0 {
		return finishSpec
	}
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(schema, &answer); err != nil {
		return finishSpec // Validate refuses such a spec
	}
	root := map[string]json.RawMessage{
		"type":                 json.RawMessage(`"object"`),
		"required":             json.RawMessage(`["answer","confidence"]`),
		"additionalProperties": json.RawMessage(`false`),
	}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := answer[k]; ok {
			root[k] = d
			delete(answer, k)
		}
	}
	delete(answer, "$schema")
	delete(answer, "$id")
	if _, ok := answer["description"]; !ok {
		answer["description"] = json.RawMessage(`"The answer: one JSON value matching this schema, written as JSON (not as a string holding JSON)."`)
	}
	a, _ := json.Marshal(answer)
	props, _ := json.Marshal(map[string]json.RawMessage{
		"answer":     a,
		"confidence": json.RawMessage(`{"type":"number","minimum":0,"maximum":1,"description":"How sure you are that the answer is correct and complete, from 0 to 1."}`),
	})
	root["properties"] = props
	in, _ := json.Marshal(root)
	// Strict: a provider with native structured output holds the answer to
	// the schema as the model writes it; the schema check stays the gate.
	return model.ToolSpec{Name: FinishTool, InputSchema: in, Strict: true,
		Description: finishSpec.Description + " The answer is a JSON value of the schema given for it; it is checked against that schema."}
}

// outputPrompt is what the system prompt says of a typed answer.
func outputPrompt(schema json.RawMessage, mode Mode) string {
	var b bytes.Buffer
	if json.Compact(&b, schema) != nil {
		return ""
	}
	if mode == ModeGenerate {
		return "The artifact must be one JSON value matching this JSON Schema, in a ```json block: " + b.String()
	}
	return "The answer you finish with must be one JSON value matching this JSON Schema (finish's answer argument has it): " + b.String()
}

// typedAnswer is the candidate text of a typed finish answer: the value's
// compact JSON. A string that holds a JSON object or array is taken as
// that value: models often write structured answers as JSON in a string.
func typedAnswer(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !jsonvalid.Valid(raw) {
		return "", fmt.Errorf(`"answer" must be a JSON value of the output schema`)
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		if inner := bytes.TrimSpace([]byte(s)); len(inner) > 0 && (inner[0] == '{' || inner[0] == '[') && jsonvalid.Valid(inner) {
			raw = inner
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", fmt.Errorf(`"answer" must be a JSON value of the output schema`)
	}
	return b.String(), nil
}
