package execcheck

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/rand"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify/testreport"
)

// A sentinel is a test that must fail, named with a fresh random nonce,
// mounted read-only beside the real tests and run with them. A test runner
// that reports it passing, or a report that lacks it, was not honest: a
// plugin or patch that marks every test passed, or a report forged by the
// candidate, shows up as the sentinel passing or missing. The nonce is
// drawn for every check, so a candidate cannot name the sentinel in
// advance; it can still read it in the sandbox while it runs, which is what
// holdout checks are for (docs/verification.md).

// plan is what one run of the check adds to the command and expects of
// its report.
type plan struct {
	// sentinel is the sentinel's case name in the report, "" when none
	// could be placed (Go tests mounted only as directories).
	sentinel string
	// mounts are the sentinel files, staged in dir.
	mounts []sandbox.Mount
	dir    string
	// args are appended to the command: the sentinel's path, when the
	// command names its tests (else the runner's discovery finds it).
	args []string
	// expected are the tests that the read-only test files define, each
	// of which must appear in the report.
	expected []expectedTest
	// launcher is the mounted pytest launcher (pytest_launch.py) that
	// runs in place of `python -m pytest` in-process, "" when the command
	// is not that.
	launcher string
}

// expectedTest is a test found in a mounted test file.
type expectedTest struct {
	name string // as the report names it, without parameters
	file string // the mount target it is defined in
}

// maxTestFile bounds how much of one mounted test file is scanned.
const maxTestFile = 4 << 20

// newPlan draws a nonce and writes the sentinel for c's format into a
// fresh host directory; the caller removes p.dir. The launcher runs
// in-process wherever it can, and in judge isolation in a run started
// ahead (warm), whose gate it waits at.
func (c *checker) newPlan(warm bool) (p *plan, err error) {
	p = &plan{}
	if c.cfg.Format == "exit" {
		return p, nil
	}
	p.expected, err = expectedTests(c.cfg.Format, c.cfg.Tests)
	if err != nil {
		return nil, err
	}
	nonce := strings.ToLower(rand.Text())
	if p.dir, err = os.MkdirTemp("", "ratchet-sentinel-"); err != nil {
		return nil, err
	}
	// The sandbox stages its own copy; the sandbox uid need not read this.
	add := func(target, body string) error {
		src := filepath.Join(p.dir, strings.ReplaceAll(target, "/", "_"))
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			return err
		}
		p.mounts = append(p.mounts, sandbox.Mount{Source: src, Target: target})
		return nil
	}
	beside := sentinelDir(c.cfg.Tests)
	switch c.cfg.Format {
	case "pytest":
		p.sentinel = "test_ratchet_sentinel_" + nonce
		// Named to be collected last, so that a command that stops at
		// the first failure (-x) still runs every real test.
		target := path.Join(beside, "test_zzz_ratchet_sentinel_"+nonce+".py")
		err = add(target, fmt.Sprintf("# ratchet's sentinel: this test must fail; a report showing it pass was forged.\n\n\ndef %s():\n    raise AssertionError(%q)\n", p.sentinel, "ratchet sentinel "+nonce+": this test must fail"))
		if namesTests(c.cfg.Command, c.cfg.Tests) {
			p.args = append(p.args, target)
		}
		if err == nil && (c.cfg.Isolation == InProcess || warm) && c.launches() {
			p.launcher = ".ratchet-pytest-" + nonce + ".py"
			err = add(p.launcher, pytestLaunch)
		}
	case "node":
		p.sentinel = "ratchet sentinel " + nonce
		target := path.Join(beside, "ratchet-sentinel-"+nonce+".test.cjs")
		err = add(target, fmt.Sprintf("'use strict';\n// ratchet's sentinel: this test must fail; a report showing it pass was forged.\nconst test = require('node:test');\ntest(%q, () => {\n  throw new Error(%q);\n});\n", p.sentinel, "ratchet sentinel: this test must fail"))
		if namesTests(c.cfg.Command, c.cfg.Tests) {
			p.args = append(p.args, target)
		}
	case "go":
		name := "TestRatchetSentinel" + strings.ToUpper(nonce)
		pkgs, perr := goTestPackages(c.cfg.Tests)
		if perr != nil {
			err = perr
			break
		}
		for _, dir := range sortedKeys(pkgs) {
			target := path.Join(dir, "ratchet_sentinel_"+nonce+"_test.go")
			body := fmt.Sprintf("package %s\n\n// ratchet's sentinel: this test must fail; a report showing it pass was forged.\n\nimport \"testing\"\n\nfunc %s(t *testing.T) {\n\tt.Fatal(%q)\n}\n", pkgs[dir], name, "ratchet sentinel: this test must fail")
			if err = add(target, body); err != nil {
				break
			}
			p.sentinel = name
		}
	}
	if err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	return p, nil
}

