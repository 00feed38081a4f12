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
	h.Bytes += model.MessageWeight(msg)
}

// set replaces the messages and sizes them again.
func (h *history) set(msgs []model.Message) {
	h.Messages, h.Bytes = msgs, 0
	for _, msg := range msgs {
		h.Bytes += model.MessageWeight(msg)
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
