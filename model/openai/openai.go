// Package openai is a model.Model for OpenAI's Chat Completions API and for
// any server that speaks it (Ollama, vLLM, llama.cpp server, LM Studio),
// built on the official Go SDK (github.com/openai/openai-go/v3).
//
// Requests: the system prompt goes first as a system message; a user turn's
// tool results become tool messages (right after the assistant turn that
// called them) and its text a user message; an assistant turn's text is its
// content and its tool_use blocks its tool_calls, arguments sent back as
// the model produced them. OpenAI caches a stable prompt prefix on its own,
// and system + tools + history is such a prefix, so nothing is marked.
//
// Replies: the text (the thought) comes first, then the tool calls in
// order; arguments are passed through as the model produced them, valid
// JSON or not. OpenAI-compatible servers differ, and the differences are
// tolerated: a missing usage (the cost is then unknown), finish reasons
// other than OpenAI's (normalised to the Anthropic-style names the rest of
// ratchet uses, and "tool_use" whenever there are tool calls), missing tool
// call ids (generated), arguments sent as a JSON object instead of a string
// (kept as the object's text), and empty arguments (sent on as {}).
//
// Refusals: a message's refusal (OpenAI's safety refusal, in place of the
// content) is the reply's text, with stop reason "refusal"; an empty one,
// as some servers send with every reply, is none.
//
// Reasoning: Request.Reasoning's effort goes out as reasoning_effort (a
// budget alone is turned into an effort), to OpenAI's reasoning models and
// to every compatible server; OpenAI's other models (GPT-4 and earlier)
// ignore it and say so once. The reasoning a compatible server returns
// (DeepSeek's reasoning_content, Ollama's and Groq's reasoning) comes back
// as a model.Thinking block named after its field, and goes back in that
// field of the assistant message: DeepSeek refuses a tool loop's next
// request without it. Reasoning tokens are reported in Usage.
//
// Errors: an error event inside a stream is classified by what it says
// (its type, code or status), as the same error outside a stream is, so
// that streaming never changes the outcome: a bad request fails at once, an
// overloaded server is retried. A server's refusal of the model's own tool
// call (Groq's tool_use_failed, with the model's failed_generation) is not
// an error: the failed generation comes back as the reply, a tool call
// when it is one, so that the loop answers it as it answers any malformed
// call, with an observation to the model.
//
// Transport: the SDK's own retries are off; a model/retry Transport under
// it retries and reports each retry through model.Hooks. Failures are
// *model.APIError.
package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
	"github.com/ratchetloop/ratchet/redact"
)

// Provider names, as in errors and model strings.
const (
	Provider           = "openai"
	ProviderCompatible = "openai-compatible"
)

// Config configures a Model. Model is required; the zero value of every
// other field means its default.
type Config struct {
	// Model is the server's model name, e.g. "gpt-4.1" or "llama3.1:8b".
	Model string
	// BaseURL is the API's root including /v1, e.g.
	// "http://localhost:11434/v1" for Ollama. Default $OPENAI_BASE_URL, else
	// OpenAI's.
	BaseURL string
	// APIKey defaults to $OPENAI_API_KEY. OpenAI requires one; most local
	// servers do not, and get a placeholder when it is empty.
	APIKey string
	// Compatible marks a server that is not OpenAI: no key is required, the
	// reply cap is sent as max_tokens (which local servers understand)
	// rather than max_completion_tokens, and prices are unknown unless
	// Price is set.
	Compatible bool
	// MaxTokens caps a reply when Request.MaxOutputTokens is 0; 0 leaves it
	// to the server.
	MaxTokens int
	// Responses sends the calls to the Responses API (/v1/responses)
	// instead of Chat Completions: reasoning carried across turns
	// encrypted, nothing stored server-side. OpenAI only.
	Responses bool
	// Stream asks for a streamed reply and passes its text to
	// model.Hooks.OnText as it arrives. The Response is the same as without.
	Stream bool
	// Retry configures transport retries (see model/retry).
	Retry retry.Config
	// Price overrides the price table's entry for Model (and gives a
	// compatible server's model a price).
	Price *price.Price
	// NoEnv leaves the environment unread: the caller resolved it already
	// (model/provider does, through its own Getenv).
	NoEnv bool
	// Notice receives what the model says once about a setting it ignores
	// (reasoning on a model that cannot reason); nil means os.Stderr.
	Notice io.Writer
}

