// Package gemini is a model.Model for Google's Gemini API
// (generateContent and streamGenerateContent), built on the official Go
// SDK (google.golang.org/genai).
//
// Requests: the system prompt goes out as systemInstruction, tools as
// function declarations with their JSON Schema as given
// (parametersJsonSchema), the conversation as contents with the roles
// "user" and "model"; consecutive messages of one role are merged. An
// assistant turn's tool_use blocks become functionCall parts and a user
// turn's tool results functionResponse parts ({"output": ...}, or
// {"error": ...} for a failed call), named after the call they answer.
//
// Replies: parts keep their order: thought parts (thought summaries) come
// back as model.Thinking, text as text, functionCall parts as tool_use
// blocks with their arguments as JSON (Gemini sends them as an object, so
// they are always valid JSON; integers beyond 2^53 keep their digits). A
// call without an id (Gemini 2.x sends none) gets one.
//
// Thought signatures: Gemini seals its reasoning in a thoughtSignature on
// whichever part it chooses (the first function call, a text part, a
// thought). It is kept in that block's Signature (base64, as on the wire)
// and sent back on the same part, as the API requires for function
// calling with thinking models (Gemini 3 refuses a tool loop's next
// request without it).
//
// Reasoning: Request.Reasoning turns on thinking with thought summaries
// (includeThoughts): Gemini 3 and later take a thinkingLevel from the
// effort, Gemini 2.5 a thinkingBudget (budget_tokens, else the effort's
// nominal budget). Thinking tokens count against maxOutputTokens, so the
// budget is added to the reply cap. Earlier models cannot think: they
// ignore the setting and say so once.
//
// Structured output: Request.OutputSchema asks for JSON of that schema
// (responseMimeType application/json with responseJsonSchema).
//
// Stop reasons: STOP is end_turn (tool_use when there are calls),
// MAX_TOKENS max_tokens, the safety stops (SAFETY, RECITATION, BLOCKLIST,
// PROHIBITED_CONTENT, SPII, IMAGE_SAFETY) and a blocked prompt refusal,
// with the reason as the reply's text when the model wrote none ("Gemini
// stopped: SAFETY"; the SDK drops the Gemini API's finishMessage, so a
// blocked prompt's blockReasonMessage is the only message there is). A
// MALFORMED_FUNCTION_CALL comes back as such text, so the loop answers it
// with an observation.
//
// Usage: input is the prompt less its cached part (cachedContentTokenCount,
// Gemini's implicit and explicit caching), output the candidates plus the
// thoughts, which Gemini bills as output and which are also reported as
// ReasoningTokens.
//
// Errors: the SDK's retries are off; a model/retry Transport under it
// retries and reports each retry. An error event inside a stream is
// classified by its code as the same error outside a stream is; a stream
// that ends before a finish reason is incomplete and asked for again.
// Failures are *model.APIError.
package gemini

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/genai"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
	"github.com/ratchetloop/ratchet/redact"
)

// Provider is the provider name in errors, prices and model strings.
const Provider = "gemini"

// Config configures a Model. Model is required; the zero value of every
// other field means its default.
type Config struct {
	// Model is the API's model name, e.g. "gemini-2.5-flash".
	Model string
	// APIKey defaults to $GEMINI_API_KEY, else $GOOGLE_API_KEY. The SDK
	// sends it in a header; it never appears in errors.
	APIKey string
	// BaseURL defaults to $GOOGLE_GEMINI_BASE_URL, else the SDK's
	// (https://generativelanguage.googleapis.com/).
	BaseURL string
	// MaxTokens caps a reply when Request.MaxOutputTokens is 0; 0 leaves
	// it to the server.
	MaxTokens int
	// Stream asks for a streamed reply and passes its text to
	// model.Hooks.OnText as it arrives. The Response is the same as without.
	Stream bool
	// Retry configures transport retries (see model/retry).
	Retry retry.Config
	// Price overrides the price table's entry for Model.
	Price *price.Price
	// NoEnv leaves the environment unread: the caller resolved it already.
	NoEnv bool
	// Notice receives what the model says once about a setting it ignores;
	// nil means os.Stderr.
	Notice io.Writer
}

