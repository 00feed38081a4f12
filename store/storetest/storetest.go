// Package storetest is the conformance suite every store.Store passes.
//
// A store's own tests call Run with a function that opens a new, empty
// store; the suite reports every violation it finds (each check is a
// subtest, and a check goes on after a failed comparison where it can).
//
// Beyond the interface's doc comments, the suite pins down these choices,
// which every implementation shares:
//   - Times come back in UTC, truncated to the microsecond (PostgreSQL's
//     timestamptz precision).
//   - Data, Task, Result and snapshot bytes come back byte for byte; nil and
//     empty are not told apart.
//   - Append, Entries, LastSeq, SaveSnapshot and LatestSnapshot on a run
//     that was never created wrap store.ErrNotFound.
//   - Append with no entries is a no-op.
//   - Append with a context that is already done writes nothing.
//   - SaveSnapshot keeps the last snapshot saved; LatestSnapshot returns it.
//   - ListRuns breaks ties in Created by insertion order, newest first.
//   - A zero Update.Updated leaves the run's Updated alone.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/store"
)

// Run runs the conformance suite. open returns a new store with no runs
// in it; the suite closes it. Every subtest gets its own store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"Update", testUpdate},
		{"List", testList},
		{"Append", testAppend},
		{"AppendConflicts", testAppendConflicts},
		{"RacingWriters", testRacingWriters},
		{"RandomAppends", testRandomAppends},
		{"NotFound", testNotFound},
		{"Snapshots", testSnapshots},
		{"Bytes", testBytes},
		{"Times", testTimes},
		{"CancelledAppend", testCancelledAppend},
		{"ConcurrentRuns", testConcurrentRuns},
		{"Delete", testDelete},
		{"Messages", testMessages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// base is an arbitrary instant with a microsecond part, in UTC.
var base = time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)

// equal compares values the way the suite's contract does: times by
// instant, nil and empty slices alike.
var equal = cmp.Options{cmpopts.EquateEmpty()}

func run(id string, created time.Time, mods ...func(*store.Run)) store.Run {
	r := store.Run{
		ID:      id,
		Goal:    "goal of " + id,
		Status:  store.StatusRunning,
		Created: created,
		Updated: created,
	}
	for _, m := range mods {
		m(&r)
	}
	return r
}

func mustCreate(t *testing.T, s store.Store, runs ...store.Run) {
	t.Helper()
	for _, r := range runs {
		if err := s.CreateRun(context.Background(), r); err != nil {
			t.Fatalf("CreateRun(%q): %v", r.ID, err)
		}
	}
}

// entries returns n entries starting at seq from.
func entries(from int64, n int, tag string) []store.Entry {
	out := make([]store.Entry, n)
	for i := range out {
		seq := from + int64(i)
		out[i] = store.Entry{
			Seq:  seq,
			Kind: "kind" + fmt.Sprint(seq%3),
			At:   base.Add(time.Duration(seq) * time.Millisecond),
			Data: []byte(fmt.Sprintf(`{"seq":%d,"tag":%q}`, seq, tag)),
		}
	}
	return out
}

func mustAppend(t *testing.T, s store.Store, id string, es []store.Entry) {
	t.Helper()
	if err := s.Append(context.Background(), id, es); err != nil {
		t.Fatalf("Append(%q, seq %d..): %v", id, es[0].Seq, err)
	}
}

// checkLog reports any difference between the run's stored log and want.
func checkLog(t *testing.T, s store.Store, id string, want []store.Entry) {
	t.Helper()
	ctx := context.Background()
	got, err := s.Entries(ctx, id, 0)
	if err != nil {
		t.Errorf("Entries(%q, 0): %v", id, err)
	} else if !sameEntries(want, got) {
		t.Errorf("Entries(%q, 0) (-want +got):\n%s", id, cmp.Diff(want, got, equal))
	}
	var wantLast int64
	if len(want) > 0 {
		wantLast = want[len(want)-1].Seq
	}
	if last, err := s.LastSeq(ctx, id); err != nil || last != wantLast {
		t.Errorf("LastSeq(%q) = %d, %v; want %d", id, last, err, wantLast)
	}
}

