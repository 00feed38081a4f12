// Package anthropic is a model.Model for Anthropic's Messages API, built on
// the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// Requests: the system prompt, the tools and the conversation go out as
// Messages API parameters; consecutive messages of one role are merged,
// since the API requires the roles to alternate. The stable prefix (the
// tools and the system prompt) carries cache_control breakpoints on every
// request, and so does the latest message, so that a long loop reads its
// history from the prompt cache instead of paying full price for it each
// step.
//
// Replies: text and tool_use blocks keep their order (the text is the
// thought); tool inputs are passed through byte for byte, valid JSON or
// not; usage includes cache reads and writes, and cost comes from
// model/price.
//
// Thinking: Request.Reasoning turns on extended thinking (a budget of
// thinking tokens, with the interleaved-thinking beta so that the model
// thinks between tool calls) or, on models that have it (Claude 4.6 and
// later), adaptive thinking with output_config.effort. The thinking
// budget comes on top of the reply cap. thinking and redacted_thinking
// blocks come back as model.Thinking and model.RedactedThinking and are
// sent back with their signatures unchanged, as the API requires in a tool
// loop; a thinking block with no signature (another provider's) is not
// sent. A model that cannot think (Claude 3.5 and earlier) ignores the
// setting and says so once.
//
// Structured output: a tool marked Strict (a typed answer's finish) is
// sent strict, and Request.OutputSchema as output_config.format, on models
// that have structured outputs (Claude Sonnet 4.5, Haiku 4.5, Opus 4.1 and
// later) when the schema is within strict mode's subset
// (model.StrictSchema); otherwise as before, the schema check the gate.
//
// Transport: the SDK's own retries are off; a model/retry Transport under
// it retries and reports each retry through model.Hooks. Failures are
// *model.APIError.
package anthropic

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

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
	"github.com/ratchetloop/ratchet/redact"
)

// Provider is the provider name in errors, prices and model strings.
const Provider = "anthropic"

// DefaultMaxTokens caps a reply when the request does not say.
const DefaultMaxTokens = 8192

// Config configures a Model. Model is required; the zero value of every
// other field means its default.
type Config struct {
	// Model is the API's model name, e.g. "claude-sonnet-4-5".
	Model string
	// APIKey defaults to $ANTHROPIC_API_KEY. The SDK sends it in a header;
	// it never appears in errors.
	APIKey string
	// BaseURL defaults to $ANTHROPIC_BASE_URL, else the SDK's
	// (https://api.anthropic.com).
	BaseURL string
	// MaxTokens caps a reply when Request.MaxOutputTokens is 0 (default
	// DefaultMaxTokens; the API requires a cap).
	MaxTokens int
	// Stream asks for a streamed reply and passes its text to
	// model.Hooks.OnText as it arrives. The Response is the same as without.
	Stream bool
	// NoHistoryCache leaves the cache breakpoint off the latest message, so
	// only the stable prefix (tools and system) is cached.
	NoHistoryCache bool
	// Retry configures transport retries (see model/retry).
	Retry retry.Config
	// Price overrides the price table's entry for Model, e.g. for a model
	// the table does not list yet.
	Price *price.Price
	// NoEnv leaves the environment unread: the caller resolved it already
	// (model/provider does, through its own Getenv).
	NoEnv bool
	// Notice receives what the model says once about a setting it ignores
	// (reasoning on a model that cannot reason); nil means os.Stderr.
	Notice io.Writer
}

// Model calls the Messages API. It is safe for concurrent use.
type Model struct {
	cfg       Config
	client    anthropic.Client
	transport *retry.Transport
	price     price.Price
	priced    bool
	// key redacts the API key from errors, which may echo it.
	key *redact.Redactor
	// ignored says once that Request.Reasoning is ignored.
	ignored sync.Once
}

var (
	_ model.Model  = (*Model)(nil)
	_ model.Named  = (*Model)(nil)
	_ model.Priced = (*Model)(nil)
)

