package runner_test

import (
	"testing"

	"github.com/ratchetloop/ratchet/observe"
)

// maxAllocsPerStep pins BenchmarkStep's allocations per step: 25.3 at
// N=50 today, plus a margin of under 3 %. Issue 30's target is 20.
const maxAllocsPerStep = 26

// TestStepAllocs fails when the default tool path allocates more per step
// than maxAllocsPerStep, so that an allocation regression is caught.
func TestStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const n = 50
	s, task := stepsScript(t, n, 0), stepsTask(n)
	perStep := testing.AllocsPerRun(5, func() { runSteps(t, s, task, &observe.Memory{}) }) / (n + 1)
	if perStep > maxAllocsPerStep {
		t.Errorf("%.1f allocations a step, want at most %d", perStep, maxAllocsPerStep)
	}
	t.Logf("%.1f allocations a step", perStep)
}
