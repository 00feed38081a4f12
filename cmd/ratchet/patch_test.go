package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	if !strings.Contains(c.stderr, "the workspace changed since the run started") {
		t.Errorf("a second apply: %v", c)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "journal.txt")); string(data) != "start\nyes\n" {
		t.Errorf("a refused apply changed the original: journal %q", data)
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
