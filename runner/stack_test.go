//go:build !race

// The race detector enlarges stack frames, so this test runs without it:
// test.sh runs it on its own after the -race pass.

package runner_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
)

// TestRunStackStaysSmall holds 1,000 runs in the middle of a tool loop and
// checks that each run's goroutine still has the 8 KB stack it started
// with. A frame that grows it to 16 KB doubles the stack memory of every
// waiting run (BenchmarkWaiting10000) and costs a copy per run.
func TestRunStackStaysSmall(t *testing.T) {
	const loops, n = 1000, 19
	s, task := stepsScript(t, n, 5*time.Millisecond), stepsTask(n)
	runSteps(t, s, task, &observe.Memory{}) // first-run work (schema caches) is not per run
	var replies atomic.Int64
	release := make(chan struct{})
	held := observe.Func(func(e observe.Entry) {
		if e.Event != nil && e.Event.Type == loop.EventModelReply && replies.Add(1) > loops*(n+1)/2 {
			<-release
		}
	})
	runtime.GC()
	var before, mid runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range loops {
		wg.Go(func() { runSteps(t, s, task, &observe.Memory{}, held) })
	}
	for replies.Load() < loops*(n+1)/2+loops/2 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the rest reach their next reply
	runtime.ReadMemStats(&mid)
	close(release)
	wg.Wait()
	perLoop := float64(mid.StackInuse-before.StackInuse) / loops / 1024
	t.Logf("stack in use per run, mid-run: %.1f KB", perLoop)
	if perLoop > 10 {
		t.Errorf("stack in use per run mid-run = %.1f KB, want 8 (a step's call chain no longer fits in 8 KB)", perLoop)
	}
}
