package openai

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/ratchetloop/ratchet/model/retry"
)

// assembler builds a reply from streamed chunks. Tool calls arrive as
// fragments keyed by index: the first fragment of a call carries its id and
// name, later ones append to its arguments.
type assembler struct {
	r       reply
	text    strings.Builder
	thought strings.Builder
	refusal strings.Builder
	calls   []call
	byIdx   map[int64]int // chunk index → position in calls
	chunks  int
}

// add takes one chunk and returns text to show now, if any.
func (a *assembler) add(c openai.ChatCompletionChunk) string {
	a.chunks++
	if c.Model != "" {
		a.r.model = c.Model
	}
	if c.JSON.Usage.Valid() && c.Usage.JSON.PromptTokens.Valid() {
		a.r.usage, a.r.hasUsage = c.Usage, true
	}
	if len(c.Choices) == 0 {
		return ""
	}
	ch := c.Choices[0]
	if ch.FinishReason != "" {
		a.r.finish = ch.FinishReason
	}
	for _, tc := range ch.Delta.ToolCalls {
		if a.byIdx == nil {
			a.byIdx = map[int64]int{}
		}
		i, ok := a.byIdx[tc.Index]
		if !ok {
			i = len(a.calls)
			a.byIdx[tc.Index] = i
			a.calls = append(a.calls, call{})
		}
		cl := &a.calls[i]
		if tc.ID != "" {
			cl.id = tc.ID
		}
		if tc.Function.Name != "" {
			cl.name = tc.Function.Name
		}
		args := tc.Function.Arguments
		if raw := tc.Function.JSON.Arguments.Raw(); strings.HasPrefix(strings.TrimSpace(raw), "{") {
			args = raw // a server that sent the arguments as an object
		}
		cl.args += args
	}
	if t, f := reasoningOf(ch.Delta.JSON.ExtraFields); f != "" {
		a.r.field = f
		a.thought.WriteString(t)
	}
	a.refusal.WriteString(ch.Delta.Refusal)
	a.text.WriteString(ch.Delta.Content)
	a.text.WriteString(ch.Delta.Refusal)
	return ch.Delta.Content + ch.Delta.Refusal
}

// received is how many bytes of output the stream carried: text,
// reasoning, refusal and tool arguments.
func (a *assembler) received() int {
	n := a.text.Len() + a.thought.Len()
	for _, c := range a.calls {
		n += len(c.args)
	}
	return n
}

// reply returns the assembled reply. done says the stream's closing
// "data: [DONE]" arrived: a stream cut off before it, and before any chunk
// gave a finish reason, is incomplete (the transport broke, not the model).
func (a *assembler) reply(done bool) (reply, error) {
	if a.chunks == 0 || a.r.finish == "" && !done {
		return reply{}, fmt.Errorf("stream ended before a finish reason or [DONE] (%d chunks): %w", a.chunks, retry.ErrIncomplete)
	}
	r := a.r
	r.text = a.text.String()
	r.thinking = a.thought.String()
	r.refusal = a.refusal.String()
	r.calls = a.calls
	return r, nil
}

// doneFlag records whether a stream's body carried "data: [DONE]"; the
// SDK ends a stream the same way at [DONE] and at a cut-off body.
type doneFlag struct {
	seen bool
	tail []byte // the last bytes read, for a marker split between reads
}

type doneKey struct{}

// watchDone wraps the body of each request whose context holds a
// *doneFlag, so that the flag sees the stream go by.
type watchDone struct{ base http.RoundTripper }

func (w watchDone) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if f, ok := req.Context().Value(doneKey{}).(*doneFlag); ok && err == nil {
		resp.Body = &doneBody{ReadCloser: resp.Body, f: f}
	}
	return resp, err
}

var doneMarker = []byte("data: [DONE]")

type doneBody struct {
	io.ReadCloser
	f *doneFlag
}

func (b *doneBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if f := b.f; n > 0 && !f.seen {
		buf := append(f.tail, p[:n]...)
		f.seen = bytes.Contains(buf, doneMarker)
		keep := min(len(buf), len(doneMarker)-1)
		f.tail = append(f.tail[:0:0], buf[len(buf)-keep:]...)
	}
	return n, err
}
