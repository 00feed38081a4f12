//go:build !race

// The race detector enlarges stack frames, so this test runs without it:
// test.sh runs it on its own after the -race pass.

package runner_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
)

// TestRunStackStaysSmall holds 1,000 runs in the middle of a tool loop, and
// 1,000 more as they finish, and checks that each run's goroutine stack has
// not grown past 8 KB. A frame that grows it to 16 KB doubles the stack
// memory of every waiting run (BenchmarkWaiting10000) and costs a copy per
// run. debug.SetMaxStack(8192) in a run shows where a stack grows.
func TestRunStackStaysSmall(t *testing.T) {
	const loops, n = 1000, 19
	s, task := stepsScript(t, n, 5*time.Millisecond), stepsTask(n)
	runSteps(t, s, task, &observe.Memory{}) // first-run work (schema caches) is not per run
	// No collection while runs are held: it could shrink a grown stack.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, tc := range []struct {
		where string
		at    func(observe.Entry, *atomic.Int64) bool
	}{
		{"mid-loop", func(e observe.Entry, replies *atomic.Int64) bool {
			return e.Event != nil && e.Event.Type == loop.EventModelReply && replies.Add(1) > loops*(n+1)/2
		}},
		// The finish is the deepest point: parsing the answer, checking
		// it and writing the Result's summaries.
		{"at the finish", func(e observe.Entry, _ *atomic.Int64) bool {
			return e.Command != nil && e.Command.Type == loop.Finish
		}},
	} {
		t.Run(tc.where, func(t *testing.T) {
			var replies, held atomic.Int64
			release := make(chan struct{})
			hold := observe.Func(func(e observe.Entry) {
				if tc.at(e, &replies) {
					held.Add(1)
					<-release
				}
			})
			var before, mid runtime.MemStats
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			for range loops {
				wg.Go(func() { runSteps(t, s, task, &observe.Memory{}, hold) })
			}
			defer wg.Wait()
			defer close(release)
			for deadline := time.Now().Add(10 * time.Second); held.Load() < loops*9/10; {
				if time.Now().After(deadline) {
					t.Fatalf("only %d of %d runs were held in 10s", held.Load(), loops)
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // the rest reach the point or end
			runtime.ReadMemStats(&mid)
			perRun := float64(mid.StackInuse-before.StackInuse) / float64(held.Load()) / 1024
			t.Logf("stack in use per held run: %.1f KB (%d runs held)", perRun, held.Load())
			if perRun > 10 {
				t.Errorf("stack in use per run %s = %.1f KB, want 8: a step's call chain no longer fits in 8 KB", tc.where, perRun)
			}
		})
	}
}
