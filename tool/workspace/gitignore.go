package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// A gitignore-style pattern, compiled: what .gitignore files hold, and what
// grep's glob and the glob tool take.
type pattern struct {
	re      *regexp.Regexp
	negate  bool // "!pattern": re-include
	dirOnly bool // "pattern/": directories only
}

const (
	// maxIgnoreFile bounds how much of one .gitignore is read.
	maxIgnoreFile = 256 << 10
	// maxPatternLen bounds one pattern; a longer one is ignored.
	maxPatternLen = 4096
)

// parseIgnore reads the patterns of a .gitignore file, as git does (see
// gitignore(5)): blank lines and lines starting with "#" are skipped,
// trailing spaces are dropped unless escaped with "\", "!" negates, a
// trailing "/" matches only directories.
func parseIgnore(data string) []pattern {
	var out []pattern
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if p, ok := compileLine(line); ok {
			out = append(out, p)
		}
	}
	return out
}

// compileLine compiles one .gitignore line; ok is false for a blank line, a
// comment, or a line too long to be a pattern.
func compileLine(line string) (pattern, bool) {
	if len(line) > maxPatternLen || line == "" || line[0] == '#' {
		return pattern{}, false
	}
	line = trimTrailingSpaces(line)
	var p pattern
	if strings.HasPrefix(line, "!") {
		p.negate, line = true, line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		p.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return pattern{}, false
	}
	p.re = regexp.MustCompile(globRegexp(line))
	return p, true
}

// compileGlob compiles a glob given by the model, with the syntax of a
// .gitignore pattern.
func compileGlob(glob string) (pattern, bool) {
	if glob == "" || len(glob) > maxPatternLen {
		return pattern{}, false
	}
	var p pattern
	if strings.HasSuffix(glob, "/") {
		p.dirOnly, glob = true, strings.TrimRight(glob, "/")
	}
	if glob == "" {
		return pattern{}, false
	}
	p.re = regexp.MustCompile(globRegexp(glob))
	return p, true
}

// trimTrailingSpaces drops the trailing spaces of a line that are not
// escaped by a backslash.
func trimTrailingSpaces(line string) string {
	end := len(line)
	for end > 0 && line[end-1] == ' ' {
		// An odd number of backslashes before the space escapes it.
		n := 0
		for i := end - 2; i >= 0 && line[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			break
		}
		end--
	}
	return line[:end]
}

// globRegexp translates a gitignore pattern (without its "!" and trailing
// "/") into an RE2 expression matched against a slash-separated path
// relative to the pattern's base directory. A pattern with a "/" at its
// start or in its middle is anchored at the base; one without matches a
// name at any depth. "*" and "?" never match "/", "[…]" is a class ("!" or
// "^" negates it), "\x" is x; "**/" at the start, "/**/" in the middle and
// "/**" at the end match any number of directories (at the end: everything
// inside), and any other "**" is a "*". The result always compiles.
func globRegexp(glob string) string {
	anchored := strings.Contains(glob, "/")
	glob = strings.TrimPrefix(glob, "/")
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	for i := 0; i < len(glob); {
		c := glob[i]
		switch {
		case c == '*' && strings.HasPrefix(glob[i:], "**") && (i == 0 || glob[i-1] == '/') && (i+2 == len(glob) || glob[i+2] == '/'):
			if i+2 == len(glob) {
				b.WriteString(".*")
				i += 2
			} else {
				b.WriteString("(?:.*/)?")
				i += 3
			}
		case c == '*':
			for i < len(glob) && glob[i] == '*' {
				i++
			}
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
			i++
		case c == '[':
			class, n := translateClass(glob[i:])
			if n == 0 {
				b.WriteString(`\[`)
				i++
				continue
			}
			b.WriteString(class)
			i += n
		case c == '\\' && i+1 < len(glob):
			lit, n := literal(glob[i+1:])
			b.WriteString(lit)
			i += 1 + n
		default:
			lit, n := literal(glob[i:])
			b.WriteString(lit)
			i += n
		}
	}
	b.WriteString("$")
	return b.String()
}

