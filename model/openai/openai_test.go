package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/retry"
)

const testModel = "gpt-4.1"

func newTest(t *testing.T, srv *modeltest.Server, o modeltest.Options, compatible bool) *Model {
	t.Helper()
	m, err := New(Config{Model: testModel, APIKey: o.APIKey, BaseURL: srv.URL + "/v1", Stream: o.Stream, Retry: o.Retry, Compatible: compatible})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConformance(t *testing.T) {
	for _, compatible := range []bool{false, true} {
		name := "openai"
		if compatible {
			name = "compatible"
		}
		t.Run(name, func(t *testing.T) {
			modeltest.Run(t, modeltest.Harness{
				New: func(t *testing.T, turns []modeltest.Turn, o modeltest.Options) (model.Model, *modeltest.Server) {
					srv := modeltest.Serve(t, wire{}, turns)
					return newTest(t, srv, o, compatible), srv
				},
				Streams: true,
				// The wire sends reasoning_content, as DeepSeek does;
				// only a compatible server is sent it back.
				Thinks:            true,
				SendsThinkingBack: compatible,
				// json_schema goes to every server; strict functions to OpenAI's.
				OutputSchema: true,
				StrictTools:  !compatible,
				Cost: func(u model.Usage) (budget.Micros, bool) {
					if compatible {
						return 0, false // a local server's model has no known price
					}
					p, ok := price.Lookup(Provider, testModel)
					return p.Cost(u), ok
				},
			})
		})
	}
}

// The Responses transport passes the same suite against a server speaking
// the Responses API.
func TestConformanceResponses(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		New: func(t *testing.T, turns []modeltest.Turn, o modeltest.Options) (model.Model, *modeltest.Server) {
			srv := modeltest.Serve(t, responsesWire{}, turns)
			m, err := New(Config{Model: testModel, APIKey: o.APIKey, BaseURL: srv.URL + "/v1", Stream: o.Stream, Retry: o.Retry, Responses: true})
			if err != nil {
				t.Fatal(err)
			}
			return m, srv
		},
		Streams:           true,
		NoCacheWrites:     true, // the Responses API reports none
		OutputSchema:      true,
		StrictTools:       true,
		Thinks:            true,
		Signs:             true, // the encrypted content
		SendsThinkingBack: true,
		Cost: func(u model.Usage) (budget.Micros, bool) {
			p, ok := price.Lookup(Provider, testModel)
			return p.Cost(u), ok
		},
	})
}

func TestNew(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{}, []string{"no model name", "set OPENAI_API_KEY"}},
		{Config{Compatible: true, Model: "llama3"}, []string{"no base URL"}},
		{Config{Compatible: true, Model: "llama3", BaseURL: "http://localhost:11434/v1"}, nil}, // no key needed
	} {
		_, err := New(tc.cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, w)
			}
		}
		if tc.want == nil && err != nil {
			t.Errorf("New(%+v) = %v", tc.cfg, err)
		}
	}
}

func TestRequestShape(t *testing.T) {
	for _, compatible := range []bool{false, true} {
		srv := modeltest.Serve(t, wire{}, []modeltest.Turn{{Reply: modeltest.Reply{Text: "ok"}}})
		m := newTest(t, srv, modeltest.Options{APIKey: "sk-test"}, compatible)
		req := model.Request{
			System: "sys",
			Tools:  []model.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}},
			Messages: []model.Message{
				{Role: model.User, Content: []model.Block{model.TextBlock("goal")}},
				{Role: model.Assistant, Content: []model.Block{model.TextBlock("thinking"), {Type: model.ToolUse, ID: "c1", Name: "a", Input: json.RawMessage(`{"x":`)}}},
				{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "c1", Text: "bad arguments", IsError: true}, model.TextBlock("feedback")}},
			},
			MaxOutputTokens: 77,
		}
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if got := srv.Headers()[0].Get("Authorization"); got != "Bearer sk-test" {
			t.Errorf("authorization = %q", got)
		}
		var r wireRequest
		if err := json.Unmarshal(srv.Bodies()[0], &r); err != nil {
			t.Fatal(err)
		}
		roles := []string{}
		for _, msg := range r.Messages {
			roles = append(roles, msg.Role)
		}
		if got := strings.Join(roles, ","); got != "system,user,assistant,tool,user" {
			t.Errorf("roles = %s", got)
		}
		if got := r.Messages[2].ToolCalls[0].Function.Arguments; got != `{"x":` {
			t.Errorf("recorded arguments sent as %q, want them as the model produced them", got)
		}
		if c, _ := r.Messages[3].Content.(string); !strings.HasPrefix(c, "error: ") {
			t.Errorf("an error result should say so: %q", c)
		}
		if compatible && (r.MaxTokens != 77 || r.MaxCompletionTokens != 0) || !compatible && (r.MaxCompletionTokens != 77 || r.MaxTokens != 0) {
			t.Errorf("compatible=%v: max_tokens %d max_completion_tokens %d", compatible, r.MaxTokens, r.MaxCompletionTokens)
		}
		if string(r.Tools[0].Function.Parameters) != `{"type":"object","additionalProperties":false}` {
			t.Errorf("schema = %s", r.Tools[0].Function.Parameters)
		}
	}
}

