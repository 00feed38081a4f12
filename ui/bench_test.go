package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/store/sqlite"
	"github.com/ratchetloop/ratchet/ui"
)

// The benchmarks serve pages from a SQLite run database (the default
// backend) through Server.ServeHTTP: server time, without the network.
//
//	go test -run '^$' -bench . -benchtime 20x ./ui

var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchRuns is the size of the benchmark database's run table.
const (
	benchRuns  = 10_000
	longEvents = 5_000
)

// benchStore opens the benchmark database: 10,000 runs (a done run's row,
// copied, with labels and statuses varied) and one run of 5,000 entries,
// "run-long", recorded by the real runner.
func benchStore(b *testing.B) store.Store {
	b.Helper()
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "ratchet-ui-bench-")
		if benchErr != nil {
			return
		}
		benchErr = fillBench(b, filepath.Join(benchDir, "runs.db"))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	st, err := sqlite.Open(filepath.Join(benchDir, "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func fillBench(b *testing.B, path string) error {
	ctx := context.Background()
	st, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer st.Close()
	sd := seed(b)
	done, err := sd.store.Run(ctx, "run-done")
	if err != nil {
		return err
	}
	statuses := []string{"done", "done", "exhausted:steps", "stalled:repeating", store.StatusRunning, "done", "failed", store.StatusAwaitingInput}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, benchRuns)
	work := make(chan int)
	for range 64 { // concurrent creates share commits (group commit)
		wg.Go(func() {
			for i := range work {
				r := done
				r.ID = fmt.Sprintf("run-%05d", i)
				r.Status = statuses[i%len(statuses)]
				r.Labels = []string{fmt.Sprintf("suite-%d", i%10)}
				r.Goal = fmt.Sprintf("task %d: %s", i, done.Goal)
				r.Steps, r.CostMicros = int64(i%30), int64(i*37%100000)
				r.Created = start.Add(time.Duration(i) * time.Second)
				r.Updated = r.Created.Add(time.Minute)
				if r.Status == store.StatusRunning || r.Status == store.StatusAwaitingInput {
					r.Result = nil
				}
				if err := st.CreateRun(ctx, r); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range benchRuns {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return copyRun(ctx, longRun(b), "run-long", st)
}

// longRun records a run of 1,250 steps, each a model call and one tool
// call: 5,000 entries and a few more.
func longRun(b *testing.B) store.Store {
	st := memory.New()
	var turns []scripted.Turn
	for i := range longEvents / 4 {
		turns = append(turns, scripted.Turn{Text: fmt.Sprintf("Step %d: adding the next pair.", i), Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": i, "b": i + 1}}}})
	}
	task := addTask()
	task.Budget = budget.Limits{Steps: len(turns) + 5, ModelCalls: len(turns) + 10, ToolCalls: len(turns) + 10, TotalTokens: 1 << 40, Cost: budget.USD(100), Time: time.Hour}
	task.Policy.Progress.Window = len(turns) + 10 // the pairs never repeat, but no stall either way
	cfg := runner.Config{Model: scriptedModel(b, turns...), Store: st, RunID: "run-long"}
	runner.Run(context.Background(), task, cfg) // ends exhausted: the script runs out of turns
	return st
}

func copyRun(ctx context.Context, from store.Store, id string, to store.Store) error {
	row, err := from.Run(ctx, id)
	if err != nil {
		return err
	}
	entries, err := from.Entries(ctx, id, 0)
	if err != nil {
		return err
	}
	if len(entries) < longEvents {
		return fmt.Errorf("the long run has %d entries, want ≥ %d", len(entries), longEvents)
	}
	if err := to.CreateRun(ctx, row); err != nil {
		return err
	}
	for len(entries) > 0 {
		n := min(len(entries), 500)
		if err := to.Append(ctx, id, entries[:n]); err != nil {
			return err
		}
		entries = entries[n:]
	}
	return nil
}

func benchPage(b *testing.B, path string, want string) {
	st := benchStore(b)
	s, err := ui.New(ui.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var size int
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest("GET", "http://127.0.0.1:7777"+path, nil)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
			b.Fatalf("GET %s: %d\n%.500s", path, w.Code, w.Body.String())
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/page")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
}

// BenchmarkListPage: the first page of 10,000 runs, newest first.
func BenchmarkListPage(b *testing.B) { benchPage(b, "/", "run-09999") }

// BenchmarkListPageFiltered: a status family, a label and free text.
func BenchmarkListPageFiltered(b *testing.B) {
	benchPage(b, "/?status=done&label=suite-5&q=TASK+99", "run-09965")
}

// BenchmarkListPageDeep: page 150 of 200, sorted by cost.
func BenchmarkListPageDeep(b *testing.B) { benchPage(b, "/?sort=cost&page=150", "run-") }

// BenchmarkListPageModel: filtered by model, which the store does not
// index: the list reads runs until it has a page.
func BenchmarkListPageModel(b *testing.B) {
	benchPage(b, "/?model=scripted:test&page=3", "run-")
}

// BenchmarkRunPage: the first screen (page 1: steps 1–50) of a run of
// 5,000 entries.
func BenchmarkRunPage(b *testing.B) { benchPage(b, "/runs/run-long", `id="step-50"`) }

// BenchmarkRunPageLast: its last page.
func BenchmarkRunPageLast(b *testing.B) { benchPage(b, "/runs/run-long?page=last", `id="step-1251"`) }
