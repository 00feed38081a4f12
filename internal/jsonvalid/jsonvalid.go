// Package jsonvalid reports whether bytes are valid JSON exactly as
// encoding/json.Valid does, without its per-byte state machine: every tool
// call's arguments are checked several times on a step's path (the core's
// protocol checks, the tool's own), and json.Valid was a tenth of a step.
package jsonvalid

// maxDepth is encoding/json's limit on nesting; deeper input is invalid.
const maxDepth = 10000

// Valid reports whether s is one valid JSON value, with only whitespace
// around it. Like encoding/json.Valid, it does not check that strings are
// valid UTF-8.
func Valid(s []byte) bool {
	// open holds the containers the value at i is inside, innermost last.
	var openBuf [32]byte
	open := openBuf[:0]
	i := Space(s, 0)
	for {
		// A value starts at i.
		if i == len(s) {
			return false
		}
		switch c := s[i]; {
		case c == '{' || c == '[':
			if len(open) == maxDepth {
				return false
			}
			open = append(open, c)
			if i = Space(s, i+1); i < len(s) && s[i] == c+2 { // '}' or ']'
				open = open[:len(open)-1]
				i++
				break
			}
			if c == '{' {
				if i = member(s, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = String(s, i); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			end := Number(s, i)
			if end == i {
				return false
			}
			i = end
		default:
			end := literal(s, i)
			if end == i {
				return false
			}
			i = end
		}
		// A value ended at i: close containers until one goes on.
		for {
			i = Space(s, i)
			if len(open) == 0 {
				return i == len(s)
			}
			if i == len(s) {
				return false
			}
			top := open[len(open)-1]
			if s[i] == top+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if s[i] != ',' {
				return false
			}
			if i = Space(s, i+1); top == '{' {
				if i = member(s, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// member reads an object member's key and colon at s[i] and returns where
// its value starts, or -1.
func member(s []byte, i int) int {
	if i == len(s) || s[i] != '"' {
		return -1
	}
	if i = String(s, i); i < 0 {
		return -1
	}
	if i = Space(s, i); i == len(s) || s[i] != ':' {
		return -1
	}
	return Space(s, i+1)
}

// Space returns the index of the first byte at or after i that is not JSON
// whitespace.
func Space(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// String returns the end of the JSON string at s[i] (past its closing
// quote), or -1 if there is none.
func String(s []byte, i int) int {
	if i == len(s) || s[i] != '"' {
		return -1
	}
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i++; i == len(s) {
				return -1
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s) || !hex(s[i+1]) || !hex(s[i+2]) || !hex(s[i+3]) || !hex(s[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func hex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Number returns the end of the JSON number at s[i], or i if there is
// none.
func Number(s []byte, i int) int {
	digits := func(j int) int {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && s[j] >= '1' && s[j] <= '9':
		j = digits(j)
	default:
		return i
	}
	if j < len(s) && s[j] == '.' {
		k := digits(j + 1)
		if k == j+1 {
			return i
		}
		j = k
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		d := digits(k)
		if d == k {
			return i
		}
		j = d
	}
	return j
}

// literal returns the end of true, false or null at s[i], or i.
func literal(s []byte, i int) int {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s)-i >= len(lit) && string(s[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return i
}