// The fixtures in testdata are replies as OpenAI and as OpenAI-compatible
// servers send them; see testdata/README.md.
func TestFixtures(t *testing.T) {
	raw := cmp.Transformer("raw", func(r json.RawMessage) string { return string(r) })
	openaiWant := model.Response{
		Content: []model.Block{
			{Type: model.ToolUse, ID: "call_abc", Name: "get_weather", Input: json.RawMessage(`{"location":"Boston, MA"}`)},
			{Type: model.ToolUse, ID: "call_def", Name: "get_weather", Input: json.RawMessage(`{"location":"Paris"}`)},
		},
		StopReason: "tool_use",
		Model:      "gpt-4.1-2025-04-14",
		Usage:      model.Usage{InputTokens: 82 - 64, OutputTokens: 40, CacheReadTokens: 64},
	}
	p, _ := price.Lookup(Provider, testModel)
	openaiWant.Usage.Cost, openaiWant.Usage.CostKnown = p.Cost(openaiWant.Usage), true
	for _, tc := range []struct {
		file       string
		stream     bool
		compatible bool
		want       model.Response
	}{
		{"testdata/chat.json", false, false, openaiWant},
		{"testdata/chat.sse", true, false, openaiWant},
		// Ollama: finish_reason "stop" although it called a tool, no usage
		// in the stream, arguments for a call without any.
		{"testdata/ollama.sse", true, true, model.Response{
			Content: []model.Block{
				model.TextBlock("Checking."),
				{Type: model.ToolUse, ID: "call_x1", Name: "list", Input: json.RawMessage(`{}`)},
			},
			StopReason: "tool_use",
			Model:      "llama3.1:8b",
		}},
		// A server that sends arguments as an object and no call id, and
		// arguments that are not JSON.
		{"testdata/quirks.json", false, true, model.Response{
			Content: []model.Block{
				{Type: model.ToolUse, ID: "call_ratchet_1", Name: "add", Input: json.RawMessage(`{"a": 1, "b": 2}`)},
				{Type: model.ToolUse, ID: "call_2", Name: "add", Input: json.RawMessage(`{"a": 1, "b": `)},
			},
			StopReason: "tool_use",
			Model:      "local",
			Usage:      model.Usage{InputTokens: 10, OutputTokens: 5},
		}},
	} {
		body, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		srv := modeltest.Serve(t, fixture{body, tc.stream}, []modeltest.Turn{{}})
		m := newTest(t, srv, modeltest.Options{APIKey: "k", Stream: tc.stream}, tc.compatible)
		got, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if diff := cmp.Diff(tc.want, got, raw); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.file, diff)
		}
	}
}

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

// An exhausted balance (a 429 with insufficient_quota, the body OpenAI's
// API sends) fails at the first attempt as quota, saying so, and is not
// told to try again later.
func TestQuotaFailsAtOnce(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	}))
	defer srv.Close()
	m, err := New(Config{Model: testModel, APIKey: "sk-test", BaseURL: srv.URL + "/v1", NoEnv: true, Retry: retry.Config{MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}})
	var ae *model.APIError
	if !errors.As(err, &ae) || ae.Kind != model.ErrQuota || ae.Temporary() || !strings.Contains(ae.Fix, "exhausted") || strings.Contains(ae.Fix, "try again") || n != 1 {
		t.Errorf("after %d attempts: %v; want one attempt failing as quota, saying the balance is exhausted", n, err)
	}
}

// reasoning_effort goes to OpenAI's reasoning models and to compatible
// servers, a budget alone as the effort that covers it; GPT-4 ignores the
// setting and says so once.
func TestReasoningEffort(t *testing.T) {
	for _, tc := range []struct {
		name       string
		compatible bool
		r          model.Reasoning
		want       string
	}{
		{"o3-mini", false, model.Reasoning{Effort: model.EffortLow}, `"low"`},
		{"gpt-5", false, model.Reasoning{BudgetTokens: 5000}, `"medium"`},
		{"gpt-5", false, model.Reasoning{BudgetTokens: 100000}, `"max"`},
		{"qwen3", true, model.Reasoning{Effort: model.EffortMax}, `"max"`},
		{"gpt-4.1", false, model.Reasoning{Effort: model.EffortHigh}, ""},
	} {
		srv := modeltest.Serve(t, wire{}, []modeltest.Turn{{Reply: modeltest.Reply{Text: "a"}}, {Reply: modeltest.Reply{Text: "b"}}})
		var notice strings.Builder
		m, err := New(Config{Model: tc.name, APIKey: "k", BaseURL: srv.URL + "/v1", Compatible: tc.compatible, Notice: &notice})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("hi")}}}, Reasoning: &tc.r}); err != nil {
				t.Fatal(err)
			}
		}
		if got := modeltest.Field(t, srv.Bodies()[0], "reasoning_effort"); got != tc.want {
			t.Errorf("%s %+v: reasoning_effort %s, want %s", tc.name, tc.r, got, tc.want)
		}
		if n := strings.Count(notice.String(), "cannot reason"); n != map[bool]int{true: 1}[tc.want == ""] {
			t.Errorf("%s: notice %q", tc.name, notice.String())
		}
	}
}
