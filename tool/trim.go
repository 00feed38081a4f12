package tool

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/words"
)

// Trim shortens s to at most maxBytes bytes and maxLines lines by keeping
// its head and tail, about half each, and putting a marker between them
// that says what was cut, such as
//
//	[… 1234 bytes, 56 lines elided …]
//
// The head and tail carry most of the signal in tool output: what a command
// started doing and how it ended (the error, the summary, the exit status).
//
// A limit of zero or less means no limit on that axis. s is returned
// unchanged if it is within both limits. Otherwise the result is at most
// maxBytes plus the marker's length; the marker sits on a line of its own.
// Cuts fall at line boundaries when that keeps at least half of each part's
// budget, and never inside a UTF-8 encoded rune, so valid UTF-8 stays valid.
// A line is a run of bytes ended by '\n' or by the end of s.
func Trim(s string, maxBytes, maxLines int) string {
	return TrimHint(s, maxBytes, maxLines, "")
}

// DefaultMoreHint is the elision hint of a tool that sets no MoreHint: the
// executor keeps no more of the output than it shows.
const DefaultMoreHint = "they are not kept: to see them, call the tool again asking for less (a narrower path, query, filter or range)"

// TrimHint is [Trim] with a marker that also says which lines of the output
// were cut and, when hint is not empty, how to see them, such as
//
//	[… 1234 bytes, 56 lines elided (lines 31–86 of 120); call read_file with offset_line=31 …]
//
// hint may contain {first} and {last}, replaced by the first and last
// elided line numbers (counting from 1), so that it can name an offset.
func TrimHint(s string, maxBytes, maxLines int, hint string) string {
	if maxBytes <= 0 {
		maxBytes = len(s)
	}
	// A line holds at least one byte, so a short s cannot have many lines;
	// this keeps the common case to a length check.
	if maxLines <= 0 || maxLines >= len(s) {
		maxLines = len(s)
	}
	if len(s) <= maxBytes && (maxLines == len(s) || countLines(s) <= maxLines) {
		return s
	}
	headBytes := maxBytes - maxBytes/2
	headLines := maxLines - maxLines/2
	end := cutHead(s, headBytes, headLines)
	start := max(end, cutTail(s, maxBytes/2, maxLines/2))

	head, mid, tail := s[:end], s[end:start], s[start:]
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 64)
	b.WriteString(head)
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("[… ")
	b.WriteString(words.Count(len(mid), "byte"))
	n := strings.Count(mid, "\n")
	if n > 0 {
		b.WriteString(", ")
		b.WriteString(words.Count(n, "line"))
	}
	b.WriteString(" elided")
	if hint != "" {
		// Lines are counted as Trim counts them; a cut inside a line
		// elides part of that line, which the range includes.
		first := strings.Count(head, "\n") + 1
		last := first + max(n-1, 0)
		if n > 0 && !strings.HasSuffix(mid, "\n") {
			last++
		}
		total := countLines(s)
		if n > 0 {
			fmt.Fprintf(&b, " (lines %d–%d of %d)", first, last, total)
		} else {
			fmt.Fprintf(&b, " (within line %d of %d)", first, total)
		}
		r := strings.NewReplacer("{first}", strconv.Itoa(first), "{last}", strconv.Itoa(last))
		b.WriteString("; ")
		b.WriteString(r.Replace(hint))
	}
	b.WriteString(" …]")
	if tail != "" {
		b.WriteByte('\n')
		b.WriteString(tail)
	}
	return b.String()
}

// countLines counts lines as Trim defines them.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// cutHead returns the end of the longest head of s within maxBytes bytes and
// maxLines lines.
func cutHead(s string, maxBytes, maxLines int) int {
	end := 0
	for range maxLines {
		i := strings.IndexByte(s[end:], '\n')
		if i < 0 {
			end = len(s)
			break
		}
		end += i + 1
	}
	if end <= maxBytes {
		return end
	}
	end = maxBytes
	if i := strings.LastIndexByte(s[:end], '\n'); i >= 0 && i+1 >= maxBytes/2 {
		return i + 1
	}
	// Back up to the start of the rune; a valid rune has at most
	// utf8.UTFMax-1 continuation bytes, and invalid input needs no care.
	for k := 1; k < utf8.UTFMax && end > 0 && !utf8.RuneStart(s[end]); k++ {
		end--
	}
	return end
}

// cutTail returns the start of the longest tail of s within maxBytes bytes
// and maxLines lines.
func cutTail(s string, maxBytes, maxLines int) int {
	start := len(s)
	if maxLines > 0 {
		// The last line ends at the final '\n', if any; skip it so that it
		// is not counted as an empty line after it.
		i := len(s)
		if strings.HasSuffix(s, "\n") {
			i--
		}
		for range maxLines {
			i = strings.LastIndexByte(s[:i], '\n')
			if i < 0 {
				break
			}
		}
		start = i + 1
	}
	if len(s)-start <= maxBytes {
		return start
	}
	start = len(s) - maxBytes
	if i := strings.IndexByte(s[start:], '\n'); i >= 0 && maxBytes-(i+1) >= maxBytes/2 {
		return start + i + 1
	}
	for k := 1; k < utf8.UTFMax && start < len(s) && !utf8.RuneStart(s[start]); k++ {
		start++
	}
	return start
}

// OutputCaps bounds the output of one tool shown to the model; a zero field
// leaves that bound as it is.
type OutputCaps struct {
	MaxBytes int `json:"max_bytes,omitempty"`
	MaxLines int `json:"max_lines,omitempty"`
}
