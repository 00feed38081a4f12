package observe

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

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

// A model reply may carry tool arguments that are not valid JSON (the loop
// answers them with an invalid_json observation). encoding/json refuses to
// embed an invalid json.RawMessage, which would fail the entry and end the
// log, so such a reply is logged with the arguments as a string under
// invalid_input instead of input. Nothing is lost: the exact bytes remain.
type invalidInputEntry struct {
	loggedEntry
	Event *loggedEvent `json:"event,omitempty"` // shadows Entry.Event
}

type loggedEvent struct {
	*loop.Event
	Reply *loggedResponse `json:"reply,omitempty"` // shadows Event.Reply
}

type loggedResponse struct {
	*model.Response
	Content []loggedBlock `json:"content"` // shadows Response.Content
}

type loggedBlock struct {
	*model.Block
	Input        json.RawMessage `json:"input,omitempty"` // shadows Block.Input
	InvalidInput string          `json:"invalid_input,omitempty"`
}

// hasInvalidInput reports whether r holds a block whose Input cannot be
// embedded in JSON as it is.
func hasInvalidInput(r *model.Response) bool {
	if r == nil {
		return false
	}
	for _, b := range r.Content {
		if len(b.Input) > 0 && !json.Valid(b.Input) {
			return true
		}
	}
	return false
}

// withInvalidInput returns the log form of an event whose reply has invalid
// tool arguments. ev is not modified: the machine shares its reply.
func withInvalidInput(ev *loop.Event) *loggedEvent {
	r := &loggedResponse{Response: ev.Reply, Content: make([]loggedBlock, len(ev.Reply.Content))}
	for i := range ev.Reply.Content {
		b := &ev.Reply.Content[i]
		r.Content[i] = loggedBlock{Block: b, Input: b.Input}
		if len(b.Input) > 0 && !json.Valid(b.Input) {
			r.Content[i] = loggedBlock{Block: b, InvalidInput: string(b.Input)}
		}
	}
	return &loggedEvent{Event: ev, Reply: r}
}

// EncodeCommand returns the log form of a command, as JSONL writes it.
func EncodeCommand(c *loop.Command) ([]byte, error) {
	return json.Marshal(loggedCommand{Command: c, Request: Summarize(c.Request)})
}

// Record is one entry read back from a JSONL log. Commands and notes are
// kept as their JSON, which is what replay compares.
type Record struct {
	Seq      int64           `json:"seq"`
	Run      string          `json:"run"`
	At       time.Time       `json:"at"`
	Kind     Kind            `json:"kind"`
	Spec     *loop.Spec      `json:"spec,omitempty"`
	Event    *loop.Event     `json:"-"`
	Command  json.RawMessage `json:"command,omitempty"`
	Note     json.RawMessage `json:"note,omitempty"`
	Retry    *Retry          `json:"retry,omitempty"`
	Fallback *Fallback       `json:"fallback,omitempty"`
	Wait     *Wait           `json:"wait,omitempty"`
}

// ReadJSONL reads a log written by JSONL. Tool arguments logged as
// invalid_input are restored byte for byte. Errors name the line.
func ReadJSONL(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		rec, err := Decode(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Decode reads one entry in the form Encode and JSONL write.
func Decode(data []byte) (Record, error) {
	var raw struct {
		Record
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Record{}, err
	}
	rec := raw.Record
	if len(raw.Event) == 0 {
		return rec, nil
	}
	var ev loop.Event
	var inv struct {
		Reply *struct {
			Content []struct {
				InvalidInput *string `json:"invalid_input"`
			} `json:"content"`
		} `json:"reply"`
	}
	if err := json.Unmarshal(raw.Event, &ev); err != nil {
		return Record{}, fmt.Errorf("event: %w", err)
	}
	if err := json.Unmarshal(raw.Event, &inv); err != nil {
		return Record{}, fmt.Errorf("event: %w", err)
	}
	if inv.Reply != nil && ev.Reply != nil {
		for i, b := range inv.Reply.Content {
			if b.InvalidInput != nil && i < len(ev.Reply.Content) {
				ev.Reply.Content[i].Input = json.RawMessage(*b.InvalidInput)
			}
		}
	}
	rec.Event = &ev
	return rec, nil
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
	j.err = j.enc.Encode(logged(e))
}

// logged returns the value whose JSON is e's log form.
func logged(e Entry) any {
	le := loggedEntry{Entry: e}
	if e.Command != nil {
		le.Command = &loggedCommand{Command: e.Command, Request: Summarize(e.Command.Request)}
	}
	if e.Event != nil && hasInvalidInput(e.Event.Reply) {
		return invalidInputEntry{loggedEntry: le, Event: withInvalidInput(e.Event)}
	}
	return le
}

// Encode returns e's log form: one line of a JSONL log, without the
// newline. It is what a store keeps for each entry.
func Encode(e Entry) ([]byte, error) { return json.Marshal(logged(e)) }

// Flush writes buffered entries and returns the first error seen.
func (j *JSONL) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.w.Flush(); j.err == nil {
		j.err = err
	}
	return j.err
}

// Entry is r as the observers saw it, for printing a stored run again. A
// model call's request is logged as its summary, so the entry's request
// holds only its purpose and output cap.
func (r Record) Entry() (Entry, error) {
	e := Entry{Seq: r.Seq, Run: r.Run, At: r.At, Kind: r.Kind, Spec: r.Spec, Event: r.Event, Retry: r.Retry, Fallback: r.Fallback, Wait: r.Wait}
	if len(r.Command) > 0 {
		var c struct {
			loop.Command
			Request *RequestSummary `json:"request"`
		}
		if err := json.Unmarshal(r.Command, &c); err != nil {
			return Entry{}, fmt.Errorf("entry %d: command: %w", r.Seq, err)
		}
		if c.Request != nil {
			c.Command.Request = &model.Request{Purpose: c.Request.Purpose, MaxOutputTokens: c.Request.MaxOutputTokens}
		}
		e.Command = &c.Command
	}
	if len(r.Note) > 0 {
		e.Note = new(loop.Note)
		if err := json.Unmarshal(r.Note, e.Note); err != nil {
			return Entry{}, fmt.Errorf("entry %d: note: %w", r.Seq, err)
		}
	}
	return e, nil
}
