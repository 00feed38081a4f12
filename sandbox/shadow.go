package sandbox

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/internal/wsread"
)

// runnerModules are modules that a workspace file must not replace: the
// test runner and the interpreter's startup hooks.
var runnerModules = []string{"pytest", "_pytest", "pluggy", "py", "iniconfig", "sitecustomize", "usercustomize"}

// pythonModules are the top-level modules that a Python run imports from
// wherever sys.path finds them first: the standard library's
// (sys.stdlib_module_names) and every module loaded by importing pytest,
// as the python3 on the sandbox's default PATH reports them. It is asked
// once; without a python3 there are none.
var pythonModules = sync.OnceValue(func() []string {
	for _, dir := range filepath.SplitList(defaultPath) {
		python := filepath.Join(dir, "python3")
		if _, err := os.Stat(python); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, python, "-I", "-c", listModules).Output()
		if err != nil {
			return nil
		}
		return strings.Fields(string(out))
	}
	return nil
})

// listModules prints the module names of pythonModules. __main__ is always
// loaded already, never imported from a file.
const listModules = `import sys
names = set(sys.stdlib_module_names)
try:
    import pytest
    names.update(m.partition(".")[0] for m in sys.modules)
except ImportError:
    pass
names.discard("__main__")
print("\n".join(sorted(names)))
`

// pytestConfigs maps a configuration file name to the text that makes it a
// pytest configuration ("" means always).
var pytestConfigs = map[string]string{
	"pytest.ini":     "",
	".pytest.ini":    "",
	"tox.ini":        "[pytest]",
	"setup.cfg":      "[tool:pytest]",
	"pyproject.toml": "[tool.pytest",
}

// shadowRules holds what the placement rules of Result.Tampered need to
// know about the mounts and the command.
type shadowRules struct {
	mounted    map[string]bool // every mounted path, relative
	onPath     map[string]bool // directories from the root to each mounted file
	goTestDirs map[string]bool // directories holding mounted *_test.go
	modules    map[string]bool // module names the tests may import
	importDirs map[string]bool // onPath and the PYTHONPATH directories
	skip       map[string]bool // the guards, checked separately
}

func (w *workspace) shadowRules(s Spec) *shadowRules {
	r := &shadowRules{
		mounted: map[string]bool{}, onPath: map[string]bool{".": true}, goTestDirs: map[string]bool{},
		modules: map[string]bool{}, importDirs: map[string]bool{}, skip: map[string]bool{},
	}
	for _, m := range w.mounts {
		for rel := range m.sums {
			p := m.target
			if rel != "." {
				p = m.target + "/" + rel
			}
			r.mounted[p] = true
			if m.sums[rel] == "dir" {
				continue
			}
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				r.onPath[d] = true
			}
			base := path.Base(p)
			if strings.HasSuffix(base, "_test.go") {
				r.goTestDirs[path.Dir(p)] = true
			}
			if mod, ok := strings.CutSuffix(base, ".py"); ok && mod != "conftest" && mod != "__init__" {
				r.modules[mod] = true
			}
			if base == "__init__.py" && path.Dir(p) != "." {
				r.modules[path.Base(path.Dir(p))] = true
			}
		}
	}
	for _, m := range runnerModules {
		r.modules[m] = true
	}
	// Python runs when the command is Python or the tests are.
	python := len(s.Command) > 0 && pythonCommand.MatchString(filepath.Base(s.Command[0]))
	for p := range r.mounted {
		python = python || strings.HasSuffix(p, ".py")
	}
	if python {
		for _, m := range pythonModules() {
			r.modules[m] = true
		}
	}
	for i, a := range s.Command {
		if a == "-m" && i+1 < len(s.Command) {
			r.modules[strings.SplitN(s.Command[i+1], ".", 2)[0]] = true
		}
	}
	for d := range r.onPath {
		r.importDirs[d] = true
	}
	for _, p := range filepath.SplitList(s.Env["PYTHONPATH"]) {
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(w.dir, p)
			if err != nil || !filepath.IsLocal(rel) {
				continue
			}
			p = rel
		}
		r.importDirs[path.Clean(filepath.ToSlash(p))] = true
	}
	for _, g := range w.guards {
		r.skip[g.rel] = true
	}
	return r
}

// watchDirs are the directories in which a file created and removed again
// during the run would still have shadowed the tests.
func (r *shadowRules) watchDirs() []string { return sortedKeys(r.importDirs) }

