package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/sandbox"
)

// TestRunCommandNotRerunOnResume kills 'ratchet run' with SIGKILL while
// its run_command call runs, and resumes the run: the call must be answered
// unknown, never run again (the command would leave a marker in the
// workspace), and the run must end done.
func TestRunCommandNotRerunOnResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	if _, err := sandbox.New(sandbox.Config{}); err != nil {
		testenv.Missing(t, fmt.Sprintf("no sandbox: %v (./test.sh installs bubblewrap)", err))
	}
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	r := &crashRun{bin: bin, dir: dir, db: filepath.Join(dir, "runs.db")}
	for _, f := range []string{"task.yaml", "turns.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "crash-command", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Line 2 is the call ("→ run_command …"); the command takes 2 s.
	if code, out := r.exec(t, &killPoint{line: 2, after: 500 * time.Millisecond}, "run", filepath.Join(dir, "task.yaml")); code != killed {
		t.Fatalf("the run was not killed while the command ran (exit %d):\n%s", code, out)
	}
	id, status := r.status(t)
	if id == "" || status != "running" {
		t.Fatalf("after the kill: run %q status %q", id, status)
	}
	if code := r.resume(t, id, nil); code != 0 {
		t.Fatalf("resume exited %d", code)
	}
	if got := r.result(t); got.Status != loop.Done {
		t.Errorf("resumed run ended %s", got.Status)
	}
	if n := r.checkLog(t, 0); n != 1 {
		t.Errorf("%d calls answered unknown, want the one run_command call", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "marker")); err == nil {
		t.Error("the workspace holds the command's marker: run_command ran again on resume")
	}
}
