package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/internal/testenv"
)

// TestPatchShowAndApply: an agent run on a copied workspace ends with a
// patch, kept in the run database: a run resumed in another process (after
// an approval) takes it against the start the first process recorded;
// 'show --patch' prints a diff that git apply and patch -p1 accept;
// 'apply' applies it to the original once, and refuses it when the
// original has changed since the run started.
func TestPatchShowAndApply(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": `goal: Journal yes, write a note, then answer yes.
model: scripted:turns.yaml
workspace: ws
copy_workspace: true
tools: [append_file, write_file]
permissions:
  - {tool: append_file, action: ask}
checks: [{equals: "yes"}]
`,
		"turns.yaml": `turns:
  - tools: [{name: write_file, args: {path: notes/new.txt, content: "a new note\n"}}]
  - tools: [{name: append_file, args: {path: journal.txt, text: "yes\n"}}]
  - finish: {answer: "yes", confidence: 0.9}
`,
	})
	t.Setenv("TMPDIR", t.TempDir()) // where the kept copy goes
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "journal.txt"), []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	c := run(t, env, "run", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitWaiting)
	id := regexp.MustCompile(`run (\S+) is waiting for a person`).FindStringSubmatch(c.stderr)[1]
	run(t, env, "show", id, "--patch").wantCode(t, exitUsage) // not finished yet
	run(t, env, "approve", id).wantCode(t, exitDone)

	c = run(t, env, "show", id, "--patch")
	c.wantCode(t, exitDone)
	want := "diff --git a/journal.txt b/journal.txt\n--- a/journal.txt\n+++ b/journal.txt\n@@ -1 +1,2 @@\n start\n+yes\n" +
		"diff --git a/notes/new.txt b/notes/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes/new.txt\n@@ -0,0 +1 @@\n+a new note\n"
	if c.stdout != want {
		t.Fatalf("show --patch:\n%s\nwant:\n%s", c.stdout, want)
	}
	for _, tool := range [][]string{{"git", "apply", "--check", "-p1", "-"}, {"patch", "-p1", "--dry-run"}} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			continue
		}
		cmd := exec.Command(tool[0], tool[1:]...)
		cmd.Dir, cmd.Stdin = ws, strings.NewReader(c.stdout)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not accept the patch: %v\n%s", tool[0], err, out)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "journal.txt")); string(data) != "start\n" {
		t.Fatalf("the run changed the original: journal %q", data)
	}

	c = run(t, env, "apply", id)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "2 files (journal.txt, notes/new.txt)") {
		t.Errorf("apply: %v", c)
	}
	for name, want := range map[string]string{"journal.txt": "start\nyes\n", "notes/new.txt": "a new note\n"} {
		if data, _ := os.ReadFile(filepath.Join(ws, name)); string(data) != want {
			t.Errorf("%s after apply = %q, want %q", name, data, want)
		}
	}
	// Applied once, the original is no longer the run's start.
	c = run(t, env, "apply", id)
	c.wantCode(t, exitNotDone)
	if !strings.Contains(c.stderr, "the workspace changed since the run started (it looks applied already") {
		t.Errorf("a second apply: %v", c)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "journal.txt")); string(data) != "start\nyes\n" {
		t.Errorf("a refused apply changed the original: journal %q", data)
	}
	// Deleting the run deletes the copy it kept for its patch.
	copies := func() []string {
		m, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "ratchet-workspace-*"))
		return m
	}
	if len(copies()) != 1 {
		t.Fatalf("workspace copies before rm: %q, want the run's one", copies())
	}
	run(t, env, "rm", id).wantCode(t, exitDone)
	if left := copies(); len(left) != 0 {
		t.Errorf("rm left the run's workspace copy: %q", left)
	}
}

// TestNoPatch: a run without a copied workspace has no patch to show or
// apply, and says why.
func TestNoPatch(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	run(t, env, "run", "--quiet", quickstart).wantCode(t, exitDone)
	for _, args := range [][]string{{"show", "last", "--patch"}, {"apply", "last"}} {
		c := run(t, env, args...)
		c.wantCode(t, exitUsage)
		if !strings.Contains(c.stderr, "has no patch: only an agent run on a copied workspace") {
			t.Errorf("%v: %v", args, c)
		}
	}
}

// TestFixTestsExample runs examples/fix-tests end to end through the CLI,
// offline: the scripted agent runs the Go tests with run_command, greps for
// the two functions they blame, edits both files, reruns the tests and
// finishes; the visible tests and the holdout test pass; the run replays;
// and its patch, which git apply and patch -p1 accept, applies to the
// original workspace, whose tests then pass on the host too. With the
// workspace a git work tree, the patch is git diff output.
func TestFixTestsExample(t *testing.T) {
	requireSandboxTools(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "go")
	}
	t.Run("plain", func(t *testing.T) { fixTestsExample(t, goCmd, false) })
	t.Run("git", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			testenv.Missing(t, "git")
		}
		fixTestsExample(t, goCmd, true)
	})
}

func fixTestsExample(t *testing.T, goCmd string, git bool) {
	// A copy of the example, so that applying the patch leaves the
	// repository's alone.
	dir := filepath.Join(t.TempDir(), "fix-tests")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "fix-tests"))); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "workspace")
	if git {
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	log := filepath.Join(t.TempDir(), "run.jsonl")
	c := run(t, env, "run", "--json", "--quiet", "--log", log, filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	res := c.result(t)
	if len(res.Attempts) != 1 || len(res.Best.Verdicts) != 1 || len(res.Best.Holdout) != 1 || !res.Best.Holdout[0].OK {
		t.Fatalf("want one accepted attempt whose holdout test passed: %+v", res.Attempts)
	}
	if p := res.Patch; p == nil || !slices.Equal(p.Files, []string{"cart/cart.go", "money/money.go"}) || p.Git != git {
		t.Fatalf("patch %+v: want the two files edited, git %v", p, git)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(res.Patch.Copy)) }) // the kept copy and its start
	calls := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, log)), "\n") {
		var e struct {
			Command *struct {
				Type  string
				Calls []struct{ Name string }
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Command != nil && e.Command.Type == "run_tools" {
			for _, call := range e.Command.Calls {
				calls[call.Name]++
			}
		}
	}
	if want := map[string]int{"run_command": 3, "grep": 1, "edit_file": 2}; !maps.Equal(calls, want) {
		t.Errorf("tool calls %v, want %v", calls, want)
	}
	// On a layer (root) git runs inside run_command on the workspace's
	// own .git; on a copy there is none.
	if diffStat := strings.Contains(readFile(t, log), "2 files changed, 2 insertions(+), 2 deletions(-)"); diffStat != (git && os.Geteuid() == 0) {
		t.Errorf("git %v as uid %d: git diff --stat in run_command showed the edits: %v", git, os.Geteuid(), diffStat)
	}
	run(t, env, "replay", log).wantCode(t, exitDone)

	c = run(t, env, "show", "last", "--patch")
	c.wantCode(t, exitDone)
	if index := regexp.MustCompile(`(?m)^index [0-9a-f]{40}\.\.[0-9a-f]{40} 100644$`); index.MatchString(c.stdout) != git {
		t.Errorf("git %v, but the patch's index lines say otherwise:\n%s", git, c.stdout)
	}
	for _, want := range []string{"+\t\tsum += l.Cents * l.Qty\n", `+	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)`} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("the patch lacks %q:\n%s", want, c.stdout)
		}
	}
	for _, tool := range [][]string{{"git", "apply", "--check", "-p1", "-"}, {"patch", "-p1", "--dry-run", "--silent"}} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			continue
		}
		cmd := exec.Command(tool[0], tool[1:]...)
		cmd.Dir, cmd.Stdin = ws, strings.NewReader(c.stdout)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not accept the patch: %v\n%s", tool[0], err, out)
		}
	}
	run(t, env, "apply", "last").wantCode(t, exitDone)
	test := exec.Command(goCmd, "test", "./...")
	test.Dir = ws
	test.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	if out, err := test.CombinedOutput(); err != nil {
		t.Errorf("go test in the patched workspace: %v\n%s", err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestEvalRunKeepsPatch: a suite's run on a copied workspace keeps its
// patch, as ratchet run's does: the task file's part of the run's config
// reaches the eval's runs (taskfile.Run.Runner).
func TestEvalRunKeepsPatch(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": `goal: Write a note, then answer yes.
model: scripted:turns.yaml
workspace: ws
copy_workspace: true
tools: [write_file]
checks: [{equals: "yes"}]
`,
		"turns.yaml": `turns:
  - tools: [{name: write_file, args: {path: new.txt, content: "a new note\n"}}]
  - finish: {answer: "yes", confidence: 0.9}
`,
		"suite.yaml": "cases:\n  - task: task.yaml\n",
	})
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "RATCHET_EVAL_DIR": t.TempDir()}
	run(t, env, "eval", "run", filepath.Join(dir, "suite.yaml"), "--quiet").wantCode(t, exitDone)
	c := run(t, env, "ls", "--json")
	var rows []struct{ ID string }
	if err := json.Unmarshal([]byte(c.stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("ls --json: %v\n%v", err, c)
	}
	c = run(t, env, "show", rows[0].ID, "--patch")
	c.wantCode(t, exitDone)
	if want := "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+a new note\n"; c.stdout != want {
		t.Errorf("show --patch of the suite's run:\n%s\nwant:\n%s", c.stdout, want)
	}
}