// Model calls the Gemini API. It is safe for concurrent use.
type Model struct {
	cfg       Config
	client    *genai.Client
	transport *retry.Transport
	key       *redact.Redactor
	price     price.Price
	priced    bool
	ids       atomic.Int64 // for function calls the server sent without an id
	ignored   sync.Once
}

var (
	_ model.Model  = (*Model)(nil)
	_ model.Named  = (*Model)(nil)
	_ model.Priced = (*Model)(nil)
)

// New returns a Model. It fails if no model name or API key is configured.
func New(cfg Config) (*Model, error) {
	if !cfg.NoEnv {
		cfg.APIKey = cmp.Or(cfg.APIKey, os.Getenv("GEMINI_API_KEY"), os.Getenv("GOOGLE_API_KEY"))
		cfg.BaseURL = cmp.Or(cfg.BaseURL, os.Getenv("GOOGLE_GEMINI_BASE_URL"))
	}
	var problems []string
	if cfg.Model == "" {
		problems = append(problems, "no model name (e.g. gemini:gemini-2.5-flash)")
	}
	if cfg.APIKey == "" {
		problems = append(problems, "no API key: set GEMINI_API_KEY")
	}
	if len(problems) > 0 {
		return nil, errors.New(Provider + ": " + strings.Join(problems, "; "))
	}
	m := &Model{cfg: cfg, transport: retry.New(cfg.Retry), key: redact.New(cfg.APIKey)}
	cc := &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: &http.Client{Transport: m.transport}, // no RetryOptions: the SDK makes one attempt
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    cfg.BaseURL,
			APIVersion: "v1beta", // thinking, thought signatures and JSON Schema tools are v1beta's
		},
	}
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, errors.New(Provider + ": " + m.key.String(err.Error()))
	}
	m.client = client
	if cfg.Price != nil {
		m.price, m.priced = *cfg.Price, true
	} else {
		m.price, m.priced = price.Lookup(Provider, cfg.Model)
	}
	return m, nil
}

// Name returns "gemini:<model>".
func (m *Model) Name() string { return Provider + ":" + m.cfg.Model }

// PriceKnown reports whether the model's calls have a known price.
func (m *Model) PriceKnown() bool { return m.priced }

// Generate sends req and returns the reply. The error is a *model.APIError.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	contents, config, err := m.params(req)
	if err != nil {
		return model.Response{}, &model.APIError{Provider: Provider, Kind: model.ErrBadRequest, Message: err.Error(), Err: err}
	}
	var resp model.Response
	out, err := m.transport.Do(ctx, func(ctx context.Context) (err error) {
		defer noPanic(&err)
		a := &assembler{}
		if m.cfg.Stream {
			onText := model.HooksFrom(ctx).OnText
			for chunk, err := range m.client.Models.GenerateContentStream(ctx, m.cfg.Model, contents, config) {
				if err != nil {
					return m.billed(streamError(err), a, &req)
				}
				if d := a.add(chunk); d != "" && onText != nil {
					onText(d)
				}
			}
			if !a.finished() {
				return m.billed(fmt.Errorf("stream ended before a finish reason (%d chunks): %w", a.chunks, retry.ErrIncomplete), a, &req)
			}
		} else {
			r, err := m.client.Models.GenerateContent(ctx, m.cfg.Model, contents, config)
			if err != nil {
				return err
			}
			a.add(r)
		}
		resp = a.response(func() string { return "call_ratchet_" + strconv.FormatInt(m.ids.Add(1), 10) })
		return nil
	})
	if err != nil {
		return model.Response{}, out.Explain(m.apiError(err), m.key)
	}
	if m.priced && resp.Usage != (model.Usage{}) {
		resp.Usage.Cost, resp.Usage.CostKnown = m.price.Cost(resp.Usage), true
	}
	return resp, nil
}

// billed marks err, the failure of a stream, with what its attempt is
// billed once the reply began: the usage its last chunk reported, with
// the rest estimated (retry.CutUsage).
func (m *Model) billed(err error, a *assembler, req *model.Request) error {
	if a.chunks == 0 {
		return err
	}
	received := 0
	for _, b := range a.blocks {
		received += len(b.Text) + len(b.Input)
	}
	u := retry.CutUsage(a.response(func() string { return "" }).Usage, req, received)
	if m.priced {
		u.Cost, u.CostKnown = m.price.Cost(u), true
	}
	return retry.Billed(err, u)
}