// launches says whether the launcher can stand in for the command: a
// pytest check of `python -m pytest`.
func (c *checker) launches() bool {
	return c.cfg.Format == "pytest" && runsPytestModule(c.cfg.Command, cmp.Or(c.cfg.Env["PATH"], sandboxPath))
}

// sentinelDir is where the sentinel goes for pytest and node: beside the
// first mounted test file, so that the runner's rootdir and discovery stay
// as they were; the workspace root when only directories are mounted.
func sentinelDir(tests []sandbox.Mount) string {
	for _, m := range tests {
		if fi, err := os.Stat(m.Source); err == nil && !fi.IsDir() {
			return path.Dir(filepath.ToSlash(m.Target))
		}
	}
	return "."
}

// namesTests reports whether an argument of the command names a mounted
// test path, or a directory above one: then the runner runs only what it is
// given, and the sentinel's path must be given too.
func namesTests(cmd []string, tests []sandbox.Mount) bool {
	for _, a := range cmd[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		a, _, _ = strings.Cut(a, "::") // a pytest node id
		a = path.Clean(filepath.ToSlash(a))
		for _, m := range tests {
			t := filepath.ToSlash(m.Target)
			if a == t || strings.HasPrefix(t, a+"/") || strings.HasPrefix(a, t+"/") {
				return true
			}
		}
	}
	return false
}

// goTestPackages maps each directory holding a mounted *_test.go file (a
// file mount: a directory mount cannot take another file) to the package
// clause of that file.
func goTestPackages(tests []sandbox.Mount) (map[string]string, error) {
	pkgs := map[string]string{}
	for _, m := range tests {
		t := filepath.ToSlash(m.Target)
		if !strings.HasSuffix(t, "_test.go") {
			continue
		}
		if fi, err := os.Stat(m.Source); err != nil || fi.IsDir() {
			continue
		}
		src, err := readCapped(m.Source)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), m.Source, src, parser.PackageClauseOnly)
		if err != nil {
			return nil, fmt.Errorf("test file %s: %w", m.Source, err)
		}
		if _, ok := pkgs[path.Dir(t)]; !ok {
			pkgs[path.Dir(t)] = f.Name.Name
		}
	}
	return pkgs, nil
}