// sameEntries is cmp.Equal(a, b, equal) for entries, fast enough for long
// logs under the race detector.
func sameEntries(a, b []store.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Seq != b[i].Seq || a[i].Kind != b[i].Kind || !a[i].At.Equal(b[i].At) || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

func testCreateAndGet(t *testing.T, s store.Store) {
	ctx := context.Background()
	full := store.Run{
		ID:         "run-full",
		Parent:     "run-parent",
		ForkOf:     "run-forked-from",
		ForkSeq:    42,
		Goal:       "Add 2 and 3 — ünïcode, \"quotes\", 'single', back\\slash",
		Labels:     []string{"suite:smoke", "b", "a"},
		Status:     store.StatusAwaitingInput,
		Question:   "May I delete /tmp/x?",
		Task:       []byte(`{"file":"task.yaml","flags":["-v"]}`),
		Result:     []byte(`{"status":"done"}`),
		Steps:      7,
		CostMicros: 123456789012,
		Created:    base,
		Updated:    base.Add(time.Second),
	}
	bare := store.Run{ID: "run-bare", Status: store.StatusRunning, Created: base, Updated: base}
	mustCreate(t, s, full, bare)

	for _, want := range []store.Run{full, bare} {
		got, err := s.Run(ctx, want.ID)
		if err != nil {
			t.Errorf("Run(%q): %v", want.ID, err)
			continue
		}
		if diff := cmp.Diff(want, got, equal); diff != "" {
			t.Errorf("Run(%q) (-want +got):\n%s", want.ID, diff)
		}
	}

	dup := run("run-full", base.Add(time.Hour), func(r *store.Run) { r.Goal = "another" })
	if err := s.CreateRun(ctx, dup); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateRun of a taken ID = %v, want ErrExists", err)
	}
	if got, err := s.Run(ctx, full.ID); err != nil || got.Goal != full.Goal {
		t.Errorf("after a refused CreateRun, Run = %q, %v; want the original goal %q", got.Goal, err, full.Goal)
	}
	if _, err := s.Run(ctx, "run-missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run of a missing run = %v, want ErrNotFound", err)
	}
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	orig := run("run-1", base, func(r *store.Run) {
		r.Labels = []string{"x"}
		r.Task = []byte("task")
		r.Question = "q0"
	})
	mustCreate(t, s, orig)
	held := run("run-held", base, func(r *store.Run) { r.Holder, r.Heartbeat = "7@host-b", base.Add(time.Second) })
	mustCreate(t, s, held)
	if got, err := s.Run(ctx, held.ID); err != nil || got.Holder != held.Holder || !got.Heartbeat.Equal(held.Heartbeat) {
		t.Errorf("a run created with a lease comes back with holder %q heartbeat %v (%v); want %q %v", got.Holder, got.Heartbeat, err, held.Holder, held.Heartbeat)
	}

	ptr := func(s string) *string { return &s }
	i64 := func(n int64) *int64 { return &n }
	steps := []struct {
		name   string
		update store.Update
		apply  func(r *store.Run)
	}{
		{"nothing", store.Update{}, func(*store.Run) {}},
		{"steps and cost", store.Update{Steps: i64(3), CostMicros: i64(1500), Updated: base.Add(time.Minute)},
			func(r *store.Run) { r.Steps, r.CostMicros, r.Updated = 3, 1500, base.Add(time.Minute) }},
		{"awaiting input", store.Update{Status: ptr(store.StatusAwaitingInput), Question: ptr("Approve rm?")},
			func(r *store.Run) { r.Status, r.Question = store.StatusAwaitingInput, "Approve rm?" }},
		{"question cleared", store.Update{Status: ptr(store.StatusRunning), Question: ptr("")},
			func(r *store.Run) { r.Status, r.Question = store.StatusRunning, "" }},
		{"finished", store.Update{Status: ptr("done"), Result: []byte(`{"status":"done"}`), Steps: i64(0), Updated: base.Add(time.Hour)},
			func(r *store.Run) {
				r.Status, r.Result, r.Steps, r.Updated = "done", []byte(`{"status":"done"}`), 0, base.Add(time.Hour)
			}},
		{"result left alone by nil", store.Update{Status: ptr("failed")},
			func(r *store.Run) { r.Status = "failed" }},
		{"lease taken", store.Update{Holder: ptr("4242@host-a"), Heartbeat: base.Add(2 * time.Hour)},
			func(r *store.Run) { r.Holder, r.Heartbeat = "4242@host-a", base.Add(2*time.Hour) }},
		{"heartbeat alone", store.Update{Heartbeat: base.Add(3 * time.Hour)},
			func(r *store.Run) { r.Heartbeat = base.Add(3 * time.Hour) }},
		{"lease released", store.Update{Holder: ptr("")},
			func(r *store.Run) { r.Holder = "" }},
	}
	want := orig
	for _, st := range steps {
		if err := s.UpdateRun(ctx, orig.ID, st.update); err != nil {
			t.Errorf("%s: UpdateRun: %v", st.name, err)
			continue
		}
		st.apply(&want)
		got, err := s.Run(ctx, orig.ID)
		if err != nil {
			t.Errorf("%s: Run: %v", st.name, err)
			continue
		}
		if diff := cmp.Diff(want, got, equal); diff != "" {
			t.Errorf("%s: Run after UpdateRun (-want +got):\n%s", st.name, diff)
		}
	}

	for _, u := range []store.Update{{}, {Status: ptr("done")}} {
		if err := s.UpdateRun(ctx, "run-missing", u); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateRun(missing, %+v) = %v, want ErrNotFound", u, err)
		}
	}
	if _, err := s.Run(ctx, "run-missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateRun of a missing run created it: Run = %v", err)
	}
}

