package openai

// Replays of recorded real Responses API traffic (testdata/cassettes/
// responses, see its README): the parsed reply and the next request, what
// must be carried back, against what the real client sent and the real
// server accepted. The real client stored its responses (store true) and
// sent item ids back; ratchet stores nothing, so it sends no ids and the
// reasoning's encrypted content instead: items are compared without ids.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
)

func responsesCassette(t *testing.T, name string) []modeltest.Interaction {
	return modeltest.LoadCassette(t, "testdata/cassettes/responses/"+name+".yaml")
}

func responsesModel(t *testing.T, srv *modeltest.Replay, name string, stream bool) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: "k", BaseURL: srv.URL + "/v1", Responses: true, Stream: stream, NoEnv: true, Retry: retry.Config{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// inputItems is a request's input items without their ids and statuses
// (see the file comment), the arguments of a call compacted.
func inputItems(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var r struct{ Input []map[string]any }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Input {
		delete(it, "id")
		delete(it, "status")
	}
	return r.Input
}

// A gpt-5 tool loop with reasoning: the reasoning item (its summary and
// encrypted content) and the function call go back as the real client
// sent them, ids aside; reasoning tokens are reported.
func TestCassetteResponsesReasoningToolLoop(t *testing.T) {
	rec := responsesCassette(t, "test_openai_responses_thinking_with_tool_calls")
	srv := modeltest.ServeCassette(t, rec)
	m := responsesModel(t, srv, "gpt-5", false)
	var first struct {
		Instructions string
		Input        []struct{ Content string }
		Tools        []struct {
			Name       string
			Parameters json.RawMessage
		}
	}
	if err := json.Unmarshal(rec[0].Request, &first); err != nil {
		t.Fatal(err)
	}
	req := model.Request{
		System:    first.Instructions,
		Messages:  []model.Message{user(first.Input[0].Content)},
		Tools:     []model.ToolSpec{{Name: first.Tools[0].Name, InputSchema: first.Tools[0].Parameters, Strict: true}},
		Reasoning: &model.Reasoning{Effort: model.EffortLow},
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Bodies()[0]
	for _, f := range []string{"include", "reasoning.effort", "tools.0.name", "tools.0.parameters", "tools.0.strict"} {
		if got, want := modeltest.Field(t, sent, strings.Split(f, ".")...), modeltest.Field(t, rec[0].Request, strings.Split(f, ".")...); got != want {
			t.Errorf("%s = %s, recorded %s", f, got, want)
		}
	}
	if got := modeltest.Field(t, sent, "store"); got != "false" {
		t.Errorf("store = %s, want false", got)
	}
	if len(resp.Content) < 2 || resp.Content[0].Type != model.Thinking || resp.Content[0].Signature == "" || resp.Content[len(resp.Content)-1].Type != model.ToolUse || resp.StopReason != "tool_use" {
		t.Fatalf("reply %+v, want the reasoning (encrypted) then the update_plan call", resp.Content)
	}
	if resp.Usage.ReasoningTokens != 1792 || resp.Usage.OutputTokens != 1926 || resp.Usage.InputTokens != 124 {
		t.Errorf("usage %+v, want 124 in, 1926 out of which 1792 reasoning", resp.Usage)
	}
	call := resp.Content[len(resp.Content)-1]
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Content: resp.Content},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: call.ID, Text: "plan updated"}}})
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inputItems(t, rec[1].Request), inputItems(t, srv.Bodies()[1])); diff != "" {
		t.Errorf("the next request's input differs from the recorded one (-recorded +sent):\n%s", diff)
	}
}

// decodeEvents runs a stream's bytes through the SDK's SSE decoder.
func decodeEvents(body []byte) ([]responses.ResponseStreamEventUnion, error) {
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: ioNop(body)}
	s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
	var out []responses.ResponseStreamEventUnion
	for s.Next() {
		out = append(out, s.Current())
	}
	return out, s.Err()
}

func assembleEvents(evs []responses.ResponseStreamEventUnion, _ bool) (model.Response, error) {
	var a responsesStream
	for _, ev := range evs {
		if _, err := a.add(ev); err != nil {
			return model.Response{}, err
		}
	}
	r, err := a.response()
	if err != nil {
		return model.Response{}, err
	}
	return fromResponse(r), nil
}

