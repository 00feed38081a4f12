package patch

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// contextLines is how many unchanged lines surround each hunk, as in diff -u.
const contextLines = 3

// treeDiff diffs the tree at a (the start) against the tree at b (the
// copy) into a unified diff in git's extended format.
func treeDiff(a, b string) (diff, error) {
	old, err := walk(a)
	if err != nil {
		return diff{}, err
	}
	cur, err := walk(b)
	if err != nil {
		return diff{}, err
	}
	return entryDiff(old, cur, false), nil
}

// entryDiff diffs the entries old (the start) against cur (the end), each
// sorted by path; index adds git's index lines (the blobs' hashes), as git
// diff --full-index writes them.
func entryDiff(old, cur []entry, index bool) diff {
	var d diff
	var out strings.Builder
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		var x, y *entry
		switch {
		case j == len(cur) || (i < len(old) && old[i].rel < cur[j].rel):
			x, i = &old[i], i+1
		case i == len(old) || cur[j].rel < old[i].rel:
			y, j = &cur[j], j+1
		default:
			x, y, i, j = &old[i], &cur[j], i+1, j+1
		}
		if x != nil && y != nil && gitMode(x.mode) == gitMode(y.mode) && bytes.Equal(x.data, y.data) {
			continue
		}
		rel := pathOf(x, y)
		d.files = append(d.files, rel)
		if fileDiff(&out, rel, x, y, index) {
			d.binary = append(d.binary, rel)
		}
	}
	d.text = out.String()
	return d
}

func pathOf(x, y *entry) string {
	if x != nil {
		return x.rel
	}
	return y.rel
}

// fileDiff writes the diff of one file, x its start and y its end (nil for
// a file created or deleted). It reports whether the file is named only:
// binary content, or a link.
func fileDiff(w *strings.Builder, rel string, x, y *entry, index bool) (named bool) {
	a, b := quote("a/"+rel), quote("b/"+rel)
	fmt.Fprintf(w, "diff --git %s %s\n", a, b)
	switch {
	case x == nil:
		fmt.Fprintf(w, "new file mode %s\n", gitMode(y.mode))
		a = "/dev/null"
	case y == nil:
		fmt.Fprintf(w, "deleted file mode %s\n", gitMode(x.mode))
		b = "/dev/null"
	case gitMode(x.mode) != gitMode(y.mode):
		fmt.Fprintf(w, "old mode %s\nnew mode %s\n", gitMode(x.mode), gitMode(y.mode))
	}
	var before, after []byte
	if x != nil {
		before = x.data
	}
	if y != nil {
		after = y.data
	}
	link := (x != nil && isLink(x.mode)) || (y != nil && isLink(y.mode))
	if bytes.Equal(before, after) && !link {
		return false // a mode change, or an empty file created or deleted
	}
	if index {
		fmt.Fprintf(w, "index %s..%s", blobHash(x), blobHash(y))
		if x != nil && y != nil && gitMode(x.mode) == gitMode(y.mode) {
			fmt.Fprintf(w, " %s", gitMode(x.mode))
		}
		w.WriteString("\n")
	}
	if link || isBinary(before) || isBinary(after) {
		fmt.Fprintf(w, "Binary files %s and %s differ\n", a, b)
		return true
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", a, b)
	hunks(w, lines(before), lines(after))
	return false
}

// hunks writes the unified hunks turning lines a into lines b.
func hunks(w *strings.Builder, a, b []string) {
	m := difflib.NewMatcher(a, b)
	for _, group := range m.GetGroupedOpCodes(contextLines) {
		first, last := group[0], group[len(group)-1]
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(first.I1, last.I2), hunkRange(first.J1, last.J2))
		for _, op := range group {
			if op.Tag == 'e' {
				writeLines(w, ' ', a[op.I1:op.I2])
				continue
			}
			if op.Tag == 'r' || op.Tag == 'd' {
				writeLines(w, '-', a[op.I1:op.I2])
			}
			if op.Tag == 'r' || op.Tag == 'i' {
				writeLines(w, '+', b[op.J1:op.J2])
			}
		}
	}
}

// hunkRange is the lines [start, end) of a hunk as diff -u writes them:
// 1-based, the length left out when it is 1, and an empty range named by
// the line before it.
func hunkRange(start, end int) string {
	switch n := end - start; n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	default:
		return fmt.Sprintf("%d,%d", start+1, n)
	}
}

// writeLines writes lines with their prefix; a last line without a
// newline is marked as diff marks it.
func writeLines(w *strings.Builder, prefix byte, lines []string) {
	for _, l := range lines {
		w.WriteByte(prefix)
		w.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// lines splits data after each newline; the last line may have none.
func lines(data []byte) []string {
	var out []string
	s := string(data)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// isBinary is git's test: a NUL byte in the first 8000 bytes. A carriage
// return alone would survive the diff, but a NUL would not.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

func isLink(m fs.FileMode) bool { return m&fs.ModeSymlink != 0 }

// gitMode is a file's mode as git writes it: 100644, 100755 or 120000.
// blobHash is the git object name of e's content (a link's target), or
// git's null name when there is no e.
func blobHash(e *entry) string {
	if e == nil {
		return strings.Repeat("0", 40)
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(e.data))
	h.Write(e.data)
	return hex.EncodeToString(h.Sum(nil))
}

func gitMode(m fs.FileMode) string {
	switch {
	case isLink(m):
		return "120000"
	case m&0o111 != 0:
		return "100755"
	}
	return "100644"
}

// quote writes a path as git does when it must: in double quotes with C
// escapes, when it holds a byte that would otherwise end or confuse the
// header (a space, a quote, a backslash, a control byte, or a byte of
// UTF-8 beyond ASCII, which git quotes by default). A path with a newline
// in it (the agent chooses the names) cannot forge a header line.
func quote(p string) string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r >= 0x7f }) {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < ' ' || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
