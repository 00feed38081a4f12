package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ratchetloop/ratchet/model/modeltest"
)

// responsesWire speaks the Responses API as its reference documents it
// (https://platform.openai.com/docs/api-reference/responses/create and
// .../responses-streaming): a whole reply is a response object whose output
// holds a reasoning item (summary parts and encrypted_content), a message
// (output_text parts) and function_call items (arguments as a JSON
// string, keyed by call_id); a stream is typed events (response.created,
// response.output_text.delta, ..., response.completed carrying the whole
// response) as SSE.
type responsesWire struct{}

var _ modeltest.ErrorEventWire = responsesWire{}

func (responsesWire) response(r modeltest.Reply, status string) string {
	var out []string
	if r.Thinking != "" {
		out = append(out, fmt.Sprintf(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":%s}],"encrypted_content":%s}`, jsonString(r.Thinking), jsonString(r.Signature)))
	}
	if r.Text != "" {
		out = append(out, fmt.Sprintf(`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, jsonString(r.Text)))
	}
	if r.Refusal != "" {
		out = append(out, fmt.Sprintf(`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"refusal","refusal":%s}]}`, jsonString(r.Refusal)))
	}
	for i, c := range r.Calls {
		out = append(out, fmt.Sprintf(`{"type":"function_call","id":"fc_%d","call_id":%s,"name":%s,"arguments":%s,"status":"completed"}`, i, jsonString(c.ID), jsonString(c.Name), jsonString(c.Args)))
	}
	u := r.Usage
	in := u.InputTokens + u.CacheReadTokens
	usage := fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, in, u.CacheReadTokens, u.OutputTokens, in+u.OutputTokens)
	if status != "completed" {
		out, usage = nil, "null"
	}
	return fmt.Sprintf(`{"id":"resp_1","object":"response","created_at":1700000000,"status":%q,"model":"gpt-test","output":[%s],"usage":%s,"error":null,"incomplete_details":null}`, status, strings.Join(out, ","), usage)
}

func (w responsesWire) Reply(r modeltest.Reply, stream bool) (string, []byte) {
	if !stream {
		return "application/json", []byte(w.response(r, "completed"))
	}
	var b bytes.Buffer
	n := 0
	event := func(typ, fields string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, n, fields)
		n++
	}
	event("response.created", `"response":`+w.response(r, "in_progress"))
	for _, part := range halves(r.Thinking) {
		event("response.reasoning_summary_text.delta", `"item_id":"rs_1","output_index":0,"summary_index":0,"delta":`+jsonString(part))
	}
	for _, part := range halves(r.Text) {
		event("response.output_text.delta", `"item_id":"msg_1","output_index":1,"content_index":0,"delta":`+jsonString(part))
	}
	for _, part := range halves(r.Refusal) {
		event("response.refusal.delta", `"item_id":"msg_1","output_index":1,"content_index":0,"delta":`+jsonString(part))
	}
	for i, c := range r.Calls {
		event("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_%d","output_index":%d,"delta":%s`, i, i+2, jsonString(c.Args)))
	}
	event("response.completed", `"response":`+w.response(r, "completed"))
	return "text/event-stream", b.Bytes()
}

func (responsesWire) Error(status int) []byte { return wire{}.Error(status) }

// ErrorEvent is a stream that begins and then carries an error event
// ({"type":"error","code",...}), coded as the status's error would be.
func (w responsesWire) ErrorEvent(status int) (string, []byte) {
	code := map[int]string{400: "invalid_request_error", 503: "server_error"}[status]
	return "text/event-stream", fmt.Appendf(nil, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":%s}\n\n"+
		"event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":%q,\"message\":%q,\"param\":null}\n\n", w.response(modeltest.Reply{}, "in_progress"), code, http.StatusText(status))
}

func (responsesWire) Parse(body []byte) (modeltest.Seen, error) {
	var r struct {
		Instructions string `json:"instructions"`
		Stream       bool   `json:"stream"`
		Tools        []struct {
			Name   string `json:"name"`
			Strict bool   `json:"strict"`
		} `json:"tools"`
		Text struct {
			Format struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
		Input []struct {
			Type             string `json:"type"`
			Role             string `json:"role"`
			Content          any    `json:"content"`
			CallID           string `json:"call_id"`
			Name             string `json:"name"`
			Arguments        string `json:"arguments"`
			EncryptedContent string `json:"encrypted_content"`
			Summary          []struct {
				Text string `json:"text"`
			} `json:"summary"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return modeltest.Seen{}, err
	}
	s := modeltest.Seen{System: r.Instructions, Stream: r.Stream}
	for _, t := range r.Tools {
		s.Tools = append(s.Tools, t.Name)
		if t.Strict {
			s.StrictTools = append(s.StrictTools, t.Name)
		}
	}
	if sc := r.Text.Format.Schema; len(sc) > 0 {
		var b bytes.Buffer
		json.Compact(&b, sc)
		s.OutputSchema = b.String()
	}
	for _, it := range r.Input {
		switch {
		case it.Role == "user":
			text, _ := it.Content.(string)
			s.UserTexts = append(s.UserTexts, text)
			s.Roles = append(s.Roles, "user")
		case it.Role == "assistant":
			s.Roles = append(s.Roles, "assistant")
		case it.Type == "function_call":
			s.ToolUses = append(s.ToolUses, modeltest.Call{ID: it.CallID, Name: it.Name, Args: it.Arguments})
		case it.Type == "function_call_output":
			s.ToolResults = append(s.ToolResults, it.CallID)
		case it.Type == "reasoning":
			for _, p := range it.Summary {
				s.Thinking = append(s.Thinking, p.Text)
			}
			s.Signatures = append(s.Signatures, it.EncryptedContent)
		}
	}
	return s, nil
}
