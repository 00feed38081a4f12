package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ratchetloop/ratchet/internal/jsonvalid"
	"github.com/ratchetloop/ratchet/model"
)

var finishSpec = model.ToolSpec{
	Name:        FinishTool,
	Description: "Submit your answer. It is accepted only after independent checks pass; if one fails you will be told why. Do not call it in the same turn as other tools.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"The complete answer."},"confidence":{"type":"number","minimum":0,"maximum":1,"description":"How sure you are that the answer is correct and complete, from 0 to 1."}},"required":["answer","confidence"],"additionalProperties":false}`),
}

// isObject reports whether raw is a valid JSON object.
func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return jsonvalid.Valid(raw)
		}
		return false
	}
	return false
}

// parseFinish validates finish arguments strictly; the error is for the
// model and says what is wrong with them. typed says the answer is a JSON
// value of the spec's output schema rather than a string (output.go).
func parseFinish(raw json.RawMessage, typed bool) (answer string, confidence float64, err error) {
	form := `arguments must be a JSON object {"answer": string, "confidence": number from 0 to 1}`
	if typed {
		form = `arguments must be a JSON object {"answer": a JSON value of the answer's schema, "confidence": number from 0 to 1}`
	}
	if !isObject(raw) {
		return "", 0, errors.New(form)
	}
	var fields struct {
		Answer     json.RawMessage `json:"answer"`
		Confidence json.RawMessage `json:"confidence"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fields); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return "", 0, fmt.Errorf("unexpected argument %s; %s", name, form)
		}
		return "", 0, errors.New(form)
	}
	switch a := bytes.TrimSpace(fields.Answer); {
	case a == nil:
		return "", 0, errors.New(`"answer" is missing`)
	case typed:
		if answer, err = typedAnswer(a); err != nil {
			return "", 0, err
		}
	case string(a) == "null" || json.Unmarshal(a, &answer) != nil:
		return "", 0, fmt.Errorf(`"answer" must be a string, got %s`, clip(string(a), 40))
	}
	switch c := bytes.TrimSpace(fields.Confidence); {
	case c == nil:
		return "", 0, errors.New(`"confidence" is missing: give a number from 0 to 1`)
	case string(c) == "null" || json.Unmarshal(c, &confidence) != nil:
		return "", 0, fmt.Errorf(`"confidence" must be a number from 0 to 1, got %s`, clip(string(c), 40))
	}
	if !(confidence >= 0 && confidence <= 1) {
		return "", 0, fmt.Errorf(`"confidence" is %v; it must be between 0 and 1`, confidence)
	}
	return answer, confidence, nil
}

// finishOnly reads a reply whose only calls are finish: the one candidate
// it submits, or the protocol problem and what to tell the model, whose
// text answers every call.
func finishOnly(calls []pendingCall, typed bool) (answer string, conf float64, problem, text string) {
	if len(calls) > 1 {
		return "", 0, "multiple_finish", "call finish once per reply, with one answer"
	}
	answer, conf, err := parseFinish(calls[0].Args, typed)
	if err != nil {
		return "", 0, "bad_finish", "finish rejected: " + err.Error()
	}
	return answer, conf, "", ""
}
