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
	// KindRun opens a run's log with the spec the core ran, so that the log
	// alone can be replayed.
	KindRun     Kind = "run"
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
	Spec    *loop.Spec    `json:"spec,omitempty"`
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

// Memory keeps every entry in memory, for tests and benchmarks. Entries are
// stored in fixed-size chunks, so the log is never copied as it grows and
// wastes at most one partly filled chunk. It is not safe for concurrent use.
type Memory struct {
	chunks [][]Entry
	n      int
}

// memoryChunk is the number of entries per chunk: about eight steps of a
// tool loop.
const memoryChunk = 32

func (m *Memory) Observe(e Entry) {
	last := len(m.chunks) - 1
	if last < 0 || len(m.chunks[last]) == memoryChunk {
		m.chunks = append(m.chunks, make([]Entry, 0, memoryChunk))
		last++
	}
	m.chunks[last] = append(m.chunks[last], e)
	m.n++
}

// Len returns how many entries have been observed.
func (m *Memory) Len() int { return m.n }

// Entries returns every entry in order, as a new slice.
func (m *Memory) Entries() []Entry {
	out := make([]Entry, 0, m.n)
	for _, c := range m.chunks {
		out = append(out, c...)
	}
	return out
}
