package loop_test

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/ratchetloop/ratchet/loop/looptest"
	"github.com/ratchetloop/ratchet/model"
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

// TestCheckPairing proves the pairing check every script runs can fail.
func TestCheckPairing(t *testing.T) {
	use := func(id string) model.Block { return model.Block{Type: model.ToolUse, ID: id, Name: "t"} }
	res := func(id string) model.Block { return model.Block{Type: model.ToolResult, ID: id} }
	msg := func(r model.Role, bs ...model.Block) model.Message { return model.Message{Role: r, Content: bs} }
	tests := []struct {
		name string
		msgs []model.Message
		ok   bool
	}{
		{"paired", []model.Message{msg(model.User), msg(model.Assistant, use("a"), use("b")), msg(model.User, res("b"), res("a"))}, true},
		{"a call awaiting its result, last", []model.Message{msg(model.User), msg(model.Assistant, use("a"))}, true},
		{"result missing", []model.Message{msg(model.User), msg(model.Assistant, use("a"), use("b")), msg(model.User, res("a"))}, false},
		{"result of a call two messages back", []model.Message{msg(model.Assistant, use("a")), msg(model.User, res("a")), msg(model.Assistant), msg(model.User, res("a"))}, false},
		{"result with no call", []model.Message{msg(model.User, res("a"))}, false},
	}
	for _, tt := range tests {
		if err := looptest.CheckPairing(tt.msgs); (err == nil) != tt.ok {
			t.Errorf("%s: CheckPairing = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
