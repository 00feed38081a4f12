package openai

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// FuzzAssemble feeds arbitrary streams through the SDK's decoder to the
// assembler and the normalisation into a Response: no panic, the text shown
// as it streamed is the Response's text, every tool call has an id and
// arguments, and the stop reason says tool_use exactly when there are calls
// (unless the reply was cut at max_tokens).
func FuzzAssemble(f *testing.F) {
	for _, name := range []string{"testdata/chat.sse", "testdata/ollama.sse"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, name := range []string{"test_deepseek_model_thinking_stream", "test_tool_use_failed_error_streaming", "test_openrouter_stream_error"} {
		f.Add(modeltest.LoadCassette(f, "testdata/cassettes/"+name+".yaml")[0].Body)
	}
	_, b := wire{}.Reply(modeltest.Reply{Text: "héllo", Calls: []modeltest.Call{{ID: "a", Name: "x", Args: `{"q": 1,`}}}, true)
	f.Add(b)
	m := &Model{cfg: Config{Model: "m"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
		s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
		var a assembler
		var shown strings.Builder
		for s.Next() {
			shown.WriteString(a.add(s.Current()))
		}
		if s.Err() != nil {
			return
		}
		r, err := a.reply(true)
		if err != nil {
			return
		}
		resp := m.response(r)
		var text strings.Builder
		calls := 0
		for _, b := range resp.Content {
			switch b.Type {
			case model.Text:
				text.WriteString(b.Text)
			case model.ToolUse:
				calls++
				if b.ID == "" || len(b.Input) == 0 {
					t.Errorf("tool call without id or input: %+v", b)
				}
			}
		}
		if shown.String() != text.String() {
			t.Errorf("shown %q, Response text %q", shown.String(), text.String())
		}
		if resp.StopReason != "max_tokens" && (resp.StopReason == "tool_use") != (calls > 0) {
			t.Errorf("stop reason %q with %d calls", resp.StopReason, calls)
		}
	})
}

// FuzzServerError feeds arbitrary error event data to the classification
// of mid-stream errors and to the reading of a refused tool call: no
// panic; a refused call is read exactly when the event says
// tool_use_failed and gives a failed generation, and becomes a reply whose
// tool calls have a name and arguments.
func FuzzServerError(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"Tool call validation failed","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"{\"name\": \"get\", \"arguments\": {\n  \"x\": 1\n}}"}}`))
	f.Add([]byte(`{"error":{"message":"Tool choice is required, but model did not call a tool","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"","status_code":400}}`))
	f.Add([]byte(`{"id":"gen-1","provider":"Minimax","error":{"code":400,"message":"Token limit reached"},"choices":[]}`))
	f.Add([]byte(`{"error":{"code":"tool_use_failed","failed_generation":"{\"name\":\"x\",\"arguments\":5}"}}`))
	m := &Model{cfg: Config{Model: "m", Compatible: true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := &ssestream.StreamError{Event: ssestream.Event{Data: data}}
		e, ok := eventError(err)
		if !ok {
			t.Fatal("a StreamError is not read as an error event")
		}
		if k := e.kind(); k.Kind == "" {
			t.Errorf("no kind for %s", data)
		}
		r, ok := failedCall(err)
		if want := e.code() == "tool_use_failed" && e.FailedGeneration != nil; ok != want {
			t.Errorf("read as a refused call: %v, want %v (%s)", ok, want, data)
		}
		if !ok {
			return
		}
		for _, b := range m.response(r).Content {
			if b.Type == model.ToolUse && (b.Name == "" || len(b.Input) == 0 || b.ID == "") {
				t.Errorf("tool call %+v", b)
			}
		}
	})
}
