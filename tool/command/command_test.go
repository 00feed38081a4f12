package command_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/command"
	"github.com/ratchetloop/ratchet/tool/tooltest"
)

var (
	runnerOnce sync.Once
	runner     sandbox.Runner
	runnerErr  error
)

// testUID is the host uid the tests' commands run as (when root): not
// nobody, so that no other program's process looks like one left behind.
const testUID = 61998

// sandboxRunner returns the host's isolating sandbox, or skips (fails
// under CI) when there is none.
func sandboxRunner(t testing.TB) sandbox.Runner {
	t.Helper()
	runnerOnce.Do(func() { runner, runnerErr = sandbox.New(sandbox.Config{UID: testUID, GID: testUID}) })
	if runnerErr != nil {
		testenv.Missing(t, "an isolating sandbox: "+runnerErr.Error())
	}
	return runner
}

// workspace makes a workspace holding files.
func workspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newTool(t testing.TB, cfg command.Config) tool.Tool {
	t.Helper()
	if cfg.Runner == nil {
		cfg.Runner = sandboxRunner(t)
	}
	tl, err := command.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// call runs one call through an executor, as a run does.
func call(t testing.TB, ctx context.Context, tl tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(tl)
	if err != nil {
		t.Fatal(err)
	}
	return tool.NewExecutor(tool.ExecConfig{}).RunOne(ctx, reg, tool.Call{ID: "c1", Name: command.Name, Args: raw})
}

type cmd struct {
	Command string `json:"command"`
	Timeout int    `json:"timeout_seconds,omitempty"`
}

func TestConformance(t *testing.T) {
	dir := workspace(t, map[string]string{"a.txt": "one\n"})
	tl := newTool(t, command.Config{Workspace: dir})
	tooltest.Run(t, tl, tooltest.Config{
		Valid:   []json.RawMessage{json.RawMessage(`{"command":"cat a.txt"}`), json.RawMessage(`{"command":"exit 3","timeout_seconds":5}`)},
		Timeout: 20 * time.Second,
	})
}

func TestOutputAndExitStatus(t *testing.T) {
	dir := workspace(t, map[string]string{"a.txt": "hello\n"})
	tl := newTool(t, command.Config{Workspace: dir})
	r := call(t, context.Background(), tl, cmd{Command: "cat a.txt; echo oops >&2; exit 3"})
	if r.IsError {
		t.Fatalf("outcome %s: %s", r.Outcome, r.Output)
	}
	for _, want := range []string{"$ cat a.txt; echo oops >&2; exit 3", "exit status 3 after", "stdout:\nhello\n", "stderr:\noops"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Output)
		}
	}
}

// TestChangesAreCarriedBack: what the command creates, changes, makes
// executable and removes reaches the workspace; links do not, and neither
// does anything at the mounted tests' targets.
func TestChangesAreCarriedBack(t *testing.T) {
	dir := workspace(t, map[string]string{
		"keep.txt": "same\n", "edit.txt": "old\n", "gone.txt": "x\n", "old/dir/f.txt": "f\n", "run.sh": "echo\n",
	})
	tests := workspace(t, map[string]string{"test_x.py": "def test_x(): pass\n"})
	tl := newTool(t, command.Config{Workspace: dir, Tests: []sandbox.Mount{{Source: filepath.Join(tests, "test_x.py"), Target: "tests/test_x.py"}}})
	line := "echo new > edit.txt && mkdir -p new/empty && echo n > new/n.txt && rm gone.txt && rm -r old && chmod +x run.sh && ln -s /etc/passwd link && ls tests"
	r := call(t, context.Background(), tl, cmd{Command: line})
	if r.IsError || !strings.Contains(r.Output, "exit status 0") {
		t.Fatalf("outcome %s: %s", r.Outcome, r.Output)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	if got := read("edit.txt"); got != "new\n" {
		t.Errorf("edit.txt = %q", got)
	}
	if got := read("new/n.txt"); got != "n\n" {
		t.Errorf("new/n.txt = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "new/empty")); err != nil || !fi.IsDir() {
		t.Errorf("new/empty not created: %v", err)
	}
	for _, gone := range []string{"gone.txt", "old", "link", "tests"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s exists in the workspace after the command", gone)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v, %v; want 0755", fi.Mode(), err)
	}
	for _, want := range []string{"wrote edit.txt, new/n.txt, run.sh", "removed gone.txt, old/dir/f.txt, old/dir/, old/", "link (a symbolic link)", "test_x.py"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Output)
		}
	}
	if strings.Contains(r.Output, "keep.txt") {
		t.Errorf("an unchanged file is reported:\n%s", r.Output)
	}
}