func testList(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	runs := []store.Run{
		run("a", at(0), func(r *store.Run) { r.Status = "done"; r.Labels = []string{"suite:x", "nightly"} }),
		run("b", at(1), func(r *store.Run) {
			r.Status = "exhausted:steps"
			r.Labels = []string{"suite:x"}
			r.CostMicros = 300
		}),
		run("c", at(2), func(r *store.Run) { r.Status = "exhausted:cost"; r.Parent = "a"; r.CostMicros = 100 }),
		run("d", at(3), func(r *store.Run) {
			r.Status = store.StatusAwaitingInput
			r.Parent = "a"
			r.Labels = []string{"nightly"}
			r.Steps = 5
		}),
		run("e", at(4), func(r *store.Run) { r.CostMicros = 300; r.Steps = 2 }),
		// f and g share a Created instant: insertion order breaks the tie.
		run("f", at(5), func(r *store.Run) { r.Status = "exhausted"; r.Labels = []string{"suite:xy"} }),
		run("g", at(5), func(r *store.Run) { r.Status = "stalled:repeating"; r.Parent = "b" }),
		// Created out of insertion order: order is by Created.
		run("h", at(-1), func(r *store.Run) { r.Status = "done"; r.Labels = []string{"suite:x"} }),
		run("i", at(6), func(r *store.Run) { r.Status = "ünï:côdé"; r.Goal = "Ünï côdé 100% A_b" }),
	}
	mustCreate(t, s, runs...)

	tests := []struct {
		name   string
		filter store.Filter
		want   []string
	}{
		{"all newest first", store.Filter{}, []string{"i", "g", "f", "e", "d", "c", "b", "a", "h"}},
		{"status", store.Filter{Status: []string{"done"}}, []string{"a", "h"}},
		{"statuses", store.Filter{Status: []string{store.StatusRunning, store.StatusAwaitingInput}}, []string{"e", "d"}},
		{"status prefix", store.Filter{Status: []string{"exhausted:"}}, []string{"c", "b"}},
		{"status exact without colon", store.Filter{Status: []string{"exhausted"}}, []string{"f"}},
		{"prefix and exact", store.Filter{Status: []string{"exhausted:", "stalled:repeating"}}, []string{"g", "c", "b"}},
		{"no such status", store.Filter{Status: []string{"cancelled"}}, nil},
		{"partial status is no prefix", store.Filter{Status: []string{"exhaust"}}, nil},
		{"label", store.Filter{Label: "suite:x"}, []string{"b", "a", "h"}},
		{"label is exact", store.Filter{Label: "suite"}, nil},
		{"parent", store.Filter{Parent: "a"}, []string{"d", "c"}},
		{"non-ASCII prefix", store.Filter{Status: []string{"ünï:"}}, []string{"i"}},
		{"limit", store.Filter{Limit: 3}, []string{"i", "g", "f"}},
		{"limit above count", store.Filter{Limit: 100}, []string{"i", "g", "f", "e", "d", "c", "b", "a", "h"}},
		{"status and label", store.Filter{Status: []string{"done"}, Label: "nightly"}, []string{"a"}},
		{"label and parent", store.Filter{Label: "nightly", Parent: "a"}, []string{"d"}},
		{"all filters and limit", store.Filter{Status: []string{"exhausted:", "done"}, Label: "suite:x", Limit: 2}, []string{"b", "a"}},
		{"text in goal, ASCII case folded", store.Filter{Text: "GOAL OF C"}, []string{"c"}},
		{"text in ID", store.Filter{Text: "H"}, []string{"h"}},
		{"text non-ASCII exact", store.Filter{Text: "Ünï"}, []string{"i"}},
		{"text non-ASCII not folded", store.Filter{Text: "ünï"}, nil},
		{"text non-ASCII not folded, ASCII folded", store.Filter{Text: "CÔDÉ"}, nil},
		{"text percent is literal, column folded", store.Filter{Text: "0% a_B"}, []string{"i"}},
		{"text wildcard is literal", store.Filter{Text: "goal_of"}, nil},
		{"text and status", store.Filter{Text: "goal of", Status: []string{"done"}}, []string{"a", "h"}},
		{"oldest first", store.Filter{Order: store.OrderOldest}, []string{"h", "a", "b", "c", "d", "e", "f", "g", "i"}},
		{"cost, ties newest first", store.Filter{Order: store.OrderCost}, []string{"e", "b", "c", "i", "g", "f", "d", "a", "h"}},
		{"steps, ties newest first", store.Filter{Order: store.OrderSteps}, []string{"d", "e", "i", "g", "f", "c", "b", "a", "h"}},
		{"page", store.Filter{Offset: 3, Limit: 2}, []string{"e", "d"}},
		{"offset without limit", store.Filter{Offset: 7}, []string{"a", "h"}},
		{"offset past the end", store.Filter{Offset: 20, Limit: 5}, nil},
		{"page of a filtered order", store.Filter{Status: []string{"exhausted:"}, Order: store.OrderOldest, Offset: 1, Limit: 1}, []string{"c"}},
		{"page of cost order", store.Filter{Order: store.OrderCost, Offset: 1, Limit: 2}, []string{"b", "c"}},
	}
	if _, err := s.ListRuns(ctx, store.Filter{Order: "sideways"}); err == nil {
		t.Errorf("ListRuns with an unknown order: no error")
	}
	byID := map[string]store.Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	for _, tt := range tests {
		got, err := s.ListRuns(ctx, tt.filter)
		if err != nil {
			t.Errorf("%s: ListRuns(%+v): %v", tt.name, tt.filter, err)
			continue
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if diff := cmp.Diff(tt.want, ids, equal); diff != "" {
			t.Errorf("%s: ListRuns(%+v) IDs (-want +got):\n%s", tt.name, tt.filter, diff)
			continue
		}
		for _, r := range got {
			if diff := cmp.Diff(byID[r.ID], r, equal); diff != "" {
				t.Errorf("%s: ListRuns row %q (-want +got):\n%s", tt.name, r.ID, diff)
			}
		}
	}
}

func testAppend(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, run("r", base), run("other", base))
	checkLog(t, s, "r", nil)

	var log []store.Entry
	for _, n := range []int{1, 4, 2, 1, 10} {
		es := entries(int64(len(log))+1, n, "r")
		mustAppend(t, s, "r", es)
		log = append(log, es...)
		checkLog(t, s, "r", log)
	}
	if err := s.Append(ctx, "r", nil); err != nil {
		t.Errorf("Append of no entries = %v, want nil", err)
	}
	checkLog(t, s, "r", log)
	checkLog(t, s, "other", nil)

	for _, after := range []int64{0, 1, 5, 17, 18, 100, -1} {
		got, err := s.Entries(ctx, "r", after)
		if err != nil {
			t.Errorf("Entries(r, %d): %v", after, err)
			continue
		}
		var want []store.Entry
		for _, e := range log {
			if e.Seq > after {
				want = append(want, e)
			}
		}
		if diff := cmp.Diff(want, got, equal); diff != "" {
			t.Errorf("Entries(r, %d) (-want +got):\n%s", after, diff)
		}
	}

	// A run's log is its own: the same seqs on another run are no conflict.
	mustAppend(t, s, "other", entries(1, 3, "other"))
	checkLog(t, s, "other", entries(1, 3, "other"))
	checkLog(t, s, "r", log)

	// A large batch goes in whole.
	mustCreate(t, s, run("big", base))
	big := entries(1, 2500, "big")
	mustAppend(t, s, "big", big)
	checkLog(t, s, "big", big)
}