// New returns a Model. It fails if no model name or API key is configured.
func New(cfg Config) (*Model, error) {
	if !cfg.NoEnv {
		cfg.APIKey = cmp.Or(cfg.APIKey, os.Getenv("ANTHROPIC_API_KEY"))
		cfg.BaseURL = cmp.Or(cfg.BaseURL, os.Getenv("ANTHROPIC_BASE_URL"))
	}
	cfg.MaxTokens = cmp.Or(cfg.MaxTokens, DefaultMaxTokens)
	var problems []string
	if cfg.Model == "" {
		problems = append(problems, "no model name (e.g. anthropic:claude-sonnet-4-5)")
	}
	if cfg.APIKey == "" {
		problems = append(problems, "no API key: set ANTHROPIC_API_KEY")
	}
	if len(problems) > 0 {
		return nil, errors.New("anthropic: " + strings.Join(problems, "; "))
	}
	transport := retry.New(cfg.Retry)
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0), // retries are model/retry's, so that each is reported
		option.WithHTTPClient(&http.Client{Transport: transport}),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	m := &Model{cfg: cfg, client: anthropic.NewClient(opts...), transport: transport, key: redact.New(cfg.APIKey)}
	if cfg.Price != nil {
		m.price, m.priced = *cfg.Price, true
	} else {
		m.price, m.priced = price.Lookup(Provider, cfg.Model)
	}
	return m, nil
}

// Name returns "anthropic:<model>".
func (m *Model) Name() string { return Provider + ":" + m.cfg.Model }

// PriceKnown reports whether the model's calls have a known price.
func (m *Model) PriceKnown() bool { return m.priced }

// Generate sends req and returns the reply. The error is a *model.APIError.
// A reply cut off before it was complete is asked for again, under the
// retry policy (retry.Transport.Do).
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	params, opts := m.params(req)
	var resp model.Response
	out, err := m.transport.Do(ctx, func(ctx context.Context) error {
		var err error
		if m.cfg.Stream {
			resp, err = m.stream(ctx, &req, params, opts)
			return err
		}
		var msg *anthropic.Message
		if msg, err = m.client.Messages.New(ctx, params, opts...); err == nil {
			resp = fromMessage(msg)
		}
		return err
	})
	if err != nil {
		return model.Response{}, out.Explain(m.apiError(err), m.key)
	}
	if m.priced {
		resp.Usage.Cost, resp.Usage.CostKnown = m.price.Cost(resp.Usage), true
	}
	return resp, nil
}

func (m *Model) stream(ctx context.Context, req *model.Request, params anthropic.MessageNewParams, opts []option.RequestOption) (model.Response, error) {
	s := m.client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var a assembler
	onText := model.HooksFrom(ctx).OnText
	for s.Next() {
		if d := a.add(s.Current()); d != "" && onText != nil {
			onText(d)
		}
	}
	if err := s.Err(); err != nil {
		var ae *anthropic.Error
		if errors.As(err, &ae) && ae.StatusCode < 400 {
			// An error event in the middle of the stream.
			if kind := streamErrorKind(string(ae.Type())); (&model.APIError{Kind: kind}).Temporary() {
				return model.Response{}, m.billed(retry.Broken(string(ae.Type()), err), &a, req)
			}
		}
		return model.Response{}, m.billed(err, &a, req)
	}
	resp, err := a.response()
	if err != nil {
		return resp, m.billed(err, &a, req)
	}
	return resp, nil
}

// billed marks err, a stream's failure, with what its attempt is billed
// once the reply began (message_start came, with the input's usage).
func (m *Model) billed(err error, a *assembler, req *model.Request) error {
	if !a.started {
		return err
	}
	u := retry.CutUsage(a.resp.Usage, req, a.received())
	if m.priced {
		u.Cost, u.CostKnown = m.price.Cost(u), true
	}
	return retry.Billed(err, u)
}

