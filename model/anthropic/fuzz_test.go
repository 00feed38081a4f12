package anthropic

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// assemble runs raw SSE bytes through the SDK's decoder and the assembler,
// as Generate does, returning the text shown as it streamed.
func assemble(data []byte) (model.Response, string, error) {
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(data))}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	var a assembler
	var shown strings.Builder
	for s.Next() {
		shown.WriteString(a.add(s.Current()))
	}
	if err := s.Err(); err != nil {
		return model.Response{}, shown.String(), err
	}
	resp, err := a.response()
	return resp, shown.String(), err
}

// FuzzAssemble feeds arbitrary streams to the assembler: it must not panic,
// and what it shows as text must be exactly the text of the Response.
func FuzzAssemble(f *testing.F) {
	if b, err := os.ReadFile("testdata/message.sse"); err == nil {
		f.Add(b)
	}
	for _, name := range []string{"test_anthropic_model_thinking_part_stream", "test_anthropic_model_thinking_part_redacted_stream"} {
		f.Add(modeltest.LoadCassette(f, "testdata/cassettes/"+name+".yaml")[0].Body)
	}
	_, b := wire{}.Reply(modeltest.Reply{Text: "héllo", Calls: []modeltest.Call{{ID: "a", Name: "x", Args: `{"q": 1,`}}}, true)
	f.Add(b)
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, shown, err := assemble(data)
		if err != nil {
			return
		}
		var text strings.Builder
		for _, b := range resp.Content {
			if b.Type == model.Text {
				text.WriteString(b.Text)
			}
			if b.Type == model.ToolUse && len(b.Input) == 0 {
				t.Errorf("tool_use %q with empty input", b.ID)
			}
		}
		if shown != text.String() {
			t.Errorf("shown %q, but the Response's text is %q", shown, text.String())
		}
	})
}