func testAppendConflicts(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, run("empty", base), run("r", base))
	log := entries(1, 5, "r")
	mustAppend(t, s, "r", log)

	with := func(es []store.Entry, seqs ...int64) []store.Entry {
		out := make([]store.Entry, len(seqs))
		for i, seq := range seqs {
			out[i] = es[0]
			out[i].Seq = seq
			out[i].Data = []byte(fmt.Sprintf("bad %d", seq))
		}
		return out
	}
	tests := []struct {
		name    string
		run     string
		entries []store.Entry
	}{
		{"empty log starts at 0", "empty", with(log, 0, 1)},
		{"empty log starts at 2", "empty", with(log, 2, 3)},
		{"empty log negative", "empty", with(log, -1, 0, 1)},
		{"repeat last", "r", with(log, 5, 6)},
		{"repeat all", "r", with(log, 1, 2, 3, 4, 5)},
		{"repeat one", "r", with(log, 3)},
		{"gap", "r", with(log, 7, 8)},
		{"far gap", "r", with(log, 1000)},
		{"gap inside", "r", with(log, 6, 7, 9)},
		{"repeat inside", "r", with(log, 6, 7, 7, 8)},
		{"backwards inside", "r", with(log, 6, 5)},
		{"valid prefix then gap", "r", with(log, 6, 7, 8, 10)},
	}
	for _, tt := range tests {
		err := s.Append(ctx, tt.run, tt.entries)
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: Append = %v, want ErrConflict", tt.name, err)
		}
	}
	checkLog(t, s, "empty", nil)
	checkLog(t, s, "r", log)

	// The log goes on where it was after refused appends.
	next := entries(6, 2, "r")
	mustAppend(t, s, "r", next)
	checkLog(t, s, "r", append(log, next...))
}