// params builds the request and the options it needs (a beta header).
// Each message is converted once per call.
func (m *Model) params(req model.Request) (anthropic.MessageNewParams, []option.RequestOption) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(m.cfg.Model),
		MaxTokens: int64(cmp.Or(req.MaxOutputTokens, m.cfg.MaxTokens)),
		Messages:  messages(req.Messages, m.cfg.NoHistoryCache),
	}
	opts := m.thinking(&p, req.Reasoning)
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tp := &anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		if t.Strict && structured(m.cfg.Model) && model.StrictSchema(schema) {
			tp.Strict = anthropic.Bool(true)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	if s := req.OutputSchema; len(s) > 0 && structured(m.cfg.Model) && model.StrictSchema(s) {
		raw, _ := json.Marshal(map[string]json.RawMessage{"type": json.RawMessage(`"json_schema"`), "schema": s})
		p.OutputConfig.Format = param.Override[anthropic.JSONOutputFormatParam](json.RawMessage(raw))
	}
	// Cache breakpoints (at most four are allowed): the last tool caches
	// the tool list, the system block caches tools + system, and the last
	// block of the latest message caches the history up to it, which the
	// next step's request extends.
	if n := len(p.Tools); n > 0 {
		p.Tools[n-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	return p, opts
}

// interleavedBeta lets a model with extended thinking think between tool
// calls (adaptive thinking does so without it).
const interleavedBeta = "interleaved-thinking-2025-05-14"

// thinking sets p's thinking from r (see the package doc).
func (m *Model) thinking(p *anthropic.MessageNewParams, r *model.Reasoning) []option.RequestOption {
	if r == nil {
		return nil
	}
	v := versionOf(m.cfg.Model)
	if !v.thinks() {
		m.ignored.Do(func() {
			w := m.cfg.Notice
			if w == nil {
				w = os.Stderr
			}
			fmt.Fprintf(w, "ratchet: %s cannot think: the reasoning setting is ignored\n", m.Name())
		})
		return nil
	}
	budget := int64(r.Budget())
	p.MaxTokens += budget // the cap is the answer's; thinking comes on top
	if r.Effort != "" && v.effort() {
		p.OutputConfig.Effort = anthropic.OutputConfigEffort(r.Effort)
	}
	if r.BudgetTokens == 0 && v.adaptive() {
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
		return nil
	}
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(budget)
	if v.major >= 4 {
		return []option.RequestOption{option.WithHeaderAdd("anthropic-beta", interleavedBeta)}
	}
	return nil
}

// version is a Claude model's family and version, read from its name
// ("claude-sonnet-4-5", "claude-opus-4-6-20260101", "claude-3-7-sonnet-latest").
type version struct {
	family       string
	major, minor int
}

func versionOf(name string) version {
	var v version
	var nums []int
	for _, part := range strings.Split(strings.TrimPrefix(name, "claude-"), "-") {
		n, err := strconv.Atoi(part)
		switch {
		case err != nil:
			if v.family == "" {
				v.family = part
			}
		case len(part) < 8 && len(nums) < 2: // 8 digits are a snapshot date
			nums = append(nums, n)
		}
	}
	if len(nums) > 0 {
		v.major = nums[0]
	}
	if len(nums) > 1 {
		v.minor = nums[1]
	}
	return v
}

func (v version) atLeast(major, minor int) bool {
	return v.major > major || v.major == major && v.minor >= minor
}

// thinks: extended thinking came with Claude 3.7; a name that says no
// version is taken to be a current model.
func (v version) thinks() bool { return v.major == 0 || v.atLeast(3, 7) }

// adaptive: adaptive thinking came with Claude 4.6.
func (v version) adaptive() bool { return v.major == 0 || v.atLeast(4, 6) }

// effort: output_config.effort came with Claude Opus 4.5, and every model
// from 4.6.
func (v version) effort() bool { return v.adaptive() || v.family == "opus" && v.atLeast(4, 5) }

// structured: strict tools and the JSON output format (structured
// outputs) came with Claude Sonnet 4.5, Haiku 4.5 and Opus 4.1.
func structured(name string) bool {
	v := versionOf(name)
	return v.major == 0 || v.atLeast(4, 5) || v.family == "opus" && v.atLeast(4, 1)
}

func markLast(blocks []anthropic.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	b := &blocks[len(blocks)-1]
	cc := anthropic.NewCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	}
}

// messages converts the conversation, merging consecutive messages of one
// role (the API requires alternation) and dropping empty text blocks (the
// API refuses them). Unless noCache, the last block carries a cache
// breakpoint.
func messages(msgs []model.Message, noCache bool) []anthropic.MessageParam {
	type turn struct {
		role   model.Role
		blocks []anthropic.ContentBlockParamUnion
	}
	turns := make([]turn, 0, len(msgs))
	for _, msg := range msgs {
		role := model.User
		if msg.Role == model.Assistant {
			role = model.Assistant
		}
		if n := len(turns); n == 0 || turns[n-1].role != role {
			turns = append(turns, turn{role: role, blocks: make([]anthropic.ContentBlockParamUnion, 0, len(msg.Content))})
		}
		t := &turns[len(turns)-1]
		for _, b := range msg.Content {
			switch b.Type {
			case model.Text:
				if strings.TrimSpace(b.Text) != "" {
					t.blocks = append(t.blocks, anthropic.NewTextBlock(b.Text))
				}
			case model.ToolUse:
				t.blocks = append(t.blocks, anthropic.NewToolUseBlock(b.ID, toolInput(b.Input), b.Name))
			case model.ToolResult:
				t.blocks = append(t.blocks, anthropic.NewToolResultBlock(b.ID, b.Text, b.IsError))
			case model.Thinking:
				if b.Signature != "" { // unsigned thinking is another provider's: the API would refuse it
					t.blocks = append(t.blocks, anthropic.NewThinkingBlock(b.Signature, b.Text))
				}
			case model.RedactedThinking:
				t.blocks = append(t.blocks, anthropic.NewRedactedThinkingBlock(b.Signature))
			}
		}
	}
	out := make([]anthropic.MessageParam, len(turns))
	for i, t := range turns {
		if len(t.blocks) == 0 {
			// The API refuses an empty message; the turn still happened.
			t.blocks = append(t.blocks, anthropic.NewTextBlock("(empty)"))
		}
		if t.role == model.User {
			// The API wants a turn's tool results before anything else in it.
			slices.SortStableFunc(t.blocks, func(a, b anthropic.ContentBlockParamUnion) int {
				return cmp.Compare(rank(a), rank(b))
			})
		}
		if i == len(turns)-1 && !noCache {
			markLast(t.blocks)
		}
		if t.role == model.Assistant {
			out[i] = anthropic.NewAssistantMessage(t.blocks...)
		} else {
			out[i] = anthropic.NewUserMessage(t.blocks...)
		}
	}
	return out
}

func rank(b anthropic.ContentBlockParamUnion) int {
	if b.OfToolResult != nil {
		return 0
	}
	return 1
}

// toolInput is a recorded tool call's input as the API accepts it: a JSON
// object. Malformed input the model produced earlier (the loop told the
// model so in the tool result) is sent as {}, since the API would refuse the
// whole request otherwise.
func toolInput(in json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(in, &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return in
}

func fromMessage(msg *anthropic.Message) model.Response {
	resp := model.Response{
		StopReason: string(msg.StopReason),
		Model:      string(msg.Model),
		Usage:      usage(msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.CacheCreationInputTokens),
		Content:    make([]model.Block, 0, len(msg.Content)),
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			resp.Content = append(resp.Content, model.TextBlock(b.Text))
		case "tool_use":
			resp.Content = append(resp.Content, model.Block{Type: model.ToolUse, ID: b.ID, Name: b.Name, Input: rawInput(b.JSON.Input.Raw(), b.Input)})
		case "thinking":
			resp.Content = append(resp.Content, model.Block{Type: model.Thinking, Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			resp.Content = append(resp.Content, model.Block{Type: model.RedactedThinking, Signature: b.Data})
		}
	}
	return resp
}

// rawInput prefers the bytes the server sent for a tool input.
func rawInput(raw string, decoded json.RawMessage) json.RawMessage {
	if raw != "" {
		return json.RawMessage(raw)
	}
	return decoded
}

func usage(in, out, read, write int64) model.Usage {
	return model.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: read, CacheWriteTokens: write}
}

// apiError turns an SDK or transport error into a *model.APIError.
func (m *Model) apiError(err error) *model.APIError {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		e := &model.APIError{Provider: Provider, Status: ae.StatusCode, Kind: model.KindOf(ae.StatusCode), Message: errorMessage(ae), Err: err}
		if ae.StatusCode < 400 {
			// An error event in the middle of a stream (the reply's status was 200).
			e.Status, e.Kind = 0, streamErrorKind(string(ae.Type()))
		}
		switch e.Kind {
		case model.ErrAuth:
			e.Fix = "check ANTHROPIC_API_KEY (or the key in the config): it is missing, wrong or lacks access"
		case model.ErrNotFound:
			e.Fix = "check the model name " + m.cfg.Model + " and the base URL"
		case model.ErrRateLimited, model.ErrOverloaded, model.ErrServer:
			e.Fix = "try again later or raise the time budget"
		}
		return e
	}
	return retry.TransportError(Provider, err)
}

// streamErrorKind classifies the error type of a mid-stream error event.
func streamErrorKind(typ string) model.ErrorKind {
	switch typ {
	case "overloaded_error":
		return model.ErrOverloaded
	case "rate_limit_error":
		return model.ErrRateLimited
	case "invalid_request_error":
		return model.ErrBadRequest
	case "authentication_error", "permission_error":
		return model.ErrAuth
	}
	return model.ErrServer
}

// errorMessage is the message of the API's error body
// ({"type":"error","error":{"type":...,"message":...}}), else the status.
func errorMessage(ae *anthropic.Error) string {
	var body struct {
		Error struct{ Type, Message string }
	}
	if json.Unmarshal([]byte(ae.RawJSON()), &body) == nil && body.Error.Message != "" {
		return strings.TrimSpace(body.Error.Type + ": " + body.Error.Message)
	}
	return http.StatusText(ae.StatusCode)
}
