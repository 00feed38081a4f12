// Package yamlerr locates go.yaml.in/yaml/v3 syntax errors: the line, made
// 1-based and within the file, and the message without its prefix.
package yamlerr

import (
	"strconv"
	"strings"
)

// Locate returns the 1-based line and the message of a YAML syntax error.
// yaml.v3 writes "yaml: line N: msg", but N is 1-based only for scanner
// errors: for parser errors ("did not find expected …" and the directive
// errors) it is 0-based, and an error on the first line has no "line N" at
// all. An error at the end of the stream is put on the file's last line
// rather than the one after it. An error with no place in the file (an
// unknown anchor) gets line 0.
func Locate(err error, data []byte) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, text, ok := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); ok && err == nil {
			if isParserError(text) {
				n++
			}
			n = min(n, Lines(data))
			if text == "mapping values are not allowed in this context" {
				// "model: anthropic:" and the like: a second colon on the line.
				text += " (a value with \": \" in it, or ending in \":\", needs quotes, e.g. model: \"anthropic:claude-sonnet-4-5\")"
			}
			return n, text
		}
	}
	if strings.HasPrefix(msg, "unknown anchor") {
		return 0, msg
	}
	return 1, msg
}

// Lines returns how many lines data has, at least 1, counting line
// breaks as yaml.v3 does: \r\n, \r, \n, NEL, LS and PS.
func Lines(data []byte) int {
	isBreak := func(r rune) bool { return strings.ContainsRune("\n\r\u0085\u2028\u2029", r) }
	n, last := 0, rune(0)
	for _, r := range strings.ReplaceAll(string(data), "\r\n", "\n") {
		if isBreak(r) {
			n++
		}
		last = r
	}
	if !isBreak(last) {
		n++ // a last line with no break after it
	}
	return n
}

// isParserError reports whether msg is one of yaml.v3's parser (as opposed
// to scanner) problems, whose line yaml.v3 reports 0-based.
func isParserError(msg string) bool {
	for _, prefix := range []string{"did not find expected", "found undefined tag handle", "found duplicate %", "found incompatible YAML document"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
