// Package memory is a store.Store that keeps everything in process memory:
// for tests and for runs that need no durability. It passes store/storetest.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/store"
)

// Store is safe for concurrent use. The zero value is not ready; use New.
type Store struct {
	mu    sync.Mutex
	runs  map[string]*run
	order int64
	msgID int64 // the last Message ID given
}

type run struct {
	info    store.Run
	created int64 // insertion order, to break ties between equal times
	entries []store.Entry
	snap    *store.Snapshot
	inbox   []store.Message
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{runs: map[string]*run{}} }

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// at keeps a time as the durable stores do: UTC, to the microsecond.
func at(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func copyRun(r store.Run) store.Run {
	r.Labels = slices.Clone(r.Labels)
	r.Task, r.Result = clone(r.Task), clone(r.Result)
	r.Created, r.Updated = at(r.Created), at(r.Updated)
	if !r.Heartbeat.IsZero() {
		r.Heartbeat = at(r.Heartbeat)
	}
	return r
}

func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("run %q: %w", r.ID, store.ErrExists)
	}
	if r.Status == "" {
		r.Status = store.StatusRunning
	}
	if r.Updated.IsZero() {
		r.Updated = r.Created
	}
	s.order++
	s.runs[r.ID] = &run{info: copyRun(r), created: s.order}
	return nil
}

func (s *Store) get(id string) (*run, error) {
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return r, nil
}

func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	if err := ctx.Err(); err != nil {
		return store.Run{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return store.Run{}, err
	}
	return copyRun(r.info), nil
}

func (s *Store) UpdateRun(ctx context.Context, id string, u store.Update) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return err
	}
	if u.Status != nil {
		r.info.Status = *u.Status
	}
	if u.Question != nil {
		r.info.Question = *u.Question
	}
	if u.Result != nil {
		r.info.Result = clone(u.Result)
	}
	if u.Steps != nil {
		r.info.Steps = *u.Steps
	}
	if u.CostMicros != nil {
		r.info.CostMicros = *u.CostMicros
	}
	if !u.Updated.IsZero() {
		r.info.Updated = at(u.Updated)
	}
	if u.Holder != nil {
		r.info.Holder = *u.Holder
	}
	if !u.Heartbeat.IsZero() {
		r.info.Heartbeat = at(u.Heartbeat)
	}
	return nil
}

// Matches reports whether r is selected by f; it is exported for stores
// that filter in Go.
func Matches(f store.Filter, r store.Run) bool {
	if len(f.Status) > 0 && !slices.ContainsFunc(f.Status, func(st string) bool {
		if strings.HasSuffix(st, ":") {
			return strings.HasPrefix(r.Status, st)
		}
		return r.Status == st
	}) {
		return false
	}
	if f.Label != "" && !slices.Contains(r.Labels, f.Label) {
		return false
	}
	if f.Text != "" {
		text := store.LowerASCII(f.Text)
		if !strings.Contains(store.LowerASCII(r.ID), text) && !strings.Contains(store.LowerASCII(r.Goal), text) {
			return false
		}
	}
	return f.Parent == "" || r.Parent == f.Parent
}

func (s *Store) ListRuns(ctx context.Context, f store.Filter) ([]store.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []*run
	for _, r := range s.runs {
		if Matches(f, r.info) {
			rs = append(rs, r)
		}
	}
	if _, ok := f.Order.OrderBy(); !ok {
		return nil, fmt.Errorf("memory: list runs: unknown order %q", f.Order)
	}
	newest := func(a, b *run) int {
		if c := b.info.Created.Compare(a.info.Created); c != 0 {
			return c
		}
		return int(b.created - a.created)
	}
	slices.SortFunc(rs, func(a, b *run) int {
		switch f.Order {
		case store.OrderOldest:
			return -newest(a, b)
		case store.OrderCost:
			if c := cmp.Compare(b.info.CostMicros, a.info.CostMicros); c != 0 {
				return c
			}
		case store.OrderSteps:
			if c := cmp.Compare(b.info.Steps, a.info.Steps); c != 0 {
				return c
			}
		}
		return newest(a, b)
	})
	rs = rs[min(max(f.Offset, 0), len(rs)):]
	if f.Limit > 0 && len(rs) > f.Limit {
		rs = rs[:f.Limit]
	}
	out := make([]store.Run, len(rs))
	for i, r := range rs {
		out[i] = copyRun(r.info)
	}
	return out, nil
}

func (s *Store) Append(ctx context.Context, id string, entries []store.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return err
	}
	next := int64(len(r.entries)) + 1
	for i, e := range entries {
		if e.Seq != next+int64(i) {
			return fmt.Errorf("run %q: entry seq %d, want %d: %w", id, e.Seq, next+int64(i), store.ErrConflict)
		}
	}
	for _, e := range entries {
		e.Data = clone(e.Data)
		e.At = at(e.At)
		r.entries = append(r.entries, e)
	}
	return nil
}

func (s *Store) Entries(ctx context.Context, id string, after int64) ([]store.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return nil, err
	}
	after = max(after, 0)
	if after >= int64(len(r.entries)) {
		return nil, nil
	}
	out := slices.Clone(r.entries[after:])
	for i := range out {
		out[i].Data = clone(out[i].Data)
	}
	return out, nil
}

func (s *Store) LastSeq(ctx context.Context, id string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return 0, err
	}
	return int64(len(r.entries)), nil
}

func (s *Store) SaveSnapshot(ctx context.Context, id string, snap store.Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return err
	}
	if r.snap == nil || snap.Seq >= r.snap.Seq {
		r.snap = &store.Snapshot{Seq: snap.Seq, Data: clone(snap.Data)}
	}
	return nil
}

func (s *Store) LatestSnapshot(ctx context.Context, id string) (store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return store.Snapshot{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return store.Snapshot{}, err
	}
	if r.snap == nil {
		return store.Snapshot{}, fmt.Errorf("run %q snapshot: %w", id, store.ErrNotFound)
	}
	return store.Snapshot{Seq: r.snap.Seq, Data: clone(r.snap.Data)}, nil
}

// DeleteRun implements store.Store.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return err
	}
	delete(s.runs, id)
	return nil
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, id string, m store.Message) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return 0, err
	}
	s.msgID++
	m.ID, m.At = s.msgID, at(m.At)
	r.inbox = append(r.inbox, m)
	return m.ID, nil
}

// Messages implements store.Store.
func (s *Store) Messages(ctx context.Context, id string, after int64) ([]store.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Message
	if r, ok := s.runs[id]; ok {
		for _, m := range r.inbox {
			if m.ID > after {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// DeleteMessages implements store.Store.
func (s *Store) DeleteMessages(ctx context.Context, id string, through int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[id]; ok {
		r.inbox = slices.DeleteFunc(r.inbox, func(m store.Message) bool { return m.ID <= through })
	}
	return nil
}

func (s *Store) Close() error { return nil }