// shadows finds workspace files that interfere with the mounted tests by
// their placement (see Result.Tampered), and judges the names in created
// (recorded during the run) that are gone by now. On a layer only its
// upper layers are looked at (a scratch layer's and the run's below it):
// the original's files are the user's, not the run's, and the walk costs
// the change set, not the workspace (a whiteout, a removal, shadows
// nothing).
func (w *workspace) shadows(r *shadowRules, created map[string]bool) []string {
	var out []string
	n := 0
	tops := []string{w.dir}
	if w.layer != nil {
		tops = w.layer.Uppers()
	}
	var seen map[string]bool // what an upper layer above has judged
	if len(tops) > 1 {
		seen = map[string]bool{}
	}
	for i, top := range tops {
		if n > maxWalk {
			break
		}
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == top || d.Type()&fs.ModeCharDevice != 0 {
				return nil
			}
			if n++; n > maxWalk {
				out = append(out, "workspace: more than "+strconv.Itoa(maxWalk)+" entries; the rest was not checked for shadowing")
				return fs.SkipAll
			}
			rel, err := filepath.Rel(top, p)
			if err != nil {
				return nil
			}
			rel = filepath.ToSlash(rel)
			if r.skip[rel] {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if seen != nil {
				if seen[rel] {
					return nil
				}
				seen[rel] = true
				if _, err := os.Lstat(w.abs(rel)); i > 0 && err != nil {
					return nil // a layer above removed it
				}
			}
			out = append(out, r.judge(rel, d.IsDir(), p, d)...)
			return nil
		})
	}
	for _, rel := range sortedKeys(created) {
		if _, err := os.Lstat(w.abs(rel)); err == nil || r.skip[rel] {
			continue // judged above
		}
		for _, s := range r.judge(rel, created[rel], "", nil) {
			out = append(out, s+" (created during the run, then removed)")
		}
	}
	return out
}

// judge applies the placement rules to one entry. p and d are empty for an
// entry that no longer exists; content-based rules then cannot apply.
func (r *shadowRules) judge(rel string, isDir bool, p string, d fs.DirEntry) []string {
	if r.mounted[rel] {
		return nil // the unsafe backend's copies, checked by digest
	}
	var out []string
	dir, base := path.Dir(rel), path.Base(rel)
	switch {
	case base == "conftest.py":
		out = append(out, rel+": shadows the tests: a conftest.py that was not mounted (pytest loads it as a plugin)")
	case base == "__init__.py" && r.onPath[dir]:
		out = append(out, rel+": shadows the tests: __init__.py on the path to mounted tests (changes how pytest imports them)")
	case r.onPath[dir] && pytestConfigs[base] == "" && isKey(pytestConfigs, base):
		out = append(out, rel+": shadows the tests: pytest configuration beside or above mounted tests")
	case p != "" && r.onPath[dir] && pytestConfigs[base] != "" && fileContains(p, pytestConfigs[base]):
		out = append(out, rel+": shadows the tests: pytest configuration ("+pytestConfigs[base]+") beside or above mounted tests")
	case p != "" && strings.HasSuffix(base, "_test.go") && r.goTestDirs[dir] && fileContains(p, "func TestMain("):
		out = append(out, rel+": shadows the tests: defines TestMain beside mounted Go tests")
	}
	if r.importDirs[dir] {
		if mod := moduleName(p, base, isDir); mod != "" && r.modules[mod] {
			out = append(out, rel+": shadows the tests: Python module "+mod+" would be imported instead of the real one")
		}
	}
	return out
}

// moduleName returns the Python module that the entry name at p would
// provide when its directory is on sys.path, or "". A directory is a
// package only with an __init__; one that is gone (p == "") is not judged.
func moduleName(p, name string, isDir bool) string {
	if isDir {
		if p == "" {
			return ""
		}
		for _, init := range []string{"__init__.py", "__init__.pyc"} {
			if _, err := os.Lstat(filepath.Join(p, init)); err == nil {
				return name
			}
		}
		return ""
	}
	for _, ext := range []string{".py", ".pyc", ".pyw"} {
		if mod, ok := strings.CutSuffix(name, ext); ok {
			return mod
		}
	}
	if strings.HasSuffix(name, ".so") {
		return strings.SplitN(name, ".", 2)[0]
	}
	return ""
}

func isKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// fileContains reports whether the regular file p contains s in its first
// megabyte.
func fileContains(p, s string) bool {
	f, _, err := wsread.OpenPath(p)
	if err != nil {
		return false
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return bytes.Contains(data, []byte(s))
}

// pythonCommand matches a Python interpreter or pytest run as a command.
var pythonCommand = regexp.MustCompile(`^(python[0-9.]*|pytest)$`)