// testRacingWriters has writers race to append the same seqs to one run:
// exactly one wins each round, the losers get ErrConflict, and the log holds
// the winner's entries only.
func testRacingWriters(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, run("r", base))
	const rounds, writers = 30, 4
	var log []store.Entry
	for round := range rounds {
		from := int64(len(log)) + 1
		n := 1 + round%3
		batches := make([][]store.Entry, writers)
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range writers {
			batches[w] = entries(from, n, fmt.Sprintf("writer %d", w))
			wg.Go(func() {
				<-start
				errs[w] = s.Append(ctx, "r", batches[w])
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("round %d: writers %d and %d both appended seq %d", round, winner, w, from)
			case err == nil:
				winner = w
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("round %d: losing writer %d got %v, want ErrConflict", round, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won (errors %v)", round, errs)
		}
		log = append(log, batches[winner]...)
	}
	checkLog(t, s, "r", log)
}

// testRandomAppends drives a few runs' logs with random appends, most of
// them right and some off by a little, and checks each outcome and the final
// logs against a model.
func testRandomAppends(t *testing.T, s store.Store) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(5, 6))
	const runs = 4
	model := make([][]store.Entry, runs)
	for i := range runs {
		mustCreate(t, s, run(fmt.Sprint("r", i), base))
	}
	for op := range 150 {
		i := rnd.IntN(runs)
		id := fmt.Sprint("r", i)
		off := int64(0)
		if rnd.IntN(3) == 0 {
			off = int64(rnd.IntN(5) - 2)
		}
		from := int64(len(model[i])) + 1 + off
		es := entries(from, 1+rnd.IntN(4), fmt.Sprint("op", op))
		err := s.Append(ctx, id, es)
		switch {
		case off == 0 && err != nil:
			t.Errorf("op %d: Append(%s, seq %d..) = %v, want nil", op, id, from, err)
		case off != 0 && !errors.Is(err, store.ErrConflict):
			t.Errorf("op %d: Append(%s, seq %d..) after %d = %v, want ErrConflict", op, id, from, len(model[i]), err)
		}
		if err == nil {
			model[i] = append(model[i], es...)
		}
	}
	for i := range runs {
		checkLog(t, s, fmt.Sprint("r", i), model[i])
	}
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, run("exists", base))
	const id = "run-missing"
	checks := []struct {
		name string
		err  error
	}{
		{"Run", func() error { _, err := s.Run(ctx, id); return err }()},
		{"UpdateRun", s.UpdateRun(ctx, id, store.Update{Steps: new(int64)})},
		{"Append", s.Append(ctx, id, entries(1, 2, "x"))},
		{"Entries", func() error { _, err := s.Entries(ctx, id, 0); return err }()},
		{"LastSeq", func() error { _, err := s.LastSeq(ctx, id); return err }()},
		{"SaveSnapshot", s.SaveSnapshot(ctx, id, store.Snapshot{Seq: 1, Data: []byte("x")})},
		{"LatestSnapshot", func() error { _, err := s.LatestSnapshot(ctx, id); return err }()},
		{"LatestSnapshot of a run without one", func() error { _, err := s.LatestSnapshot(ctx, "exists"); return err }()},
		{"DeleteRun", s.DeleteRun(ctx, id)},
	}
	for _, c := range checks {
		if !errors.Is(c.err, store.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", c.name, c.err)
		}
	}
	if runs, err := s.ListRuns(ctx, store.Filter{}); err != nil || len(runs) != 1 {
		t.Errorf("after writes to a missing run, ListRuns = %d runs, %v; want only the existing one", len(runs), err)
	}
}

