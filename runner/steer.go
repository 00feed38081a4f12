package runner

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/store"
)

// MaxMessageBytes caps a message Say queues: it goes into every later
// model request of the run.
const MaxMessageBytes = 16 << 10

// Say queues text for run id in s, for the run's next model turn to see:
// the process carrying the run out takes it from the queue before it
// carries out its next command and records it as a user_message event
// (loop.EventUserMessage). A run waiting for a person, or interrupted,
// takes it when it is carried on. It fails for a run that has finished
// (wrapping ErrFinished) or does not exist (store.ErrNotFound).
func Say(ctx context.Context, s store.Store, id, text string) error {
	switch {
	case text == "":
		return errors.New("runner: say: the message is empty")
	case len(text) > MaxMessageBytes:
		return fmt.Errorf("runner: say: the message is %d bytes, over the limit of %d", len(text), MaxMessageBytes)
	case !utf8.ValidString(text):
		return errors.New("runner: say: the message is not UTF-8 text")
	}
	row, err := s.Run(ctx, id)
	if err != nil {
		return fmt.Errorf("runner: say: %w", err)
	}
	switch row.Status {
	case store.StatusRunning, store.StatusAwaitingInput, string(loop.Cancelled):
	default:
		return fmt.Errorf("runner: say: run %s: %w (%s)", id, ErrFinished, row.Status)
	}
	if _, err := s.Enqueue(ctx, id, store.Message{Text: text, At: time.Now()}); err != nil {
		return fmt.Errorf("runner: say: %w", err)
	}
	return nil
}

// takeMessages steps the messages queued for the run (Say) into the
// machine as user_message events, recorded after the entries of the step
// before; the caller's save makes them durable, then takenMessages
// removes them from the queue. It runs at every command batch: one
// indexed read beside the batch's write-ahead commit. A queue that cannot
// be read now is read at the next batch; only the core refusing a message
// (a shell bug) is an error.
func (r *run) takeMessages(ctx context.Context) error {
	if r.cfg.Store == nil {
		return nil
	}
	msgs, err := r.cfg.Store.Messages(ctx, r.cfg.RunID, r.inboxTaken)
	if err != nil || len(msgs) == 0 {
		return nil
	}
	for _, msg := range msgs {
		ev := loop.Event{Type: loop.EventUserMessage, At: r.log.now(), Text: msg.Text}
		r.log.admit(&ev)
		if ev.Text == "" {
			continue // nothing to say; the core would refuse it
		}
		r.log.record(observe.Entry{At: ev.At, Kind: observe.KindEvent, Event: &ev})
		if err := r.m.Step(ev); err != nil {
			return err
		}
		rd := r.m.Ready()
		r.m.Advance()
		r.recordReady(&ev, rd)
	}
	r.inboxTaken = msgs[len(msgs)-1].ID
	return nil
}

// takenMessages removes from the queue the messages the log now holds. A
// failure leaves them queued; this process does not take them again
// (inboxTaken), though a resume would.
func (r *run) takenMessages(ctx context.Context) {
	if r.cfg.Store != nil && r.inboxTaken > r.inboxDeleted {
		if r.cfg.Store.DeleteMessages(context.WithoutCancel(ctx), r.cfg.RunID, r.inboxTaken) == nil {
			r.inboxDeleted = r.inboxTaken
		}
	}
}
