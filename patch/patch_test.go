package patch

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/loop"
)

// writeTree writes files (path → content; a "#x" suffix on the path makes
// it executable) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "#x"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every file under dir but what skipDir leaves out, with
// "#x" on executable ones.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.rel
		if e.mode&0o111 != 0 {
			name += "#x"
		}
		out[name] = string(e.data)
	}
	return out
}

func begin(t *testing.T, original string) *Start {
	t.Helper()
	s, err := Begin(context.Background(), original)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.Dir()) })
	return s
}

var start = map[string]string{
	"pkg/calc.go":      "package pkg\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
	"pkg/keep.go":      "package pkg\n",
	"README":           "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n",
	"gone.txt":         "to be deleted\n",
	"no-newline":       "last line has none",
	"run.sh":           "#!/bin/sh\necho hi\n",
	"empty-then-full":  "",
	"dir with space/x": "x\n",
}

// change edits the copy the way an agent would, and returns what the
// copy holds then.
func change(t *testing.T, dir string) map[string]string {
	t.Helper()
	writeTree(t, dir, map[string]string{
		"pkg/calc.go":                     "package pkg\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
		"README":                          "one\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\nnine\nten\neleven\n",
		"no-newline":                      "last line has none, still",
		"run.sh#x":                        "#!/bin/sh\necho hi\n",
		"empty-then-full":                 "now full\n",
		"new/file.go":                     "package new\n",
		"dir with space/x":                "y\n",
		"tab\tand\nnewline\n+++ b/escape": "a hostile name\n",
		"new-empty":                       "",
	})
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	want := readTree(t, dir)
	// Never part of a change: a nested repository's git directory, and
	// the bytecode caches running the tests leaves.
	writeTree(t, dir, map[string]string{
		"vendor/lib/.git/config":           "[core]\n",
		"pkg/__pycache__/calc.pyc":         "\x00bytecode",
		".pytest_cache/v/cache/lastfailed": "{}",
	})
	return want
}

// TestTreeDiffApplies: without git the diff is made here, and git apply
// and patch -p1 both turn a fresh copy of the start into the end: edits,
// new and deleted files, a mode change, a last line without a newline, and
// names with spaces, tabs and newlines (quoted, so that none forges a
// header).
func TestTreeDiffApplies(t *testing.T) {
	for _, tool := range []string{"git", "patch"} {
		t.Run(tool, func(t *testing.T) {
			if _, err := exec.LookPath(tool); err != nil {
				testenv.Missing(t, tool)
			}
			original := t.TempDir()
			writeTree(t, original, start)
			s := begin(t, original)
			if s.Git {
				t.Fatal("a directory without .git is not a git workspace")
			}
			want := change(t, s.Copy)
			p := Take(context.Background(), *s)
			if p.Problem != "" || len(p.Binary) > 0 {
				t.Fatalf("problem %q, binary %v", p.Problem, p.Binary)
			}
			wantFiles := []string{"README", "dir with space/x", "empty-then-full", "gone.txt", "new-empty", "new/file.go", "no-newline", "pkg/calc.go", "run.sh", "tab\tand\nnewline\n+++ b/escape"}
			if diff := cmp.Diff(wantFiles, p.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			var err error
			if tool == "git" {
				err = Apply(context.Background(), p)
			} else {
				err = patchApply(context.Background(), original, p.Diff)
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, p.Diff)
			}
			if diff := cmp.Diff(want, readTree(t, original)); diff != "" {
				t.Errorf("applied (-want +got):\n%s\n%s", diff, p.Diff)
			}
		})
	}
}

// TestApplyRefusesAChangedOriginal: the original must still be as it was
// at the start, even where the patch would apply cleanly; and nothing is
// written then.
func TestApplyRefusesAChangedOriginal(t *testing.T) {
	for _, git := range []bool{false, true} {
		t.Run(map[bool]string{false: "tree", true: "git"}[git], func(t *testing.T) {
			original := t.TempDir()
			writeTree(t, original, start)
			if git {
				gitInit(t, original)
			}
			s := begin(t, original)
			writeTree(t, s.Copy, map[string]string{"pkg/calc.go": "package pkg // fixed\n"})
			p := Take(context.Background(), *s)
			writeTree(t, original, map[string]string{"README": "edited by a person meanwhile\n"})
			before := readTree(t, original)
			err := Apply(context.Background(), p)
			if !errors.Is(err, ErrChanged) {
				t.Fatalf("Apply = %v, want ErrChanged", err)
			}
			if diff := cmp.Diff(before, readTree(t, original)); diff != "" {
				t.Errorf("a refused apply changed the original:\n%s", diff)
			}
		})
	}
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Missing(t, "git")
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// TestGitWorkspace: a git workspace's patch is git diff output against its
// start (uncommitted changes at the start are not in it), ignored files
// are left out, binary files are named and not dumped, and the patch,
// once without the binary file, applies.
func TestGitWorkspace(t *testing.T) {
	original := t.TempDir()
	files := maps.Clone(start)
	files[".gitignore"] = "build/\n"
	writeTree(t, original, files)
	gitInit(t, original)
	writeTree(t, original, map[string]string{"pkg/keep.go": "package pkg // uncommitted at the start\n"})
	s := begin(t, original)
	if !s.Git {
		t.Fatal("a work tree with .git is a git workspace")
	}
	writeTree(t, s.Copy, map[string]string{
		"pkg/calc.go":   "package pkg // fixed\n",
		"build/out.bin": "ignored\x00",
		"logo.png":      "\x89PNG\x00\x01\x02",
	})
	p := Take(context.Background(), *s)
	if p.Problem != "" || !p.Git {
		t.Fatalf("problem %q, git %v", p.Problem, p.Git)
	}
	if diff := cmp.Diff([]string{"logo.png", "pkg/calc.go"}, p.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"logo.png"}, p.Binary); diff != "" {
		t.Errorf("binary (-want +got):\n%s", diff)
	}
	if !strings.Contains(p.Diff, "Binary files /dev/null and b/logo.png differ") || strings.Contains(p.Diff, "PNG") || strings.Contains(p.Diff, "uncommitted") {
		t.Errorf("diff:\n%s", p.Diff)
	}
	if err := Apply(context.Background(), p); err == nil || !strings.Contains(err.Error(), "logo.png") {
		t.Errorf("Apply of a patch naming a binary file = %v, want a refusal naming it", err)
	}
	os.Remove(filepath.Join(s.Copy, "logo.png"))
	p = Take(context.Background(), *s)
	if err := Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, original)["pkg/calc.go"]; got != "package pkg // fixed\n" {
		t.Errorf("pkg/calc.go after apply = %q", got)
	}
}