// Model calls the Chat Completions API. It is safe for concurrent use.
type Model struct {
	cfg      Config
	provider string
	client   openai.Client
	// transport retries; key redacts the API key from errors, which may
	// echo it.
	transport *retry.Transport
	key       *redact.Redactor
	price     price.Price
	priced    bool
	ids       atomic.Int64 // for tool calls a server sent without an id
	// ignored says once that Request.Reasoning is ignored.
	ignored sync.Once
}

var (
	_ model.Model  = (*Model)(nil)
	_ model.Named  = (*Model)(nil)
	_ model.Priced = (*Model)(nil)
)

// New returns a Model. It fails if no model name is configured, or no API
// key for OpenAI itself.
func New(cfg Config) (*Model, error) {
	if !cfg.NoEnv {
		cfg.APIKey = cmp.Or(cfg.APIKey, os.Getenv("OPENAI_API_KEY"))
		cfg.BaseURL = cmp.Or(cfg.BaseURL, os.Getenv("OPENAI_BASE_URL"))
	}
	m := &Model{cfg: cfg, provider: Provider}
	if cfg.Compatible {
		m.provider = ProviderCompatible
	}
	var problems []string
	if cfg.Compatible && cfg.Responses {
		problems = append(problems, "the Responses API is OpenAI's: a compatible server takes Chat Completions")
	}
	if cfg.Model == "" {
		problems = append(problems, "no model name (e.g. openai:gpt-4.1)")
	}
	if cfg.Compatible && cfg.BaseURL == "" {
		problems = append(problems, "no base URL (e.g. openai-compatible:http://localhost:11434/v1#llama3.1)")
	}
	if !cfg.Compatible && cfg.APIKey == "" {
		problems = append(problems, "no API key: set OPENAI_API_KEY")
	}
	if len(problems) > 0 {
		return nil, errors.New(m.provider + ": " + strings.Join(problems, "; "))
	}
	m.transport, m.key = retry.New(cfg.Retry), redact.New(cfg.APIKey)
	opts := []option.RequestOption{
		option.WithAPIKey(cmp.Or(cfg.APIKey, "none")), // local servers ignore it; the SDK wants one
		option.WithMaxRetries(0),                      // retries are model/retry's, so that each is reported
		option.WithHTTPClient(&http.Client{Transport: watchDone{m.transport}}),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	m.client = openai.NewClient(opts...)
	switch {
	case cfg.Price != nil:
		m.price, m.priced = *cfg.Price, true
	case !cfg.Compatible:
		m.price, m.priced = price.Lookup(Provider, cfg.Model)
	}
	return m, nil
}

// Name returns "openai:<model>", "openai-responses:<model>", or
// "openai-compatible:<base-url>#<model>".
func (m *Model) Name() string {
	if m.cfg.Responses {
		return ProviderResponses + ":" + m.cfg.Model
	}
	if m.cfg.Compatible {
		return ProviderCompatible + ":" + m.cfg.BaseURL + "#" + m.cfg.Model
	}
	return Provider + ":" + m.cfg.Model
}

// PriceKnown reports whether the model's calls have a known price.
func (m *Model) PriceKnown() bool { return m.priced }

// Generate sends req and returns the reply. The error is a *model.APIError.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if m.cfg.Responses {
		return m.generateResponses(ctx, req)
	}
	params, err := m.params(req)
	if err != nil {
		return model.Response{}, &model.APIError{Provider: m.provider, Kind: model.ErrBadRequest, Message: err.Error(), Err: err}
	}
	var r reply
	out, err := m.transport.Do(ctx, func(ctx context.Context) error {
		var err error
		if m.cfg.Stream {
			r, err = m.stream(ctx, &req, params)
			return err
		}
		var cc *openai.ChatCompletion
		if cc, err = m.client.Chat.Completions.New(ctx, params); err == nil {
			r = fromCompletion(cc)
		}
		if fr, ok := failedCall(err); ok {
			r, err = fr, nil
		}
		return err
	})
	if err != nil {
		return model.Response{}, out.Explain(m.apiError(err), m.key)
	}
	resp := m.response(r)
	if m.priced && r.hasUsage {
		resp.Usage.Cost, resp.Usage.CostKnown = m.price.Cost(resp.Usage), true
	}
	return resp, nil
}

