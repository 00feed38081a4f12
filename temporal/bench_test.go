package temporal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
	"github.com/ratchetloop/ratchet/temporal"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// Fleet benchmark shape: the 1,000 loops of 20 steps, each step a
// 50 ms model call; two workers on one dev server.
var benchLoops = 1000

const (
	benchSteps   = 20
	benchLatency = 50 * time.Millisecond
	benchWorkers = 2
)

// bareWorkflow is the floor: the same 20 activities, each as slow as the
// model, with no ratchet in it.
func bareWorkflow(ctx workflow.Context, steps int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	sum := 0
	for i := range steps {
		var n int
		if err := workflow.ExecuteActivity(ctx, "bare.step", i).Get(ctx, &n); err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

func bareStep(ctx context.Context, i int) (int, error) {
	select {
	case <-time.After(benchLatency):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return i, nil
}

// benchScript is 19 wrong answers, each rejected by an equals check (a
// local activity), then the right one: 20 model calls, the same 20
// activities as the floor's.
func benchScript(tb testing.TB) scripted.Script {
	tb.Helper()
	usage := &scripted.Usage{InputTokens: 10, OutputTokens: 5}
	turns := make([]scripted.Turn, benchSteps)
	for i := range turns {
		answer := fmt.Sprintf("wrong %d", i)
		if i == benchSteps-1 {
			answer = "5"
		}
		turns[i] = scripted.Turn{Delay: benchLatency, Usage: usage, Finish: &scripted.Finish{Answer: answer, Confidence: conf(0.95)}}
	}
	s, err := scripted.Prepare(scripted.Script{Turns: turns})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func benchTask() runner.Task {
	return runner.Task{
		Goal:   "Answer 5.",
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: benchSteps + 2, ModelCalls: benchSteps + 2, Time: time.Hour},
		// Unlike a stalled run, these wrong answers differ: no intervention.
		Policy: loop.Policy{Samples: -1},
	}
}

// BenchmarkFleet measures 1,000 concurrent loops of 20 steps on one dev
// server and two workers, against the floor of a bare workflow doing the
// same 20 activities, in the same session. It reports wall time, steps/s,
// the ratio to the floor, and the history events and bytes per step.
//
//	go test ./temporal -run '^$' -bench BenchmarkFleet -benchtime 1x -timeout 30m
func BenchmarkFleet(b *testing.B) {
	if n, err := strconv.Atoi(os.Getenv("RATCHET_BENCH_LOOPS")); err == nil {
		benchLoops = n // a smaller fleet, to try the benchmark out
	}
	addr := testenv.TemporalServer(b)
	c := dial(b, addr)
	defer c.Close()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	script, task := benchScript(b), benchTask()
	acts := temporal.NewActivities(st, func(context.Context, store.Run) (temporal.Live, error) {
		m, err := scripted.New(script, scripted.Config{Quiet: true})
		return temporal.Live{Task: task, Model: m}, err
	})
	defer acts.Close()
	for i := range benchWorkers {
		w := worker.New(c, "bench", worker.Options{
			Identity:                         fmt.Sprintf("bench-worker-%d", i),
			MaxConcurrentActivityTaskPollers: 8, MaxConcurrentWorkflowTaskPollers: 8,
		})
		temporal.Register(w, acts)
		w.RegisterWorkflowWithOptions(bareWorkflow, workflow.RegisterOptions{Name: "bare"})
		w.RegisterActivityWithOptions(bareStep, activity.RegisterOptions{Name: "bare.step"})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
	}
	ctx := context.Background()
	for n := 0; b.Loop(); n++ {
		floor := runFleet(b, c, func(i int) (client.WorkflowRun, error) {
			return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bare-%d-%d", n, i), TaskQueue: "bench"}, "bare", benchSteps)
		})
		ratchet := runFleet(b, c, func(i int) (client.WorkflowRun, error) {
			return temporal.Start(ctx, c, st, task, temporal.StartOptions{RunID: fmt.Sprintf("bench-%d-%d", n, i), TaskQueue: "bench"})
		})
		for i := range benchLoops {
			row, err := st.Run(ctx, fmt.Sprintf("bench-%d-%d", n, i))
			if err != nil || row.Status != string(loop.Done) || row.Steps != benchSteps {
				b.Fatalf("run %d: %s after %d steps (%v)", i, row.Status, row.Steps, err)
			}
		}
		steps := float64(benchLoops * benchSteps)
		b.ReportMetric(floor.wall.Seconds(), "floor-s")
		b.ReportMetric(ratchet.wall.Seconds(), "ratchet-s")
		b.ReportMetric(steps/floor.wall.Seconds(), "floor-steps/s")
		b.ReportMetric(steps/ratchet.wall.Seconds(), "ratchet-steps/s")
		b.ReportMetric(ratchet.wall.Seconds()/floor.wall.Seconds(), "ratio")
		b.ReportMetric(floor.events/benchSteps, "floor-events/step")
		b.ReportMetric(ratchet.events/benchSteps, "ratchet-events/step")
		b.ReportMetric(floor.bytes/benchSteps, "floor-B/step")
		b.ReportMetric(ratchet.bytes/benchSteps, "ratchet-B/step")
	}
}

type fleetStats struct {
	wall time.Duration
	// events and bytes are the mean history length and size of a loop
	// (of all its workflow runs).
	events, bytes float64
}

// runFleet starts benchLoops workflows with start, waits for all of them, and
// measures them.
func runFleet(b *testing.B, c client.Client, start func(i int) (client.WorkflowRun, error)) fleetStats {
	b.Helper()
	ctx := context.Background()
	begin := time.Now()
	runs := make([]client.WorkflowRun, benchLoops)
	firsts := make([]string, benchLoops)
	var wg sync.WaitGroup
	errs := make(chan error, benchLoops)
	sem := make(chan struct{}, 64)
	for i := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			run, err := start(i)
			<-sem
			if err != nil {
				errs <- err
				return
			}
			runs[i], firsts[i] = run, run.GetRunID()
			if err := run.Get(ctx, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	wall := time.Since(begin)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var s fleetStats
	s.wall = wall
	const sample = 50
	for i := range sample {
		run := runs[i*benchLoops/sample]
		desc, err := c.DescribeWorkflow(ctx, run.GetID(), firsts[i*benchLoops/sample])
		if err != nil {
			b.Fatal(err)
		}
		info := desc.RawResponse.GetWorkflowExecutionInfo()
		s.events += float64(info.GetHistoryLength()) / sample
		s.bytes += float64(info.GetHistorySizeBytes()) / sample
	}
	return s
}
