package loop

import (
	"github.com/ratchetloop/ratchet/model"
)

// history is the conversation the model sees: the goal first, then its
// turns and what answered them. Bytes sizes it for the token estimate
// without a rescan.
type history struct {
	Messages []model.Message `json:"messages"`
	Bytes    int64           `json:"bytes"`
}

func (h *history) append(msg model.Message) {
	h.Messages = append(h.Messages, msg)
	h.Bytes += messageWeight(msg)
}

// set replaces the messages and sizes them again.
func (h *history) set(msgs []model.Message) {
	h.Messages, h.Bytes = msgs, 0
	for _, msg := range msgs {
		h.Bytes += messageWeight(msg)
	}
}

// keepFrom returns the index of the first message of the latest k turns,
// each beginning with an assistant message, or 0 if there are fewer turns.
// Cutting there never separates a tool_use from its tool_result, which
// follow it in the next user message.
func (h *history) keepFrom(k int) int {
	for i := len(h.Messages) - 1; i >= 1; i-- {
		if h.Messages[i].Role == model.Assistant {
			if k--; k == 0 {
				return i
			}
		}
	}
	return 0
}

// The token estimate is tokenizer-free: the bytes a request carries (the
// system prompt; each tool's name, description and schema; each block's
// text, arguments, tool name and call ID) plus a fixed overhead per tool,
// message and block for the provider's framing, divided by BytesPerToken
// and rounded up. Byte-pair tokenizers average about 4 bytes per token on
// English prose and 3 to 4 on code and JSON, so the estimate is close for
// prose and errs low on dense JSON; TestEstimateCalibration measures it
// against real tokenizer counts.
const (
	BytesPerToken   = 4
	MessageOverhead = 16 // bytes per message: role and turn markers
	BlockOverhead   = 8  // bytes per content block: its type and separators
	ToolOverhead    = 32 // bytes per tool definition: the JSON around it
)

// EstimateTokens estimates req's input tokens as described above. It is
// what a CallModel command's InputEstimate holds.
func EstimateTokens(req model.Request) int64 {
	n := int64(len(req.System)) + toolsWeight(req.Tools)
	for _, msg := range req.Messages {
		n += messageWeight(msg)
	}
	return tokensOf(n)
}

func tokensOf(weight int64) int64 { return (weight + BytesPerToken - 1) / BytesPerToken }

func blockWeight(b model.Block) int64 {
	return int64(len(b.Text)+len(b.Input)+len(b.Name)+len(b.ID)) + BlockOverhead
}

func messageWeight(msg model.Message) int64 {
	n := int64(MessageOverhead)
	for _, b := range msg.Content {
		n += blockWeight(b)
	}
	return n
}

func toolsWeight(tools []model.ToolSpec) int64 {
	var n int64
	for _, t := range tools {
		n += int64(len(t.Name)+len(t.Description)+len(t.InputSchema)) + ToolOverhead
	}
	return n
}
