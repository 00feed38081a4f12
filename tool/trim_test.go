package tool_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/tool"
)

// numbered returns n lines "1\n" … "n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestTrim(t *testing.T) {
	tests := []struct {
		name               string
		in                 string
		maxBytes, maxLines int
		want               string
	}{
		{"empty", "", 1, 1, ""},
		{"no limits", numbered(1000), 0, 0, numbered(1000)},
		{"negative limits", "abc\ndef", -1, -5, "abc\ndef"},
		{"exactly at limits", "ab\ncd\n", 6, 2, "ab\ncd\n"},
		{"unterminated last line counts", "ab\ncd", 5, 2, "ab\ncd"},
		{
			name: "lines, even",
			in:   numbered(10), maxLines: 4,
			want: "1\n2\n[… 12 bytes, 6 lines elided …]\n9\n10\n",
		},
		{
			name: "lines, odd keeps the extra line at the head",
			in:   numbered(10), maxLines: 3,
			want: "1\n2\n[… 14 bytes, 7 lines elided …]\n10\n",
		},
		{
			name: "one line keeps only the head",
			in:   numbered(3), maxLines: 1,
			want: "1\n[… 4 bytes, 2 lines elided …]",
		},
		{
			name: "lines, unterminated last line",
			in:   "a\nb\nc\nd", maxLines: 2,
			want: "a\n[… 4 bytes, 2 lines elided …]\nd",
		},
		{
			name: "bytes, one long line cut mid-line",
			in:   strings.Repeat("x", 100), maxBytes: 10,
			want: "xxxxx\n[… 90 bytes elided …]\nxxxxx",
		},
		{
			name: "bytes, cut at line boundaries",
			in:   "aaaa\nbbbb\ncccc\ndddd\n", maxBytes: 12,
			want: "aaaa\n[… 10 bytes, 2 lines elided …]\ndddd\n",
		},
		{
			name: "bytes, a line boundary too far back is ignored",
			in:   "a\n" + strings.Repeat("x", 50) + "\nb", maxBytes: 20,
			want: "a\nxxxxxxxx\n[… 34 bytes elided …]\nxxxxxxxx\nb",
		},
		{
			name: "bytes, never split a rune",
			in:   strings.Repeat("é", 10), maxBytes: 7, // é is 2 bytes
			want: "éé\n[… 14 bytes elided …]\né",
		},
		{
			name: "bytes, 4-byte runes",
			in:   strings.Repeat("😀", 5), maxBytes: 9,
			want: "😀\n[… 12 bytes elided …]\n😀",
		},
		{
			name: "both limits, bytes bind",
			in:   numbered(20), maxBytes: 8, maxLines: 100,
			want: "1\n2\n[… 44 bytes, 17 lines elided …]\n20\n",
		},
		{
			name: "both limits, lines bind",
			in:   numbered(20), maxBytes: 1000, maxLines: 2,
			want: "1\n[… 46 bytes, 18 lines elided …]\n20\n",
		},
		{
			name: "one byte",
			in:   "ab", maxBytes: 1,
			want: "a\n[… 1 byte elided …]",
		},
		{
			name: "singular line",
			in:   "a\nb\nc\n", maxLines: 2,
			want: "a\n[… 2 bytes, 1 line elided …]\nc\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tool.Trim(tt.in, tt.maxBytes, tt.maxLines)
			if got != tt.want {
				t.Errorf("Trim(%q, %d, %d) =\n%q\nwant\n%q", tt.in, tt.maxBytes, tt.maxLines, got, tt.want)
			}
			checkTrim(t, tt.in, tt.maxBytes, tt.maxLines, got)
		})
	}
}

var markerRE = regexp.MustCompile(`\[… (\d+) bytes?(?:, (\d+) lines?)? elided …\]`)

