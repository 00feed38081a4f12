package openai

// Replays of recorded real Chat Completions traffic from OpenAI, DeepSeek,
// Ollama, Groq and OpenRouter (testdata/cassettes, see its README): each
// test plays the recorded replies from a local server and checks the
// parsed reply and the next request, what ratchet must carry back, against
// what the real client sent and the real server accepted.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/retry"
)

func cassette(t *testing.T, name string) []modeltest.Interaction {
	return modeltest.LoadCassette(t, "testdata/cassettes/"+name+".yaml")
}

func replayModel(t *testing.T, srv *modeltest.Replay, name string, compatible, stream bool) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: "k", BaseURL: srv.URL + "/v1", Compatible: compatible, Stream: stream, Retry: retry.Config{MaxAttempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var rawText = cmp.Transformer("raw", func(r json.RawMessage) string { return string(r) })

func user(text string) model.Message {
	return model.Message{Role: model.User, Content: []model.Block{model.TextBlock(text)}}
}

// recorded is the first choice's message of a recorded reply, and usage.
type recorded struct {
	Choices []struct {
		Message struct {
			Content          string
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string
			ToolCalls        []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
	}
	Usage struct {
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
}

// recordedContent is a recorded reply's content as ratchet must parse it.
func recordedContent(t *testing.T, it modeltest.Interaction) []model.Block {
	t.Helper()
	var r recorded
	if err := json.Unmarshal(it.Body, &r); err != nil {
		t.Fatal(err)
	}
	msg := r.Choices[0].Message
	var out []model.Block
	switch {
	case msg.ReasoningContent != nil:
		out = append(out, model.Block{Type: model.Thinking, Text: *msg.ReasoningContent, Name: "reasoning_content"})
	case msg.Reasoning != nil:
		out = append(out, model.Block{Type: model.Thinking, Text: *msg.Reasoning, Name: "reasoning"})
	}
	if msg.Content != "" {
		out = append(out, model.TextBlock(msg.Content))
	}
	for _, c := range msg.ToolCalls {
		out = append(out, model.Block{Type: model.ToolUse, ID: c.ID, Name: c.Function.Name, Input: json.RawMessage(c.Function.Arguments)})
	}
	return out
}

// assistantWith returns the assistant message of a request body whose
// first tool call has id, or whose content is text when id is "".
func assistantWith(t *testing.T, body []byte, id, text string) string {
	t.Helper()
	for i := 0; ; i++ {
		msg := modeltest.Field(t, body, "messages", fmt.Sprint(i))
		if msg == "" {
			return ""
		}
		if modeltest.Field(t, body, "messages", fmt.Sprint(i), "role") != `"assistant"` {
			continue
		}
		if id != "" && modeltest.Field(t, body, "messages", fmt.Sprint(i), "tool_calls", "0", "id") == `"`+id+`"` ||
			id == "" && modeltest.Field(t, body, "messages", fmt.Sprint(i), "content") == text {
			return msg
		}
	}
}

// DeepSeek's thinking mode in a tool loop (deepseek-reasoner): each reply's
// reasoning_content comes back as thinking, and every later request
// carries each assistant turn's reasoning_content back, as the real client
// sent it (DeepSeek answers 400 without it), along with its text and tool
// calls; reasoning tokens are counted.
func TestCassetteDeepSeekThinkingToolLoop(t *testing.T) {
	rec := cassette(t, "test_deepseek_deferred_capability_with_thinking")
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "deepseek-reasoner", true, false)
	req := model.Request{System: "You're a dice game.", Messages: []model.Message{user("My guess is 4")}, Reasoning: &model.Reasoning{Effort: model.EffortHigh}}
	var ids []string
	for i, it := range rec {
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if diff := cmp.Diff(recordedContent(t, it), resp.Content, rawText); diff != "" {
			t.Errorf("turn %d: reply (-recorded +parsed):\n%s", i+1, diff)
		}
		var r recorded
		json.Unmarshal(it.Body, &r)
		if got, want := resp.Usage.ReasoningTokens, r.Usage.CompletionTokensDetails.ReasoningTokens; got != want || want == 0 {
			t.Errorf("turn %d: %d reasoning tokens, recorded %d", i+1, got, want)
		}
		req.Messages = append(req.Messages, model.Message{Role: model.Assistant, Content: resp.Content})
		var results []model.Block
		for _, b := range resp.Content {
			if b.Type == model.ToolUse {
				ids = append(ids, b.ID)
				results = append(results, model.Block{Type: model.ToolResult, ID: b.ID, Text: "{}"})
			}
		}
		req.Messages = append(req.Messages, model.Message{Role: model.User, Content: results})
	}
	sent := srv.Bodies()
	for i := 1; i < len(sent); i++ {
		for _, id := range ids[:i] {
			got, want := assistantWith(t, sent[i], id, ""), assistantWith(t, rec[i].Request, id, "")
			if want == "" {
				t.Fatalf("request %d: the recording has no assistant turn calling %s", i+1, id)
			}
			for _, f := range []string{"reasoning_content", "tool_calls", "content"} {
				var g, w any
				json.Unmarshal([]byte(got), &g)
				json.Unmarshal([]byte(want), &w)
				if gf, wf := pick(t, got, f), pick(t, want, f); gf != wf {
					t.Errorf("request %d, the turn calling %s: %s = %s, the real client sent %s", i+1, id, f, gf, wf)
				}
			}
		}
	}
	if got := modeltest.Field(t, sent[0], "reasoning_effort"); got != `"high"` {
		t.Errorf("reasoning_effort = %s, want \"high\"", got)
	}
}

func pick(t *testing.T, msg, field string) string {
	t.Helper()
	if msg == "" {
		return ""
	}
	return modeltest.Field(t, []byte(msg), field)
}

// Ollama (gpt-oss:20b) returns its reasoning as "reasoning": kept as
// thinking, and sent back in that field, as the real client did.
func TestCassetteOllamaReasoning(t *testing.T) {
	rec := cassette(t, "test_ollama_cloud_tool_output")
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "gpt-oss:20b", true, false)
	req := model.Request{Messages: []model.Message{user("What is the capital of France?")}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recordedContent(t, rec[0]), resp.Content, rawText); diff != "" {
		t.Errorf("reply (-recorded +parsed):\n%s", diff)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.Assistant, Content: resp.Content}, user("Reply in JSON."))
	resp, err = m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recordedContent(t, rec[1]), resp.Content, rawText); diff != "" {
		t.Errorf("second reply (-recorded +parsed):\n%s", diff)
	}
	got, want := assistantWith(t, srv.Bodies()[1], "", `"Paris."`), assistantWith(t, rec[1].Request, "", `"Paris."`)
	if pick(t, got, "reasoning") != pick(t, want, "reasoning") || pick(t, want, "reasoning") == "" {
		t.Errorf("the assistant turn sent back:\n%s\nthe real client sent:\n%s", got, want)
	}
}

