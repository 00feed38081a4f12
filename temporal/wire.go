package temporal

import (
	"encoding/json"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
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
}

type wireMessage struct {
	Role    model.Role  `json:"role"`
	Content []wireBlock `json:"content"`
}

// WireRequest is a model.Request in wire form.
type WireRequest struct {
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

func (w WireRequest) request() model.Request {
	r := model.Request{System: w.System, Tools: w.Tools, MaxOutputTokens: w.MaxOutputTokens, Purpose: w.Purpose}
	if w.Messages != nil {
		r.Messages = make([]model.Message, len(w.Messages))
		for i, m := range w.Messages {
			r.Messages[i] = model.Message{Role: m.Role, Content: fromWireBlocks(m.Content)}
		}
	}
	return r
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
