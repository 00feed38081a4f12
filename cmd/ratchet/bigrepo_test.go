package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/internal/bigrepo"
	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/layer"
)

// TestBigRepoExample runs examples/big-repo end to end on a generated
// repository past the copy's 32 MiB cap (smaller than the example's 220 MB,
// to keep the suite quick): the agent's git commands see the history, its
// edit and the check work on the layer, the patch is the one change, and
// `ratchet apply` applies it to the original, whose .git the run never
// touched.
func TestBigRepoExample(t *testing.T) {
	requireSandboxTools(t)
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to mount the run's layer: "+layer.ErrUnsupported.Error())
	}
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Missing(t, "git (./test.sh installs it)")
	}
	dir := t.TempDir()
	for _, name := range []string{"task.yaml", "turns.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "big-repo", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	ws := filepath.Join(dir, "workspace")
	if err := bigrepo.Generate(ws, bigrepo.Size{Files: 4000, Bytes: 40 << 20}); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	head := git("rev-parse", "HEAD")
	t.Setenv("TMPDIR", t.TempDir()) // where the run's layer goes
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}

	c := run(t, env, "run", "--json", "--quiet", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	if res := c.result(t); len(res.Attempts) != 1 || !res.Best.Accepted {
		t.Errorf("attempts %+v; want the first accepted", res.Attempts)
	}
	if st := git("status", "--porcelain"); st != "" || git("rev-parse", "HEAD") != head {
		t.Errorf("the run changed the original: status %q", st)
	}
	c = run(t, env, "show", "last", "--patch")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "-    return item.stock < item.threshold\n+    return item.stock <= item.threshold\n") || strings.Count(c.stdout, "diff --git") != 1 {
		t.Errorf("show --patch:\n%s", c.stdout)
	}
	c = run(t, env, "apply", "last")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, ": 1 file (inventory/stock.py)") {
		t.Errorf("apply said: %q", c.stdout)
	}
	if st := git("status", "--porcelain"); st != " M inventory/stock.py\n" {
		t.Errorf("after apply, git status: %q", st)
	}
	cmd := exec.Command("/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("the tests fail on the applied patch:\n%s", out)
		} else {
			t.Fatal(err)
		}
	}
}