// malformedReply is a reply the SDK could not read: its converters index
// a reply's JSON without checking its types, so that a server's
// `"candidates": ""` panics inside it. A server's reply must not crash
// ratchet: the panic becomes this error.
type malformedReply struct{ why string }

func (e *malformedReply) Error() string { return "the reply does not parse: " + e.why }

// noPanic turns a panic in the SDK into a *malformedReply in *err.
func noPanic(err *error) {
	if p := recover(); p != nil {
		*err = &malformedReply{fmt.Sprint(p)}
	}
}

// streamError sorts an error met inside a stream: an error event that a
// retry may cure, and an event that does not decode (the stream was cut
// in the middle of one), are a broken reply, which the transport asks for
// again; any other error event is returned as it is and classified as
// the same error outside a stream.
func streamError(err error) error {
	var ae genai.APIError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return retry.Broken("a stream event did not decode", err)
	case !errors.As(err, &ae):
		return err // the connection's: the transport knows a reset
	case (&model.APIError{Kind: kindOf(ae)}).Temporary():
		return retry.Broken("an error event: "+ae.Message, err)
	}
	return err
}

func (m *Model) params(req model.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	config := &genai.GenerateContentConfig{}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	var decls []*genai.FunctionDeclaration
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(schema) {
			return nil, nil, errors.New("tool " + t.Name + ": input schema is not valid JSON")
		}
		decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: schema})
	}
	if len(decls) > 0 {
		config.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	if len(req.OutputSchema) > 0 {
		if !json.Valid(req.OutputSchema) {
			return nil, nil, errors.New("the output schema is not valid JSON")
		}
		config.ResponseMIMEType, config.ResponseJsonSchema = "application/json", req.OutputSchema
	}
	maxOut := cmp.Or(req.MaxOutputTokens, m.cfg.MaxTokens)
	if r := req.Reasoning; r != nil {
		if tc := thinking(m.cfg.Model, *r); tc != nil {
			config.ThinkingConfig = tc
			if maxOut > 0 {
				maxOut += r.Budget()
			}
		} else {
			m.ignored.Do(func() {
				w := m.cfg.Notice
				if w == nil {
					w = os.Stderr
				}
				fmt.Fprintf(w, "ratchet: %s cannot reason: the reasoning setting is ignored\n", m.Name())
			})
		}
	}
	if maxOut > 0 {
		config.MaxOutputTokens = int32(min(maxOut, 1<<31-1))
	}
	return contents(req.Messages), config, nil
}

// thinking is the thinkingConfig for r on the named model; nil for a
// model that cannot think (Gemini 2.0 and earlier).
func thinking(name string, r model.Reasoning) *genai.ThinkingConfig {
	name = strings.TrimPrefix(name, "models/")
	for _, old := range []string{"gemini-1", "gemini-2.0", "gemini-pro", "gemini-ultra"} {
		if strings.HasPrefix(name, old) {
			return nil
		}
	}
	tc := &genai.ThinkingConfig{IncludeThoughts: true}
	if strings.HasPrefix(name, "gemini-2.5") || r.Effort == "" {
		// Gemini 2.5 takes only a budget; a budget alone is one for Gemini 3 too.
		b := int32(min(r.Budget(), 1<<31-1))
		tc.ThinkingBudget = &b
		return tc
	}
	switch r.Effort {
	case model.EffortLow:
		tc.ThinkingLevel = genai.ThinkingLevelLow
	case model.EffortMedium:
		tc.ThinkingLevel = genai.ThinkingLevelMedium
	default:
		tc.ThinkingLevel = genai.ThinkingLevelHigh
	}
	return tc
}

