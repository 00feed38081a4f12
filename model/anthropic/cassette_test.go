package anthropic

// Replays of recorded real Anthropic traffic (testdata/cassettes, see its
// README): each test plays the recorded replies from a local server and
// checks the parsed reply and the next request, what ratchet must carry
// back, against what the real client sent and the real API accepted.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

func cassette(t *testing.T, name string) []modeltest.Interaction {
	return modeltest.LoadCassette(t, "testdata/cassettes/"+name+".yaml")
}

func replayModel(t *testing.T, srv *modeltest.Replay, name string, stream bool, notice *bytes.Buffer) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: "k", BaseURL: srv.URL, Stream: stream, Notice: notice})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var rawText = cmp.Transformer("raw", func(r json.RawMessage) string { return string(r) })

// recordedContent is the content of a recorded response as ratchet must
// parse it, read straight from the recording.
func recordedContent(t *testing.T, it modeltest.Interaction) []model.Block {
	t.Helper()
	var body struct {
		Content []struct {
			Type, Text, Thinking, Signature, Data, ID, Name string
			Input                                           json.RawMessage
		}
	}
	if err := json.Unmarshal(it.Body, &body); err != nil {
		t.Fatal(err)
	}
	var out []model.Block
	for _, b := range body.Content {
		switch b.Type {
		case "text":
			out = append(out, model.TextBlock(b.Text))
		case "thinking":
			out = append(out, model.Block{Type: model.Thinking, Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			out = append(out, model.Block{Type: model.RedactedThinking, Signature: b.Data})
		case "tool_use":
			out = append(out, model.Block{Type: model.ToolUse, ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return out
}

func user(text string) model.Message {
	return model.Message{Role: model.User, Content: []model.Block{model.TextBlock(text)}}
}

// A tool loop with extended thinking (claude-sonnet-4-0, budget 3000): the
// request asks for thinking as the real client did, the reply's thinking
// block comes back with its signature, and the next request carries it
// back before the text and the tool call, byte for byte as the API got it.
func TestCassetteToolWithThinking(t *testing.T) {
	rec := cassette(t, "test_anthropic_tool_with_thinking")
	srv := modeltest.ServeCassette(t, rec)
	m := replayModel(t, srv, "claude-sonnet-4-0", false, nil)
	tools := []model.ToolSpec{{Name: "get_user_country", InputSchema: json.RawMessage(`{"additionalProperties":false,"properties":{},"type":"object"}`)}}
	req := model.Request{Tools: tools, Messages: []model.Message{user("What is the largest city in the user country?")},
		MaxOutputTokens: 4096 - 3000, Reasoning: &model.Reasoning{BudgetTokens: 3000}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recordedContent(t, rec[0]), resp.Content, rawText); diff != "" {
		t.Errorf("reply (-recorded +parsed):\n%s", diff)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Content: resp.Content},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: resp.Content[2].ID, Text: "Mexico"}}})
	resp, err = m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recordedContent(t, rec[1]), resp.Content, rawText); diff != "" {
		t.Errorf("second reply (-recorded +parsed):\n%s", diff)
	}
	sent := srv.Bodies()
	for i := range 2 {
		for _, f := range []string{"thinking", "max_tokens", "model"} {
			if got, want := modeltest.Field(t, sent[i], f), modeltest.Field(t, rec[i].Request, f); got != want {
				t.Errorf("request %d: %s = %s, the real client sent %s", i+1, f, got, want)
			}
		}
	}
	if got, want := modeltest.Field(t, sent[1], "messages", "1"), modeltest.Field(t, rec[1].Request, "messages", "1"); got != want {
		t.Errorf("the assistant turn sent back:\n%s\nthe real client sent:\n%s", got, want)
	}
}

// Redacted thinking, whole and streamed: the encrypted data comes back as
// model.RedactedThinking and goes back unchanged in the next request.
func TestCassetteRedactedThinking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{{"test_anthropic_model_thinking_part_redacted", false}, {"test_anthropic_model_thinking_part_redacted_stream", true}} {
		rec := cassette(t, tc.name)
		srv := modeltest.ServeCassette(t, rec)
		m := replayModel(t, srv, "claude-sonnet-4-5-20250929", tc.stream, nil)
		first := rec[0]
		prompt := modeltest.Field(t, first.Request, "messages", "0", "content", "0", "text")
		var text string
		json.Unmarshal([]byte(prompt), &text)
		req := model.Request{Messages: []model.Message{user(text)}, MaxOutputTokens: 4096 - 1024, Reasoning: &model.Reasoning{BudgetTokens: 1024}}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var want []model.Block
		if tc.stream {
			want, _ = wholeStream(t, first.Body)
		} else {
			want = recordedContent(t, first)
		}
		if len(want) == 0 || want[0].Type != model.RedactedThinking || want[0].Signature == "" {
			t.Fatalf("%s: the recording holds no redacted thinking: %+v", tc.name, want)
		}
		if diff := cmp.Diff(want, resp.Content, rawText); diff != "" {
			t.Errorf("%s: reply (-recorded +parsed):\n%s", tc.name, diff)
		}
		if got, want := modeltest.Field(t, srv.Bodies()[0], "thinking"), modeltest.Field(t, first.Request, "thinking"); got != want {
			t.Errorf("%s: thinking = %s, the real client sent %s", tc.name, got, want)
		}
		if len(rec) < 2 {
			continue
		}
		req.Messages = append(req.Messages, model.Message{Role: model.Assistant, Content: resp.Content}, user("What was that?"))
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if got, want := modeltest.Field(t, srv.Bodies()[1], "messages", "1"), modeltest.Field(t, rec[1].Request, "messages", "1"); got != want {
			t.Errorf("the assistant turn sent back:\n%s\nthe real client sent:\n%s", got, want)
		}
	}
}