// checkTrim checks the invariants of out = Trim(in, maxBytes, maxLines).
func checkTrim(t *testing.T, in string, maxBytes, maxLines int, out string) {
	t.Helper()
	if utf8.ValidString(in) && !utf8.ValidString(out) {
		t.Fatalf("Trim(%q, %d, %d) = %q: valid UTF-8 in, invalid out", in, maxBytes, maxLines, out)
	}
	within := (maxBytes <= 0 || len(in) <= maxBytes) && (maxLines <= 0 || countLines(in) <= maxLines)
	if within {
		if out != in {
			t.Fatalf("Trim(%q, %d, %d) = %q, want the input unchanged", in, maxBytes, maxLines, out)
		}
		return
	}
	// The input may itself contain marker text, so accept the output if any
	// marker in it splits it into a head and tail that fit.
	for _, m := range markerRE.FindAllStringSubmatchIndex(out, -1) {
		elided, _ := strconv.Atoi(out[m[2]:m[3]])
		for _, head := range []string{out[:m[0]], strings.TrimSuffix(out[:m[0]], "\n")} {
			for _, tail := range []string{out[m[1]:], strings.TrimPrefix(out[m[1]:], "\n")} {
				if !strings.HasPrefix(in, head) || !strings.HasSuffix(in, tail) ||
					len(head)+elided+len(tail) != len(in) {
					continue
				}
				if maxBytes > 0 && len(head)+len(tail) > maxBytes {
					t.Fatalf("Trim(%q, %d, %d) = %q: kept %d bytes, more than the limit", in, maxBytes, maxLines, out, len(head)+len(tail))
				}
				if maxLines > 0 && countLines(head)+countLines(tail) > maxLines {
					t.Fatalf("Trim(%q, %d, %d) = %q: kept %d lines, more than the limit", in, maxBytes, maxLines, out, countLines(head)+countLines(tail))
				}
				if elided == 0 {
					t.Fatalf("Trim(%q, %d, %d) = %q: marker but nothing elided", in, maxBytes, maxLines, out)
				}
				if m[4] >= 0 {
					lines, _ := strconv.Atoi(out[m[4]:m[5]])
					if mid := in[len(head) : len(in)-len(tail)]; strings.Count(mid, "\n") != lines {
						t.Fatalf("Trim(%q, %d, %d) = %q: marker claims %d lines elided, elided text %q", in, maxBytes, maxLines, out, lines, mid)
					}
				}
				return
			}
		}
	}
	t.Fatalf("Trim(%q, %d, %d) = %q: no marker splits it into a head of the input and a tail of it", in, maxBytes, maxLines, out)
}

func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func FuzzTrim(f *testing.F) {
	f.Add(numbered(50), 40, 7)
	f.Add(strings.Repeat("é😀x\n", 30), 17, 0)
	f.Add("a\n\n\nb", 0, 2)
	f.Add("\xff\xfe\x80\x80", 1, 1)
	f.Add("[… 3 bytes elided …]\nabc", 5, 0)
	f.Fuzz(func(t *testing.T, in string, maxBytes, maxLines int) {
		// Keep the limits in the interesting range: around the input's size.
		maxBytes %= len(in) + 8
		maxLines %= countLines(in) + 4
		checkTrim(t, in, maxBytes, maxLines, tool.Trim(in, maxBytes, maxLines))
	})
}

func TestTrimHint(t *testing.T) {
	tests := []struct {
		name               string
		in                 string
		maxBytes, maxLines int
		hint               string
		want               string
	}{
		{"within limits: unchanged", "a\nb\n", 10, 10, "h", "a\nb\n"},
		{"no hint is Trim", numbered(10), 0, 4, "", tool.Trim(numbered(10), 0, 4)},
		{
			name: "names the elided lines", in: numbered(10), maxLines: 4, hint: "read from line {first} to {last}",
			want: "1\n2\n[… 12 bytes, 6 lines elided (lines 3–8 of 10); read from line 3 to 8 …]\n9\n10\n",
		},
		{
			name: "a cut inside a line", in: strings.Repeat("x", 100), maxBytes: 10, hint: "h",
			want: "xxxxx\n[… 90 bytes elided (within line 1 of 1); h …]\nxxxxx",
		},
	}
	for _, tt := range tests {
		if got := tool.TrimHint(tt.in, tt.maxBytes, tt.maxLines, tt.hint); got != tt.want {
			t.Errorf("%s: TrimHint =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

// TestTrimHintRange: whatever the cut, the marker's line range names
// exactly the lines not shown in full.
func TestTrimHintRange(t *testing.T) {
	re := regexp.MustCompile(`\(lines (\d+)–(\d+) of (\d+)\)`)
	in := numbered(300)
	for lines := 1; lines < 40; lines += 3 {
		for bytes := 8; bytes < 200; bytes += 17 {
			out := tool.TrimHint(in, bytes, lines, "x")
			m := re.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("%d/%d: no range in %q", bytes, lines, out)
			}
			first, _ := strconv.Atoi(m[1])
			last, _ := strconv.Atoi(m[2])
			head, tail, _ := strings.Cut(out, "[…")
			_, tail, _ = strings.Cut(tail, "…]")
			// Lines shown in full: a line cut at the marker is elided in part
			// and belongs to the range.
			headLines := strings.Split(strings.TrimSuffix(head, "\n"), "\n")
			wantFirst := len(headLines) + 1
			if head == "" {
				wantFirst = 1
			} else if headLines[len(headLines)-1] != strconv.Itoa(len(headLines)) {
				wantFirst-- // the last head line is partial
			}
			tailLines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(tail, "\n"), "\n"), "\n")
			wantLast := 300 - len(tailLines)
			if tail == "" {
				wantLast = 300
			} else if tailLines[0] != strconv.Itoa(300-len(tailLines)+1) {
				wantLast++ // the first tail line is partial
			}
			if first != wantFirst || last != wantLast {
				t.Errorf("%d/%d: range %d–%d, want %d–%d:\n%s", bytes, lines, first, last, wantFirst, wantLast, out)
			}
		}
	}
}
