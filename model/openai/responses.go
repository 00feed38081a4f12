package openai

// The Responses API transport (Config.Responses; the model string
// openai-responses:MODEL).
//
// Nothing is stored server-side (store: false), so every request carries
// the whole conversation, and the reasoning a reasoning model did comes
// back encrypted (include: reasoning.encrypted_content) to be sent back as
// it came: each reasoning item is a model.Thinking block (its first
// summary part, Signature the encrypted content, Name "openai-responses"),
// its further summary parts blocks of their own without a signature. Item
// ids are never sent back: with store false the API looks them up and
// fails. Function calls are tool_use blocks keyed by call_id, arguments
// passed through as the model wrote them; a refusal part is the reply's
// text with stop reason refusal; an incomplete reply stops at max_tokens
// (or refusal, for the content filter). Usage: input less its cached part,
// output with its reasoning tokens. Streams are read to their
// response.completed event, whose response is the reply; an error event or
// a failed response is classified by its code as the same error outside a
// stream, and a stream that ends before its response is done is asked
// for again.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/retry"
)

// ProviderResponses is the Responses transport's name in model strings.
const ProviderResponses = "openai-responses"

// thinkingName marks a Thinking block as a Responses reasoning item, so
// that another provider's thinking is never sent as one.
const thinkingName = "openai-responses"

func (m *Model) generateResponses(ctx context.Context, req model.Request) (model.Response, error) {
	params, opts, err := m.responsesParams(req)
	if err != nil {
		return model.Response{}, &model.APIError{Provider: m.provider, Kind: model.ErrBadRequest, Message: err.Error(), Err: err}
	}
	var r *responses.Response
	out, err := m.transport.Do(ctx, func(ctx context.Context) error {
		var err error
		if m.cfg.Stream {
			r, err = m.streamResponses(ctx, &req, params, opts)
			return err
		}
		r, err = m.client.Responses.New(ctx, params, opts...)
		return err
	})
	if err != nil {
		return model.Response{}, out.Explain(m.apiError(err), m.key)
	}
	resp := fromResponse(r)
	if m.priced && r.JSON.Usage.Valid() {
		resp.Usage.Cost, resp.Usage.CostKnown = m.price.Cost(resp.Usage), true
	}
	return resp, nil
}

// streamResponses reads a stream to the event that ends the response.
func (m *Model) streamResponses(ctx context.Context, req *model.Request, params responses.ResponseNewParams, opts []option.RequestOption) (*responses.Response, error) {
	s := m.client.Responses.NewStreaming(ctx, params, opts...)
	defer s.Close()
	onText := model.HooksFrom(ctx).OnText
	var a responsesStream
	for s.Next() {
		d, err := a.add(s.Current())
		if err != nil {
			return nil, m.billed(err, true, model.Usage{}, req, a.received)
		}
		if onText != nil && d != "" {
			onText(d)
		}
	}
	if err := s.Err(); err != nil {
		if e, ok := eventError(err); ok && e.kind().Temporary() {
			err = retry.Broken("an error event: "+e.Message, err)
		}
		return nil, m.billed(err, a.events > 0, model.Usage{}, req, a.received)
	}
	r, err := a.response()
	if err != nil {
		return nil, m.billed(err, a.events > 0, model.Usage{}, req, a.received)
	}
	return r, nil
}

// responsesStream follows a stream's events: text deltas to show, and the
// event that ends the response with it whole. events and received (the
// bytes of its deltas) are what a cut stream is billed by.
type responsesStream struct {
	done     *responses.Response
	events   int
	received int
}

// add takes one event and returns text to show now, if any, or the error
// an error event or a failed response says.
func (a *responsesStream) add(ev responses.ResponseStreamEventUnion) (string, error) {
	a.events++
	a.received += len(ev.Delta)
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		return ev.Delta, nil
	case "response.completed", "response.incomplete":
		r := ev.Response
		a.done = &r
	case "response.failed":
		return "", eventFailure(serverError{Message: ev.Response.Error.Message, Type: string(ev.Response.Error.Code)})
	case "error":
		return "", eventFailure(serverError{Message: ev.Message, Type: ev.Code})
	}
	return "", nil
}

// response is the stream's response; a stream that ended before it was
// done is incomplete.
func (a *responsesStream) response() (*responses.Response, error) {
	if a.done == nil {
		return nil, fmt.Errorf("stream ended before the response was done: %w", retry.ErrIncomplete)
	}
	return a.done, nil
}

// responsesFailure is an error event or failed response of a stream.
type responsesFailure struct{ e serverError }

func (f *responsesFailure) Error() string {
	return cmp.Or(f.e.Message, f.e.Type, "the response failed")
}

// eventFailure is e as an error: one a retry may cure is a broken reply.
func eventFailure(e serverError) error {
	f := &responsesFailure{e}
	if e.kind().Temporary() {
		return retry.Broken("an error event: "+f.Error(), f)
	}
	return f
}

