package patch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzHunks: for any two texts (the agent writes them), the hunks made
// turn the first into the second when applied strictly, by a reader that
// checks every context and removed line.
func FuzzHunks(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("", "x")
	f.Add("x", "")
	f.Add("no newline", "no newline\n")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "0\n1\n2\n3\n4\n6\n7\n8\n9\n10\n11")
	f.Fuzz(func(t *testing.T, a, b string) {
		var w strings.Builder
		hunks(&w, lines([]byte(a)), lines([]byte(b)))
		got, err := applyHunks(a, w.String())
		if err != nil {
			t.Fatalf("%v\n--- diff:\n%s", err, w.String())
		}
		if got != b {
			t.Fatalf("applied %q, want %q\n--- diff:\n%s", got, b, w.String())
		}
	})
}

// applyHunks applies unified hunks to text, refusing any mismatch.
func applyHunks(text, diff string) (string, error) {
	src := lines([]byte(text))
	var out []string
	at := 0 // next line of src not yet copied
	dl := lines([]byte(diff))
	for i := 0; i < len(dl); {
		var oldStart, oldLen, newStart, newLen int
		if err := parseHeader(dl[i], &oldStart, &oldLen, &newStart, &newLen); err != nil {
			return "", err
		}
		i++
		from := oldStart - 1
		if oldLen == 0 {
			from = oldStart
		}
		if from < at || from > len(src) {
			return "", fmt.Errorf("hunk at %d out of order", oldStart)
		}
		out = append(out, src[at:from]...)
		at = from
		for i < len(dl) && !strings.HasPrefix(dl[i], "@@") {
			l := dl[i]
			i++
			if i < len(dl) && dl[i] == "\\ No newline at end of file\n" {
				l = strings.TrimSuffix(l, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if at >= len(src) || src[at] != l[1:] {
					return "", fmt.Errorf("line %d is not %q", at+1, l[1:])
				}
				at++
				if l[0] == ' ' {
					out = append(out, l[1:])
				}
			case '+':
				out = append(out, l[1:])
			default:
				return "", fmt.Errorf("bad line %q", l)
			}
		}
	}
	out = append(out, src[at:]...)
	return strings.Join(out, ""), nil
}

func parseHeader(l string, os, ol, ns, nl *int) error {
	var a, b string
	if _, err := scan(l, &a, &b); err != nil {
		return err
	}
	if err := parseRange(a, os, ol); err != nil {
		return err
	}
	return parseRange(b, ns, nl)
}

func scan(l string, a, b *string) (int, error) {
	f := strings.Fields(l)
	if len(f) != 4 || f[0] != "@@" || f[3] != "@@" || f[1][0] != '-' || f[2][0] != '+' {
		return 0, fmt.Errorf("bad hunk header %q", l)
	}
	*a, *b = f[1][1:], f[2][1:]
	return 2, nil
}

func parseRange(r string, start, n *int) error {
	s, l, ok := strings.Cut(r, ",")
	var err error
	if *start, err = strconv.Atoi(s); err != nil {
		return err
	}
	*n = 1
	if ok {
		*n, err = strconv.Atoi(l)
	}
	return err
}

// FuzzQuote: every path the agent can name comes out of quote as one
// token a C-style unquote turns back into the same bytes, and never with a
// newline in it.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"a/b", "a b", "a\nb", `a"b\c`, "é", "\x00\x7f\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		q := quote(p)
		if strings.ContainsAny(q, "\n\r") {
			t.Fatalf("quote(%q) = %q holds a line break", p, q)
		}
		if q == p {
			if strings.ContainsAny(p, " \t\"\\") {
				t.Fatalf("quote(%q) left it bare", p)
			}
			return
		}
		back, err := strconv.Unquote(q)
		if err != nil || back != p {
			t.Fatalf("Unquote(quote(%q)) = %q, %v", p, back, err)
		}
	})
}

// FuzzParseNumstat: git's numstat output names paths the agent chose;
// whatever it holds, reading it never panics, and every binary file is
// among the files.
func FuzzParseNumstat(f *testing.F) {
	f.Add([]byte("1\t0\ta\x00-\t-\tbin\x00"))
	f.Add([]byte("\t\t\x00x"))
	f.Fuzz(func(t *testing.T, out []byte) {
		files, binary := parseNumstat(out)
		for _, b := range binary {
			if !slices.Contains(files, b) {
				t.Fatalf("binary %q is not among the files %q", b, files)
			}
		}
	})
}
