package purity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCorePackagesArePure holds the loop core, budget and progress to the
// rules: no I/O, clock, randomness, goroutines or map-order dependence.
func TestCorePackagesArePure(t *testing.T) {
	for _, dir := range []string{"../../loop", "../../budget", "../../progress"} {
		problems, err := Check(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", dir, p)
		}
	}
}

// TestCheckFindsViolations proves the checker can fail.
func TestCheckFindsViolations(t *testing.T) {
	got, err := Check("testdata/impure")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"impure.go:5: imports math/rand",
		"impure.go:6: imports os",
		"impure.go:12: ranges over a map (random order); sort the keys first",
		"impure.go:15: uses a channel type",
		"impure.go:16: starts a goroutine",
		"impure.go:17: selects on channels",
		"impure.go:21: reads the clock (time.Now); time must arrive on events",
		"impure.go:22: reads the clock (time.Since); time must arrive on events",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