// translateClass translates the bracket expression at the start of s and
// returns its length, or 0 when it is not closed (the "[" is then a
// literal). A negated class never matches "/"; a range whose ends are out
// of order matches nothing, as in git.
func translateClass(s string) (string, int) {
	i := 1
	negate := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		negate = true
		i++
	}
	var body strings.Builder
	for first := true; i < len(s); first = false {
		if s[i] == ']' && !first {
			switch {
			case negate:
				return "[^/" + body.String() + "]", i + 1
			case body.Len() == 0:
				return `[^\x00-\x{10FFFF}]`, i + 1 // nothing
			}
			return "[" + body.String() + "]", i + 1
		}
		lo, n := classChar(s[i:])
		if n == 0 {
			return "", 0
		}
		i += n
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			h, m := classChar(s[i+1:])
			if m == 0 {
				return "", 0
			}
			hi, i = h, i+1+m
		}
		if lo <= hi {
			fmt.Fprintf(&body, `\x{%x}`, lo)
			if hi != lo {
				fmt.Fprintf(&body, `-\x{%x}`, hi)
			}
		}
	}
	return "", 0
}

// classChar decodes the character at the start of a class's body, "\x"
// being x; n is 0 when s ends first.
func classChar(s string) (rune, int) {
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0
		}
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, 1 + n
	}
	return utf8.DecodeRuneInString(s)
}

// literal returns the expression matching the first character of s, and
// its length. A byte that is not valid UTF-8 matches as U+FFFD, which is how
// RE2 reads it in the path (RE2 refuses it in an expression).
func literal(s string) (string, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return `\x{fffd}`, 1
	}
	return regexp.QuoteMeta(s[:n]), n
}

// matches reports whether p matches rel, a path relative to p's base.
func (p pattern) matches(rel string, isDir bool) bool {
	return (!p.dirOnly || isDir) && p.re.MatchString(rel)
}

// ignorer decides which workspace paths the .gitignore files ignore. It
// reads each directory's .gitignore (and .git/info/exclude at the root)
// once, through the workspace's os.Root and never through a link. It is
// safe for concurrent use.
type ignorer struct {
	root  *os.Root
	mu    sync.Mutex
	files map[string][]pattern // by directory, "." for the root
}

func newIgnorer(root *os.Root) *ignorer {
	return &ignorer{root: root, files: map[string][]pattern{}}
}

// ignored reports whether rel (slash-separated, relative to the root) is
// ignored: the last pattern that matches it decides, those of deeper
// .gitignore files coming after those of shallower ones. A directory's
// contents are not looked at here: callers skip an ignored directory
// whole, as git does (a file in it cannot be re-included).
func (ig *ignorer) ignored(rel string, isDir bool) bool {
	if rel == "." || rel == "" {
		return false
	}
	ignored := false
	dir := path.Dir(rel)
	var chain []string
	for d := dir; ; d = path.Dir(d) {
		chain = append(chain, d)
		if d == "." {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		base := chain[i]
		sub := rel
		if base != "." {
			sub = rel[len(base)+1:]
		}
		for _, p := range ig.patterns(base) {
			if p.matches(sub, isDir) {
				ignored = !p.negate
			}
		}
	}
	return ignored
}

// patterns returns the patterns of dir's .gitignore, read once.
func (ig *ignorer) patterns(dir string) []pattern {
	ig.mu.Lock()
	defer ig.mu.Unlock()
	if ps, ok := ig.files[dir]; ok {
		return ps
	}
	var ps []pattern
	if dir == "." {
		ps = parseIgnore(ig.read(".git/info/exclude"))
	}
	ps = append(ps, parseIgnore(ig.read(path.Join(dir, ".gitignore")))...)
	ig.files[dir] = ps
	return ps
}

// read returns the regular file rel, at most maxIgnoreFile bytes of it, or
// "" when it is missing, a link or not a regular file.
func (ig *ignorer) read(rel string) string {
	f, err := ig.root.OpenFile(osPath(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return string(data)
}