// testDelete: a deleted run leaves nothing behind (row, label, entries,
// snapshot), its ID can be used again, and other runs are untouched.
func testDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	doomed := run("doomed", base)
	doomed.Labels = []string{"gone"}
	mustCreate(t, s, doomed, run("kept", base))
	mustAppend(t, s, "doomed", entries(1, 3, "d"))
	mustAppend(t, s, "kept", entries(1, 2, "k"))
	if err := s.SaveSnapshot(ctx, "doomed", store.Snapshot{Seq: 2, Data: []byte("snap")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, "doomed", store.Message{Text: "unread", At: base}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, "doomed"); err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
	if _, err := s.Run(ctx, "doomed"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run after DeleteRun = %v, want ErrNotFound", err)
	}
	if err := s.DeleteRun(ctx, "doomed"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteRun = %v, want ErrNotFound", err)
	}
	mustCreate(t, s, run("doomed", base))
	if seq, err := s.LastSeq(ctx, "doomed"); err != nil || seq != 0 {
		t.Errorf("a new run with a deleted run's ID has LastSeq %d, %v; want 0 (no entries left behind)", seq, err)
	}
	if _, err := s.LatestSnapshot(ctx, "doomed"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a new run with a deleted run's ID has a snapshot (%v); want ErrNotFound", err)
	}
	if msgs, err := s.Messages(ctx, "doomed", 0); err != nil || len(msgs) != 0 {
		t.Errorf("a new run with a deleted run's ID has %d queued messages, %v; want none", len(msgs), err)
	}
	if runs, err := s.ListRuns(ctx, store.Filter{Label: "gone"}); err != nil || len(runs) != 0 {
		t.Errorf("ListRuns by the deleted run's label = %d runs, %v; want none (the new run has no labels)", len(runs), err)
	}
	if got, err := s.Entries(ctx, "kept", 0); err != nil || len(got) != 2 {
		t.Errorf("the other run's entries after DeleteRun = %d, %v; want 2", len(got), err)
	}
}

func testSnapshots(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, run("r", base), run("other", base))
	mustAppend(t, s, "r", entries(1, 10, "r"))
	check := func(id string, want store.Snapshot) {
		t.Helper()
		got, err := s.LatestSnapshot(ctx, id)
		if err != nil {
			t.Errorf("LatestSnapshot(%q): %v", id, err)
			return
		}
		if diff := cmp.Diff(want, got, equal); diff != "" {
			t.Errorf("LatestSnapshot(%q) (-want +got):\n%s", id, diff)
		}
	}
	saves := []store.Snapshot{
		{Seq: 3, Data: []byte("state at 3")},
		{Seq: 7, Data: []byte("state at 7, longer than before")},
		{Seq: 10, Data: []byte("10")},
	}
	for _, snap := range saves {
		if err := s.SaveSnapshot(ctx, "r", snap); err != nil {
			t.Errorf("SaveSnapshot(r, %d): %v", snap.Seq, err)
		}
		check("r", snap)
	}
	if _, err := s.LatestSnapshot(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LatestSnapshot of a run without one = %v, want ErrNotFound", err)
	}
	other := store.Snapshot{Seq: 0, Data: []byte{0, 1, 2, 0xff}}
	if err := s.SaveSnapshot(ctx, "other", other); err != nil {
		t.Errorf("SaveSnapshot(other): %v", err)
	}
	check("other", other)
	check("r", saves[len(saves)-1])
	// Saving a snapshot leaves the log alone.
	checkLog(t, s, "r", entries(1, 10, "r"))
}

