// Package model defines provider-neutral messages, content blocks, usage and
// the small Model interface that every provider implements.
//
// The types are plain data so that the loop core can build requests and read
// replies without I/O. Providers live in subpackages named after what they
// wrap (model/scripted, model/anthropic, model/openai, model/gemini);
// model/provider turns a model string into one.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

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
	// Thinking is a reasoning model's reasoning, in an assistant turn: shown
	// as thinking, never read as the answer. Text is the reasoning (it may
	// be empty, or a summary); Signature, when set, is the provider's seal
	// over it (Anthropic), to be sent back unchanged.
	Thinking BlockType = "thinking"
	// RedactedThinking is reasoning the provider encrypted (Anthropic's
	// redacted_thinking): Signature holds its data, to be sent back unchanged.
	RedactedThinking BlockType = "redacted_thinking"
)

// Block is one piece of a message. Which fields are set depends on Type:
// Text uses Text; ToolUse uses ID, Name and Input; ToolResult uses ID, Text
// and IsError; Thinking uses Text, Signature and Name (the reply field an
// OpenAI-compatible server sent it in, to send it back in, or
// "openai-responses" for a Responses API reasoning item); RedactedThinking
// uses Signature. Gemini also seals Text and ToolUse blocks: its thought
// signature is on the part it chose, and goes back on it.
//
// A provider sends an assistant turn's thinking blocks back as it received
// them, signatures byte for byte: Anthropic refuses a tool loop's next
// request whose last assistant turn lost them, DeepSeek one whose assistant
// turns with tool calls lost their reasoning_content.
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
	// Signature is opaque provider data that must go back verbatim (see
	// Thinking and RedactedThinking; Gemini's thought signature, base64, on
	// any block; the Responses API's encrypted reasoning).
	Signature string `json:"signature,omitempty"`
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
	// Strict asks the provider to hold the model's arguments to the schema
	// where it can (OpenAI's strict functions, Anthropic's strict tools),
	// as the loop asks of a typed answer's finish tool. A provider that
	// cannot, or a schema outside what its strict mode accepts, sends the
	// tool as usual; the schema check is the gate either way.
	Strict bool `json:"strict,omitempty"`
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
	// Reasoning asks a model that can reason to do so; nil leaves the
	// provider's default. A model that cannot reason ignores it.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// OutputSchema, when set, asks for a reply whose text is one JSON value
	// of this JSON Schema (a typed answer in generate mode): a provider
	// with native structured output constrains the reply to it (OpenAI's
	// json_schema response format, Gemini's responseJsonSchema); the
	// others rely on the prompt. The schema check is the gate either way.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Effort is how hard a reasoning model thinks, provider-neutral: each
// provider maps it to its own setting (docs/providers.md).
type Effort string

const (
	EffortLow    Effort = "low"
	EffortMedium Effort = "medium"
	EffortHigh   Effort = "high"
	EffortMax    Effort = "max"
)

// Efforts lists the valid efforts, lowest first.
var Efforts = []Effort{EffortLow, EffortMedium, EffortHigh, EffortMax}

// Reasoning is the provider-neutral reasoning setting: an effort, a budget
// of thinking tokens, or both. A provider that takes only one derives it
// from the other (docs/providers.md).
type Reasoning struct {
	Effort Effort `json:"effort,omitempty"`
	// BudgetTokens caps the thinking tokens of a reply where the provider
	// takes a cap (Anthropic's extended thinking, at least 1024).
	BudgetTokens int `json:"budget_tokens,omitempty"`
}

// MinBudgetTokens is the smallest thinking budget (Anthropic's minimum).
const MinBudgetTokens = 1024

// Problems lists what is wrong with r, each naming its field; none for a
// valid setting.
func (r Reasoning) Problems() []string {
	var p []string
	if r.Effort != "" && !slices.Contains(Efforts, r.Effort) {
		p = append(p, fmt.Sprintf("reasoning.effort must be one of low, medium, high, max, got %q", r.Effort))
	}
	if r.BudgetTokens != 0 && r.BudgetTokens < MinBudgetTokens {
		p = append(p, fmt.Sprintf("reasoning.budget_tokens must be at least %d, got %d", MinBudgetTokens, r.BudgetTokens))
	}
	if r.Effort == "" && r.BudgetTokens == 0 {
		p = append(p, "reasoning needs effort: or budget_tokens:")
	}
	return p
}

