package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/workspace"
)

func TestGrep(t *testing.T) {
	ws, _ := open(t, map[string]string{
		"a.go":         "package a\n\nfunc New() {}\n\nfunc Open() {}\n",
		"sub/b.go":     "package sub\n// New here\nvar x = 1\nvar y = 2\nvar z = 3\nvar w = 4\n// New again\n",
		"sub/c.txt":    "New text\n",
		"ignored/d.go": "func New() {}\n",
		"gen.go":       "func New() {} // generated\n",
		".gitignore":   "ignored/\ngen.go\n",
		".git/config":  "New\n",
		"bin.dat":      "New\x00\x01",
		"long.txt":     strings.Repeat("x", 1000) + "New\n",
		"ctl.txt":      "New\x1b[31mred\r\n",
	})
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"plain", map[string]any{"pattern": `func (New|Open)\b`},
			"a.go:3:func New() {}\na.go:5:func Open() {}\n2 matching lines in 1 file (6 files searched); 1 file skipped (binary, unreadable or larger than 4 MiB)"},
		{"glob and path", map[string]any{"pattern": "New", "path": "sub", "glob": "*.go"},
			"sub/b.go:2:// New here\nsub/b.go:7:// New again\n2 matching lines in 1 file (1 file searched)"},
		{"anchored glob", map[string]any{"pattern": "New", "glob": "sub/*.txt"},
			"sub/c.txt:1:New text\n1 matching line in 1 file (1 file searched)"},
		{"context", map[string]any{"pattern": "New|package", "path": "sub/b.go", "context": 1},
			"sub/b.go:1:package sub\nsub/b.go:2:// New here\nsub/b.go-3-var x = 1\n--\nsub/b.go-6-var w = 4\nsub/b.go:7:// New again\n3 matching lines in 1 file (1 file searched)"},
		{"ignore case", map[string]any{"pattern": "new TEXT", "ignore_case": true},
			"sub/c.txt:1:New text\n1 matching line in 1 file (6 files searched); 1 file skipped (binary, unreadable or larger than 4 MiB)"},
		{"cap", map[string]any{"pattern": "New", "max_results": 2},
			"a.go:3:func New() {}\nctl.txt:1:New\ufffd[31mred\n… stopped after 2 matching lines in the workspace: there are more; narrow pattern, path or glob, or pass a larger max_results (at most 1000); 1 file skipped (binary, unreadable or larger than 4 MiB)"},
		{"none", map[string]any{"pattern": "absent"},
			"no line matches \"absent\" in the workspace: 6 files searched; 1 file skipped (binary, unreadable or larger than 4 MiB)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(t, ws, workspace.Grep, c.args)
			if err != nil || got != c.want {
				t.Errorf("grep %v =\n%s\n(%v); want\n%s", c.args, got, err, c.want)
			}
		})
	}
	got, _ := run(t, ws, workspace.Grep, map[string]any{"pattern": "xNew"})
	if !strings.HasPrefix(got, "long.txt:1:"+strings.Repeat("x", 400)+" […") {
		t.Errorf("a long line is not cut:\n%s", got)
	}
	for _, bad := range []map[string]any{{"pattern": "("}, {"pattern": ""}, {"pattern": "a", "context": 11}, {"pattern": "a", "max_results": -1}} {
		if _, err := run(t, ws, workspace.Grep, bad); !errors.Is(err, tool.ErrInvalidArgs) {
			t.Errorf("grep %v: error %v, want invalid arguments", bad, err)
		}
	}
}

func TestGlob(t *testing.T) {
	ws, dir := open(t, map[string]string{
		"old.go": "", "new.go": "", "mid.go": "", "sub/x.go": "", "sub/deep/y.go": "", "sub/z.txt": "",
		"vendor/v.go": "", ".gitignore": "vendor/\n", "sub/.gitignore": "deep/*\n!deep/keep.go\n", "sub/deep/keep.go": "",
	})
	now := time.Now()
	// Equal times are listed by path.
	for _, name := range []string{"sub/z.txt", "sub/.gitignore", ".gitignore", "sub/deep/y.go", "vendor/v.go"} {
		if err := os.Chtimes(filepath.Join(dir, name), now, now); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"old.go", "mid.go", "new.go", "sub/x.go", "sub/deep/keep.go"} {
		when := now.Add(time.Duration(i-10) * time.Hour)
		if err := os.Chtimes(filepath.Join(dir, name), when, when); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "*.go"}, "sub/deep/keep.go\nsub/x.go\nnew.go\nmid.go\nold.go"},
		{map[string]any{"pattern": "*.go", "max_results": 2}, "sub/deep/keep.go\nsub/x.go\n… 3 more files match (5 in all, newest first); narrow the pattern or path, or pass a larger max_results (at most 1000)"},
		{map[string]any{"pattern": "*.go", "path": "sub"}, "sub/deep/keep.go\nsub/x.go"},
		{map[string]any{"pattern": "sub/*"}, "sub/.gitignore\nsub/z.txt\nsub/x.go"},
		{map[string]any{"pattern": "sub/"}, "sub/.gitignore\nsub/z.txt\nsub/deep/keep.go\nsub/x.go"},
		{map[string]any{"pattern": "**/deep/*.go"}, "sub/deep/keep.go"},
		{map[string]any{"pattern": "*.rs"}, `no file in the workspace matches "*.rs"`},
	} {
		got, err := run(t, ws, workspace.Glob, c.args)
		if err != nil || got != c.want {
			t.Errorf("glob %v =\n%s\n(%v); want\n%s", c.args, got, err, c.want)
		}
	}
}

// TestSearchStaysInside: grep and glob never follow a link, whether it
// points outside the workspace or back into it.
func TestSearchStaysInside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	populate(t, base, map[string]string{"outside/secret.txt": "New secret\n", "ws/in.txt": "New inside\n"})
	symlink(t, filepath.Join(base, "outside"), filepath.Join(dir, "out"))
	symlink(t, filepath.Join(base, "outside", "secret.txt"), filepath.Join(dir, "flink.txt"))
	symlink(t, ".", filepath.Join(dir, "loop"))
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	got, err := run(t, ws, workspace.Grep, map[string]any{"pattern": "New"})
	if want := "in.txt:1:New inside\n1 matching line in 1 file (1 file searched)"; err != nil || got != want {
		t.Errorf("grep = %q, %v; want %q", got, err, want)
	}
	got, err = run(t, ws, workspace.Glob, map[string]any{"pattern": "**"})
	if err != nil || got != "in.txt" {
		t.Errorf("glob = %q, %v; want only in.txt", got, err)
	}
	if _, err := run(t, ws, workspace.Grep, map[string]any{"pattern": "New", "path": "out"}); !errors.Is(err, workspace.ErrOutside) {
		t.Errorf("grep in a link outside: %v, want ErrOutside", err)
	}
}
