package openai

import (
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/ratchetloop/ratchet/model/retry"
)

// assembler builds a reply from streamed chunks. Tool calls arrive as
// fragments keyed by index: the first fragment of a call carries its id and
// name, later ones append to its arguments.
type assembler struct {
	r      reply
	text   strings.Builder
	calls  []call
	byIdx  map[int64]int // chunk index → position in calls
	chunks int
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
	a.text.WriteString(ch.Delta.Content)
	return ch.Delta.Content
}

func (a *assembler) reply() (reply, error) {
	if a.chunks == 0 || a.r.finish == "" {
		// Every complete stream says why it finished.
		return reply{}, fmt.Errorf("stream ended before a finish reason (%d chunks): %w", a.chunks, retry.ErrIncomplete)
	}
	r := a.r
	r.text = a.text.String()
	r.calls = a.calls
	return r, nil
}