// Budget is r's thinking budget: BudgetTokens, else the effort's nominal
// budget (low 2048, medium 8192, high 16384, max 32768 tokens), for a
// provider that takes a cap but was given only an effort.
func (r Reasoning) Budget() int {
	if r.BudgetTokens > 0 {
		return r.BudgetTokens
	}
	switch r.Effort {
	case EffortLow:
		return 2048
	case EffortHigh:
		return 16384
	case EffortMax:
		return 32768
	}
	return 8192
}

// Usage is what one call consumed.
//
// InputTokens counts input that was neither read from nor written to the
// provider's prompt cache; CacheReadTokens and CacheWriteTokens count the
// rest (Anthropic's convention; the OpenAI provider subtracts cached tokens
// from prompt_tokens to match).
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is the part of OutputTokens spent thinking, where the
	// provider reports it (OpenAI, DeepSeek); it is billed as output.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// Cost is the call's price; CostKnown is false when the model has no
	// known price, in which case Cost is 0 and must not be read as free.
	Cost      budget.Micros `json:"cost_micros"`
	CostKnown bool          `json:"cost_known"`
}

// AddBilled is u with a billed attempt's usage v added; v's negative
// counts (a buggy or hostile provider's) are taken as zero, so that a
// failed attempt can never lower what a run spent. The sum's cost is known
// only if both are (a zero u has nothing unknown in it).
func AddBilled(u, v Usage) Usage {
	if v == (Usage{}) {
		return u
	}
	known := v.CostKnown && (u.CostKnown || u == Usage{})
	u.InputTokens += max(v.InputTokens, 0)
	u.OutputTokens += max(v.OutputTokens, 0)
	u.CacheReadTokens += max(v.CacheReadTokens, 0)
	u.CacheWriteTokens += max(v.CacheWriteTokens, 0)
	u.ReasoningTokens += max(v.ReasoningTokens, 0)
	u.Cost += max(v.Cost, 0)
	u.CostKnown = known
	return u
}