// contents converts the conversation, merging consecutive messages of one
// role. A tool result is named after the call it answers (Gemini matches
// them by name); the call's id goes with it.
func contents(msgs []model.Message) []*genai.Content {
	names := map[string]string{}
	out := make([]*genai.Content, 0, len(msgs))
	for _, msg := range msgs {
		role := genai.RoleUser
		if msg.Role == model.Assistant {
			role = genai.RoleModel
		}
		var parts []*genai.Part
		for _, b := range msg.Content {
			var p *genai.Part
			switch b.Type {
			case model.Text:
				if b.Text == "" && b.Signature == "" {
					continue
				}
				p = &genai.Part{Text: b.Text}
			case model.Thinking:
				if msg.Role != model.Assistant {
					continue
				}
				p = &genai.Part{Text: b.Text, Thought: true}
			case model.ToolUse:
				names[b.ID] = b.Name
				p = &genai.Part{FunctionCall: &genai.FunctionCall{ID: b.ID, Name: b.Name, Args: args(b.Input)}}
			case model.ToolResult:
				key := "output"
				if b.IsError {
					key = "error"
				}
				p = &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: b.ID, Name: names[b.ID], Response: map[string]any{key: b.Text}}}
			default:
				continue // redacted thinking is Anthropic's
			}
			if msg.Role == model.Assistant && b.Signature != "" {
				// A signature that is not base64 is not Gemini's: it is not sent.
				p.ThoughtSignature, _ = base64.StdEncoding.DecodeString(b.Signature)
			}
			if b.Type == model.Thinking && p.ThoughtSignature == nil && p.Text == "" {
				continue
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, &genai.Content{Role: role, Parts: parts})
	}
	return out
}

// args decodes a call's arguments for the wire, numbers kept as written;
// arguments that are not a JSON object (the loop replaces those in the
// history) go as none.
func args(in json.RawMessage) map[string]any {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// assembler builds a Response from a whole reply or a stream's chunks.
type assembler struct {
	blocks  []model.Block
	finish  genai.FinishReason
	message string // the finish message, or why the prompt was blocked
	blocked bool
	usage   *genai.GenerateContentResponseUsageMetadata
	model   string
	chunks  int
}

// add takes one reply or chunk and returns text to show now, if any.
func (a *assembler) add(r *genai.GenerateContentResponse) string {
	a.chunks++
	if r == nil {
		return ""
	}
	a.model = cmp.Or(r.ModelVersion, a.model)
	if r.UsageMetadata != nil {
		a.usage = r.UsageMetadata // cumulative: the last one counts
	}
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
		a.blocked = true
		a.message = strings.TrimSpace("the prompt was blocked (" + string(pf.BlockReason) + "): " + pf.BlockReasonMessage)
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return ""
	}
	c := r.Candidates[0]
	if c.FinishReason != "" {
		a.finish, a.message = c.FinishReason, cmp.Or(c.FinishMessage, a.message)
	}
	if c.Content == nil {
		return ""
	}
	var shown strings.Builder
	for _, p := range c.Content.Parts {
		if p == nil {
			continue
		}
		sig := ""
		if len(p.ThoughtSignature) > 0 {
			sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
		}
		switch {
		case p.FunctionCall != nil:
			in, err := json.Marshal(p.FunctionCall.Args)
			if err != nil || p.FunctionCall.Args == nil {
				in = []byte("{}")
			}
			a.blocks = append(a.blocks, model.Block{Type: model.ToolUse, ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Input: in, Signature: sig})
		case p.Thought:
			a.extend(model.Thinking, p.Text, sig)
		case p.Text != "" || sig != "":
			a.extend(model.Text, p.Text, sig)
			shown.WriteString(p.Text)
		}
	}
	return shown.String()
}

// extend adds a part's text to the last block if it is of type t and the
// two do not both carry a signature, else starts a block. Streamed text
// arrives in many parts, the signature on one of them (the first, in
// recorded Gemini 2.5 streams): the block keeps it and goes back as one
// part.
func (a *assembler) extend(t model.BlockType, text, sig string) {
	if n := len(a.blocks); n > 0 && a.blocks[n-1].Type == t && (a.blocks[n-1].Signature == "" || sig == "") {
		a.blocks[n-1].Text += text
		a.blocks[n-1].Signature = cmp.Or(a.blocks[n-1].Signature, sig)
		return
	}
	a.blocks = append(a.blocks, model.Block{Type: t, Text: text, Signature: sig})
}

