package storetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/store"
)

// EntriesPerStep is how many log entries one loop step appends in the
// measurements: a model call's command and reply, a tool call and its
// result.
const EntriesPerStep = 4

// stepEntries returns one step's entries starting at seq, each about as big
// as an encoded event (300 bytes).
func stepEntries(seq int64, at time.Time) []store.Entry {
	es := make([]store.Entry, EntriesPerStep)
	for i := range es {
		data := make([]byte, 300)
		copy(data, fmt.Sprintf(`{"seq":%d,"kind":"tool_result","text":"`, seq+int64(i)))
		for j := 40; j < len(data)-2; j++ {
			data[j] = 'a' + byte(j%26)
		}
		copy(data[len(data)-2:], `"}`)
		es[i] = store.Entry{Seq: seq + int64(i), Kind: "tool_result", At: at, Data: data}
	}
	return es
}

// StepLatencies appends n steps of EntriesPerStep entries to a new run, one
// after another, and returns how long each Append took: the durable step
// overhead a loop pays.
func StepLatencies(tb testing.TB, s store.Store, n int) []time.Duration {
	ctx := context.Background()
	id := fmt.Sprintf("latency-%d", time.Now().UnixNano())
	if err := s.CreateRun(ctx, store.Run{ID: id, Status: store.StatusRunning, Created: time.Now(), Updated: time.Now()}); err != nil {
		tb.Fatalf("CreateRun: %v", err)
	}
	out := make([]time.Duration, n)
	seq := int64(1)
	for i := range out {
		es := stepEntries(seq, time.Now())
		start := time.Now()
		if err := s.Append(ctx, id, es); err != nil {
			tb.Fatalf("Append: %v", err)
		}
		out[i] = time.Since(start)
		seq += EntriesPerStep
	}
	return out
}

// Median returns the median of ds (which it sorts).
func Median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Quantile returns the q-quantile of ds (which it sorts), 0 ≤ q ≤ 1.
func Quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// Throughput runs loops concurrent loops against s, each appending steps
// steps of EntriesPerStep entries to its own run (waiting for each Append,
// as a loop does), and returns the events committed per second.
func Throughput(tb testing.TB, s store.Store, loops, steps int) float64 {
	ctx := context.Background()
	prefix := fmt.Sprintf("loop-%d-", time.Now().UnixNano())
	for i := range loops {
		now := time.Now()
		if err := s.CreateRun(ctx, store.Run{ID: fmt.Sprint(prefix, i), Status: store.StatusRunning, Created: now, Updated: now}); err != nil {
			tb.Fatalf("CreateRun: %v", err)
		}
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	start := time.Now()
	for i := range loops {
		wg.Go(func() {
			id := fmt.Sprint(prefix, i)
			seq := int64(1)
			for range steps {
				if err := s.Append(ctx, id, stepEntries(seq, time.Now())); err != nil {
					once.Do(func() { first = err })
					return
				}
				seq += EntriesPerStep
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		tb.Fatalf("Append: %v", first)
	}
	return float64(loops*steps*EntriesPerStep) / elapsed.Seconds()
}

// Targets are the figures issue 5 asks of a store on one machine.
const (
	TargetStepMedian = time.Millisecond
	TargetEventsPerS = 5000
)

// CheckPerf measures s's durable step overhead and 100 loops' throughput,
// logs both, and fails if they miss the targets: by the targets themselves
// when RATCHET_PERF=1 (a quiet machine), else only by a wide margin (10×), so
// a noisy shared machine does not make the suite flaky.
//
// It skips under the race detector, which slows the stores' drivers many
// times over: the figures come from a build without -race.
func CheckPerf(t *testing.T, s store.Store) {
	if raceEnabled {
		t.Skip("the race detector slows the drivers many times over; measure without -race")
	}
	slack := 10.0
	if os.Getenv("RATCHET_PERF") == "1" {
		slack = 1
	}
	lat := StepLatencies(t, s, 500)
	med, p90 := Median(lat), Quantile(lat, 0.9)
	t.Logf("durable step (%d entries of ~300 B): median %v, p90 %v over %d appends", EntriesPerStep, med, p90, len(lat))
	if limit := time.Duration(float64(TargetStepMedian) * slack); med > limit {
		t.Errorf("median step overhead %v, want ≤ %v", med, limit)
	}
	eps := Throughput(t, s, 100, 50)
	t.Logf("100 concurrent loops: %.0f events/s committed", eps)
	if limit := TargetEventsPerS / slack; eps < limit {
		t.Errorf("100 loops commit %.0f events/s, want ≥ %.0f", eps, limit)
	}
}

// BenchmarkStep measures one durable step: an Append of EntriesPerStep
// entries to one run.
func BenchmarkStep(b *testing.B, s store.Store) {
	ctx := context.Background()
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if err := s.CreateRun(ctx, store.Run{ID: id, Status: store.StatusRunning, Created: time.Now(), Updated: time.Now()}); err != nil {
		b.Fatalf("CreateRun: %v", err)
	}
	seq := int64(1)
	b.ResetTimer()
	for b.Loop() {
		if err := s.Append(ctx, id, stepEntries(seq, time.Now())); err != nil {
			b.Fatalf("Append: %v", err)
		}
		seq += EntriesPerStep
	}
}

// BenchmarkLoops measures 100 concurrent loops appending steps, reporting
// events/s.
func BenchmarkLoops(b *testing.B, s store.Store) {
	var eps []float64
	for b.Loop() {
		eps = append(eps, Throughput(b, s, 100, 20))
	}
	slices.Sort(eps)
	b.ReportMetric(eps[len(eps)/2], "events/s")
}