// Response is a model's reply.
type Response struct {
	Content []Block `json:"content"`
	// StopReason uses Anthropic's names whatever the provider: end_turn,
	// tool_use, max_tokens, stop_sequence, refusal; others pass through.
	StopReason string `json:"stop_reason,omitempty"`
	Usage      Usage  `json:"usage"`
	Model      string `json:"model,omitempty"`
	// Cached marks a reply answered from a response cache (model/cache)
	// instead of a call: it cost nothing, whatever its tokens.
	Cached bool `json:"cached,omitempty"`
	// Via is the model string of the fallback chain's member that answered
	// (model/fallback); "" when the call was not made through a chain. The
	// loop accounts usage per model by it (loop.Result.ByModel).
	Via string `json:"via,omitempty"`
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

// ErrorKind classifies why a model call failed, so that callers (and logs
// that cross a process boundary) can tell a fix-your-config failure from a
// transient one without parsing messages.
type ErrorKind string

const (
	ErrAuth        ErrorKind = "auth"         // 401, 403: a missing, wrong or unauthorised key
	ErrBadRequest  ErrorKind = "bad_request"  // 400, 413, 422: the request itself is wrong
	ErrNotFound    ErrorKind = "not_found"    // 404: usually an unknown model name or base URL
	ErrRateLimited ErrorKind = "rate_limited" // 429
	ErrOverloaded  ErrorKind = "overloaded"   // 529 (Anthropic), 503
	ErrServer      ErrorKind = "server"       // other 5xx
	ErrTransport   ErrorKind = "transport"    // no HTTP reply: refused, reset, DNS
	ErrTimeout     ErrorKind = "timeout"      // the call's deadline or an attempt's timeout
	ErrQuota       ErrorKind = "quota"        // the account's credit or quota is spent: no retry helps
)

// KindOf classifies an HTTP status.
func KindOf(status int) ErrorKind {
	switch {
	case status == 401 || status == 403:
		return ErrAuth
	case status == 404:
		return ErrNotFound
	case status == 408:
		return ErrTimeout
	case status == 429:
		return ErrRateLimited
	case status == 529 || status == 503:
		return ErrOverloaded
	case status >= 500:
		return ErrServer
	}
	return ErrBadRequest
}

// APIError is the error a provider's Generate returns when the call failed:
// after the transport's retries gave up, or at once for errors that retrying
// cannot fix (auth, bad request, not found). Its message says what to fix and
// never contains a credential.
type APIError struct {
	Provider string    `json:"provider"`         // "anthropic", "openai", "openai-compatible"
	Status   int       `json:"status,omitempty"` // the HTTP status; 0 when there was no reply
	Kind     ErrorKind `json:"kind"`
	Message  string    `json:"message"`       // what the server (or the transport) said
	Fix      string    `json:"fix,omitempty"` // what the user should do, e.g. "set ANTHROPIC_API_KEY"
	// Err is the underlying error, for errors.Is (e.g. context.DeadlineExceeded).
	Err error `json:"-"`
}

func (e *APIError) Error() string {
	s := e.Provider + ": "
	if e.Status != 0 {
		s += strconv.Itoa(e.Status) + " "
	}
	s += string(e.Kind)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

func (e *APIError) Unwrap() error { return e.Err }

// Temporary reports whether a later call might succeed unchanged.
func (e *APIError) Temporary() bool {
	switch e.Kind {
	case ErrRateLimited, ErrOverloaded, ErrServer, ErrTransport, ErrTimeout:
		return true
	}
	return false
}

// Retry describes one transport retry: the attempt about to be made, what
// the previous attempt got and how long the transport waits first.
type Retry struct {
	Attempt int           `json:"attempt"`          // 2 for the first retry
	Status  int           `json:"status,omitempty"` // the failed attempt's HTTP status; 0 for a transport error
	Wait    time.Duration `json:"wait_ns"`
	Reason  string        `json:"reason"` // e.g. "429 rate_limited", "connection reset"
}

// Fallback describes a call handed from one model of a fallback chain to
// the next, after From's retries gave up with an error a later call might
// not meet (rate limited, overloaded, a server or transport error).
type Fallback struct {
	From   string `json:"from"`   // the model string that failed
	To     string `json:"to"`     // the model string that takes the call
	Reason string `json:"reason"` // From's error
}

// Wait describes a call held back before it is sent, by the limits shared
// by every run on its provider in the process (model/limit).
type Wait struct {
	Provider string        `json:"provider"` // the limits' key, e.g. "anthropic"
	For      time.Duration `json:"wait_ns"`  // how long the call may wait; 0 when that depends on calls in flight
	Reason   string        `json:"reason"`   // e.g. "requests per minute (50) reached"
}

// Hooks are callbacks a caller attaches to a Generate call's context. They
// observe the call and must not change it: whatever the hooks do, the
// Response is the same. Either may be nil. They may be called from the
// goroutine running Generate; calls for one Generate do not overlap.
type Hooks struct {
	// OnRetry is called before each transport retry waits.
	OnRetry func(Retry)
	// OnText receives text as a streaming provider produces it, in order.
	// The Response still carries the whole text.
	OnText func(delta string)
	// OnFallback is called when a fallback chain hands the call to its
	// next model.
	OnFallback func(Fallback)
	// OnWait is called before the call waits for its provider's shared
	// limits.
	OnWait func(Wait)
	// OnBilled is called with the usage of an attempt that failed but that
	// the provider bills all the same (a stream cut after output), before
	// the call goes on (a fallback's next model) or returns its error: the
	// runner charges it to the run, so that a cost cap holds when attempts
	// fail. A successful reply's own Usage is not reported here.
	OnBilled func(Usage)
}

type hooksKey struct{}

// WithHooks returns ctx carrying h, which must not change while ctx is
// in use. A pointer, so that carrying the hooks costs the context alone
// (a Hooks value would be boxed on every call).
func WithHooks(ctx context.Context, h *Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

// HooksFrom returns the hooks ctx carries; the zero Hooks if none.
func HooksFrom(ctx context.Context) Hooks {
	if h, _ := ctx.Value(hooksKey{}).(*Hooks); h != nil {
		return *h
	}
	return Hooks{}
}

// Priced is implemented by models that know whether their calls have a
// price. A model with no known price reports Usage.CostKnown false; a run
// with an explicit cost budget refuses such a model rather than count its
// calls as free. A model that does not implement Priced is treated as priced.
type Priced interface {
	PriceKnown() bool
}
