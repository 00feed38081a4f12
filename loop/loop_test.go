package loop_test

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/ratchetloop/ratchet/loop/looptest"
)

// TestScripts runs every scenario in testdata. Rewrite expected output with
// go test ./loop -rewrite, then read the diff.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		looptest.RunFile(t, path)
	})
}

// TestDeterministic drives every scenario twice from fresh machines: the
// core has no clock, randomness or map-order dependence, so the commands and
// notes must be byte-for-byte identical.
func TestDeterministic(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		first, second := looptest.Transcript(t, f), looptest.Transcript(t, f)
		if first != second {
			t.Errorf("%s: two runs of the same events differ:\n--- first\n%s\n--- second\n%s", f, first, second)
		}
		if len(first) == 0 {
			t.Errorf("%s: produced no output", f)
		}
	}
}