// decodeEvents runs raw SSE bytes through the SDK's decoder.
func decodeEvents(data []byte) ([]anthropic.MessageStreamEventUnion, error) {
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	var out []anthropic.MessageStreamEventUnion
	for s.Next() {
		out = append(out, s.Current())
	}
	return out, s.Err()
}

// assembleEvents assembles decoded events as Generate does.
func assembleEvents(events []anthropic.MessageStreamEventUnion, _ bool) (model.Response, error) {
	var a assembler
	for _, ev := range events {
		a.add(ev)
	}
	return a.response()
}

// wholeStream assembles a recorded stream, failing the test on error.
func wholeStream(t *testing.T, body []byte) ([]model.Block, string) {
	t.Helper()
	resp, shown, err := assemble(body)
	if err != nil {
		t.Fatalf("the recorded stream does not assemble: %v", err)
	}
	return resp.Content, shown
}

// A stream with thinking deltas and a signature delta (claude-sonnet-4-0)
// assembles to one thinking block, signed, then the text; only the text is
// shown as it streams. Cut at every byte, a stream either fails (and is
// asked for again) or gives exactly the whole reply (modeltest.EveryCut).
func TestCassetteThinkingStreamCutAnywhere(t *testing.T) {
	for _, name := range []string{"test_anthropic_model_thinking_part_stream", "test_anthropic_model_thinking_part_redacted_stream"} {
		rec := cassette(t, name)
		body := rec[0].Body
		whole, shown := wholeStream(t, body)
		if name == "test_anthropic_model_thinking_part_stream" {
			if len(whole) != 2 || whole[0].Type != model.Thinking || !strings.HasPrefix(whole[0].Signature, "EvMCCkYICxgCKkCHP2cSuEdc") || whole[0].Text == "" || whole[1].Type != model.Text {
				t.Fatalf("%s: assembled %+v", name, whole)
			}
		}
		var text strings.Builder
		for _, b := range whole {
			if b.Type == model.Text {
				text.WriteString(b.Text)
			}
		}
		if shown != text.String() {
			t.Errorf("%s: shown %q while streaming, want only the text %q", name, shown, text.String())
		}
		modeltest.EveryCut(t, body, decodeEvents, assembleEvents)
	}
}

// Adaptive thinking with effort (claude-opus-4-6): an effort alone asks
// for adaptive thinking and output_config.effort, as the real client sent
// them (one recording each), and the signed thinking block of the reply is
// kept.
func TestCassetteAdaptiveThinkingAndEffort(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		effort      model.Effort
	}{
		{"test_anthropic_opus_46_features[adaptive-thinking]", "thinking", model.EffortHigh},
		{"test_anthropic_opus_46_features[effort]", "output_config", model.EffortLow},
	} {
		rec := cassette(t, tc.name)
		srv := modeltest.ServeCassette(t, rec)
		m := replayModel(t, srv, "claude-opus-4-6", false, nil)
		r := &model.Reasoning{Effort: tc.effort}
		resp, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{user("What is 2+2?")}, MaxOutputTokens: 4096 - r.Budget(), Reasoning: r})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(recordedContent(t, rec[0]), resp.Content, rawText); diff != "" {
			t.Errorf("%s: reply (-recorded +parsed):\n%s", tc.name, diff)
		}
		sent := srv.Bodies()[0]
		for _, f := range []string{tc.field, "max_tokens"} {
			if got, want := modeltest.Field(t, sent, f), modeltest.Field(t, rec[0].Request, f); got != want {
				t.Errorf("%s: %s = %s, the real client sent %s", tc.name, f, got, want)
			}
		}
		if got := modeltest.Field(t, sent, "output_config", "effort"); got != `"`+string(tc.effort)+`"` {
			t.Errorf("%s: effort %s, want %s", tc.name, got, tc.effort)
		}
	}
}
