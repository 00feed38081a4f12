package loop

import (
	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

// Steering: messages a person sends a run while it goes (ratchet say), and
// forks, which carry a copied run on with another budget or a message.

// inbox holds the messages a person sent the run that no model request
// has carried yet. They are kept apart from the outbox so that they
// follow, never precede, the tool results that answer the turn before:
// providers want a turn's tool results first in the next user message.
type inbox struct {
	Queued []string `json:"queued,omitempty"`
}

// userMessagePrefix introduces a person's message to the model, which
// otherwise could not tell it from the task's own text.
const userMessagePrefix = "A message from the person who started this run, sent while you worked:\n"

func (b *inbox) add(text string) { b.Queued = append(b.Queued, text) }

// take returns the queued messages as blocks for the next user message,
// and empties the inbox.
func (b *inbox) take() []model.Block {
	if len(b.Queued) == 0 {
		return nil
	}
	out := make([]model.Block, len(b.Queued))
	for i, t := range b.Queued {
		out[i] = model.TextBlock(userMessagePrefix + t)
	}
	b.Queued = nil
	return out
}

// acceptSteer checks an EventUserMessage or EventFork in phase p, with
// awaiting the model calls in flight and reserve the run's closing
// reserve; it returns why not, or "".
func acceptSteer(ev *Event, p phase, awaiting []string, reserve budget.Usage) string {
	switch {
	case ev.Type == EventUserMessage && ev.Text == "":
		return "without text"
	case ev.Type == EventFork && (p != phaseTurn || len(awaiting) != 1):
		return "outside a step's model call (a fork carries a run on from one)"
	case ev.Type == EventFork && ev.Limits != nil:
		if err := ev.Limits.Validate(reserve); err != nil {
			return "with invalid limits: " + err.Error()
		}
	}
	return ""
}

// fork carries the run on from a copied log: the budget is the fork's, a
// message goes to the history now so that the call issued again carries
// it, and what was in flight is issued again as on a resume.
func fork(m *Machine, ev *Event) {
	if ev.Limits != nil {
		m.spec.Budget = ev.Limits.WithDefaults()
	}
	if ev.Text != "" {
		m.st.Inbox.add(ev.Text)
	}
	m.st.flushOutbox()
	m.resume()
}
