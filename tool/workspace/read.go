package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/tool"
)

const (
	defaultMaxLines = 400
	maxLinesCap     = 2000
	// readMaxBytes bounds the output of read_file, which ends a page early
	// rather than exceed it, so the executor never cuts a page.
	readMaxBytes = 32 << 10
	// maxLineBytes bounds one line of output; the rest of a longer line is
	// replaced by a marker.
	maxLineBytes = 2000
	// sniffLen is how much of a file is searched for a NUL byte to tell a
	// binary file.
	sniffLen = 8 << 10
)

const readDescription = `Read a text file in the workspace. The output starts with a header "path (lines a–b of N)" followed by those lines exactly as they are in the file. A long file is returned a page at a time: the last line then says how many lines remain and which offset_line to pass to read the next page. Binary files are refused.`

type readArgs struct {
	Path       string `json:"path" jsonschema:"the file to read, relative to the workspace root, such as \"src/main.go\""`
	OffsetLine int    `json:"offset_line,omitempty" jsonschema:"the first line to return, counting from 1 (default 1)"`
	MaxLines   int    `json:"max_lines,omitempty" jsonschema:"the most lines to return (default 400, at most 2000)"`
}

func (ws *Workspace) readFile(ctx context.Context, in readArgs) (string, error) {
	p, err := clean(in.Path)
	if err != nil {
		return "", err
	}
	offset, limit := in.OffsetLine, in.MaxLines
	switch {
	case offset < 0:
		return "", fmt.Errorf("%w: offset_line must be 1 or more, not %d", tool.ErrInvalidArgs, offset)
	case offset == 0:
		offset = 1
	}
	switch {
	case limit < 0:
		return "", fmt.Errorf("%w: max_lines must be 1 or more, not %d", tool.ErrInvalidArgs, limit)
	case limit == 0:
		limit = defaultMaxLines
	case limit > maxLinesCap:
		limit = maxLinesCap
	}

	f, err := ws.root.Open(osPath(p))
	if err != nil {
		return "", fail(in.Path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fail(in.Path, err)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%q is a directory, not a file; call list_files with path=%q to see what it holds", in.Path, p)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF {
		return "", fail(in.Path, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%q is a binary file (it contains NUL bytes), and read_file shows only text files", in.Path)
	}

	pg := page{first: offset, end: offset + limit, budget: readMaxBytes - 256 - 2*len(p)}
	for i := 0; ; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		frag, err := br.ReadSlice('\n')
		pg.add(frag)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			pg.eof()
			break
		}
		if err != nil {
			return "", fail(in.Path, err)
		}
	}

	total := pg.n
	if total == 0 {
		return p + " (empty file)", nil
	}
	if offset > total {
		return "", fmt.Errorf("%w: offset_line=%d is past the end of %q, which has %s; pass an offset_line from 1 to %d",
			tool.ErrInvalidArgs, offset, in.Path, words.Count(total, "line"), total)
	}
	var b strings.Builder
	b.Grow(pg.out.Len() + 128)
	fmt.Fprintf(&b, "%s (lines %d–%d of %d)\n", p, offset, pg.last, total)
	b.Write(pg.out.Bytes())
	if pg.last < total {
		fmt.Fprintf(&b, "… %s: call read_file with offset_line=%d",
			words.Count(total-pg.last, "more line"), pg.last+1)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// page collects the lines of a file that read_file shows, from fragments
// of at most one line each, and counts all the lines.
type page struct {
	first, end int // lines [first, end) are wanted
	budget     int // bytes of out
	full       bool

	out  bytes.Buffer
	n    int // lines begun
	last int // last line written to out

	open bool   // a line is begun and not ended
	line []byte // the start of line n, if it is wanted
	size int    // bytes of line n so far
}

func (pg *page) wanted() bool { return !pg.full && pg.first <= pg.n && pg.n < pg.end }

func (pg *page) add(frag []byte) {
	if len(frag) == 0 {
		return
	}
	if !pg.open {
		pg.n++
		pg.open = true
		pg.line, pg.size = pg.line[:0], 0
	}
	body, ended := bytes.CutSuffix(frag, []byte("\n"))
	if pg.wanted() && len(pg.line) <= maxLineBytes {
		// Keep one byte past the limit, to tell where a rune starts.
		pg.line = append(pg.line, body[:min(len(body), maxLineBytes+1-len(pg.line))]...)
	}
	pg.size += len(body)
	if ended {
		pg.endLine()
	}
}

func (pg *page) eof() {
	if pg.open {
		pg.endLine()
	}
}

func (pg *page) endLine() {
	pg.open = false
	if !pg.wanted() {
		return
	}
	text := pg.line
	var marker string
	if pg.size > maxLineBytes {
		cut := maxLineBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
		marker = fmt.Sprintf(" [… line cut: %s]", words.Count(pg.size-cut, "more byte"))
	}
	// The first line always fits, so a page is never empty.
	if pg.last >= pg.first && pg.out.Len()+len(text)+len(marker)+1 > pg.budget {
		pg.full = true
		return
	}
	pg.out.Write(text)
	pg.out.WriteString(marker)
	pg.out.WriteByte('\n')
	pg.last = pg.n
}