func (m *Model) responsesParams(req model.Request) (responses.ResponseNewParams, []option.RequestOption, error) {
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(m.cfg.Model), Store: openai.Bool(false)}
	if req.System != "" {
		p.Instructions = openai.String(req.System)
	}
	if n := cmp.Or(req.MaxOutputTokens, m.cfg.MaxTokens); n > 0 {
		p.MaxOutputTokens = openai.Int(int64(n))
	}
	if reasons(m.cfg.Model) {
		// Reasoning models reason whether asked or not: their reasoning must
		// come back encrypted to be carried across turns.
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if r := req.Reasoning; r != nil {
		if reasons(m.cfg.Model) {
			p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(responsesEffort(*r)), Summary: shared.ReasoningSummaryAuto}
		} else {
			m.ignoreReasoning()
		}
	}
	input, err := json.Marshal(responsesInput(req.Messages))
	if err != nil {
		return p, nil, err
	}
	opts := []option.RequestOption{option.WithJSONSet("input", json.RawMessage(input))}
	if len(req.Tools) > 0 {
		tools := make([]json.RawMessage, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema := t.InputSchema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			if !json.Valid(schema) {
				return p, nil, fmt.Errorf("tool %s: input schema is not valid JSON", t.Name)
			}
			raw, _ := json.Marshal(struct {
				Type        string          `json:"type"`
				Name        string          `json:"name"`
				Description string          `json:"description,omitempty"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      bool            `json:"strict"`
			}{"function", t.Name, t.Description, schema, t.Strict && model.StrictSchema(schema)})
			tools = append(tools, raw)
		}
		opts = append(opts, option.WithJSONSet("tools", tools))
	}
	if format, ok := jsonSchemaFormat(req.OutputSchema); ok {
		opts = append(opts, option.WithJSONSet("text", map[string]json.RawMessage{"format": format}))
	}
	return p, opts, nil
}

// responsesEffort is r's effort for the Responses API, which has no max:
// max is its highest, high.
func responsesEffort(r model.Reasoning) model.Effort {
	if e := effort(r); e != model.EffortMax {
		return e
	}
	return model.EffortHigh
}

// responsesInput converts the conversation to input items.
func responsesInput(msgs []model.Message) []any {
	type summary struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type reasoning struct {
		Type             string    `json:"type"`
		Summary          []summary `json:"summary"`
		EncryptedContent string    `json:"encrypted_content"`
	}
	var items []any
	var text strings.Builder
	for _, msg := range msgs {
		text.Reset()
		if msg.Role == model.Assistant {
			var last *reasoning // the reasoning item further summary parts belong to
			flush := func() {
				if text.Len() > 0 {
					items = append(items, map[string]string{"role": "assistant", "content": text.String()})
					text.Reset()
				}
			}
			for _, b := range msg.Content {
				switch {
				case b.Type == model.Thinking && b.Name == thinkingName && b.Signature != "":
					flush()
					last = &reasoning{Type: "reasoning", Summary: []summary{}, EncryptedContent: b.Signature}
					if b.Text != "" {
						last.Summary = append(last.Summary, summary{"summary_text", b.Text})
					}
					items = append(items, last)
				case b.Type == model.Thinking && b.Name == thinkingName && last != nil:
					last.Summary = append(last.Summary, summary{"summary_text", b.Text})
				case b.Type == model.Text:
					last = nil
					join(&text, b.Text)
				case b.Type == model.ToolUse:
					flush()
					last = nil
					items = append(items, map[string]string{"type": "function_call", "call_id": b.ID, "name": b.Name, "arguments": string(b.Input)})
				}
			}
			flush()
			continue
		}
		for _, b := range msg.Content {
			switch b.Type {
			case model.ToolResult:
				content := b.Text
				if b.IsError && !strings.HasPrefix(content, "error") {
					content = "error: " + content
				}
				items = append(items, map[string]string{"type": "function_call_output", "call_id": b.ID, "output": content})
			case model.Text:
				join(&text, b.Text)
			}
		}
		if text.Len() > 0 {
			items = append(items, map[string]string{"role": "user", "content": text.String()})
		}
	}
	return items
}

// fromResponse reads a response's output items in order.
func fromResponse(r *responses.Response) model.Response {
	resp := model.Response{Model: string(r.Model), Content: []model.Block{}}
	calls, refused := false, false
	for _, it := range r.Output {
		switch it.Type {
		case "reasoning":
			if it.EncryptedContent == "" && len(it.Summary) == 0 {
				continue // nothing to show or carry back
			}
			first := model.Block{Type: model.Thinking, Name: thinkingName, Signature: it.EncryptedContent}
			if len(it.Summary) > 0 {
				first.Text = it.Summary[0].Text
			}
			resp.Content = append(resp.Content, first)
			for _, s := range it.Summary[min(1, len(it.Summary)):] {
				resp.Content = append(resp.Content, model.Block{Type: model.Thinking, Name: thinkingName, Text: s.Text})
			}
		case "message":
			var text strings.Builder
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refused = refused || c.Refusal != ""
					text.WriteString(c.Refusal)
				}
			}
			if text.Len() > 0 {
				resp.Content = append(resp.Content, model.TextBlock(text.String()))
			}
		case "function_call":
			var args string
			if json.Unmarshal([]byte(it.JSON.Arguments.Raw()), &args) != nil {
				args = it.JSON.Arguments.Raw() // arguments sent as an object, not a string
			}
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			calls = true
			resp.Content = append(resp.Content, model.Block{Type: model.ToolUse, ID: it.CallID, Name: it.Name, Input: json.RawMessage(args)})
		}
	}
	switch {
	case refused:
		resp.StopReason = "refusal"
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "content_filter":
		resp.StopReason = "refusal"
	case r.Status == "incomplete":
		resp.StopReason = "max_tokens"
	case calls:
		resp.StopReason = "tool_use"
	default:
		resp.StopReason = "end_turn"
	}
	if r.JSON.Usage.Valid() {
		u := r.Usage
		cached := u.InputTokensDetails.CachedTokens
		resp.Usage = model.Usage{
			InputTokens:     max(0, u.InputTokens-cached),
			OutputTokens:    u.OutputTokens,
			CacheReadTokens: cached,
			ReasoningTokens: u.OutputTokensDetails.ReasoningTokens,
		}
	}
	return resp
}