// testBytes checks that entry data, snapshots and a run's blobs come back
// byte for byte, whatever the bytes.
func testBytes(t *testing.T, s store.Store) {
	ctx := context.Background()
	every := make([]byte, 256*4)
	for i := range every {
		every[i] = byte(i)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	large := make([]byte, 1<<20)
	for i := range large {
		large[i] = byte(rnd.Uint32())
	}
	blobs := [][]byte{
		nil,
		{},
		{0},
		{0, 0, 0},
		[]byte("\xff\xfe invalid utf-8 \xc3\x28"),
		[]byte("trailing NUL\x00"),
		[]byte(`{"json":"with \u0000 escapes"}`),
		[]byte("\\x00 looks like hex escape"),
		[]byte("'; DROP TABLE entries; --"),
		every,
		large,
	}
	mustCreate(t, s, run("r", base, func(r *store.Run) { r.Task = every; r.Result = large }))
	got, err := s.Run(ctx, "r")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !bytes.Equal(got.Task, every) || !bytes.Equal(got.Result, large) {
		t.Errorf("Run's Task or Result came back changed (Task %d bytes, Result %d bytes)", len(got.Task), len(got.Result))
	}

	var log []store.Entry
	for i, b := range blobs {
		log = append(log, store.Entry{Seq: int64(i + 1), Kind: "bytes", At: base, Data: b})
	}
	mustAppend(t, s, "r", log[:3])
	mustAppend(t, s, "r", log[3:])
	stored, err := s.Entries(ctx, "r", 0)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	if len(stored) != len(log) {
		t.Fatalf("Entries returned %d entries, want %d", len(stored), len(log))
	}
	for i, e := range stored {
		if !bytes.Equal(e.Data, log[i].Data) {
			t.Errorf("entry %d: Data came back as %d bytes %.40q, want %d bytes %.40q", e.Seq, len(e.Data), e.Data, len(log[i].Data), log[i].Data)
		}
	}
	for _, b := range blobs {
		if err := s.SaveSnapshot(ctx, "r", store.Snapshot{Seq: 1, Data: b}); err != nil {
			t.Errorf("SaveSnapshot of %d bytes: %v", len(b), err)
			continue
		}
		snap, err := s.LatestSnapshot(ctx, "r")
		if err != nil || !bytes.Equal(snap.Data, b) {
			t.Errorf("LatestSnapshot = %d bytes, %v; want %d bytes back exactly", len(snap.Data), err, len(b))
		}
	}
}

// testTimes checks that times come back as the same instant in UTC,
// truncated to the microsecond.
func testTimes(t *testing.T, s store.Store) {
	ctx := context.Background()
	tokyo := time.FixedZone("JST", 9*3600)
	times := []time.Time{
		base,
		time.Date(2026, 1, 2, 3, 4, 5, 999999999, tokyo), // truncated, not rounded
		time.Date(1969, 12, 31, 23, 59, 59, 1500, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), // past UnixNano's range
		time.Now(), // with a monotonic reading
	}
	for i, tm := range times {
		id := fmt.Sprintf("r%d", i)
		want := tm.Truncate(time.Microsecond).UTC()
		if err := s.CreateRun(ctx, run(id, tm, func(r *store.Run) { r.Updated = tm.Add(time.Nanosecond) })); err != nil {
			t.Errorf("CreateRun(%v): %v", tm, err)
			continue
		}
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Errorf("Run: %v", err)
			continue
		}
		check := func(what string, got, want time.Time) {
			t.Helper()
			if !got.Equal(want) || got.Location() != time.UTC {
				t.Errorf("%s of %v came back as %v, want %v", what, tm, got, want)
			}
		}
		check("Created", r.Created, want)
		check("Updated", r.Updated, tm.Add(time.Nanosecond).Truncate(time.Microsecond).UTC())
		mustAppend(t, s, id, []store.Entry{{Seq: 1, Kind: "k", At: tm, Data: []byte("x")}})
		es, err := s.Entries(ctx, id, 0)
		if err != nil || len(es) != 1 {
			t.Errorf("Entries = %v, %v", es, err)
			continue
		}
		check("Entry.At", es[0].At, want)
		later := tm.Add(90 * time.Minute)
		if err := s.UpdateRun(ctx, id, store.Update{Updated: later}); err != nil {
			t.Errorf("UpdateRun: %v", err)
			continue
		}
		if r, err := s.Run(ctx, id); err != nil {
			t.Errorf("Run: %v", err)
		} else {
			check("Updated after UpdateRun", r.Updated, later.Truncate(time.Microsecond).UTC())
			check("Created after UpdateRun", r.Created, want)
		}
	}
}

func testCancelledAppend(t *testing.T, s store.Store) {
	mustCreate(t, s, run("r", base))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, "r", entries(1, 3, "r")); err == nil {
		t.Errorf("Append with a cancelled context = nil, want an error")
	}
	checkLog(t, s, "r", nil)
	mustAppend(t, s, "r", entries(1, 3, "r"))
	checkLog(t, s, "r", entries(1, 3, "r"))
}

