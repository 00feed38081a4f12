// Package observe receives everything that happens in a run: the events fed
// to the loop core, the commands it issued and the notes it recorded. Entries
// go to observers: a JSONL log (the schema is in docs/events.md), a terminal
// printer, or memory.
//
// Observers are called from the runner's single driving goroutine, in order;
// an Observer shared between runs must be safe for concurrent use.
package observe

import (
	"time"

	"github.com/ratchetloop/ratchet/loop"
)

// Kind says which field of an Entry is set.
type Kind string

const (
	KindEvent   Kind = "event"
	KindCommand Kind = "command"
	KindNote    Kind = "note"
)

// Entry is one line of a run's log.
type Entry struct {
	Seq     int64         `json:"seq"`
	Run     string        `json:"run"`
	At      time.Time     `json:"at"`
	Kind    Kind          `json:"kind"`
	Event   *loop.Event   `json:"event,omitempty"`
	Command *loop.Command `json:"command,omitempty"`
	Note    *loop.Note    `json:"note,omitempty"`
}

// Observer receives entries in sequence order.
type Observer interface {
	Observe(e Entry)
}

// Func adapts a function to an Observer.
type Func func(Entry)

func (f Func) Observe(e Entry) { f(e) }

// Memory keeps every entry in a slice. It is for tests and benchmarks and is
// not safe for concurrent use.
type Memory struct {
	Entries []Entry
}

func (m *Memory) Observe(e Entry) { m.Entries = append(m.Entries, e) }
