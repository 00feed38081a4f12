package execcheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// TestAgentCheckOnLayer: on a run's layer an agent's check judges a
// scratch layer over the run's view. It takes a workspace past the copy's
// 32 MiB cap, sees the agent's edits and a link as the agent left them,
// leaves nothing of its own in the run's change set, and still finds a
// file the agent wrote that shadows the tests (in the run's upper layer,
// below the scratch's).
func TestAgentCheckOnLayer(t *testing.T) {
	requirePytest(t)
	r := runner(t)
	uid, gid, ok := sandbox.LayerIDs(r)
	if !ok {
		testenv.Missing(t, "a sandbox that runs on a layer (root, an isolating backend)")
	}
	orig := t.TempDir()
	write := func(dir, rel, data string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(orig, "calc/core.py", "def add(a, b):\n    return a - b\n")
	write(orig, "calc/__init__.py", "from calc.core import add\n")
	if err := os.Symlink("calc", filepath.Join(orig, "calc_link")); err != nil {
		t.Fatal(err)
	}
	// 40 MiB of build output the copy would refuse.
	if err := os.WriteFile(filepath.Join(orig, "blob.bin"), make([]byte, 40<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := t.TempDir()
	write(tests, "test_calc.py", `import os
import calc_link


def test_add():
    assert calc_link.add(2, 3) == 5


def test_writes():
    with open("written_by_check.txt", "w") as f:
        f.write("x")
    os.remove("blob.bin")
`)
	s, err := patch.BeginLayer(context.Background(), orig, uid, gid)
	if errors.Is(err, layer.ErrUnsupported) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.End(false) })
	check := func(t *testing.T) (verify.Verdict, error) {
		v, err := execcheck.New(execcheck.Config{
			Name: "tests", Runner: r, Format: "pytest", Workspace: s.Copy, Layer: s.Layer,
			Command: []string{"python3", "-m", "pytest", "-q", "test_calc.py"},
			Tests:   []sandbox.Mount{{Source: filepath.Join(tests, "test_calc.py"), Target: "test_calc.py"}},
			Limits:  sandbox.Limits{Wall: 30 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		return v.Check(context.Background(), verify.Candidate{})
	}

	verdict, err := check(t)
	if err != nil {
		t.Fatal(err)
	}
	if verdict.OK || !strings.Contains(verdict.Detail, "test_add") {
		t.Errorf("before the agent's fix: %+v", verdict)
	}
	write(s.Copy, "calc/core.py", "def add(a, b):\n    return a + b\n") // the agent's fix, through the view
	verdict, err = check(t)
	if err != nil {
		t.Fatal(err)
	}
	if !verdict.OK {
		t.Errorf("after the agent's fix: %+v", verdict)
	}
	changes, err := s.Layer.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for _, c := range changes {
			yield(c.Path)
		}
	}); !slices.Equal(got, []string{"calc/core.py"}) {
		t.Errorf("the run's change set after two checks: %v, want only the agent's calc/core.py", got)
	}
	if _, err := os.Stat(filepath.Join(s.Copy, "blob.bin")); err != nil {
		t.Errorf("the check's removal reached the run's view: %v", err)
	}

	write(s.Copy, "pprint.py", "raise SystemExit(0)\n") // the agent plants a module pytest imports
	verdict, err = check(t)
	if err != nil {
		t.Fatal(err)
	}
	if verdict.Where != execcheck.Tampered || !strings.Contains(verdict.Detail, "pprint.py") {
		t.Errorf("a shadowing module in the run's layer: %+v", verdict)
	}
}
