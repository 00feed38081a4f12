package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
)

const testModel = "claude-sonnet-4-5"

func newTest(t *testing.T, srv *modeltest.Server, o modeltest.Options) *Model {
	t.Helper()
	m, err := New(Config{Model: testModel, APIKey: o.APIKey, BaseURL: srv.URL, Stream: o.Stream, Retry: o.Retry})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(t *testing.T, turns []modeltest.Turn, o modeltest.Options) (model.Model, *modeltest.Server) {
			srv := modeltest.Serve(t, wire{}, turns)
			return newTest(t, srv, o), srv
		},
		OutputSchema:         true, // claude-sonnet-4-5 has structured outputs
		StrictTools:          true,
		Streams:              true,
		Alternates:           true,
		MalformedNeedsStream: true,
		Thinks:               true,
		Signs:                true,
		SendsThinkingBack:    true,
		Cost: func(u model.Usage) (budget.Micros, bool) {
			p, ok := price.Lookup(Provider, testModel)
			return p.Cost(u), ok
		},
	})
}

func TestNewNeedsKeyAndModel(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := New(Config{})
	if err == nil || !strings.Contains(err.Error(), "set ANTHROPIC_API_KEY") || !strings.Contains(err.Error(), "no model name") {
		t.Errorf("New(zero) error = %v, want both problems", err)
	}
}