// finished says whether a stream gave its end: a finish reason, or a
// blocked prompt.
func (a *assembler) finished() bool { return a.finish != "" || a.blocked }

func (a *assembler) response(newID func() string) model.Response {
	resp := model.Response{Model: a.model, Content: make([]model.Block, 0, len(a.blocks)+1)}
	calls, text := false, false
	for _, b := range a.blocks {
		if b.Type == model.ToolUse {
			calls = true
			if b.ID == "" {
				b.ID = newID()
			}
		}
		text = text || b.Type == model.Text && b.Text != ""
		resp.Content = append(resp.Content, b)
	}
	switch a.finish {
	case genai.FinishReasonMaxTokens:
		resp.StopReason = "max_tokens"
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety:
		resp.StopReason = "refusal"
	case genai.FinishReasonMalformedFunctionCall, genai.FinishReasonUnexpectedToolCall:
		resp.StopReason = strings.ToLower(string(a.finish))
	case genai.FinishReasonStop, "":
		resp.StopReason = "end_turn"
		if calls {
			resp.StopReason = "tool_use"
		}
	default:
		resp.StopReason = strings.ToLower(string(a.finish))
	}
	if a.blocked {
		resp.StopReason = "refusal"
	}
	if !text && !calls && (resp.StopReason != "end_turn" || a.blocked) {
		// Say why there is no answer: the refusal's reason, or Gemini's
		// message quoting a malformed call.
		why := cmp.Or(a.message, "Gemini stopped: "+string(a.finish))
		resp.Content = append(resp.Content, model.TextBlock(why))
	}
	if u := a.usage; u != nil {
		cached := int64(u.CachedContentTokenCount)
		resp.Usage = model.Usage{
			InputTokens:     max(0, int64(u.PromptTokenCount)+int64(u.ToolUsePromptTokenCount)-cached),
			OutputTokens:    int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
			CacheReadTokens: cached,
			ReasoningTokens: int64(u.ThoughtsTokenCount),
		}
	}
	return resp
}

// kindOf classifies an API error by its HTTP code, else by its status
// (google.rpc.Code names): a daily quota or a prepaid credit used up is a
// spent quota (retry.QuotaSpent), not a rate limit.
func kindOf(ae genai.APIError) model.ErrorKind {
	if body, err := json.Marshal(map[string]genai.APIError{"error": ae}); err == nil && retry.QuotaSpent(body) {
		return model.ErrQuota
	}
	if ae.Code >= 400 {
		return model.KindOf(ae.Code)
	}
	switch ae.Status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return model.ErrBadRequest
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return model.ErrAuth
	case "NOT_FOUND":
		return model.ErrNotFound
	case "RESOURCE_EXHAUSTED":
		return model.ErrRateLimited
	case "UNAVAILABLE":
		return model.ErrOverloaded
	case "DEADLINE_EXCEEDED":
		return model.ErrTimeout
	}
	return model.ErrServer
}

// apiError turns an SDK or transport error into a *model.APIError.
func (m *Model) apiError(err error) *model.APIError {
	var ae genai.APIError
	var bad *malformedReply
	switch {
	case errors.As(err, &bad):
		return &model.APIError{Provider: Provider, Kind: model.ErrServer, Message: bad.Error(), Err: err}
	case !errors.As(err, &ae):
		return retry.TransportError(Provider, err)
	}
	e := &model.APIError{Provider: Provider, Kind: kindOf(ae), Message: cmp.Or(ae.Message, ae.Status), Err: err}
	if ae.Code >= 400 {
		e.Status = ae.Code
	}
	switch e.Kind {
	case model.ErrQuota:
		e.Fix = "the project's quota or prepaid credit is spent: wait for it to reset, or raise it (retrying now cannot help)"
	case model.ErrAuth:
		e.Fix = "check GEMINI_API_KEY (or the key in the config): it is missing, wrong or lacks access"
	case model.ErrNotFound:
		e.Fix = "check the model name " + m.cfg.Model + " and the base URL"
	case model.ErrRateLimited, model.ErrOverloaded, model.ErrServer:
		e.Fix = "try again later or raise the time budget"
	}
	return e
}