// gpt-4o streamed: a function call, then its answer after the call is
// carried back by call_id; every byte cut of both streams is asked for
// again or gives the whole reply.
func TestCassetteResponsesStream(t *testing.T) {
	rec := responsesCassette(t, "test_openai_responses_stream")
	srv := modeltest.ServeCassette(t, rec)
	m := responsesModel(t, srv, "gpt-4o", true)
	req := model.Request{
		Messages: []model.Message{user("What is the capital of France?")},
		Tools:    []model.ToolSpec{{Name: "get_capital", InputSchema: json.RawMessage(modeltest.Field(t, rec[0].Request, "tools", "0", "parameters"))}},
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 || resp.Content[0].Name != "get_capital" || string(resp.Content[0].Input) != `{"country":"France"}` || resp.StopReason != "tool_use" {
		t.Fatalf("reply %+v, want the get_capital call", resp.Content)
	}
	callID := resp.Content[0].ID
	if got := modeltest.Field(t, srv.Bodies()[0], "include"); got != "" {
		t.Errorf("include = %s for gpt-4o, which has no reasoning to encrypt", got)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Content: resp.Content},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: resp.Content[0].ID, Text: "Paris"}}})
	var shown strings.Builder
	resp, err = m.Generate(model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { shown.WriteString(d) }}), req)
	if err != nil {
		t.Fatal(err)
	}
	// This recording's client (2025-03) sent the call's item id (fc_…) as
	// its call_id; the API pairs a call and its output by the call's
	// call_id, which ratchet sends. The rest must match.
	recorded := inputItems(t, rec[1].Request)
	for _, it := range recorded {
		if _, ok := it["call_id"]; ok {
			it["call_id"] = callID
		}
	}
	if !strings.HasPrefix(callID, "call_") {
		t.Errorf("call id %q is not the reply's call_id", callID)
	}
	if diff := cmp.Diff(recorded, inputItems(t, srv.Bodies()[1])); diff != "" {
		t.Errorf("the next request's input differs from the recorded one (-recorded +sent):\n%s", diff)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text == "" || shown.String() != resp.Content[0].Text || resp.StopReason != "end_turn" {
		t.Errorf("reply %+v, shown %q: want the answer, shown as it streamed", resp.Content, shown.String())
	}
	for _, it := range rec {
		modeltest.EveryCut(t, it.Body, decodeEvents, assembleEvents)
	}
}

// A gpt-5 stream's usage, reasoning tokens included, comes from its
// response.completed event, and its cost from the price table.
func TestCassetteResponsesStreamUsage(t *testing.T) {
	rec := responsesCassette(t, "test_openai_responses_streaming_usage")
	srv := modeltest.ServeCassette(t, rec)
	resp, err := responsesModel(t, srv, "gpt-5", true).Generate(context.Background(), model.Request{Messages: []model.Message{user("Calculate 100 * 200 / 3")}})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: 53, OutputTokens: 469, ReasoningTokens: 448}
	p, _ := price.Lookup(Provider, "gpt-5")
	want.Cost, want.CostKnown = p.Cost(want), true
	if resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	if n := len(resp.Content); n == 0 || string(resp.Content[n-1].Input) != `{"result":6666}` {
		t.Errorf("reply %+v, want the final_result call", resp.Content)
	}
	modeltest.EveryCut(t, rec[0].Body, decodeEvents, assembleEvents)
}

// A 400 from the Responses API fails at once as a bad request with the
// server's message.
func TestCassetteResponsesError(t *testing.T) {
	srv := modeltest.ServeCassette(t, responsesCassette(t, "test_openai_responses_model_http_error"))
	_, err := responsesModel(t, srv, "gpt-4o", true).Generate(context.Background(), model.Request{Messages: []model.Message{user("What is the capital of France?")}})
	ae, ok := err.(*model.APIError)
	if !ok || ae.Kind != model.ErrBadRequest || ae.Status != 400 || !strings.Contains(ae.Message, "decimal below minimum value") || len(srv.Bodies()) != 1 {
		t.Errorf("error %v after %d requests, want one 400 bad_request with the server's message", err, len(srv.Bodies()))
	}
}

// Native structured output: the output schema goes out as a strict
// json_schema text format, as the real client sent it (its name aside),
// and the answer comes back as the JSON text after the tool loop.
func TestCassetteResponsesStructuredOutput(t *testing.T) {
	rec := responsesCassette(t, "test_native_output")
	srv := modeltest.ServeCassette(t, rec)
	m := responsesModel(t, srv, "gpt-4o", false)
	schema := json.RawMessage(modeltest.Field(t, rec[0].Request, "text", "format", "schema"))
	req := model.Request{
		Messages:     []model.Message{user("What is the largest city in the user country?")},
		Tools:        []model.ToolSpec{{Name: "get_user_country", InputSchema: json.RawMessage(modeltest.Field(t, rec[0].Request, "tools", "0", "parameters"))}},
		OutputSchema: schema,
	}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"type", "schema", "strict"} {
		if got, want := modeltest.Field(t, srv.Bodies()[0], "text", "format", f), modeltest.Field(t, rec[0].Request, "text", "format", f); got != want {
			t.Errorf("text.format.%s = %s, recorded %s", f, got, want)
		}
	}
	if got, want := modeltest.Field(t, srv.Bodies()[0], "tools", "0", "strict"), modeltest.Field(t, rec[0].Request, "tools", "0", "strict"); got != want {
		t.Errorf("a tool not asked to be strict: strict = %s, recorded %s", got, want)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Content: resp.Content},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: resp.Content[0].ID, Text: "Mexico"}}})
	resp, err = m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text != `{"city":"Mexico City","country":"Mexico"}` {
		t.Errorf("reply %+v, want the JSON answer", resp.Content)
	}
}

func ioNop(b []byte) *nopCloser { return &nopCloser{bytes.NewReader(b)} }

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