func TestPytestFailuresLead(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
		testenv.Missing(t, "/usr/bin/python3 with pytest")
	}
	dir := workspace(t, map[string]string{"calc.py": "def add(a, b):\n    return a - b\n"})
	tests := workspace(t, map[string]string{"test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n\ndef test_zero():\n    assert add(0, 0) == 0\n"})
	tl := newTool(t, command.Config{Workspace: dir, Tests: []sandbox.Mount{{Source: filepath.Join(tests, "test_calc.py"), Target: "test_calc.py"}}})
	r := call(t, context.Background(), tl, cmd{Command: "python3 -m pytest -q"})
	out := r.Output
	head, _, _ := strings.Cut(out, "stdout")
	for _, want := range []string{"exit status 1", "pytest: 1 passed, 1 failed", "FAIL test_add", "assert 0 == 4"} {
		if !strings.Contains(head, want) {
			t.Errorf("the result does not lead with %q:\n%s", want, out)
		}
	}
	for _, junk := range []string{".pytest_cache", "__pycache__", "wrote", "generated xml file"} {
		if strings.Contains(out, junk) {
			t.Errorf("pytest left %q in the workspace:\n%s", junk, out)
		}
	}
}

// TestTimeoutBoundedByBudget: a call's timeout is at most what is left of
// the run's time (the context's deadline).
func TestTimeoutBoundedByBudget(t *testing.T) {
	dir := workspace(t, nil)
	tl := newTool(t, command.Config{Workspace: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := call(t, ctx, tl, cmd{Command: "sleep 30", Timeout: 60})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v, past the 1.5s left of the budget", took)
	}
	if !strings.Contains(r.Output, "what was left of the run's time budget") {
		t.Errorf("outcome %s:\n%s", r.Outcome, r.Output)
	}
	// Its own timeout, well within the budget.
	r = call(t, context.Background(), tl, cmd{Command: "sleep 30", Timeout: 1})
	if !strings.Contains(r.Output, "timed out after 1s (its limit)") {
		t.Errorf("outcome %s:\n%s", r.Outcome, r.Output)
	}
}

// TestCarryBackBounds: a command that leaves too many files has none of
// its changes applied, and says so.
func TestCarryBackBounds(t *testing.T) {
	dir := workspace(t, map[string]string{"a.txt": "a\n"})
	tl := newTool(t, command.Config{Workspace: dir})
	r := call(t, context.Background(), tl, cmd{Command: "echo changed > a.txt; mkdir d && cd d && seq 1 20001 | xargs touch"})
	if !strings.Contains(r.Output, "the command left more than 20000 files in the workspace; none of its changes were carried back") {
		t.Errorf("output:\n%s", r.Output)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "a\n" {
		t.Errorf("a.txt = %q: a change was applied", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); err == nil {
		t.Error("d was created")
	}
}

// TestGoAndNodeFailuresLead: go test -json and node --test results lead
// with the failing test, as exec check feedback does.
func TestGoAndNodeFailuresLead(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		if _, err := exec.LookPath("go"); err != nil {
			testenv.Missing(t, "go")
		}
		dir := workspace(t, map[string]string{
			"go.mod":    "module x\n\ngo 1.21\n",
			"x.go":      "package x\n\nfunc Add(a, b int) int { return a - b }\n",
			"x_test.go": "package x\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestOK(t *testing.T) {}\n",
		})
		tl := newTool(t, command.Config{Workspace: dir})
		r := call(t, context.Background(), tl, cmd{Command: "go test -json ./...", Timeout: 300})
		head, _, _ := strings.Cut(r.Output, "stdout")
		for _, want := range []string{"exit status 1", "go test: 1 passed, 1 failed", "FAIL TestAdd", "Add(2, 2) = 0, want 4"} {
			if !strings.Contains(head, want) {
				t.Errorf("the result does not lead with %q:\n%s", want, r.Output)
			}
		}
		if strings.Contains(r.Output, ".gocache") || strings.Contains(r.Output, "wrote") {
			t.Errorf("the build cache reached the workspace:\n%s", r.Output)
		}
	})
	t.Run("node", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			testenv.Missing(t, "node")
		}
		dir := workspace(t, map[string]string{
			"add.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => { assert.strictEqual(1 + 1, 3); });\ntest('ok', () => {});\n",
		})
		tl := newTool(t, command.Config{Workspace: dir})
		r := call(t, context.Background(), tl, cmd{Command: "node --test"})
		head, _, _ := strings.Cut(r.Output, "stdout")
		for _, want := range []string{"exit status 1", "node --test: 1 passed, 1 failed", "FAIL adds"} {
			if !strings.Contains(head, want) {
				t.Errorf("the result does not lead with %q:\n%s", want, r.Output)
			}
		}
	})
}

// TestLongOutputKeepsHeadAndTail: output beyond the sandbox's capture and
// the tool's bounds shows its head and its tail.
func TestLongOutputKeepsHeadAndTail(t *testing.T) {
	tl := newTool(t, command.Config{Workspace: workspace(t, nil)})
	r := call(t, context.Background(), tl, cmd{Command: "echo first; seq 1 200000; echo last"})
	for _, want := range []string{"stdout (1288906 bytes, head and tail shown):\nfirst\n1\n", "elided", "200000\nlast"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Output)
		}
	}
	if len(r.Output) > 16<<10 {
		t.Errorf("output of %d bytes", len(r.Output))
	}
}
