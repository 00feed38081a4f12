// Package store keeps runs durable: a row per run, an append-only log of
// its entries with sequence numbers, and snapshots of the loop core.
//
// The log is the source of truth (a run's state is the fold of its events);
// snapshots are a cache that makes resume fast. Entries are opaque bytes to
// the store: the observe package encodes and decodes them, so a store never
// depends on the loop core's types.
//
// Implementations live in subpackages named after what they wrap
// (store/sqlite, store/postgres) and all pass store/storetest. Every method
// must be safe for concurrent use by many runs at once.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is wrapped by errors for a run or snapshot that does not
// exist.
var ErrNotFound = errors.New("store: not found")

// ErrExists is wrapped by CreateRun's error when the run ID is taken.
var ErrExists = errors.New("store: run already exists")

// ErrConflict is wrapped by Append's error when the entries do not continue
// the log exactly: another writer appended first (optimistic concurrency),
// or the sequence numbers have a gap or repeat. Nothing is written then.
var ErrConflict = errors.New("store: sequence conflict")

// Status values of a run that has not finished. A finished run's status is
// the loop core's Result status ("done", "exhausted:steps", ...).
const (
	StatusRunning       = "running"
	StatusAwaitingInput = "awaiting_input"
)

// Run is one row of the run table.
type Run struct {
	ID string
	// Parent is the run that spawned this one (a sub-agent); "" for none.
	Parent string
	// ForkOf is the run this one was forked from and ForkSeq the entry
	// of its log the fork carried on after (runner.Fork); "" and 0 for
	// none.
	ForkOf  string
	ForkSeq int64
	Goal    string
	// Labels tag a run for filtering (e.g. an eval suite's label).
	Labels []string
	// Status is StatusRunning, StatusAwaitingInput or a final status.
	Status string
	// Question is what the run is waiting on while awaiting_input.
	Question string
	// Task is what is needed to rebuild the run's live objects on resume
	// (the task file path and flags, as JSON); opaque to the store.
	Task []byte
	// Result is the final Result as JSON; nil until the run finishes.
	Result     []byte
	Steps      int64
	CostMicros int64
	Created    time.Time
	Updated    time.Time
	// Holder names the process carrying the run out ("PID@HOST"), "" when
	// none does; Heartbeat is when the holder last said it was alive. A
	// running run whose holder is gone was interrupted (runner.Lease).
	Holder    string
	Heartbeat time.Time
}

// Update changes the mutable fields of a run; nil fields (and a zero
// Updated) are left alone.
type Update struct {
	Status     *string
	Question   *string
	Result     []byte // nil leaves it alone
	Steps      *int64
	CostMicros *int64
	Updated    time.Time
	Holder     *string
	Heartbeat  time.Time // zero leaves it alone
}

// Columns calls set with the name of each column u changes and its new
// value, in a fixed order: the SQL backends build their UPDATE from it.
func (u Update) Columns(set func(column string, value any)) {
	if u.Status != nil {
		set("status", *u.Status)
	}
	if u.Question != nil {
		set("question", *u.Question)
	}
	if u.Result != nil {
		set("result", u.Result)
	}
	if u.Steps != nil {
		set("steps", *u.Steps)
	}
	if u.CostMicros != nil {
		set("cost_micros", *u.CostMicros)
	}
	if !u.Updated.IsZero() {
		set("updated", u.Updated)
	}
	if u.Holder != nil {
		set("holder", *u.Holder)
	}
	if !u.Heartbeat.IsZero() {
		set("heartbeat", u.Heartbeat)
	}
}

// Filter selects runs for List. Zero fields match everything.
type Filter struct {
	// Status matches runs whose status is any of these; a value ending in
	// ":" matches by prefix ("exhausted:" matches every exhausted run).
	Status []string
	// Label matches runs carrying this label.
	Label  string
	Parent string
	// Text matches runs whose ID or goal contains it, ASCII letters
	// compared without case (other characters exactly); "" matches all.
	Text string
	// Order is the order runs come back in; the zero value is newest first.
	Order Order
	// Offset skips this many matching runs, in Order: with Limit, a page.
	Offset int
	// Limit caps the number of runs returned; 0 means no cap.
	Limit int
}

// Order says how ListRuns sorts. Ties are broken newest first (by Created,
// then by insertion order), so every order is total and pages are stable.
type Order string

