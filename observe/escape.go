package observe

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Escape returns s fit to print on a terminal: every control character
// but newline and tab (C0, DEL and C1, so also the ESC that starts every
// terminal escape sequence) is written as a visible escape such as \x1b or
// \u009b, and each byte that is not UTF-8 as \xNN. Text that a model, a
// tool or an MCP server wrote then cannot move the cursor, rewrite a line,
// retitle the window or ring the bell.
func Escape(s string) string {
	i := 0
	for i < len(s) && plain(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// plain reports whether c is printable ASCII, a newline or a tab.
func plain(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' }

// escapeArgs escapes the strings among args, of any string type.
func escapeArgs(args []any) []any {
	for i, a := range args {
		if v := reflect.ValueOf(a); v.Kind() == reflect.String {
			args[i] = Escape(v.String())
		}
	}
	return args
}
