package observe

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
)

// JSONL writes one JSON object per entry, in the schema of docs/events.md.
// A call_model command is logged with a summary of its request (purpose,
// message count, tool names) rather than the whole history, which the events
// already hold: logging it whole would make the log grow with the square of
// the run's length. JSONL is safe for concurrent use.
type JSONL struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
	err error
}

// NewJSONL returns an observer writing to w. Call Flush when the run ends.
func NewJSONL(w io.Writer) *JSONL {
	bw := bufio.NewWriter(w)
	return &JSONL{w: bw, enc: json.NewEncoder(bw)}
}

// RequestSummary stands in for a model request in the log.
type RequestSummary struct {
	Purpose         model.Purpose `json:"purpose"`
	Messages        int           `json:"messages"`
	Tools           []string      `json:"tools"`
	MaxOutputTokens int           `json:"max_output_tokens,omitempty"`
}

type loggedCommand struct {
	*loop.Command
	Request *RequestSummary `json:"request,omitempty"` // shadows Command.Request
}

type loggedEntry struct {
	Entry
	Command *loggedCommand `json:"command,omitempty"` // shadows Entry.Command
}

// Summarize returns the log form of a request.
func Summarize(r *model.Request) *RequestSummary {
	if r == nil {
		return nil
	}
	s := &RequestSummary{Purpose: r.Purpose, Messages: len(r.Messages), MaxOutputTokens: r.MaxOutputTokens, Tools: make([]string, len(r.Tools))}
	for i, t := range r.Tools {
		s.Tools[i] = t.Name
	}
	return s
}

// Observe writes e. The first write error is kept and reported by Flush.
func (j *JSONL) Observe(e Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	le := loggedEntry{Entry: e}
	if e.Command != nil {
		le.Command = &loggedCommand{Command: e.Command, Request: Summarize(e.Command.Request)}
	}
	j.err = j.enc.Encode(le)
}

// Flush writes buffered entries and returns the first error seen.
func (j *JSONL) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.w.Flush(); j.err == nil {
		j.err = err
	}
	return j.err
}