// TestCopysGitConfigIsNotRead: the copy's .git is the agent's to write; a
// command it plants there for git to run never runs when ratchet diffs.
func TestCopysGitConfigIsNotRead(t *testing.T) {
	original := t.TempDir()
	writeTree(t, original, map[string]string{"a": "a\n"})
	gitInit(t, original)
	s := begin(t, original)
	marker := filepath.Join(t.TempDir(), "ran")
	hostile := "[core]\n\tfsmonitor = touch " + marker + "\n[diff]\n\texternal = touch " + marker + "\n[filter \"evil\"]\n\tclean = touch " + marker + "\n"
	if err := os.WriteFile(filepath.Join(s.Copy, ".git", "config"), []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, s.Copy, map[string]string{"a": "b\n", ".gitattributes": "* diff=evil filter=evil\n"})
	p := Take(context.Background(), *s)
	if p.Problem != "" || !strings.Contains(p.Diff, "+b") {
		t.Fatalf("problem %q, diff:\n%s", p.Problem, p.Diff)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command planted in the copy's .git/config ran")
	}
}

// TestNothingChanged: an untouched copy has an empty patch, which applies
// as nothing.
func TestNothingChanged(t *testing.T) {
	original := t.TempDir()
	writeTree(t, original, start)
	s := begin(t, original)
	p := Take(context.Background(), *s)
	if p.Diff != "" || len(p.Files) > 0 || p.Problem != "" {
		t.Fatalf("%+v", p)
	}
	if err := Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// TestApplyRefusesIncompletePatches names each reason at once.
func TestApplyRefusesIncompletePatches(t *testing.T) {
	err := Apply(context.Background(), loop.Patch{Diff: "x", Redacted: true, Binary: []string{"a.bin"}, Problem: "too big", Copy: "/tmp/c"})
	for _, want := range []string{"too big", "a.bin", "redacted", "which workspace"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Apply = %v, want it to say %q", err, want)
		}
	}
}

// TestApplyLayer: a stored patch applied on a fresh layer over its
// original gives the workspace its run left, with nothing copied (the
// upper layer holds only what the patch changes) and the original
// untouched; End removes the layer; a changed original is refused.
func TestApplyLayer(t *testing.T) {
	original := t.TempDir()
	writeTree(t, original, start)
	s := begin(t, original)
	want := change(t, s.Copy)
	p := Take(context.Background(), *s)
	l, err := ApplyLayer(context.Background(), p)
	if errors.Is(err, layer.ErrUnsupported) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Diff)
	}
	if diff := cmp.Diff(want, readTree(t, l.Copy)); diff != "" {
		t.Errorf("the view (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(start, readTree(t, original)); diff != "" {
		t.Errorf("the original changed:\n%s", diff)
	}
	changes, err := l.Layer.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, c := range changes {
		changed = append(changed, c.Path)
		if !slices.ContainsFunc(p.Files, func(f string) bool { return f == c.Path || strings.HasPrefix(f, c.Path+"/") }) {
			t.Errorf("the upper layer holds %s, which the patch does not change", c.Path)
		}
	}
	if len(changed) == 0 {
		t.Errorf("the upper layer holds nothing for the patch's %v", p.Files)
	}
	dir := l.Dir()
	if err := l.End(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("End left %s: %v", dir, err)
	}
	writeTree(t, original, map[string]string{"README": "edited by a person meanwhile\n"})
	if _, err := ApplyLayer(context.Background(), p); !errors.Is(err, ErrChanged) {
		t.Errorf("ApplyLayer on a changed original = %v, want ErrChanged", err)
	}
}
