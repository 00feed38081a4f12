package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
)

// TestRecordThenPlay: a run with --record writes the model's replies as a
// turns file that plays the same run offline.
func TestRecordThenPlay(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "recorded.yaml")
	first := run(t, nil, "run", "--json", "--record", rec, quickstart)
	first.wantCode(t, exitDone)
	if data, err := os.ReadFile(rec); err != nil || !strings.Contains(string(data), "raw_args:") {
		t.Fatalf("recording: %v\n%s", err, data)
	}
	again := run(t, nil, "run", "--json", "--model", "scripted:"+rec, quickstart)
	again.wantCode(t, exitDone)
	a, b := first.result(t), again.result(t)
	if a.Status != loop.Done || b.Status != a.Status || b.Usage.Steps != a.Usage.Steps || b.Usage.InputTokens != a.Usage.InputTokens ||
		b.Best == nil || b.Best.Answer != a.Best.Answer || !strings.Contains(again.stderr, `scripted model "recorded-quickstart-recording"`) {
		t.Errorf("played recording: %s %+v, want the recorded run's %s %+v\n%v", b.Status, b.Usage, a.Status, a.Usage, again)
	}
}