// expectedTests lists the tests that the mounted test files define, as
// their runner names them.
func expectedTests(format string, tests []sandbox.Mount) ([]expectedTest, error) {
	var out []expectedTest
	for _, m := range tests {
		err := filepath.WalkDir(m.Source, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != m.Source && format == "go" && !inMainModule(p, d.Name()) {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(m.Source, p)
			target := path.Join(filepath.ToSlash(m.Target), filepath.ToSlash(rel))
			var names []string
			switch base := path.Base(target); {
			case format == "pytest" && strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")):
				names, err = pytestNames(p)
			case format == "go" && strings.HasSuffix(base, "_test.go"):
				names, err = goTestNames(p)
			case format == "node" && isNodeTestFile(base):
				names, err = nodeTestNames(p)
			}
			for _, n := range names {
				out = append(out, expectedTest{name: n, file: target})
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("test file %s: %w", m.Source, err)
		}
	}
	return out, nil
}

// inMainModule reports whether the go command's ./... would test the
// packages of directory dir (named name) below a mounted directory: not
// vendored modules, testdata, directories it ignores (. or _ first) or a
// module of its own (a mounted module cache holds thousands of tests that
// never run).
func inMainModule(dir, name string) bool {
	if name == "vendor" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return false
	}
	_, err := os.Lstat(filepath.Join(dir, "go.mod"))
	return err != nil
}

// pyIdent is the rest of a Python identifier, which may be outside ASCII
// (\w is ASCII only in Go): a test named test_é must be required too.
const pyIdent = `[\pL\pM\pN\p{Pc}]*`

var (
	pyTopTest    = regexp.MustCompile(`^(?:async\s+)?def\s+(test` + pyIdent + `)\s*\(`)
	pyTestClass  = regexp.MustCompile(`^class\s+(Test` + pyIdent + `)\s*[(:]`)
	pyMethodTest = regexp.MustCompile(`^\s+(?:async\s+)?def\s+(test` + pyIdent + `)\s*\(`)
)

// pytestNames finds pytest's default collection in a test file: top-level
// functions named test*, and test* methods of top-level classes named
// Test*. Tests made dynamically are not found, and so not required.
// Names are NFKC-normalized, as Python does to identifiers, so that they
// match what pytest reports.
func pytestNames(p string) ([]string, error) {
	src, err := readCapped(p)
	if err != nil {
		return nil, err
	}
	var names []string
	inClass := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, maxTestFile)
	for sc.Scan() {
		l := sc.Text()
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if l[0] != ' ' && l[0] != '\t' {
			inClass = pyTestClass.MatchString(l)
		}
		if m := pyTopTest.FindStringSubmatch(l); m != nil {
			names = append(names, norm.NFKC.String(m[1]))
		} else if m := pyMethodTest.FindStringSubmatch(l); m != nil && inClass {
			names = append(names, norm.NFKC.String(m[1]))
		}
	}
	return names, sc.Err()
}

// goTestNames finds the top-level Test and Fuzz functions of a file that
// has no build constraint (one that excludes it would make them missing).
func goTestNames(p string) ([]string, error) {
	src, err := readCapped(p)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	header := src[:min(len(src), max(int(f.Package)-1, 0))] // a new FileSet's base is 1
	if bytes.Contains(header, []byte("//go:build")) || bytes.Contains(header, []byte("// +build")) {
		return nil, nil
	}
	var names []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name == "TestMain" {
			continue
		}
		for _, prefix := range []string{"Test", "Fuzz"} {
			// go test's rule: the rune after the prefix is not lower case.
			if rest, ok := strings.CutPrefix(fd.Name.Name, prefix); ok && (rest == "" || !unicode.IsLower(firstRune(rest))) {
				names = append(names, fd.Name.Name)
			}
		}
	}
	return names, nil
}

// isNodeTestFile is node --test's default naming of test files.
func isNodeTestFile(base string) bool {
	stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".js"), ".mjs"), ".cjs")
	if stem == base {
		return false
	}
	return stem == "test" || strings.HasPrefix(stem, "test-") || strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, "-test") || strings.HasSuffix(stem, "_test")
}

var nodeTest = regexp.MustCompile(`\b(?:test|it)(?:\.(?:skip|todo|only))?\s*\(\s*(?:'([^'\\\n]*)'|"([^"\\\n]*)")`)

// nodeTestNames finds test('name', ...) and it('name', ...) calls with a
// plain string literal for a name.
func nodeTestNames(p string) ([]string, error) {
	src, err := readCapped(p)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range nodeTest.FindAllSubmatch(src, -1) {
		names = append(names, string(m[1])+string(m[2]))
	}
	return names, nil
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxTestFile))
}

// missing returns the expected tests that the report does not name.
func (p *plan) missing(rep testreport.Report, format string) []string {
	if rep.RanCut {
		return nil // too many names to tell
	}
	ran := map[string]bool{}
	for name := range rep.Ran {
		if format == "pytest" {
			name, _, _ = strings.Cut(name, "[") // parametrized
		}
		ran[name] = true
		if format == "node" {
			// Nested tests are "outer > inner".
			if i := strings.LastIndex(name, " > "); i >= 0 {
				ran[name[i+3:]] = true
			}
		}
	}
	var out []string
	for _, e := range p.expected {
		if !ran[e.name] {
			out = append(out, e.name+" ("+e.file+")")
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