// OpenAI's o3-mini: the effort goes out as reasoning_effort, as the real
// client sent it, and the reasoning tokens are counted; OpenAI itself is
// sent no reasoning back.
func TestCassetteOpenAIReasoningEffort(t *testing.T) {
	rec := cassette(t, "test_openai_model_thinking_part")[1:] // the first is the Responses API
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "o3-mini", false, false)
	history := []model.Message{user("How do I cross the street?"), {Role: model.Assistant, Content: []model.Block{{Type: model.Thinking, Text: "from elsewhere", Name: "reasoning_content"}, model.TextBlock("Look both ways.")}}, user("And a river?")}
	resp, err := m.Generate(context.Background(), model.Request{Messages: history, Reasoning: &model.Reasoning{Effort: model.EffortHigh}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.ReasoningTokens != 1792 || resp.Usage.OutputTokens != 2320 {
		t.Errorf("usage %+v, want the recorded 1792 reasoning tokens of 2320", resp.Usage)
	}
	sent := srv.Bodies()[0]
	if got, want := modeltest.Field(t, sent, "reasoning_effort"), modeltest.Field(t, rec[0].Request, "reasoning_effort"); got != want {
		t.Errorf("reasoning_effort = %s, the real client sent %s", got, want)
	}
	if bytes.Contains(sent, []byte("reasoning_content")) || bytes.Contains(sent, []byte("from elsewhere")) {
		t.Errorf("OpenAI was sent reasoning back: %s", sent)
	}
}

// decodeChunks runs raw SSE bytes through the SDK's decoder.
func decodeChunks(data []byte) ([]openai.ChatCompletionChunk, error) {
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
	s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var out []openai.ChatCompletionChunk
	for s.Next() {
		out = append(out, s.Current())
	}
	return out, s.Err()
}

// assembleChunks assembles decoded chunks as Generate does.
func assembleChunks(m *Model) func([]openai.ChatCompletionChunk, bool) (model.Response, error) {
	return func(chunks []openai.ChatCompletionChunk, done bool) (model.Response, error) {
		var a assembler
		for _, c := range chunks {
			a.add(c)
		}
		r, err := a.reply(done)
		if err != nil {
			return model.Response{}, err
		}
		return m.response(r), nil
	}
}

// DeepSeek's streamed reasoning_content assembles to one thinking block
// before the text, served whole or cut at every byte (see
// modeltest.EveryCut).
func TestCassetteDeepSeekThinkingStreamCutAnywhere(t *testing.T) {
	rec := cassette(t, "test_deepseek_model_thinking_stream")
	body := rec[0].Body
	m := &Model{cfg: Config{Model: "deepseek-reasoner", Compatible: true}}
	chunks, err := decodeChunks(body)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := assembleChunks(m)(chunks, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Content) != 2 || whole.Content[0].Type != model.Thinking || whole.Content[0].Name != "reasoning_content" || len(whole.Content[0].Text) < 100 || whole.Content[1].Type != model.Text || whole.Usage.ReasoningTokens == 0 {
		t.Fatalf("assembled %+v", whole)
	}
	modeltest.EveryCut(t, body, decodeChunks, assembleChunks(m))
	srv := modeltest.ServeCassette(t, rec)
	streamed, err := replayModel(t, srv, "deepseek-reasoner", true, true).Generate(context.Background(), model.Request{Messages: []model.Message{user("Hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(whole.Content, streamed.Content, rawText); diff != "" {
		t.Errorf("served, the stream differs (-assembled +served):\n%s", diff)
	}
}

// failedGeneration is what the server said the model generated, read from
// a recorded error reply or the error event of a recorded stream.
func failedGeneration(t *testing.T, body []byte) string {
	t.Helper()
	for _, line := range bytes.Split(body, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.HasPrefix(data, []byte(`{"error"`)) {
			body = data
		}
	}
	var e struct {
		Error struct {
			FailedGeneration *string `json:"failed_generation"`
		}
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.FailedGeneration == nil {
		t.Fatalf("no failed_generation in %.200s", body)
	}
	return *e.Error.FailedGeneration
}

// Groq refuses a tool call that does not match its schema with
// tool_use_failed, whole (a 400) or as an error event in a stream (after a
// 200). Either way the failed generation comes back once, as the reply,
// never retried: a tool call when it is one (its arguments byte for byte,
// for the loop to answer as it answers any bad call), else its text.
func TestCassetteGroqToolUseFailed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		call   bool
	}{
		{"test_tool_use_failed_error", false, true},
		{"test_tool_use_failed_error_streaming", true, true},
		{"test_tool_use_failed_error_with_text", false, false},
		{"test_tool_use_failed_error_streaming_with_text", true, false},
	} {
		rec := cassette(t, tc.name)
		gen := failedGeneration(t, rec[0].Body)
		srv := modeltest.ServeCassette(t, rec)
		m := replayModel(t, srv, "openai/gpt-oss-120b", true, tc.stream)
		tools := []model.ToolSpec{{Name: "get_something_by_name", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)}}
		resp, err := m.Generate(context.Background(), model.Request{Tools: tools, Messages: []model.Message{user("Call the tool with invalid parameters first.")}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var want []model.Block
		if tc.call {
			var c struct {
				Name      string
				Arguments json.RawMessage
			}
			if err := json.Unmarshal([]byte(gen), &c); err != nil {
				t.Fatal(err)
			}
			want = []model.Block{{Type: model.ToolUse, ID: "call_ratchet_1", Name: c.Name, Input: c.Arguments}}
		} else if gen != "" {
			want = []model.Block{model.TextBlock(gen)}
		}
		if diff := cmp.Diff(want, resp.Content, rawText, cmpEmpty); diff != "" {
			t.Errorf("%s: reply (-failed generation +parsed):\n%s", tc.name, diff)
		}
		if n := len(srv.Bodies()); n != 1 {
			t.Errorf("%s: %d requests, want 1", tc.name, n)
		}
	}
}

var cmpEmpty = cmp.Transformer("empty", func(b []model.Block) []model.Block {
	if len(b) == 0 {
		return nil
	}
	return b
})

// OpenRouter's "Token limit reached" arrives as an error in a stream's
// chunk (code 400), after a 200. It fails at once as the bad request it
// is, exactly as the same error outside a stream (an HTTP 400 with that
// error object) does: neither is retried.
func TestCassetteStreamErrorAsUnstreamed(t *testing.T) {
	rec := cassette(t, "test_openrouter_stream_error")
	var errObject []byte
	for _, line := range bytes.Split(rec[0].Body, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.Contains(data, []byte(`"error"`)) {
			errObject = data
		}
	}
	if errObject == nil {
		t.Fatal("no error in the recorded stream")
	}
	unstreamed := []modeltest.Interaction{{Status: 400, ContentType: "application/json", Body: errObject}}
	var errs []*model.APIError
	for _, c := range []struct {
		its    []modeltest.Interaction
		stream bool
	}{{append(rec, rec...), true}, {append(unstreamed, unstreamed...), false}} {
		srv := modeltest.ServeCassette(t, c.its)
		_, err := replayModel(t, srv, "minimax/minimax-m2:free", true, c.stream).Generate(context.Background(), model.Request{Messages: []model.Message{user("Hello")}})
		ae, ok := err.(*model.APIError)
		if !ok {
			t.Fatalf("stream %v: error %T %v", c.stream, err, err)
		}
		if n := len(srv.Bodies()); n != 1 {
			t.Errorf("stream %v: %d requests, want 1 (a bad request is not retried)", c.stream, n)
		}
		errs = append(errs, ae)
	}
	s, u := errs[0], errs[1]
	if s.Kind != model.ErrBadRequest || s.Status != 400 || s.Message != "Token limit reached" || s.Temporary() {
		t.Errorf("streamed: %+v, want a 400 bad_request saying Token limit reached", s)
	}
	if s.Kind != u.Kind || s.Status != u.Status || s.Message != u.Message || s.Fix != u.Fix {
		t.Errorf("streamed %q, unstreamed %q: streaming changed the outcome", s, u)
	}
}

// An error event that a retry may cure (an overloaded server) is still
// retried, like a reset; one that names no kind is a server error.
func TestStreamErrorEventRetried(t *testing.T) {
	_, whole := wire{}.Reply(modeltest.Reply{Text: "ok"}, true)
	overloaded := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"},\"finish_reason\":null}]}\n\n" +
		"event: error\ndata: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}}\n\n")
	its := []modeltest.Interaction{
		{Status: 200, ContentType: "text/event-stream", Body: overloaded},
		{Status: 200, ContentType: "text/event-stream", Body: []byte("data: {\"error\":{\"message\":\"?\"}}\n\n")},
		{Status: 200, ContentType: "text/event-stream", Body: whole},
	}
	srv := modeltest.ServeCassette(t, its)
	resp, err := replayModel(t, srv, "m", true, true).Generate(context.Background(), model.Request{Messages: []model.Message{user("hi")}})
	if err != nil || len(srv.Bodies()) != 3 || len(resp.Content) != 1 || resp.Content[0].Text != "ok" {
		t.Errorf("reply %+v, error %v after %d requests; want ok on the third", resp, err, len(srv.Bodies()))
	}
}

// A refusal (OpenAI's message.refusal, in place of the content) is the
// reply's text with stop reason refusal, whole and streamed; the empty
// refusal a server sends with every reply (Snowflake's Cortex, recorded)
// is none.
func TestRefusal(t *testing.T) {
	rec := cassette(t, "test_snowflake_model_simple")
	srv := modeltest.ServeCassette(t, rec)
	resp, err := replayModel(t, srv, "claude-sonnet-4-6", true, false).Generate(context.Background(), model.Request{Messages: []model.Message{user("2+2?")}})
	if err != nil || resp.StopReason != "end_turn" || len(resp.Content) != 1 || resp.Content[0].Text != "4" {
		t.Errorf("recorded reply with refusal '': %+v, %v; want end_turn, 4", resp, err)
	}
	const refusal = "I'm sorry, I can't help with that."
	whole := fmt.Sprintf(`{"id":"c","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}`, refusal)
	chunk := func(delta, finish string) string {
		return fmt.Sprintf("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
	}
	stream := chunk(`{"role":"assistant","content":null,"refusal":""}`, "null") + chunk(`{"refusal":"I'm sorry, "}`, "null") + chunk(`{"refusal":"I can't help with that."}`, "null") + chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"
	for _, c := range []struct {
		it     modeltest.Interaction
		stream bool
	}{
		{modeltest.Interaction{Status: 200, ContentType: "application/json", Body: []byte(whole)}, false},
		{modeltest.Interaction{Status: 200, ContentType: "text/event-stream", Body: []byte(stream)}, true},
	} {
		srv := modeltest.ServeCassette(t, []modeltest.Interaction{c.it})
		var shown bytes.Buffer
		ctx := model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { shown.WriteString(d) }})
		resp, err := replayModel(t, srv, "gpt-4.1", false, c.stream).Generate(ctx, model.Request{Messages: []model.Message{user("?")}})
		if err != nil || resp.StopReason != "refusal" || len(resp.Content) != 1 || resp.Content[0].Text != refusal {
			t.Errorf("stream %v: %+v, %v; want the refusal's text, stop reason refusal", c.stream, resp, err)
		}
		if c.stream && shown.String() != refusal {
			t.Errorf("shown %q while streaming", shown.String())
		}
	}
}