func (m *Model) stream(ctx context.Context, req *model.Request, params openai.ChatCompletionNewParams) (reply, error) {
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	done := &doneFlag{}
	s := m.client.Chat.Completions.NewStreaming(context.WithValue(ctx, doneKey{}, done), params)
	defer s.Close()
	var a assembler
	onText := model.HooksFrom(ctx).OnText
	for s.Next() {
		if d := a.add(s.Current()); d != "" && onText != nil {
			onText(d)
		}
	}
	if err := s.Err(); err != nil {
		if fr, ok := failedCall(err); ok {
			return fr, nil
		}
		if e, ok := eventError(err); ok && e.kind().Temporary() {
			err = retry.Broken("an error event: "+e.Message, err)
		}
		return reply{}, m.billed(err, a.chunks > 0, m.response(a.r).Usage, req, a.received())
	}
	r, err := a.reply(done.seen)
	if err != nil {
		return r, m.billed(err, a.chunks > 0, m.response(a.r).Usage, req, a.received())
	}
	return r, nil
}

// billed marks err, the failure of a stream, with what its attempt is
// billed once the reply began: the usage it reported (a stream reports
// it last, so seldom any), with the rest estimated (retry.CutUsage).
func (m *Model) billed(err error, began bool, reported model.Usage, req *model.Request, received int) error {
	if !began {
		return err
	}
	u := retry.CutUsage(reported, req, received)
	if m.priced {
		u.Cost, u.CostKnown = m.price.Cost(u), true
	}
	return retry.Billed(err, u)
}

func (m *Model) params(req model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(m.cfg.Model),
		Messages: messages(req.System, req.Messages, m.cfg.Compatible),
	}
	if r := req.Reasoning; r != nil {
		if m.cfg.Compatible || reasons(m.cfg.Model) {
			p.ReasoningEffort = shared.ReasoningEffort(effort(*r))
		} else {
			m.ignoreReasoning()
		}
	}
	if format, ok := responseFormat(req.OutputSchema); ok {
		p.ResponseFormat = param.Override[openai.ChatCompletionNewParamsResponseFormatUnion](format)
	}
	if n := cmp.Or(req.MaxOutputTokens, m.cfg.MaxTokens); n > 0 {
		if m.cfg.Compatible {
			p.MaxTokens = openai.Int(int64(n))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(n))
		}
	}
	for _, t := range req.Tools {
		def, err := functionDef(t, t.Strict && !m.cfg.Compatible)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

// ignoreReasoning says once that the model cannot reason.
func (m *Model) ignoreReasoning() {
	m.ignored.Do(func() {
		w := m.cfg.Notice
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "ratchet: %s cannot reason: the reasoning setting is ignored\n", m.Name())
	})
}

// reasons says whether an OpenAI model takes reasoning_effort: the GPT-4
// family and earlier do not; the o-series, GPT-5 and what follows do.
func reasons(name string) bool {
	for _, old := range []string{"gpt-4", "gpt-3", "chatgpt-", "davinci", "babbage"} {
		if strings.HasPrefix(name, old) {
			return false
		}
	}
	return true
}

// effort is r's effort; a budget alone becomes the effort whose nominal
// budget (model.Reasoning.Budget) covers it.
func effort(r model.Reasoning) model.Effort {
	if r.Effort != "" {
		return r.Effort
	}
	for _, e := range model.Efforts {
		if (model.Reasoning{Effort: e}).Budget() >= r.BudgetTokens {
			return e
		}
	}
	return model.EffortMax
}

// reasoningFields are the assistant message fields in which compatible
// servers return their reasoning: DeepSeek's, and Ollama's and Groq's.
var reasoningFields = []string{"reasoning_content", "reasoning"}

// reasoningOf returns the reasoning among a message's or delta's extra
// fields, and the field it came in.
func reasoningOf(extra map[string]respjson.Field) (text, field string) {
	for _, f := range reasoningFields {
		if raw := extra[f].Raw(); raw != "" && raw != "null" {
			json.Unmarshal([]byte(raw), &text) // a non-string is no reasoning
			return text, f
		}
	}
	return "", ""
}

// functionDef passes the tool's schema through as raw JSON rather than
// decoding it into the SDK's map.
// A tool asked to be strict is, where its schema is within strict mode's
// subset (model.StrictSchema).
func functionDef(t model.ToolSpec, strict bool) (shared.FunctionDefinitionParam, error) {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	raw, err := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict,omitempty"`
	}{t.Name, t.Description, schema, strict && model.StrictSchema(schema)})
	if err != nil {
		return shared.FunctionDefinitionParam{}, errors.New("tool " + t.Name + ": input schema is not valid JSON")
	}
	return param.Override[shared.FunctionDefinitionParam](json.RawMessage(raw)), nil
}

