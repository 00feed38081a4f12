package temporal

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"slices"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
)

// Model requests and replies cross to and from activities in a wire form
// whose tool inputs are strings: encoding/json compacts a RawMessage (and
// refuses one that is not valid JSON, which a model may send), while the
// core and the model must see the model's bytes exactly, as in a local run.

type wireBlock struct {
	Type    model.BlockType `json:"type"`
	Text    string          `json:"text,omitempty"`
	ID      string          `json:"id,omitempty"`
	Name    string          `json:"name,omitempty"`
	Input   *string         `json:"input,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
	// Ref, instead of Text, names the store entry (its seq) of the
	// tool_result event whose output the text is: a large output crosses
	// once, not with every later request.
	Ref int64 `json:"ref,omitempty"`
}

type wireMessage struct {
	Role    model.Role  `json:"role"`
	Content []wireBlock `json:"content"`
}

// WireRequest is a model.Request in wire form. BaseSystem and BaseTools,
// instead of System and Tools, say they are those of the run's first
// step, which the worker builds from the spec itself.
type WireRequest struct {
	BaseSystem      bool             `json:"base_system,omitempty"`
	BaseTools       bool             `json:"base_tools,omitempty"`
	System          string           `json:"system,omitempty"`
	Messages        []wireMessage    `json:"messages"`
	Tools           []model.ToolSpec `json:"tools,omitempty"`
	MaxOutputTokens int              `json:"max_output_tokens,omitempty"`
	Purpose         model.Purpose    `json:"purpose,omitempty"`
}

// WireResponse is a model.Response in wire form.
type WireResponse struct {
	Content    []wireBlock `json:"content"`
	StopReason string      `json:"stop_reason,omitempty"`
	Usage      model.Usage `json:"usage"`
	Model      string      `json:"model,omitempty"`
}

// WireEvent is a loop.Event whose reply is in wire form.
type WireEvent struct {
	loop.Event
	Reply *WireResponse `json:"reply,omitempty"` // shadows Event.Reply
	// Repair, from an activity, is the repair entry its admission of the
	// event calls for (runner.Admit): recorded before the event.
	Repair *loop.Note `json:"repair,omitempty"`
	// Shell, from an activity, are the entries its executor recorded on
	// the command's way (retries, fallbacks, waits, hook decisions):
	// recorded before the repair and the event.
	Shell []observe.Entry `json:"shell,omitempty"`
}

func toWireBlocks(bs []model.Block) []wireBlock {
	if bs == nil {
		return nil
	}
	out := make([]wireBlock, len(bs))
	for i, b := range bs {
		out[i] = wireBlock{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, IsError: b.IsError}
		if b.Input != nil {
			s := string(b.Input)
			out[i].Input = &s
		}
	}
	return out
}

func fromWireBlocks(ws []wireBlock) []model.Block {
	if ws == nil {
		return nil
	}
	out := make([]model.Block, len(ws))
	for i, w := range ws {
		out[i] = model.Block{Type: w.Type, Text: w.Text, ID: w.ID, Name: w.Name, IsError: w.IsError}
		if w.Input != nil {
			out[i].Input = json.RawMessage(*w.Input)
		}
	}
	return out
}

func toWireRequest(r model.Request) WireRequest {
	w := WireRequest{System: r.System, Tools: r.Tools, MaxOutputTokens: r.MaxOutputTokens, Purpose: r.Purpose}
	if r.Messages != nil {
		w.Messages = make([]wireMessage, len(r.Messages))
		for i, m := range r.Messages {
			w.Messages[i] = wireMessage{Role: m.Role, Content: toWireBlocks(m.Content)}
		}
	}
	return w
}

// refMin is the size from which a tool output in a request is sent by
// reference.
const refMin = 1024

// OutputRef locates a large tool output in the store: the seq of its
// result's entry, and its length and hash, which the request's text must
// match (compaction may have cut it since).
type OutputRef struct {
	Seq int64  `json:"seq"`
	Len int    `json:"len"`
	Sum uint64 `json:"sum"`
}

func outputRef(seq int64, text string) OutputRef {
	h := fnv.New64a()
	h.Write([]byte(text))
	return OutputRef{Seq: seq, Len: len(text), Sum: h.Sum64()}
}

// shrink replaces in w what the worker can have without it: the first
// step's system prompt and tools, and tool outputs the store holds
// (outputs maps a tool call's ID to its output's place).
func (w *WireRequest) shrink(base model.Request, outputs map[string]OutputRef) {
	if w.System == base.System {
		w.System, w.BaseSystem = "", true
	}
	if sameTools(w.Tools, base.Tools) {
		w.Tools, w.BaseTools = nil, true
	}
	for _, m := range w.Messages {
		for i := range m.Content {
			b := &m.Content[i]
			ref, ok := outputs[b.ID]
			if ok && b.Type == model.ToolResult && len(b.Text) == ref.Len && outputRef(ref.Seq, b.Text) == ref {
				b.Text, b.Ref = "", ref.Seq
			}
		}
	}
}

func sameTools(a, b []model.ToolSpec) bool {
	return len(a) == len(b) && len(a) > 0 && slices.EqualFunc(a, b, func(x, y model.ToolSpec) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.InputSchema, y.InputSchema)
	})
}

// request rebuilds the model.Request: base is the run's first step's, and
// output returns the output recorded at a seq.
func (w WireRequest) request(base model.Request, output func(seq int64) (string, error)) (model.Request, error) {
	r := model.Request{System: w.System, Tools: w.Tools, MaxOutputTokens: w.MaxOutputTokens, Purpose: w.Purpose}
	if w.BaseSystem {
		r.System = base.System
	}
	if w.BaseTools {
		r.Tools = base.Tools
	}
	if w.Messages != nil {
		r.Messages = make([]model.Message, len(w.Messages))
		for i, m := range w.Messages {
			r.Messages[i] = model.Message{Role: m.Role, Content: fromWireBlocks(m.Content)}
			for j, wb := range m.Content {
				if wb.Ref == 0 {
					continue
				}
				text, err := output(wb.Ref)
				if err != nil {
					return model.Request{}, err
				}
				r.Messages[i].Content[j].Text = text
			}
		}
	}
	return r, nil
}

// baseRequest is the request of a run's first step, which both the
// workflow and the worker build from the spec: it is pure.
func baseRequest(spec loop.Spec) (model.Request, error) {
	m, err := loop.New(spec)
	if err != nil {
		return model.Request{}, err
	}
	if err := m.Step(loop.Event{Type: loop.EventStart}); err != nil {
		return model.Request{}, err
	}
	for _, c := range m.Ready().Commands {
		if c.Type == loop.CallModel {
			return *c.Request, nil
		}
	}
	return model.Request{}, nil
}

func toWireEvent(ev loop.Event) WireEvent {
	w := WireEvent{Event: ev}
	if r := ev.Reply; r != nil {
		w.Reply = &WireResponse{Content: toWireBlocks(r.Content), StopReason: r.StopReason, Usage: r.Usage, Model: r.Model}
		w.Event.Reply = nil
	}
	return w
}

func (w WireEvent) event() loop.Event {
	ev := w.Event
	if r := w.Reply; r != nil {
		ev.Reply = &model.Response{Content: fromWireBlocks(r.Content), StopReason: r.StopReason, Usage: r.Usage, Model: r.Model}
	}
	return ev
}

func toWireEvents(evs []loop.Event) []WireEvent {
	out := make([]WireEvent, len(evs))
	for i, ev := range evs {
		out[i] = toWireEvent(ev)
	}
	return out
}
