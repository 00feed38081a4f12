package runner_test

import (
	"fmt"
	"testing"

	"github.com/ratchetloop/ratchet/observe"
)

// maxAllocsPerStep pins BenchmarkStep's allocations per step, issue 30's
// target: 19.4 at N=50 and 19.8 at N=800 today.
const maxAllocsPerStep = 20

// TestStepAllocs fails when the default tool path allocates more per step
// than maxAllocsPerStep, at a short and a long run, so that an allocation
// regression (or one that grows with the history) is caught.
func TestStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, n := range []int{50, 800} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			s, task := stepsScript(t, n, 0), stepsTask(n)
			perStep := testing.AllocsPerRun(5, func() { runSteps(t, s, task, &observe.Memory{}) }) / float64(n+1)
			if perStep > maxAllocsPerStep {
				t.Errorf("%.1f allocations a step, want at most %d", perStep, maxAllocsPerStep)
			}
			t.Logf("%.1f allocations a step", perStep)
		})
	}
}
