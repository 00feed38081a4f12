package purity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCorePackagesArePure holds the loop core, budget and progress to the
// rules: no I/O, clock, randomness, goroutines or map-order dependence, and
// no import of the module's packages beyond each one's allow-list.
func TestCorePackagesArePure(t *testing.T) {
	for _, pkg := range []string{"loop", "budget", "progress"} {
		allowed, ok := Core[pkg]
		if !ok {
			t.Fatalf("Core has no allow-list for %s", pkg)
		}
		problems, err := Check("../../"+pkg, allowed)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", pkg, p)
		}
	}
}

// TestCheckFindsViolations proves the checker can fail.
func TestCheckFindsViolations(t *testing.T) {
	got, err := Check("testdata/impure", []string{"budget", "progress"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"impure.go:5: imports math/rand",
		"impure.go:6: imports os",
		"impure.go:10: imports store, which is not on its allow-list (budget, progress)",
		"impure.go:15: ranges over a map (random order); sort the keys first",
		"impure.go:18: uses a channel type",
		"impure.go:19: starts a goroutine",
		"impure.go:20: selects on channels",
		"impure.go:24: reads the clock (time.Now); time must arrive on events",
		"impure.go:25: reads the clock (time.Since); time must arrive on events",
		"impure: the allow-list names progress, which nothing here imports: remove it",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