// testConcurrentRuns has many runs append, update and read at once, the way
// concurrent loops share one store (run it under -race).
func testConcurrentRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	const runs, steps = 40, 10
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("run-%02d", i)
		mustCreate(t, s, run(ids[i], base.Add(time.Duration(i)*time.Second), func(r *store.Run) {
			r.Labels = []string{"concurrent"}
		}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs*steps)
	for _, id := range ids {
		wg.Go(func() {
			seq := int64(0)
			for step := range steps {
				n := 1 + step%4
				if err := s.Append(ctx, id, entries(seq+1, n, id)); err != nil {
					errs <- fmt.Errorf("%s step %d: Append: %w", id, step, err)
					return
				}
				seq += int64(n)
				steps := int64(step + 1)
				if err := s.UpdateRun(ctx, id, store.Update{Steps: &steps}); err != nil {
					errs <- fmt.Errorf("%s step %d: UpdateRun: %w", id, step, err)
				}
				if step%5 == 4 {
					if err := s.SaveSnapshot(ctx, id, store.Snapshot{Seq: seq, Data: []byte(id)}); err != nil {
						errs <- fmt.Errorf("%s step %d: SaveSnapshot: %w", id, step, err)
					}
				}
				if last, err := s.LastSeq(ctx, id); err != nil || last != seq {
					errs <- fmt.Errorf("%s step %d: LastSeq = %d, %v; want %d", id, step, last, err, seq)
				}
			}
		})
	}
	// Readers list runs while the writers write.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				if rs, err := s.ListRuns(ctx, store.Filter{Label: "concurrent", Limit: 10}); err != nil || len(rs) != 10 {
					errs <- fmt.Errorf("ListRuns during appends = %d runs, %v", len(rs), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	var want []store.Entry
	seq := int64(0)
	for step := range steps {
		n := 1 + step%4
		want = append(want, entries(seq+1, n, "")...)
		seq += int64(n)
	}
	for _, id := range ids {
		got, err := s.Entries(ctx, id, 0)
		if err != nil {
			t.Errorf("Entries(%q): %v", id, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("run %s has %d entries, want %d", id, len(got), len(want))
			continue
		}
		for i, e := range got {
			if e.Seq != want[i].Seq || !strings.Contains(string(e.Data), id) {
				t.Errorf("run %s entry %d = seq %d %q, want seq %d of this run", id, i, e.Seq, e.Data, want[i].Seq)
				break
			}
		}
		if r, err := s.Run(ctx, id); err != nil || r.Steps != steps {
			t.Errorf("run %s: Steps = %d, %v; want %d", id, r.Steps, err, steps)
		}
		if snap, err := s.LatestSnapshot(ctx, id); err != nil || snap.Seq != seq {
			t.Errorf("run %s: LatestSnapshot seq = %d, %v; want %d", id, snap.Seq, err, seq)
		}
	}
}

// testMessages checks the queue of messages a person sends a run: in
// order, with IDs that only grow, per run, removed through an ID.
func testMessages(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreate(t, s, run("a", base), run("b", base))
	if _, err := s.Enqueue(ctx, "missing", store.Message{Text: "x", At: base}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Enqueue for a missing run = %v, want ErrNotFound", err)
	}
	if msgs, err := s.Messages(ctx, "a", 0); err != nil || len(msgs) != 0 {
		t.Errorf("Messages of a run with none = %v, %v; want none", msgs, err)
	}
	texts := []string{"first — ünïcode", "", "third\nline"}
	var want []store.Message
	for i, text := range texts {
		at := base.Add(time.Duration(i) * time.Second).In(time.FixedZone("X", 3600)).Add(123 * time.Nanosecond)
		id, err := s.Enqueue(ctx, "a", store.Message{ID: 999, Text: text, At: at})
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if len(want) > 0 && id <= want[len(want)-1].ID {
			t.Errorf("Enqueue returned ID %d after %d; IDs must grow", id, want[len(want)-1].ID)
		}
		want = append(want, store.Message{ID: id, Text: text, At: at.UTC().Truncate(time.Microsecond)})
		if _, err := s.Enqueue(ctx, "b", store.Message{Text: "for b", At: base}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Messages(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, equal); diff != "" {
		t.Errorf("Messages (-want +got):\n%s", diff)
	}
	if got, err := s.Messages(ctx, "a", want[0].ID); err != nil || len(got) != 2 || got[0].ID != want[1].ID {
		t.Errorf("Messages after the first = %v, %v; want the other two", got, err)
	}
	if err := s.DeleteMessages(ctx, "a", want[1].ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Messages(ctx, "a", 0); err != nil || len(got) != 1 || got[0].ID != want[2].ID {
		t.Errorf("Messages after DeleteMessages through the second = %v, %v; want only the third", got, err)
	}
	if got, err := s.Messages(ctx, "b", 0); err != nil || len(got) != 3 {
		t.Errorf("another run's messages after DeleteMessages = %d, %v; want its 3", len(got), err)
	}
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		wg.Go(func() {
			var err error
			if ids[i], err = s.Enqueue(ctx, "b", store.Message{Text: fmt.Sprint(i), At: base}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, err := s.Messages(ctx, "b", 0); err != nil || len(got) != 3+len(ids) {
		t.Errorf("after %d concurrent Enqueues, Messages = %d, %v; want %d", len(ids), len(got), err, 3+len(ids))
	}
}
