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

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
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
	// KindRetry records a transport retry of a model call. It is not a loop
	// event: the core never sees it, and replay skips it.
	KindRetry Kind = "retry"
	// KindRepair records, in its Note, that the shell changed text on its
	// way in (bytes that are not UTF-8 replaced), so that nothing changes
	// silently. Like a retry, the core never sees it and replay skips it.
	KindRepair Kind = "repair"
	// KindFallback records a model call handed to the next model of a
	// fallback chain; KindWait a call held back by its provider's shared
	// limits. Like retries, the core never sees them and replay skips them.
	KindFallback Kind = "fallback"
	KindWait     Kind = "wait"
	// KindHook records, in its Note, a decision of one of the caller's
	// hooks that changed something (runner.Hooks: context added to a
	// model call, a tool call denied or its arguments or result
	// rewritten). What it changed reaches the core as the events that
	// follow, so the core never sees it and replay skips it.
	KindHook Kind = "hook"
)

// Entry is one line of a run's log.
type Entry struct {
	Seq      int64         `json:"seq"`
	Run      string        `json:"run"`
	At       time.Time     `json:"at"`
	Kind     Kind          `json:"kind"`
	Spec     *loop.Spec    `json:"spec,omitempty"`
	Event    *loop.Event   `json:"event,omitempty"`
	Command  *loop.Command `json:"command,omitempty"`
	Note     *loop.Note    `json:"note,omitempty"`
	Retry    *Retry        `json:"retry,omitempty"`
	Fallback *Fallback     `json:"fallback,omitempty"`
	Wait     *Wait         `json:"wait,omitempty"`
}

// Fallback is the model call Call handed from one model of a fallback
// chain to the next.
type Fallback struct {
	Call string `json:"call"`
	model.Fallback
}

// Wait is the model call Call held back by its provider's shared limits.
type Wait struct {
	Call string `json:"call"`
	model.Wait
}

// Retry is a transport retry of the model call Call (a call_model
// command's id): the attempt about to be made, the failed attempt's status
// and reason, and the wait before it.
type Retry struct {
	Call string `json:"call"`
	model.Retry
}

// TextObserver is implemented by observers that show a model's text as it
// streams (the Printer). Unlike Observe, ObserveText may be called from a
// goroutine other than the runner's driving one; the text is shown, not
// logged: the model_reply event that follows holds all of it.
type TextObserver interface {
	ObserveText(run, call, delta string)
}

// ResumeObserver is implemented by observers that count what a run has
// done (the Printer's step numbers and usage): a resumed run tells them
// its usage so far before its first new entry, so counts go on from there.
type ResumeObserver interface {
	Resumed(run string, used budget.Usage)
}

// Observer receives entries in sequence order.
type Observer interface {
	Observe(e Entry)
}

// Func adapts a function to an Observer.
type Func func(Entry)

func (f Func) Observe(e Entry) { f(e) }

// Memory keeps every entry in memory, for tests and benchmarks, each in a
// compact form. It is not safe for concurrent use.
type Memory struct {
	// run and loc are every entry's Run and At location: entries of
	// another run (a child's, say) are kept whole.
	run string
	loc *time.Location
	// first is the Seq of the first entry, next one more than the Seq of
	// the run's latest: a compact entry's Seq is the one it must have.
	first, next int64
	entries     []memEntry
}

// memEntry is an Entry in 24 bytes instead of 120, with one pointer for
// the collector to follow instead of seven: its At in Unix nanoseconds and,
// of its seven pointers, the one that is set, kept as an interface whose
// type gives the Kind. Its Seq is implied. An entry of another shape is
// kept whole.
type memEntry struct {
	at  int64
	ptr any
}

func (m *Memory) Observe(e Entry) {
	if len(m.entries) == 0 {
		m.run, m.loc = e.Run, e.At.Location()
		m.first, m.next = e.Seq, e.Seq
	}
	me := memEntry{at: e.At.UnixNano()}
	if e.Run == m.run && e.Seq == m.next && m.time(me) == e.At {
		me.ptr = compact(e)
	} else {
		whole := e // declared here so that only such entries are copied to the heap
		me.ptr = &whole
	}
	if e.Run == m.run {
		m.next = e.Seq + 1
	}
	m.entries = append(m.entries, me)
}

func (m *Memory) time(me memEntry) time.Time { return time.Unix(0, me.at).In(m.loc) }

// compact returns the one pointer e holds, if that is all it holds beyond
// what memEntry keeps, and a copy of e otherwise.
func compact(e Entry) any {
	var ptr any
	set := 0
	if e.Spec != nil {
		ptr, set = e.Spec, set+1
	}
	if e.Event != nil {
		ptr, set = e.Event, set+1
	}
	if e.Command != nil {
		ptr, set = e.Command, set+1
	}
	if e.Note != nil {
		ptr, set = e.Note, set+1
	}
	if e.Retry != nil {
		ptr, set = e.Retry, set+1
	}
	if e.Fallback != nil {
		ptr, set = e.Fallback, set+1
	}
	if e.Wait != nil {
		ptr, set = e.Wait, set+1
	}
	if set != 1 || kindOf(ptr) != e.Kind {
		whole := e // declared here so that only such entries are copied to the heap
		return &whole
	}
	return ptr
}

// kindOf is the Kind of an entry holding ptr.
func kindOf(ptr any) Kind {
	switch ptr.(type) {
	case *loop.Spec:
		return KindRun
	case *loop.Event:
		return KindEvent
	case *loop.Command:
		return KindCommand
	case *loop.Note:
		return KindNote
	case *Retry:
		return KindRetry
	case *Fallback:
		return KindFallback
	case *Wait:
		return KindWait
	}
	return ""
}

func (m *Memory) entry(me memEntry, seq int64) Entry {
	e := Entry{Seq: seq, Run: m.run, At: m.time(me), Kind: kindOf(me.ptr)}
	switch p := me.ptr.(type) {
	case *loop.Spec:
		e.Spec = p
	case *loop.Event:
		e.Event = p
	case *loop.Command:
		e.Command = p
	case *loop.Note:
		e.Note = p
	case *Retry:
		e.Retry = p
	case *Fallback:
		e.Fallback = p
	case *Wait:
		e.Wait = p
	}
	return e
}

// Len returns how many entries have been observed.
func (m *Memory) Len() int { return len(m.entries) }

// Entries returns every entry in order, as a new slice.
func (m *Memory) Entries() []Entry {
	out := make([]Entry, 0, len(m.entries))
	seq := m.first // as Observe kept next
	for _, me := range m.entries {
		if whole, ok := me.ptr.(*Entry); ok {
			out = append(out, *whole)
			if whole.Run == m.run {
				seq = whole.Seq + 1
			}
			continue
		}
		out = append(out, m.entry(me, seq))
		seq++
	}
	return out
}
