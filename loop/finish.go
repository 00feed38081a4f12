package loop

import (
	"strconv"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/jsonvalid"
)

// scanFinish reads finish arguments of the usual form, an object of
// exactly "answer", a string without escapes, and "confidence", a number,
// without encoding/json: its reflective decoding needs more stack than a
// run's goroutine otherwise uses, and would double every run's stack at
// its last step. It declines anything else, for decodeFinish; what it
// accepts, decodeFinish reads the same (FuzzScanFinish).
func scanFinish(s []byte) (answer string, confidence float64, ok bool) {
	i := jsonvalid.Space(s, 0)
	if i == len(s) || s[i] != '{' {
		return "", 0, false
	}
	i++
	var haveAnswer, haveConfidence bool
	for n := range 2 {
		if n > 0 {
			if i = jsonvalid.Space(s, i); i == len(s) || s[i] != ',' {
				return "", 0, false
			}
			i++
		}
		start, end := plainString(s, jsonvalid.Space(s, i))
		if end < 0 {
			return "", 0, false
		}
		key := s[start:end]
		if i = jsonvalid.Space(s, end+1); i == len(s) || s[i] != ':' {
			return "", 0, false
		}
		i = jsonvalid.Space(s, i+1)
		switch {
		case string(key) == "answer" && !haveAnswer:
			start, end := plainString(s, i)
			if end < 0 {
				return "", 0, false
			}
			answer, haveAnswer, i = string(s[start:end]), true, end+1
		case string(key) == "confidence" && !haveConfidence:
			end := jsonvalid.Number(s, i)
			if end == i {
				return "", 0, false
			}
			c, err := strconv.ParseFloat(string(s[i:end]), 64)
			if err != nil {
				return "", 0, false
			}
			confidence, haveConfidence, i = c, true, end
		default:
			return "", 0, false
		}
	}
	if i = jsonvalid.Space(s, i); i == len(s) || s[i] != '}' || jsonvalid.Space(s, i+1) != len(s) {
		return "", 0, false
	}
	return answer, confidence, true
}

// plainString returns the bounds of the contents of the JSON string at
// s[i], and of its closing quote; end is -1 unless the string is valid
// UTF-8 without escapes or control characters, so that its bytes are its
// value.
func plainString(s []byte, i int) (start, end int) {
	if i == len(s) || s[i] != '"' {
		return 0, -1
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			if !utf8.Valid(s[i+1 : j]) {
				return 0, -1
			}
			return i + 1, j
		case c == '\\' || c < 0x20:
			return 0, -1
		}
	}
	return 0, -1
}
