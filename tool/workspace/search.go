package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/tool"
)

const (
	defaultMaxResults = 100
	maxResultsCap     = 1000
	maxContext        = 10
	// searchMaxBytes bounds the output of grep and glob, which stop before
	// they would exceed it, so the executor never cuts a result.
	searchMaxBytes = 48 << 10
	// grepMaxFile is the largest file grep reads; larger ones are skipped
	// and counted.
	grepMaxFile = 4 << 20
	// grepLineBytes bounds one line shown by grep.
	grepLineBytes = 400
	// globCollect bounds how many matching files glob sorts.
	globCollect = 100000
)

const grepDescription = `Search the workspace's text files for lines matching an RE2 regular expression (Go syntax: \b, \d, (?i), no backreferences or lookaround). Each match is shown as "path:line:text", context lines as "path-line-text", with "--" between groups that are not adjacent. Files ignored by .gitignore, the .git directory, binary files and symbolic links are skipped. Narrow the search with path (a directory or file) and glob (a .gitignore-style pattern: "*.go" matches at any depth, "src/**/*.py" below src). Results stop after max_results matching lines.`

const globDescription = `List the workspace's files whose paths match a .gitignore-style glob, newest (most recently modified) first, one per line. "*.py" matches the name at any depth, a pattern with a "/" matches the path from the search directory ("src/*.go" only src's own files, "src/**/*.go" every level below src), "**" crosses directories, "?" is one character, [abc] a class, and "dir/" everything below dir. Files ignored by .gitignore, the .git directory and symbolic links are skipped.`

type grepArgs struct {
	Pattern    string `json:"pattern" jsonschema:"the RE2 regular expression to find, such as \"func (New|Open)\\\\b\""`
	Path       string `json:"path,omitempty" jsonschema:"the directory or file to search, relative to the workspace root (default \".\", the whole workspace)"`
	Glob       string `json:"glob,omitempty" jsonschema:"search only files matching this .gitignore-style pattern, such as \"*.go\" or \"src/**/*.py\""`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match letters of either case"`
	Context    int    `json:"context,omitempty" jsonschema:"lines to show before and after each match (default 0, at most 10)"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"the most matching lines to show (default 100, at most 1000)"`
}

type globArgs struct {
	Pattern    string `json:"pattern" jsonschema:"the glob, such as \"**/*_test.go\", \"*.py\" or \"src/*.ts\""`
	Path       string `json:"path,omitempty" jsonschema:"the directory to search, relative to the workspace root (default \".\", the whole workspace)"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"the most files to list (default 100, at most 1000)"`
}

// maxResults checks and defaults a max_results argument.
func maxResults(n int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("%w: max_results must be positive, not %d", tool.ErrInvalidArgs, n)
	case n == 0:
		return defaultMaxResults, nil
	}
	return min(n, maxResultsCap), nil
}

// globArg compiles a glob argument; "dir/" means every file below dir.
func globArg(name, glob string) (pattern, error) {
	if strings.HasSuffix(glob, "/") {
		glob += "**"
	}
	p, ok := compileGlob(glob)
	if !ok || strings.ContainsRune(glob, 0) {
		return p, fmt.Errorf(`%w: %s %q is not a usable glob; give one such as "*.go" or "src/**/*.py"`, tool.ErrInvalidArgs, name, glob)
	}
	return p, nil
}

// walkFiles calls fn with each regular file below start (a cleaned path),
// in lexical order, skipping .git, what .gitignore ignores, links and
// special files. rel is relative to the workspace root, sub to start.
func (ws *Workspace) walkFiles(ctx context.Context, start string, fn func(rel, sub string, d fs.DirEntry) error) error {
	ig := newIgnorer(ws.root)
	return fs.WalkDir(ws.root.FS(), start, func(rel string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if rel == start {
				return err
			}
			return nil // an unreadable directory is skipped
		}
		if rel != start {
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if ig.ignored(rel, d.IsDir()) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		sub := rel
		if start != "." {
			sub = strings.TrimPrefix(strings.TrimPrefix(rel, start), "/")
			if sub == "" {
				sub = path.Base(rel)
			}
		}
		return fn(rel, sub, d)
	})
}

