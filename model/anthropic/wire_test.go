package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ratchetloop/ratchet/model/modeltest"
)

// wire speaks the Messages API as its reference documents it
// (https://docs.anthropic.com/en/api/messages and
// https://docs.anthropic.com/en/docs/build-with-claude/streaming): a whole
// reply is one Message object; a stream is message_start, then per content
// block a content_block_start, its deltas (text_delta or input_json_delta)
// and content_block_stop, then message_delta (stop reason, cumulative
// output tokens) and message_stop, with ping events anywhere.
type wire struct{}

var _ modeltest.ErrorEventWire = wire{}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      any             `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Strict       bool            `json:"strict,omitempty"`
	CacheControl *struct {
		Type string `json:"type"`
	} `json:"cache_control,omitempty"`
}

// wireRequest is a request body as the server reads it.
type wireRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	Stream    bool        `json:"stream"`
	System    []wireBlock `json:"system"`
	Tools     []wireBlock `json:"tools"`
	Output    struct {
		Format struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Messages []struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	} `json:"messages"`
}

func stopReason(r modeltest.Reply) string {
	if r.Refusal != "" {
		return "refusal" // with the refusal's text as the content
	}
	if len(r.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (wire) Reply(r modeltest.Reply, stream bool) (string, []byte) {
	if r.Refusal != "" {
		r.Text = r.Refusal
	}
	u := r.Usage
	usage := fmt.Sprintf(`{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}`,
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	if !stream {
		var content []string
		if r.Thinking != "" {
			content = append(content, fmt.Sprintf(`{"type":"thinking","thinking":%s,"signature":%s}`, jsonString(r.Thinking), jsonString(r.Signature)))
		}
		if r.Text != "" {
			content = append(content, fmt.Sprintf(`{"type":"text","text":%s}`, jsonString(r.Text)))
		}
		for _, c := range r.Calls {
			content = append(content, fmt.Sprintf(`{"type":"tool_use","id":%s,"name":%s,"input":%s}`, jsonString(c.ID), jsonString(c.Name), c.Args))
		}
		body := fmt.Sprintf(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":%s}`,
			join(content), stopReason(r), usage)
		return "application/json", []byte(body)
	}
	var b bytes.Buffer
	ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data) }
	startUsage := fmt.Sprintf(`{"input_tokens":%d,"output_tokens":1,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}`,
		u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`, startUsage))
	ev("ping", `{"type": "ping"}`)
	i := 0
	if r.Thinking != "" {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, i))
		for _, part := range halves(r.Thinking) {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, i, jsonString(part)))
		}
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%s}}`, i, jsonString(r.Signature)))
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		i++
	}
	if r.Text != "" {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
		for _, part := range halves(r.Text) {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, jsonString(part)))
		}
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		i++
	}
	for _, c := range r.Calls {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, i, jsonString(c.ID), jsonString(c.Name)))
		for _, part := range halves(c.Args) {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, jsonString(part)))
		}
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
		i++
	}
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stopReason(r), u.OutputTokens))
	ev("message_stop", `{"type":"message_stop"}`)
	return "text/event-stream", b.Bytes()
}

// halves splits s in two (on a rune boundary), as a stream's fragments do.
func halves(s string) []string {
	if s == "" {
		return nil
	}
	rs := []rune(s)
	return []string{string(rs[:len(rs)/2]), string(rs[len(rs)/2:])}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func join(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
	}
	return b.String()
}

func (wire) Error(status int) []byte {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	return fmt.Appendf(nil, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, http.StatusText(status))
}

// ErrorEvent is a stream that begins and then carries an error event
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events),
// typed as the status's error would be.
func (w wire) ErrorEvent(status int) (string, []byte) {
	typ := map[int]string{400: "invalid_request_error", 503: "overloaded_error"}[status]
	return "text/event-stream", fmt.Appendf(nil, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"+
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":%q,\"message\":%q}}\n\n", typ, http.StatusText(status))
}

func (wire) Parse(body []byte) (modeltest.Seen, error) {
	var r wireRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return modeltest.Seen{}, err
	}
	s := modeltest.Seen{Stream: r.Stream}
	for _, b := range r.System {
		s.System += b.Text
	}
	for _, t := range r.Tools {
		s.Tools = append(s.Tools, t.Name)
		if t.Strict {
			s.StrictTools = append(s.StrictTools, t.Name)
		}
	}
	if len(r.Output.Format.Schema) > 0 {
		var b bytes.Buffer
		json.Compact(&b, r.Output.Format.Schema)
		s.OutputSchema = b.String()
	}
	for _, m := range r.Messages {
		s.Roles = append(s.Roles, m.Role)
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				if m.Role == "user" {
					s.UserTexts = append(s.UserTexts, b.Text)
				}
			case "tool_use":
				s.ToolUses = append(s.ToolUses, modeltest.Call{ID: b.ID, Name: b.Name, Args: string(b.Input)})
			case "tool_result":
				s.ToolResults = append(s.ToolResults, b.ToolUseID)
			case "thinking":
				s.Thinking = append(s.Thinking, b.Thinking)
				s.Signatures = append(s.Signatures, b.Signature)
			}
		}
	}
	return s, nil
}