// messages converts the conversation. Each message is converted once per
// call. For a compatible server, an assistant turn's thinking goes back in
// the field it came in; OpenAI takes no reasoning back.
func messages(system string, msgs []model.Message, compatible bool) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+1)
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	var text, thought strings.Builder
	for _, msg := range msgs {
		text.Reset()
		if msg.Role == model.Assistant {
			a := openai.ChatCompletionAssistantMessageParam{}
			field := ""
			thought.Reset()
			for _, b := range msg.Content {
				switch b.Type {
				case model.Thinking:
					if compatible && slices.Contains(reasoningFields, b.Name) {
						field = b.Name
						thought.WriteString(b.Text)
					}
				case model.Text:
					join(&text, b.Text)
				case model.ToolUse:
					a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID:       b.ID,
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: string(b.Input)},
						},
					})
				}
			}
			if text.Len() > 0 || len(a.ToolCalls) == 0 {
				a.Content.OfString = openai.String(text.String())
			}
			if field != "" {
				a.SetExtraFields(map[string]any{field: thought.String()})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
			continue
		}
		// Tool results first: they must follow the assistant's tool calls.
		for _, b := range msg.Content {
			if b.Type == model.ToolResult {
				content := b.Text
				if b.IsError && !strings.HasPrefix(content, "error") {
					content = "error: " + content
				}
				out = append(out, openai.ToolMessage(content, b.ID))
			} else if b.Type == model.Text {
				join(&text, b.Text)
			}
		}
		if text.Len() > 0 {
			out = append(out, openai.UserMessage(text.String()))
		}
	}
	return out
}

func join(b *strings.Builder, s string) {
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString(s)
}

// reply is what either path (whole or streamed) read, before it is
// normalised into a Response.
type reply struct {
	model    string
	thinking string
	field    string // the field thinking came in
	text     string
	refusal  string // also in text
	calls    []call
	finish   string
	usage    openai.CompletionUsage
	hasUsage bool
}

type call struct {
	id, name string
	args     string
}

func fromCompletion(cc *openai.ChatCompletion) reply {
	r := reply{model: cc.Model, usage: cc.Usage, hasUsage: cc.JSON.Usage.Valid() && cc.Usage.JSON.PromptTokens.Valid()}
	if len(cc.Choices) == 0 {
		return r
	}
	ch := cc.Choices[0]
	r.finish = ch.FinishReason
	r.text = ch.Message.Content + ch.Message.Refusal
	r.refusal = ch.Message.Refusal
	r.thinking, r.field = reasoningOf(ch.Message.JSON.ExtraFields)
	for _, tc := range ch.Message.ToolCalls {
		args := tc.Function.Arguments
		if raw := tc.Function.JSON.Arguments.Raw(); strings.HasPrefix(strings.TrimSpace(raw), "{") {
			args = raw // a server that sent the arguments as an object, not a string
		}
		r.calls = append(r.calls, call{id: tc.ID, name: tc.Function.Name, args: args})
	}
	return r
}

func (m *Model) response(r reply) model.Response {
	resp := model.Response{Model: r.model, StopReason: stopReason(r.finish, len(r.calls) > 0)}
	if r.refusal != "" {
		resp.StopReason = "refusal"
	}
	resp.Content = make([]model.Block, 0, len(r.calls)+2)
	if r.field != "" {
		resp.Content = append(resp.Content, model.Block{Type: model.Thinking, Text: r.thinking, Name: r.field})
	}
	if r.text != "" {
		resp.Content = append(resp.Content, model.TextBlock(r.text))
	}
	for _, c := range r.calls {
		id := c.id
		if id == "" {
			id = "call_ratchet_" + strconv.FormatInt(m.ids.Add(1), 10)
		}
		args := c.args
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		resp.Content = append(resp.Content, model.Block{Type: model.ToolUse, ID: id, Name: c.name, Input: json.RawMessage(args)})
	}
	if r.hasUsage {
		u := r.usage
		cached, written := u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens
		resp.Usage = model.Usage{
			InputTokens:      max(0, u.PromptTokens-cached-written),
			OutputTokens:     u.CompletionTokens,
			CacheReadTokens:  cached,
			CacheWriteTokens: written,
			ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
		}
	}
	return resp
}

// stopReason normalises a finish reason to the names the rest of ratchet
// uses (Anthropic's). Some servers say "stop" after tool calls.
func stopReason(finish string, calls bool) string {
	switch {
	case finish == "length":
		return "max_tokens"
	case calls:
		return "tool_use"
	case finish == "stop" || finish == "" || finish == "eos" || finish == "end_turn":
		return "end_turn"
	case finish == "content_filter":
		return "refusal"
	}
	return finish
}

