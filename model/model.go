// Package model defines provider-neutral messages, content blocks, usage and
// the small Model interface that every provider implements.
//
// The types are plain data so that the loop core can build requests and read
// replies without I/O. Providers live in subpackages named after what they
// wrap (model/scripted, later model/anthropic and model/openai).
package model

import (
	"context"
	"encoding/json"

	"github.com/ratchetloop/ratchet/budget"
)

// Role is who authored a message.
type Role string

const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// BlockType is the kind of a content block.
type BlockType string

const (
	Text       BlockType = "text"        // prose; in an assistant turn, the model's thought
	ToolUse    BlockType = "tool_use"    // the assistant asks for a tool call
	ToolResult BlockType = "tool_result" // the outcome of a tool call, in a user turn
)

// Block is one piece of a message. Which fields are set depends on Type:
// Text uses Text; ToolUse uses ID, Name and Input; ToolResult uses ID, Text
// and IsError.
type Block struct {
	Type BlockType `json:"type"`
	Text string    `json:"text,omitempty"`
	// ID correlates a tool_use with its tool_result.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Input holds the tool arguments exactly as the model produced them. It may
	// be invalid JSON: providers must pass malformed arguments through so that
	// the loop can tell the model, rather than failing the call.
	Input   json.RawMessage `json:"input,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: Text, Text: s} }

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Purpose says why a model call is made; it is recorded with usage.
type Purpose string

const (
	PurposeStep    Purpose = "step"    // an ordinary turn that may act
	PurposeClosing Purpose = "closing" // the reserved last turn: finish now
	PurposeSample  Purpose = "sample"  // an alternative candidate, asked for when the model was unsure
	PurposeCompact Purpose = "compact" // a summary of the middle of the history, to keep the context small
)

// Request is one model call. Messages is shared with the loop core and must
// be treated as read-only by the Model.
type Request struct {
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// MaxOutputTokens caps the reply; 0 means the provider's default.
	MaxOutputTokens int     `json:"max_output_tokens,omitempty"`
	Purpose         Purpose `json:"purpose,omitempty"`
}

// Usage is what one call consumed.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// Cost is the call's price; CostKnown is false when the model has no
	// known price, in which case Cost is 0 and must not be read as free.
	Cost      budget.Micros `json:"cost_micros"`
	CostKnown bool          `json:"cost_known"`
}

// Response is a model's reply.
type Response struct {
	Content    []Block `json:"content"`
	StopReason string  `json:"stop_reason,omitempty"`
	Usage      Usage   `json:"usage"`
	Model      string  `json:"model,omitempty"`
}

// Model generates one reply. Implementations must be safe for concurrent use,
// honour ctx's deadline, and return a Go error only when the call itself
// failed (transport, auth, quota); anything the model said, however
// malformed, is a Response.
type Model interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// Named is implemented by models that can say which model they are; the name
// is recorded in the run and checked for grader independence.
type Named interface {
	Name() string
}
