package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/retry"
)

// assembler builds a Response from a stream's events. It does its own
// assembly rather than use the SDK's Message.Accumulate, which replaces a
// tool input that is not valid JSON with {}: ratchet passes the model's
// arguments through exactly, so that the loop can tell the model.
type assembler struct {
	resp    model.Response
	started bool
	blocks  []streamBlock
	stopped bool
}

type streamBlock struct {
	kind    string // "text", "tool_use", "thinking", "redacted_thinking" or another type that is dropped
	id      string
	name    string
	text    []byte // text, or thinking
	sig     []byte // a thinking block's signature; a redacted_thinking block's data
	input   []byte
	deltaed bool // input came from deltas, replacing the start's {}
}

// add takes one event and returns text to show now, if any.
func (a *assembler) add(ev anthropic.MessageStreamEventUnion) string {
	switch ev.Type {
	case "message_start":
		a.started = true
		u := ev.Message.Usage
		a.resp.Model = string(ev.Message.Model)
		a.resp.Usage = usage(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
	case "content_block_start":
		cb := ev.ContentBlock
		b := streamBlock{kind: cb.Type, id: cb.ID, name: cb.Name, text: []byte(cb.Text)}
		switch b.kind {
		case "tool_use":
			b.input = []byte(cb.JSON.Input.Raw())
		case "thinking":
			b.text, b.sig = []byte(cb.Thinking), []byte(cb.Signature)
		case "redacted_thinking":
			b.sig = []byte(cb.Data)
		}
		a.blocks = append(a.blocks, b)
		if b.kind == "text" {
			return ev.ContentBlock.Text
		}
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
			return ""
		}
		b := &a.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			b.text = append(b.text, ev.Delta.Text...)
			if b.kind == "text" {
				return ev.Delta.Text
			}
		case "thinking_delta":
			b.text = append(b.text, ev.Delta.Thinking...)
		case "signature_delta":
			b.sig = append(b.sig, ev.Delta.Signature...)
		case "input_json_delta":
			if !b.deltaed {
				b.input, b.deltaed = b.input[:0], true
			}
			b.input = append(b.input, ev.Delta.PartialJSON...)
		}
	case "message_delta":
		a.resp.StopReason = string(ev.Delta.StopReason)
		u := ev.Usage
		a.resp.Usage.OutputTokens = u.OutputTokens // cumulative, not a delta
		if u.JSON.InputTokens.Valid() {
			a.resp.Usage.InputTokens = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.resp.Usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.resp.Usage.CacheWriteTokens = u.CacheCreationInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	return ""
}

// received is how many bytes of output the stream carried: text,
// thinking and tool arguments.
func (a *assembler) received() int {
	n := 0
	for _, b := range a.blocks {
		n += len(b.text) + len(b.input)
	}
	return n
}

// response returns the assembled reply; a stream cut off before
// message_stop is an error (the transport broke, not the model).
func (a *assembler) response() (model.Response, error) {
	if !a.started || !a.stopped {
		return model.Response{}, fmt.Errorf("stream ended before message_stop: %w", retry.ErrIncomplete)
	}
	resp := a.resp
	resp.Content = make([]model.Block, 0, len(a.blocks))
	for _, b := range a.blocks {
		switch b.kind {
		case "text":
			resp.Content = append(resp.Content, model.TextBlock(string(b.text)))
		case "tool_use":
			in := json.RawMessage(b.input)
			if len(in) == 0 {
				in = json.RawMessage(`{}`)
			}
			resp.Content = append(resp.Content, model.Block{Type: model.ToolUse, ID: b.id, Name: b.name, Input: in})
		case "thinking":
			resp.Content = append(resp.Content, model.Block{Type: model.Thinking, Text: string(b.text), Signature: string(b.sig)})
		case "redacted_thinking":
			resp.Content = append(resp.Content, model.Block{Type: model.RedactedThinking, Signature: string(b.sig)})
		}
	}
	return resp, nil
}