// serverError is an error as a server states it: the "error" object of an
// error reply, or of an error event inside a stream.
type serverError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"` // a string; OpenRouter sends the HTTP status
	// Status is an HTTP status the event carries (Groq's status_code,
	// OpenRouter's code); 0 when it says none.
	Status           int     `json:"status_code"`
	FailedGeneration *string `json:"failed_generation"`
}

// eventError reads err as an error event of a stream.
func eventError(err error) (serverError, bool) {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return serverError{}, false
	}
	var body struct{ Error serverError }
	json.Unmarshal(se.Event.Data, &body) // what does not parse is a server error with no message
	e := body.Error
	if e.Status == 0 {
		json.Unmarshal(e.Code, &e.Status)
	}
	return e, true
}

func (e serverError) code() string {
	var s string
	json.Unmarshal(e.Code, &s)
	return s
}

// kind classifies an error event as its HTTP status would be, else by its
// type: OpenAI's and Anthropic's names, which compatible servers reuse.
func (e serverError) kind() *model.APIError {
	k := model.ErrServer
	switch {
	case e.code() == "insufficient_quota" || e.Type == "insufficient_quota":
		k = model.ErrQuota
	case e.Status >= 400:
		k = model.KindOf(e.Status)
	case e.Type == "invalid_request_error":
		k = model.ErrBadRequest
	case e.Type == "rate_limit_exceeded" || e.Type == "rate_limit_error" || e.Type == "tokens":
		k = model.ErrRateLimited
	case e.Type == "overloaded_error":
		k = model.ErrOverloaded
	case e.Type == "authentication_error" || e.Type == "permission_error":
		k = model.ErrAuth
	}
	return &model.APIError{Kind: k, Status: e.Status}
}

// failedCall reads err as a server's refusal of the model's tool call
// (Groq: code tool_use_failed, the model's output in failed_generation)
// and returns that output as the reply: a tool call when it is one,
// {"name": ..., "arguments": ...}, else text (possibly empty).
func failedCall(err error) (reply, bool) {
	var gen *string
	var oe *openai.Error
	if errors.As(err, &oe) && oe.Code == "tool_use_failed" {
		var s string
		if json.Unmarshal([]byte(oe.JSON.ExtraFields["failed_generation"].Raw()), &s) == nil {
			gen = &s
		}
	} else if e, ok := eventError(err); ok && e.code() == "tool_use_failed" {
		gen = e.FailedGeneration
	}
	if gen == nil {
		return reply{}, false
	}
	var c struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal([]byte(*gen), &c) == nil && c.Name != "" {
		return reply{calls: []call{{name: c.Name, args: string(c.Arguments)}}, finish: "tool_calls"}, true
	}
	return reply{text: *gen, finish: "stop"}, true
}

// apiError turns an SDK or transport error into a *model.APIError.
func (m *Model) apiError(err error) *model.APIError {
	var oe *openai.Error
	var rf *responsesFailure
	if errors.As(err, &rf) {
		e := rf.e.kind()
		e.Provider, e.Message, e.Err = m.provider, rf.Error(), err
		return m.withFix(e)
	}
	if se, ok := eventError(err); ok {
		e := se.kind()
		e.Provider, e.Message, e.Err = m.provider, cmp.Or(se.Message, "an error event in the stream"), err
		return m.withFix(e)
	}
	if errors.As(err, &oe) {
		e := &model.APIError{Provider: m.provider, Status: oe.StatusCode, Kind: model.KindOf(oe.StatusCode), Message: cmp.Or(oe.Message, http.StatusText(oe.StatusCode)), Err: err}
		if oe.Code == "insufficient_quota" || oe.Type == "insufficient_quota" { // never retried: the retry transport returns it at once
			e.Kind = model.ErrQuota
		}
		return m.withFix(e)
	}
	return retry.TransportError(m.provider, err)
}

// withFix says what to do about e.
func (m *Model) withFix(e *model.APIError) *model.APIError {
	switch e.Kind {
	case model.ErrQuota:
		e.Fix = "the account's balance or quota is exhausted: add credit or raise its limit (retrying cannot help)"
	case model.ErrAuth:
		e.Fix = "check OPENAI_API_KEY (or the key in the config): it is missing, wrong or lacks access"
	case model.ErrNotFound:
		e.Fix = "check the model name " + m.cfg.Model + " and the base URL"
		if m.cfg.Compatible {
			e.Fix += " (it usually ends in /v1; is the model pulled or loaded on the server?)"
		}
	case model.ErrRateLimited, model.ErrOverloaded, model.ErrServer:
		e.Fix = "try again later or raise the time budget"
	}
	return e
}
