package command_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/command"
)

// layerTool returns run_command on a layer over original, and the start
// of the run, whose patch the test may take; the view is unmounted after
// the test.
func layerTool(t testing.TB, original string, tests ...sandbox.Mount) (tool.Tool, *patch.Start) {
	t.Helper()
	r := sandboxRunner(t)
	s, err := patch.BeginLayer(context.Background(), original, testUID, testUID)
	if errors.Is(err, layer.ErrUnsupported) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.End(false) })
	return newTool(t, command.Config{Runner: r, Workspace: s.Copy, Layer: s.Layer, Tests: tests}), s
}

func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// TestLayerGitLinksModes: on a layer, a command sees the original as it
// is (a symbolic link, an executable bit, .git: git status, diff, log and
// show work, and git commit too), writes land in the view and the patch,
// and neither the original's files nor its .git change. The mount point
// made for a test file the view lacks is gone after the call.
func TestLayerGitLinksModes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Missing(t, "git")
	}
	orig := workspace(t, map[string]string{"calc.py": "def add(a, b):\n    return a - b\n", "run.sh": "#!/bin/sh\necho run\n", ".gitignore": "build/\n"})
	os.Chmod(filepath.Join(orig, "run.sh"), 0o755)
	os.MkdirAll(filepath.Join(orig, "node_modules", "pkg"), 0o755)
	os.WriteFile(filepath.Join(orig, "node_modules", "pkg", "cli.js"), []byte("x\n"), 0o755)
	os.MkdirAll(filepath.Join(orig, "node_modules", ".bin"), 0o755)
	os.Symlink("../pkg/cli.js", filepath.Join(orig, "node_modules", ".bin", "pkg"))
	gitIn(t, orig, "init", "-q")
	gitIn(t, orig, "add", "calc.py", "run.sh", ".gitignore")
	gitIn(t, orig, "commit", "-qm", "first")
	head := gitIn(t, orig, "rev-parse", "HEAD")
	testDir := t.TempDir()
	os.WriteFile(filepath.Join(testDir, "test_calc.py"), []byte("def test(): pass\n"), 0o644)
	tl, s := layerTool(t, orig, sandbox.Mount{Source: filepath.Join(testDir, "test_calc.py"), Target: "tests/test_calc.py"})
	ctx := context.Background()
	out := call(t, ctx, tl, cmd{Command: `set -e; readlink node_modules/.bin/pkg; test -x run.sh && ./run.sh; cat tests/test_calc.py
git status --porcelain; git log --oneline | wc -l; git show --stat HEAD | head -1
sed -i 's/a - b/a + b/' calc.py; git diff --stat; git -c user.name=a -c user.email=a@a commit -qam fix; git log --oneline | wc -l; mkdir build; echo o > build/out.o`})
	for _, want := range []string{"../pkg/cli.js", "run\n", "def test(): pass", "?? node_modules/", "commit ", "calc.py | 2 +-", "\n1\n", "\n2", "exit status 0"} {
		if !strings.Contains(out.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, out.Output)
		}
	}
	if got := gitIn(t, orig, "rev-parse", "HEAD"); got != head {
		t.Errorf("the original's HEAD moved: %s -> %s", head, got)
	}
	if data, _ := os.ReadFile(filepath.Join(orig, "calc.py")); !strings.Contains(string(data), "a - b") {
		t.Errorf("the original changed: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(s.Copy, "calc.py")); !strings.Contains(string(data), "a + b") {
		t.Errorf("the view lacks the command's edit: %q", data)
	}
	if _, err := os.Lstat(filepath.Join(s.Copy, "tests")); err == nil {
		t.Errorf("the test's mount point was left in the layer")
	}
	p := patch.Take(ctx, *s)
	// git diff's shape (index lines), and what .gitignore ignores left out.
	if p.Problem != "" || !p.Git || !strings.Contains(p.Diff, "+    return a + b") || !strings.Contains(p.Diff, "\nindex ") ||
		strings.Contains(p.Diff, ".git/") || strings.Contains(p.Diff, "tests/") || strings.Contains(p.Diff, "build/") {
		t.Errorf("patch: %+v", p)
	}
	// The patch applies to the original, as ratchet apply does.
	if err := patch.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(orig, "calc.py")); !strings.Contains(string(data), "a + b") {
		t.Errorf("applied: %q", data)
	}
}

// TestLayerHostWrites: a file the host's tools wrote in the view (as
// root) is the command's to change.
func TestLayerHostWrites(t *testing.T) {
	tl, s := layerTool(t, workspace(t, map[string]string{"a.txt": "a\n"}))
	os.MkdirAll(filepath.Join(s.Copy, "src"), 0o755)
	os.WriteFile(filepath.Join(s.Copy, "src", "b.txt"), []byte("b\n"), 0o644)
	out := call(t, context.Background(), tl, cmd{Command: "echo more >> src/b.txt && echo c > src/c.txt && cat src/b.txt"})
	if !strings.Contains(out.Output, "b\nmore") || !strings.Contains(out.Output, "exit status 0") {
		t.Errorf("output:\n%s", out.Output)
	}
}
