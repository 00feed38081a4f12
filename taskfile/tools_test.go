package taskfile_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/taskfile"
)

// recorder is a sandbox that records what it is asked to run.
type recorder struct {
	mu    sync.Mutex
	specs []sandbox.Spec
}

func (r *recorder) Run(_ context.Context, s sandbox.Spec) (sandbox.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specs = append(r.specs, s)
	return sandbox.Result{}, nil
}

// TestRunCommandTool: tools: [..., run_command] gives the task the tools
// in the order listed, and run_command mounts the gate exec checks'
// tests, never a holdout check's.
func TestRunCommandTool(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tests/test_gate.py", "tests/test_more.py", "holdout/test_hidden.py", "workspace/a.py"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := writeTask(t, dir, "task.yaml", `goal: g
model: scripted:turns.yaml
workspace: workspace
tools: [grep, run_command, read_file]
checks:
  - exec: {command: [python3, -m, pytest], format: pytest, tests: [tests/test_gate.py]}
  - exec: {command: [python3, -m, pytest], format: pytest, tests: [tests/test_gate.py, tests/test_more.py]}
    tier: expensive
  - exec: {command: [python3, -m, pytest], format: pytest, tests: [holdout/test_hidden.py]}
    tier: holdout
`)
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	var opened []opened
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&opened), Sandbox: func() (sandbox.Runner, error) { return rec, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var names []string
	for _, tl := range run.Task.Tools {
		names = append(names, tl.Info().Name)
	}
	if !slices.Equal(names, []string{"grep", "run_command", "read_file"}) {
		t.Fatalf("tools %v", names)
	}
	if _, err := run.Task.Tools[1].Run(context.Background(), json.RawMessage(`{"command":"true"}`)); err != nil {
		t.Fatal(err)
	}
	if len(rec.specs) != 1 {
		t.Fatalf("%d sandbox runs", len(rec.specs))
	}
	var targets []string
	for _, m := range rec.specs[0].Mounts {
		targets = append(targets, m.Target)
	}
	if want := []string{"tests/test_gate.py", "tests/test_more.py"}; !slices.Equal(targets, want) {
		t.Errorf("run_command mounts %v, want %v", targets, want)
	}
	if f := rec.specs[0].Files; len(f) != 1 || string(f["a.py"]) != "x\n" {
		t.Errorf("the sandbox got files %v, want the workspace's a.py", f)
	}
}
