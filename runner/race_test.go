//go:build race

package runner_test

// raceEnabled says the race detector runs, which adds allocations.
const raceEnabled = true