const (
	OrderNewest Order = ""       // Created, newest first
	OrderOldest Order = "oldest" // Created, oldest first
	OrderCost   Order = "cost"   // CostMicros, highest first
	OrderSteps  Order = "steps"  // Steps, most first
)

// OrderBy returns the ORDER BY clause of o that the SQL backends share
// (n is a run's insertion order), or false for an unknown order.
func (o Order) OrderBy() (string, bool) {
	switch o {
	case OrderNewest:
		return "created DESC, n DESC", true
	case OrderOldest:
		return "created, n", true
	case OrderCost:
		return "cost_micros DESC, created DESC, n DESC", true
	case OrderSteps:
		return "steps DESC, created DESC, n DESC", true
	}
	return "", false
}

// LowerASCII returns s with ASCII letters lowered and every other byte
// kept: the case folding of Filter.Text, the same in every backend.
func LowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Entry is one line of a run's log.
type Entry struct {
	Seq  int64 // 1, 2, 3, ... with no gaps
	Kind string
	At   time.Time
	Data []byte // the entry as observe encodes it
}

// Snapshot is a serialized loop core taken after the entry with sequence
// number Seq.
type Snapshot struct {
	Seq  int64
	Data []byte
}

// Message is a message a person sent a run while it goes (ratchet say),
// queued until the process carrying the run out takes it into the log.
type Message struct {
	ID   int64 // increasing within a store, never reused
	Text string
	At   time.Time
}

// Store is the durable home of runs. Append must not return before the
// entries are durable: the runner carries out no command until the events
// before it are.
//
// The methods that take a run ID wrap ErrNotFound when no such run was
// created. Times come back in UTC, truncated to the microsecond; byte fields
// come back byte for byte (nil and empty alike). store/storetest checks all
// of this.
type Store interface {
	// CreateRun inserts r; it wraps ErrExists if r.ID is taken.
	CreateRun(ctx context.Context, r Run) error
	// Run returns one run; it wraps ErrNotFound if there is none.
	Run(ctx context.Context, id string) (Run, error)
	// UpdateRun changes a run; it wraps ErrNotFound if there is none.
	UpdateRun(ctx context.Context, id string, u Update) error
	// ListRuns returns the runs that match f, newest first.
	ListRuns(ctx context.Context, f Filter) ([]Run, error)

	// Append adds entries to a run's log atomically. entries[0].Seq must be
	// one past the last stored Seq and the rest must follow without gaps;
	// otherwise nothing is written and the error wraps ErrConflict. Of two
	// writers racing to append the same Seq, exactly one succeeds. No
	// entries is a no-op. If ctx is done before the write starts, nothing
	// is written.
	Append(ctx context.Context, run string, entries []Entry) error
	// Entries returns the run's entries with Seq > after, in order.
	Entries(ctx context.Context, run string, after int64) ([]Entry, error)
	// LastSeq returns the Seq of the run's last entry, 0 for none.
	LastSeq(ctx context.Context, run string) (int64, error)

	// SaveSnapshot stores a snapshot; older ones may be dropped. The last
	// one saved is the latest.
	SaveSnapshot(ctx context.Context, run string, s Snapshot) error
	// LatestSnapshot returns the newest snapshot; it wraps ErrNotFound if
	// the run has none.
	LatestSnapshot(ctx context.Context, run string) (Snapshot, error)

	// DeleteRun removes a run with its entries and snapshots, in one
	// transaction; it wraps ErrNotFound if there is none. It does not look
	// at the run's status or its sub-agents' runs: callers decide what may
	// go (ratchet rm and gc never delete a running run).
	DeleteRun(ctx context.Context, id string) error

	// Enqueue queues m for the run (m.ID is ignored) and returns its ID.
	// It wraps ErrNotFound if there is no such run.
	Enqueue(ctx context.Context, run string, m Message) (int64, error)
	// Messages returns the run's queued messages with ID > after, oldest
	// first; none for a run that does not exist.
	Messages(ctx context.Context, run string, after int64) ([]Message, error)
	// DeleteMessages removes the run's queued messages with ID ≤ through,
	// once the log holds them. DeleteRun removes the rest.
	DeleteMessages(ctx context.Context, run string, through int64) error

	Close() error
}
