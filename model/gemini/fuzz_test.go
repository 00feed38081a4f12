package gemini

import (
	"encoding/json"
	"io"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
)

// FuzzAssemble feeds arbitrary streams (server-sent, untrusted) through
// the SDK's stream reader to the assembler: no panic, the text shown as it
// streamed is the Response's text, every tool call has an id and JSON
// arguments, every signature goes back as bytes, and the stop reason says
// tool_use when there are calls and the reply stopped normally.
func FuzzAssemble(f *testing.F) {
	for _, name := range []string{"test_google_streaming_tool_call_thought_signature", "test_google_model_thinking_part_iter"} {
		f.Add(modeltest.LoadCassette(f, "testdata/cassettes/"+name+".yaml")[0].Body)
	}
	_, b := wire{}.Reply(modeltest.Reply{Thinking: "hm", Signature: "c2ln", Text: "héllo", Calls: []modeltest.Call{{ID: "a", Name: "x", Args: `{"q":1}`}}}, true)
	f.Add(b)
	_, b = wire{}.ErrorEvent(503)
	f.Add(b)
	decode := bytesDecoder(f)
	// The SDK logs every malformed stream line to the standard logger;
	// the fuzzing worker's output is not read while it runs.
	log.SetOutput(io.Discard)
	f.Cleanup(func() { log.SetOutput(os.Stderr) })
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := decode(data)
		if err != nil {
			return
		}
		a := &assembler{}
		var shown strings.Builder
		for _, e := range evs {
			shown.WriteString(a.add(e))
		}
		resp := a.response(func() string { return "id" })
		var text strings.Builder
		calls := 0
		for _, b := range resp.Content {
			switch b.Type {
			case model.Text:
				text.WriteString(b.Text)
			case model.ToolUse:
				calls++
				if b.ID == "" || !json.Valid(b.Input) {
					t.Errorf("tool call without id or JSON arguments: %+v", b)
				}
			}
		}
		if a.finish == "STOP" && !a.blocked && (calls > 0) != (resp.StopReason == "tool_use") {
			t.Errorf("stop reason %q with %d calls", resp.StopReason, calls)
		}
		if !strings.HasPrefix(text.String(), shown.String()) {
			t.Errorf("shown %q, but the text is %q", shown.String(), text.String())
		}
		for _, c := range contents([]model.Message{{Role: model.Assistant, Content: resp.Content}}) {
			for _, p := range c.Parts {
				if p == nil {
					t.Error("a nil part")
				}
			}
		}
	})
}