func (ws *Workspace) grep(ctx context.Context, in grepArgs) (string, error) {
	if in.Pattern == "" {
		return "", fmt.Errorf("%w: pattern is empty; give a regular expression, such as \"TODO\"", tool.ErrInvalidArgs)
	}
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("%w: pattern is not an RE2 regular expression: %v", tool.ErrInvalidArgs, err)
	}
	if in.Context < 0 || in.Context > maxContext {
		return "", fmt.Errorf("%w: context must be 0 to %d, not %d", tool.ErrInvalidArgs, maxContext, in.Context)
	}
	limit, err := maxResults(in.MaxResults)
	if err != nil {
		return "", err
	}
	var only *pattern
	if in.Glob != "" {
		g, err := globArg("glob", in.Glob)
		if err != nil {
			return "", err
		}
		only = &g
	}
	start, err := ws.start(in.Path)
	if err != nil {
		return "", err
	}
	g := &grepper{re: re, context: in.Context, limit: limit}
	if !strings.Contains(expr, `\A`) && !strings.Contains(expr, `\z`) {
		// One pass over a whole file tells most files apart; a line that
		// matches is found by it too, as ^ and $ match at line ends.
		g.file1, _ = regexp.Compile("(?m)" + expr)
	}
	err = ws.walkFiles(ctx, start, func(rel, sub string, d fs.DirEntry) error {
		if only != nil && !only.matches(sub, false) {
			return nil
		}
		return g.file(ws.root, rel)
	})
	if err != nil && !errors.Is(err, errEnough) {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fail(in.Path, err)
	}
	return g.result(in, start), nil
}

// start checks the path argument of grep and glob.
func (ws *Workspace) start(p string) (string, error) {
	if p == "" {
		p = "."
	}
	c, err := clean(p)
	if err != nil {
		return "", err
	}
	if _, err := fs.Stat(ws.root.FS(), c); err != nil {
		return "", fail(p, err)
	}
	return c, nil
}

// errEnough ends a walk once the output is full.
var errEnough = errors.New("enough results")

type grepper struct {
	re *regexp.Regexp
	// file1, when set, is re over a whole file: one that it does not
	// match holds no matching line.
	file1   *regexp.Regexp
	context int
	limit   int
	out     strings.Builder
	matches int // matching lines shown
	files   int // files with a match
	seen    int // files searched
	skipped int // binary or too large
	full    bool
	more    bool // matches beyond the limit or the output budget
}

// file searches one file.
func (g *grepper) file(root *os.Root, rel string) error {
	data, ok := readText(root, rel)
	if !ok {
		g.skipped++
		return nil
	}
	g.seen++
	return g.search(rel, data)
}