// The request carries the stable prefix and the latest message marked for
// caching, the key in x-api-key, and the reply cap.
func TestRequestShape(t *testing.T) {
	srv := modeltest.Serve(t, wire{}, []modeltest.Turn{{Reply: modeltest.Reply{Text: "ok"}}})
	m := newTest(t, srv, modeltest.Options{APIKey: "sk-test"})
	req := model.Request{
		System: "sys",
		Tools: []model.ToolSpec{
			{Name: "a", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`)},
			{Name: "b", Description: "B."},
		},
		Messages: []model.Message{
			{Role: model.User, Content: []model.Block{model.TextBlock("goal")}},
			{Role: model.Assistant, Content: []model.Block{{Type: model.ToolUse, ID: "t1", Name: "a", Input: json.RawMessage(`{"x":`)}}},
			{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "t1", Text: "bad args", IsError: true}}},
		},
		MaxOutputTokens: 77,
	}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// The SDK sends the key as a bearer token (older versions: x-api-key).
	if h := srv.Headers()[0]; h.Get("Authorization") != "Bearer sk-test" && h.Get("X-Api-Key") != "sk-test" {
		t.Errorf("the key was not sent: %v", h)
	}
	var r wireRequest
	if err := json.Unmarshal(srv.Bodies()[0], &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != testModel || r.MaxTokens != 77 || r.Stream {
		t.Errorf("model %q max_tokens %d stream %v", r.Model, r.MaxTokens, r.Stream)
	}
	marked := func(b wireBlock) bool { return b.CacheControl != nil && b.CacheControl.Type == "ephemeral" }
	if len(r.Tools) != 2 || marked(r.Tools[0]) || !marked(r.Tools[1]) {
		t.Errorf("tools: want only the last marked for caching: %s", srv.Bodies()[0])
	}
	if len(r.System) != 1 || !marked(r.System[0]) {
		t.Errorf("system not marked for caching")
	}
	last := r.Messages[len(r.Messages)-1].Content
	if !marked(last[len(last)-1]) || marked(r.Messages[0].Content[0]) {
		t.Errorf("want only the latest message marked for caching")
	}
	// The schema goes through as given; the malformed recorded input as {}.
	body := string(srv.Bodies()[0])
	if !strings.Contains(body, `"additionalProperties":false`) {
		t.Errorf("schema lost a keyword: %s", body)
	}
	if got := r.Messages[1].Content[0].Input; string(got) != "{}" {
		t.Errorf("recorded malformed input sent as %s, want {}", got)
	}
	if !r.Messages[2].Content[0].IsError {
		t.Errorf("is_error lost")
	}
}

// The fixtures in testdata, one whole reply and the same reply streamed, as
// the API reference shows them, give the same Response.
func TestFixtures(t *testing.T) {
	want := model.Response{
		Content: []model.Block{
			model.TextBlock("I'll look up the weather in both cities."),
			{Type: model.ToolUse, ID: "toolu_01A", Name: "get_weather", Input: json.RawMessage(`{"location": "San Francisco, CA"}`)},
			{Type: model.ToolUse, ID: "toolu_01B", Name: "get_weather", Input: json.RawMessage(`{"location": "Paris"}`)},
		},
		StopReason: "tool_use",
		Model:      "claude-sonnet-4-5-20250929",
		Usage:      model.Usage{InputTokens: 472, OutputTokens: 89, CacheReadTokens: 2048, CacheWriteTokens: 128},
	}
	p, _ := price.Lookup(Provider, testModel)
	want.Usage.Cost, want.Usage.CostKnown = p.Cost(want.Usage), true
	for _, tc := range []struct {
		file   string
		stream bool
	}{{"testdata/message.json", false}, {"testdata/message.sse", true}} {
		body, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		srv := modeltest.Serve(t, fixture{body, tc.stream}, []modeltest.Turn{{}})
		m := newTest(t, srv, modeltest.Options{APIKey: "k", Stream: tc.stream})
		var text strings.Builder
		ctx := model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { text.WriteString(d) }})
		got, err := m.Generate(ctx, model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("weather?")}}}})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if diff := cmp.Diff(want, got, cmp.Transformer("raw", func(r json.RawMessage) string { return string(r) })); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.file, diff)
		}
		if tc.stream && text.String() != want.Content[0].Text {
			t.Errorf("streamed text %q", text.String())
		}
	}
}

// fixture serves a recorded body whatever the request.
type fixture struct {
	body   []byte
	stream bool
}

func (f fixture) Reply(modeltest.Reply, bool) (string, []byte) {
	if f.stream {
		return "text/event-stream", f.body
	}
	return "application/json", f.body
}
func (fixture) Error(int) []byte                       { return nil }
func (fixture) Parse(b []byte) (modeltest.Seen, error) { return wire{}.Parse(b) }

// An error event in the middle of a stream is a temporary failure of the
// kind it names, not a bad request, and is retried like a reset.
func TestStreamErrorEvent(t *testing.T) {
	body := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	srv := modeltest.Serve(t, fixture{body, true}, []modeltest.Turn{{}, {}})
	m := newTest(t, srv, modeltest.Options{APIKey: "k", Stream: true, Retry: retry.Config{MaxAttempts: 2, BaseDelay: time.Millisecond}})
	_, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}})
	ae, ok := err.(*model.APIError)
	if !ok || ae.Kind != model.ErrOverloaded || !ae.Temporary() || !strings.Contains(ae.Message, "Overloaded") {
		t.Fatalf("error = %#v", err)
	}
	if srv.Attempts() != 2 || !strings.Contains(ae.Fix, "gave up after 2 attempts") {
		t.Errorf("%d attempts, fix %q: want the stream asked for twice, and the error to say so", srv.Attempts(), ae.Fix)
	}
}

// Merged user turns put tool results first, as the API requires, whatever
// order the loop sent the messages in.
func TestToolResultsFirst(t *testing.T) {
	msgs := messages([]model.Message{
		{Role: model.User, Content: []model.Block{model.TextBlock("goal")}},
		{Role: model.Assistant, Content: []model.Block{{Type: model.ToolUse, ID: "t1", Name: "a", Input: json.RawMessage(`{}`)}}},
		{Role: model.User, Content: []model.Block{model.TextBlock("a note")}},
		{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "t1", Text: "ok"}, model.TextBlock("more")}},
	}, true)
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 3", len(msgs))
	}
	var kinds []string
	for _, b := range msgs[2].OfUser.Content {
		switch {
		case b.OfToolResult != nil:
			kinds = append(kinds, "tool_result")
		case b.OfText != nil:
			kinds = append(kinds, b.OfText.Text)
		}
	}
	if got := strings.Join(kinds, ","); got != "tool_result,a note,more" {
		t.Errorf("blocks = %s", got)
	}
}

// Which models think, and how: extended thinking from Claude 3.7,
// adaptive thinking and effort from 4.6 (effort on Opus from 4.5).
func TestThinkingByModel(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		thinks, adaptive, effort bool
	}{
		{"claude-3-5-haiku-latest", false, false, false},
		{"claude-3-opus-20240229", false, false, false},
		{"claude-3-7-sonnet-20250219", true, false, false},
		{"claude-sonnet-4-20250514", true, false, false},
		{"claude-sonnet-4-0", true, false, false},
		{"claude-sonnet-4-5", true, false, false},
		{"claude-opus-4-5-20251101", true, false, true},
		{"claude-opus-4-6", true, true, true},
		{"claude-sonnet-4-6", true, true, true},
		{"claude-opus-5", true, true, true},
	} {
		v := versionOf(tc.name)
		if v.thinks() != tc.thinks || v.adaptive() != tc.adaptive || v.effort() != tc.effort {
			t.Errorf("%s (%+v): thinks %v adaptive %v effort %v, want %v %v %v", tc.name, v, v.thinks(), v.adaptive(), v.effort(), tc.thinks, tc.adaptive, tc.effort)
		}
	}
}

// Extended thinking on a Claude 4 model asks for interleaved thinking; a
// model that cannot think gets no thinking setting, and says so once.
func TestThinkingRequest(t *testing.T) {
	req := model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}, MaxOutputTokens: 100, Reasoning: &model.Reasoning{BudgetTokens: 2000}}
	for _, tc := range []struct {
		name, thinking, beta string
		notice               bool
	}{
		{"claude-sonnet-4-5", `{"budget_tokens":2000,"type":"enabled"}`, interleavedBeta, false},
		{"claude-3-7-sonnet-latest", `{"budget_tokens":2000,"type":"enabled"}`, "", false},
		{"claude-3-5-haiku-latest", "", "", true},
	} {
		srv := modeltest.Serve(t, wire{}, []modeltest.Turn{{Reply: modeltest.Reply{Text: "a"}}, {Reply: modeltest.Reply{Text: "b"}}})
		var notice bytes.Buffer
		m, err := New(Config{Model: tc.name, APIKey: "k", BaseURL: srv.URL, Notice: &notice})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		body := srv.Bodies()[0]
		if got := modeltest.Field(t, body, "thinking"); got != tc.thinking {
			t.Errorf("%s: thinking %s, want %s", tc.name, got, tc.thinking)
		}
		if got, want := modeltest.Field(t, body, "max_tokens"), fmt.Sprint(map[bool]int{true: 2100, false: 100}[tc.thinking != ""]); got != want {
			t.Errorf("%s: max_tokens %s, want %s", tc.name, got, want)
		}
		if got := srv.Headers()[0].Get("Anthropic-Beta"); got != tc.beta {
			t.Errorf("%s: anthropic-beta %q, want %q", tc.name, got, tc.beta)
		}
		if n := strings.Count(notice.String(), "cannot think"); n != map[bool]int{true: 1}[tc.notice] {
			t.Errorf("%s: notice %q", tc.name, notice.String())
		}
	}
}
