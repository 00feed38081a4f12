package yamlerr

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestLocate holds the line fix-ups to real yaml.v3 errors.
func TestLocate(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		line int
	}{
		{"a: [1\n", 1},                  // unclosed: at the end, not past it
		{"a: 1\nb: c: d\n", 2},          // scanner error: already 1-based
		{"a:\n  - 1\n - 2\n", 3},        // parser error: 0-based in yaml.v3
		{"x: *nope\n", 0},               // no place in the file
		{"key: value\n\tbad: tab\n", 2}, // a tab in indentation
	} {
		var v any
		err := yaml.Unmarshal([]byte(tc.doc), &v)
		if err == nil {
			t.Fatalf("%q parsed", tc.doc)
		}
		if line, msg := Locate(err, []byte(tc.doc)); line != tc.line || msg == "" {
			t.Errorf("Locate(%q) = %d, %q; want line %d", tc.doc, line, msg, tc.line)
		}
	}
	// A second colon on a line says what to do about it.
	var v any
	doc := "goal: g\nmodel: anthropic:\n"
	if _, msg := Locate(yaml.Unmarshal([]byte(doc), &v), []byte(doc)); !strings.Contains(msg, `needs quotes, e.g. model: "anthropic:claude-sonnet-4-5"`) {
		t.Errorf("a second colon: %q", msg)
	}
	if n := Lines([]byte("a\r\nb\rc")); n != 3 {
		t.Errorf("Lines = %d, want 3", n)
	}
}
