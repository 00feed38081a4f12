package workspace

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/internal/testenv"
)

func TestGlobRegexp(t *testing.T) {
	for _, c := range []struct {
		glob  string
		yes   []string
		no    []string
		isDir bool
	}{
		{glob: "*.log", yes: []string{"a.log", "x/y/a.log", ".log"}, no: []string{"a.log.txt", "alog"}},
		{glob: "/build", yes: []string{"build"}, no: []string{"x/build"}},
		{glob: "docs/*.tmp", yes: []string{"docs/a.tmp"}, no: []string{"docs/x/a.tmp", "x/docs/a.tmp"}},
		{glob: "**/cache", yes: []string{"cache", "a/b/cache"}, no: []string{"cachex"}},
		{glob: "a/**/z", yes: []string{"a/z", "a/b/z", "a/b/c/z"}, no: []string{"az", "b/a/z"}},
		{glob: "out/**", yes: []string{"out/a", "out/a/b"}, no: []string{"out"}},
		{glob: "**", yes: []string{"a", "a/b"}},
		{glob: "a**b", yes: []string{"ab", "axxb"}, no: []string{"a/b"}},
		{glob: "foo[0-9].txt", yes: []string{"foo1.txt", "d/foo9.txt"}, no: []string{"fooa.txt"}},
		{glob: "[!a]x", yes: []string{"bx"}, no: []string{"ax", "/x"}},
		{glob: "[z-a]x", no: []string{"zx", "ax", "mx"}},
		{glob: `\*`, yes: []string{"*"}, no: []string{"a"}},
		{glob: "a?c", yes: []string{"abc"}, no: []string{"a/c", "ac"}},
		{glob: "[unclosed", yes: []string{"[unclosed"}},
		{glob: "ü*", yes: []string{"über"}},
		{glob: "a.b", yes: []string{"a.b"}, no: []string{"axb"}},
	} {
		re := regexp.MustCompile(globRegexp(c.glob))
		for _, p := range c.yes {
			if !re.MatchString(p) {
				t.Errorf("%q does not match %q (%s)", c.glob, p, re)
			}
		}
		for _, p := range c.no {
			if re.MatchString(p) {
				t.Errorf("%q matches %q (%s)", c.glob, p, re)
			}
		}
	}
}

func TestParseIgnore(t *testing.T) {
	ps := parseIgnore("# comment\n\n*.o\n!keep.o\nbin/\n\\#hash\n\\!bang\ntrail\\ \nspaces   \r\n")
	var got []string
	for _, p := range ps {
		got = append(got, strings.Join([]string{p.re.String(), map[bool]string{true: "!"}[p.negate], map[bool]string{true: "/"}[p.dirOnly]}, " "))
	}
	want := []string{
		`^(?:.*/)?[^/]*\.o$  `,
		`^(?:.*/)?keep\.o$ ! `,
		`^(?:.*/)?bin$  /`,
		`^(?:.*/)?#hash$  `,
		`^(?:.*/)?!bang$  `,
		`^(?:.*/)?trail $  `,
		`^(?:.*/)?spaces$  `,
	}
	if !slices.Equal(got, want) {
		t.Errorf("patterns:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ignoredWalk is what a walk sees: a path is left out when it, or a
// directory on the way to it, is ignored.
func ignoredWalk(ig *ignorer, rel string, isDir bool) bool {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if ig.ignored(d, true) {
			return true
		}
	}
	return ig.ignored(rel, isDir)
}

// TestIgnoreAgreesWithGit compares the ignorer with git check-ignore on
// nested .gitignore files.
func TestIgnoreAgreesWithGit(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		testenv.Missing(t, "git (./test.sh installs it)")
	}
	dir := t.TempDir()
	files := map[string]string{
		".gitignore":          "*.log\n!keep.log\n/build\ndocs/*.tmp\n**/cache/\na/**/z\nnode_modules/\n\\#hash\nfoo[0-9].txt\n[!a]x\nout/**\n!out/keep\nsp\\ ace\n",
		"sub/.gitignore":      "!*.log\n/local\ndeep/*.txt\n",
		"sub/deep/.gitignore": "!b.txt\n",
	}
	paths := []string{
		"a.log", "keep.log", "x/a.log", "sub/a.log", "sub/x/a.log", "build/f", "x/build/f", "docs/a.tmp", "docs/x/a.tmp",
		"cache/f", "p/cache/f", "cachefile", "a/z", "a/b/z", "a/b/c/z", "node_modules/m/i.js", "#hash", "foo1.txt", "fooa.txt",
		"bx", "ax", "out/a", "out/keep", "sub/local/f", "local/f", "sub/deep/a.txt", "sub/deep/b.txt", "sp ace", "sp", "plain.go",
	}
	for name, content := range files {
		write(t, dir, name, content)
	}
	for _, p := range paths {
		write(t, dir, p, "x")
	}
	if out, err := exec.Command(gitPath, "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	cmd := exec.Command(gitPath, "-C", dir, "check-ignore", "--no-index", "--stdin")
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\n") + "\n")
	out, _ := cmd.Output() // exit 1 when nothing is ignored
	gitIgnored := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		gitIgnored[l] = true
	}
	if len(gitIgnored) < 10 || !gitIgnored["a.log"] {
		t.Fatalf("git check-ignore found only %v", gitIgnored)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ig := newIgnorer(root)
	for _, p := range paths {
		if got := ignoredWalk(ig, p, false); got != gitIgnored[p] {
			t.Errorf("%s: ignored %v, git says %v", p, got, gitIgnored[p])
		}
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzIgnore: any .gitignore line compiles (globRegexp never yields an
// expression RE2 refuses) and matching never panics.
func FuzzIgnore(f *testing.F) {
	for _, s := range []string{"*.log", "!a/**/b/", `\[x`, "[!a-]", "[z-a]", "[\\]]", "**/", "a[", "\xff*", "[\xff-\x01]"} {
		f.Add(s, "a/b.log")
	}
	f.Fuzz(func(t *testing.T, line, p string) {
		if ps := parseIgnore(line); len(ps) > 0 {
			for _, pt := range ps {
				pt.matches(p, true)
			}
		}
		if g, ok := compileGlob(line); ok {
			g.matches(p, false)
		}
	})
}

// FuzzGrepPrefilter: the whole-file pass that skips files changes nothing
// in what grep shows.
func FuzzGrepPrefilter(f *testing.F) {
	f.Add(`^func`, "package a\nfunc x\n func y\n", 1)
	f.Add(`\}$`, "a }\n}\r\nb", 0)
	f.Add(`\}$`, "}\r\n", 0)
	f.Add(`(?i)^$`, "\n\nx\n", 2)
	f.Add(`a\sb`, "a\nb\na b\n", 0)
	f.Fuzz(func(t *testing.T, expr, data string, context int) {
		if strings.Contains(expr, `\A`) || strings.Contains(expr, `\z`) {
			return // no prefilter then
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		pre, err := regexp.Compile("(?m)" + expr)
		if err != nil {
			t.Fatalf("%q compiles but not with (?m): %v", expr, err)
		}
		context = min(max(context, 0), maxContext)
		plain := &grepper{re: re, context: context, limit: 50}
		fast := &grepper{re: re, file1: pre, context: context, limit: 50}
		plain.search("f", []byte(data))
		fast.search("f", []byte(data))
		if plain.out.String() != fast.out.String() || plain.matches != fast.matches {
			t.Fatalf("%q on %q: with the prefilter %q, without %q", expr, data, fast.out.String(), plain.out.String())
		}
	})
}
