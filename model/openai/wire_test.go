package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ratchetloop/ratchet/model/modeltest"
)

// wire speaks Chat Completions as OpenAI's API reference documents it
// (https://platform.openai.com/docs/api-reference/chat/create and
// .../chat/streaming): a whole reply is a chat.completion object whose first
// choice's message has content and tool_calls (arguments as a JSON string);
// a stream is chat.completion.chunk objects as SSE data lines, tool calls
// arriving as fragments keyed by index, a last chunk with empty choices
// carrying usage (stream_options.include_usage), then "data: [DONE]".
type wire struct{}

var _ modeltest.ErrorEventWire = wire{}

func finishReason(r modeltest.Reply) string {
	if len(r.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func usageJSON(r modeltest.Reply) string {
	u := r.Usage
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d,"cache_write_tokens":%d},"completion_tokens_details":{"reasoning_tokens":0}}`,
		prompt, u.OutputTokens, prompt+u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
}

func (wire) Reply(r modeltest.Reply, stream bool) (string, []byte) {
	if !stream {
		content := "null"
		if r.Text != "" {
			content = jsonString(r.Text)
		}
		var calls []string
		for _, c := range r.Calls {
			calls = append(calls, fmt.Sprintf(`{"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}`, jsonString(c.ID), jsonString(c.Name), jsonString(c.Args)))
		}
		toolCalls := ""
		if len(calls) > 0 {
			toolCalls = `,"tool_calls":[` + joinComma(calls) + `]`
		}
		if r.Thinking != "" {
			toolCalls += `,"reasoning_content":` + jsonString(r.Thinking)
		}
		refusal := "null"
		if r.Refusal != "" {
			refusal = jsonString(r.Refusal)
		}
		return "application/json", fmt.Appendf(nil, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":%s%s},"logprobs":null,"finish_reason":%q}],"usage":%s,"system_fingerprint":"fp_1"}`,
			content, refusal, toolCalls, finishReason(r), usageJSON(r))
	}
	var b bytes.Buffer
	chunk := func(choices string) {
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-test\",\"choices\":%s,\"usage\":null}\n\n", choices)
	}
	delta := func(d string) { chunk(`[{"index":0,"delta":` + d + `,"logprobs":null,"finish_reason":null}]`) }
	delta(`{"role":"assistant","content":"","refusal":null}`)
	for _, part := range halves(r.Thinking) {
		delta(`{"content":null,"reasoning_content":` + jsonString(part) + `}`)
	}
	for _, part := range halves(r.Text) {
		delta(`{"content":` + jsonString(part) + `}`)
	}
	for _, part := range halves(r.Refusal) {
		delta(`{"refusal":` + jsonString(part) + `}`)
	}
	for i, c := range r.Calls {
		delta(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]}`, i, jsonString(c.ID), jsonString(c.Name)))
		for _, part := range halves(c.Args) {
			delta(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, jsonString(part)))
		}
	}
	chunk(fmt.Sprintf(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":%q}]`, finishReason(r)))
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-test\",\"choices\":[],\"usage\":%s}\n\n", usageJSON(r))
	b.WriteString("data: [DONE]\n\n")
	return "text/event-stream", b.Bytes()
}

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

func joinComma(parts []string) string {
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
	typ := map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}[status]
	if typ == "" {
		typ = "server_error"
	}
	return fmt.Appendf(nil, `{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, http.StatusText(status), typ)
}

// ErrorEvent is a stream that begins and then carries an error object in a
// data line, as OpenAI and compatible servers (Groq, OpenRouter) send one,
// typed as the status's error would be.
func (wire) ErrorEvent(status int) (string, []byte) {
	e := map[int]string{400: `{"message":"Bad Request","type":"invalid_request_error","code":null}`, 503: `{"message":"Service Unavailable","type":"server_error","code":503}`}[status]
	return "text/event-stream", []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"error\":" + e + "}\n\n")
}

type wireRequest struct {
	Model               string `json:"model"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	Stream              bool   `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat struct {
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Messages []struct {
		Role             string  `json:"role"`
		Content          any     `json:"content"`
		ReasoningContent *string `json:"reasoning_content"`
		ToolCallID       string  `json:"tool_call_id"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func (wire) Parse(body []byte) (modeltest.Seen, error) {
	var r wireRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return modeltest.Seen{}, err
	}
	s := modeltest.Seen{Stream: r.Stream}
	for _, t := range r.Tools {
		s.Tools = append(s.Tools, t.Function.Name)
		if t.Function.Strict {
			s.StrictTools = append(s.StrictTools, t.Function.Name)
		}
	}
	if sc := r.ResponseFormat.JSONSchema.Schema; len(sc) > 0 {
		var b bytes.Buffer
		json.Compact(&b, sc)
		s.OutputSchema = b.String()
	}
	for _, m := range r.Messages {
		text, _ := m.Content.(string)
		switch m.Role {
		case "system":
			s.System += text
			continue
		case "user":
			s.UserTexts = append(s.UserTexts, text)
		case "tool":
			s.ToolResults = append(s.ToolResults, m.ToolCallID)
		}
		s.Roles = append(s.Roles, m.Role)
		if m.ReasoningContent != nil {
			s.Thinking = append(s.Thinking, *m.ReasoningContent)
		}
		for _, c := range m.ToolCalls {
			s.ToolUses = append(s.ToolUses, modeltest.Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments})
		}
	}
	return s, nil
}