// search writes the matching lines of data, the file rel, and their
// context.
func (g *grepper) search(rel string, data []byte) error {
	// Lines are matched without their "\r\n", which (?m)$ does not see
	// as a line end: such files are read line by line only.
	if g.file1 != nil && bytes.IndexByte(data, '\r') < 0 && !g.file1.Match(data) {
		return nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	last := -1  // the last line written
	until := -1 // the last context line after a match
	emit := func(j int, sep string) error {
		line := fmt.Sprintf("%s%s%d%s%s\n", rel, sep, j+1, sep, showLine(lines[j]))
		if g.out.Len()+len(line) > searchMaxBytes-512 {
			g.more, g.full = true, true
			return errEnough
		}
		g.out.WriteString(line)
		last = j
		return nil
	}
	found := false
	defer func() {
		if found {
			g.files++
		}
	}()
	for i, line := range lines {
		if !g.re.MatchString(strings.TrimRight(line, "\r\n")) {
			if i <= until {
				if err := emit(i, "-"); err != nil {
					return err
				}
			}
			continue
		}
		if g.matches >= g.limit {
			g.more = true
			return errEnough
		}
		from := max(i-g.context, last+1)
		if g.context > 0 && g.out.Len() > 0 && (last < 0 || from > last+1) {
			g.out.WriteString("--\n")
		}
		// The lines before the match do not match: an earlier match
		// would have been written, and last moved past it.
		for j := from; j < i; j++ {
			if err := emit(j, "-"); err != nil {
				return err
			}
		}
		if err := emit(i, ":"); err != nil {
			return err
		}
		g.matches++
		found = true
		until = i + g.context
	}
	return nil
}

// showLine makes one line of a file fit for the output: without its line
// ending, valid UTF-8 without control characters, at most grepLineBytes.
func showLine(line string) string {
	line = strings.TrimRight(line, "\r\n")
	line = strings.Map(func(r rune) rune {
		if r == '\t' || r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(line, "\uFFFD"))
	if len(line) <= grepLineBytes {
		return line
	}
	cut := grepLineBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + fmt.Sprintf(" […%d more bytes]", len(line)-cut)
}

func (g *grepper) result(in grepArgs, start string) string {
	where := "the workspace"
	if start != "." {
		where = start
	}
	if in.Glob != "" {
		where += fmt.Sprintf(" (files matching %q)", in.Glob)
	}
	var b strings.Builder
	b.WriteString(g.out.String())
	switch {
	case g.matches == 0:
		fmt.Fprintf(&b, "no line matches %q in %s: %s searched", in.Pattern, where, words.Count(g.seen, "file"))
	case g.more:
		fmt.Fprintf(&b, "… stopped after %s in %s: there are more; narrow pattern, path or glob", words.Count(g.matches, "matching line"), where)
		if !g.full && g.limit < maxResultsCap {
			fmt.Fprintf(&b, ", or pass a larger max_results (at most %d)", maxResultsCap)
		}
	default:
		fmt.Fprintf(&b, "%s in %s (%s searched)", words.Count(g.matches, "matching line"), words.Count(g.files, "file"), words.Count(g.seen, "file"))
	}
	if g.skipped > 0 {
		fmt.Fprintf(&b, "; %s skipped (binary, unreadable or larger than %d MiB)", words.Count(g.skipped, "file"), grepMaxFile>>20)
	}
	return b.String()
}

// readText reads a regular text file below root, never through a link or
// from a FIFO or device, and reports false for a binary, unreadable or
// too large one.
func readText(root *os.Root, rel string) ([]byte, bool) {
	f, err := root.OpenFile(osPath(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > grepMaxFile {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, grepMaxFile+1))
	if err != nil || len(data) > grepMaxFile || bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
		return nil, false
	}
	return data, true
}

func (ws *Workspace) glob(ctx context.Context, in globArgs) (string, error) {
	if in.Pattern == "" {
		return "", fmt.Errorf(`%w: pattern is empty; give a glob, such as "**/*.go"`, tool.ErrInvalidArgs)
	}
	pat, err := globArg("pattern", in.Pattern)
	if err != nil {
		return "", err
	}
	limit, err := maxResults(in.MaxResults)
	if err != nil {
		return "", err
	}
	start, err := ws.start(in.Path)
	if err != nil {
		return "", err
	}
	type found struct {
		rel string
		mod time.Time
	}
	var files []found
	total := 0
	err = ws.walkFiles(ctx, start, func(rel, sub string, d fs.DirEntry) error {
		if !pat.matches(sub, false) {
			return nil
		}
		if total++; len(files) >= globCollect {
			return nil
		}
		var mod time.Time
		if info, err := d.Info(); err == nil {
			mod = info.ModTime()
		}
		files = append(files, found{rel, mod})
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fail(in.Path, err)
	}
	where := "the workspace"
	if start != "." {
		where = start
	}
	if total == 0 {
		return fmt.Sprintf("no file in %s matches %q", where, in.Pattern), nil
	}
	slices.SortFunc(files, func(a, b found) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.rel, b.rel)
	})
	var b strings.Builder
	shown := 0
	for _, f := range files {
		if shown >= limit || b.Len()+len(f.rel)+1 > searchMaxBytes-512 {
			break
		}
		b.WriteString(f.rel)
		b.WriteByte('\n')
		shown++
	}
	if shown < total {
		fmt.Fprintf(&b, "… %d more files match (%d in all, newest first); narrow the pattern or path", total-shown, total)
		if shown == limit && limit < maxResultsCap {
			fmt.Fprintf(&b, ", or pass a larger max_results (at most %d)", maxResultsCap)
		}
		return b.String(), nil
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
