package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
)

// saying is a model that, during its call number at, has a person say
// text to the run through another handle on the run database.
type saying struct {
	requests
	other    store.Store
	run, say string
	at       int
	err      error
}

func (s *saying) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	n := len(s.seen) + 1
	s.mu.Unlock()
	if n == s.at {
		s.err = runner.Say(ctx, s.other, s.run, s.say)
	}
	return s.requests.Generate(ctx, req)
}

// TestSay: a message said while step 1's model call is in flight, through
// another connection to the SQLite file (as `ratchet say` in another
// process does), reaches step 2's request after its tool results; the log
// records it as a user_message event, the queue is left empty and the log
// replays.
func TestSay(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fx := &sideEffects{}
	m := &saying{requests: requests{Model: newScripted(t, journalScript())}, other: other, run: "steered", say: "Journal only one line.", at: 1}
	res, err := runner.Run(ctx, journalTask(fx), runner.Config{Model: m, Store: db, RunID: "steered"})
	if err != nil || res.Status != loop.Done || m.err != nil {
		t.Fatalf("run: %s %v (%s); say: %v", res.Status, err, res.Reason, m.err)
	}
	first, second := m.seen[0].Messages, m.seen[1].Messages
	if strings.Contains(lastText(first), "Journal only one line.") {
		t.Errorf("step 1's request, built before the message was said, carries it")
	}
	last := second[len(second)-1]
	if last.Content[0].Type != model.ToolResult || !strings.Contains(lastText(second), "Journal only one line.") {
		t.Errorf("step 2's request ends %+v; want the tool results, then the message", last)
	}
	recs, err := runner.LoadLog(ctx, db, "steered")
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, r := range recs {
		if r.Kind == observe.KindEvent && r.Event.Type == loop.EventUserMessage && r.Event.Text == "Journal only one line." {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the log holds %d user_message events with the text; want 1", said)
	}
	if q, err := db.Messages(ctx, "steered", 0); err != nil || len(q) != 0 {
		t.Errorf("the queue after the run holds %v, %v; want nothing", q, err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("the steered run's log does not replay: %v", err)
	}
}

func lastText(msgs []model.Message) string {
	c := msgs[len(msgs)-1].Content
	return c[len(c)-1].Text
}

// TestSayRefused: no message for a finished run, a missing one, or an
// empty or oversized or non-UTF-8 message; a cancelled run takes its
// message when resumed.
func TestSayRefused(t *testing.T) {
	ctx := context.Background()
	db, _ := parentRun(t)
	if err := runner.Say(ctx, db, "parent", "hello"); !errors.Is(err, runner.ErrFinished) {
		t.Errorf("Say to a finished run = %v; want ErrFinished", err)
	}
	if err := runner.Say(ctx, db, "nope", "hello"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Say to a missing run = %v; want ErrNotFound", err)
	}
	for _, text := range []string{"", strings.Repeat("x", runner.MaxMessageBytes+1), "\xff"} {
		if err := runner.Say(ctx, db, "parent", text); err == nil {
			t.Errorf("Say(%.20q) = nil; want an error", text)
		}
	}
}

// TestSayAcrossResume: a message queued for a cancelled run is taken by
// the resumed run, once.
func TestSayAcrossResume(t *testing.T) {
	ctx := context.Background()
	db := sqliteStore(t)
	fx := &sideEffects{}
	cctx, cancel := context.WithCancel(ctx)
	cancelling := &cancelAt{requests: requests{Model: newScripted(t, journalScript())}, at: 2, cancel: cancel}
	res, err := runner.Run(cctx, journalTask(fx), runner.Config{Model: cancelling, Store: db, RunID: "r"})
	if res.Status != loop.Cancelled {
		t.Fatalf("run: %s %v; want cancelled", res.Status, err)
	}
	if err := runner.Say(ctx, db, "r", "Carry on."); err != nil {
		t.Fatal(err)
	}
	again := &requests{Model: newScripted(t, journalScript())}
	res, err = runner.Resume(ctx, journalTask(fx), runner.Config{Model: again, Store: db, RunID: "r"}, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resume: %s %v (%s)", res.Status, err, res.Reason)
	}
	n := 0
	for _, req := range again.seen {
		for _, msg := range req.Messages {
			for _, b := range msg.Content {
				if strings.Contains(b.Text, "Carry on.") {
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("no request of the resumed run carries the message")
	}
	if q, _ := db.Messages(ctx, "r", 0); len(q) != 0 {
		t.Errorf("the queue after the resumed run holds %v; want nothing", q)
	}
}

// cancelAt cancels the run during its model call number at.
type cancelAt struct {
	requests
	at     int
	cancel func()
}

func (c *cancelAt) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	c.mu.Lock()
	n := len(c.seen) + 1
	c.mu.Unlock()
	if n == c.at {
		c.cancel()
	}
	return c.requests.Generate(ctx, req)
}

func sqliteStore(t *testing.T) store.Store {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkStepDurable measures a step of a run kept in SQLite, whose
// every command batch commits its entries (fsync) and reads the queue of
// messages said to the run (Say), against the floor measured in the same
// run on the same disk: writing a batch's bytes to a file and one
// fdatasync, taking turns with the runs. x-fsync is the time a command
// batch takes (the step's time over its appends) over the floor's.
//
//	go test ./runner -run '^$' -bench BenchmarkStepDurable -count 6
func BenchmarkStepDurable(b *testing.B) {
	const n = 50
	s, task := stepsScript(b, n, 0), stepsTask(n)
	dir := b.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	counted := &countAppends{Store: db}
	f, err := os.OpenFile(filepath.Join(dir, "floor"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1500) // about a command batch's entries
	var floor, runs time.Duration
	fsyncs := 0
	i := 0
	for b.Loop() {
		i++
		m, err := scripted.New(s, scripted.Config{Quiet: true})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := runner.Run(context.Background(), task, runner.Config{Model: m, Store: counted, RunID: fmt.Sprint("bench-", i)})
		if err != nil || res.Status != loop.Done {
			b.Fatalf("%s %v", res.Status, err)
		}
		runs += time.Since(start)
		start = time.Now()
		for range 10 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
		}
		floor += time.Since(start)
		fsyncs += 10
	}
	perBatch := runs.Seconds() / float64(counted.n.Load())
	perFsync := floor.Seconds() / float64(fsyncs)
	b.ReportMetric(runs.Seconds()*1e9/float64(b.N*(n+1)), "ns/step")
	b.ReportMetric(float64(counted.n.Load())/float64(b.N*(n+1)), "appends/step")
	b.ReportMetric(perFsync*1e6, "fsync-µs")
	b.ReportMetric(perBatch/perFsync, "x-fsync")
}

// countAppends counts the appends to the store it wraps.
type countAppends struct {
	store.Store
	n atomic.Int64
}

func (c *countAppends) Append(ctx context.Context, run string, entries []store.Entry) error {
	c.n.Add(1)
	return c.Store.Append(ctx, run, entries)
}
