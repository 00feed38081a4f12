package progress

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/ratchetloop/ratchet/internal/jsonvalid"
)

// Canonical returns raw JSON with insignificant space removed and object keys
// sorted (byte order of their escaped form), so that the same arguments
// written twice compare equal. Strings and numbers are kept as written.
// Invalid JSON is returned unchanged.
//
// It is a small recursive-descent pass rather than a decode into any and a
// re-encode, which would cost more than the rest of a loop step.
func Canonical(raw json.RawMessage) []byte {
	out := AppendCanonical(make([]byte, 0, len(raw)), raw)
	if string(out) == string(raw) {
		return raw
	}
	return out
}

// AppendCanonical appends the canonical form of raw (see Canonical) to dst.
func AppendCanonical(dst []byte, raw json.RawMessage) []byte {
	c := canon{in: raw}
	out, ok := c.value(dst, 0)
	if ok {
		c.space()
		ok = c.pos == len(c.in)
	}
	if !ok {
		return append(out[:len(dst)], raw...)
	}
	return out
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

type canon struct {
	in  []byte
	pos int
}

func (c *canon) space() { c.pos = jsonvalid.Space(c.in, c.pos) }

func (c *canon) value(out []byte, depth int) ([]byte, bool) {
	c.space()
	if c.pos >= len(c.in) || depth > maxDepth {
		return out, false
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(out, depth)
	case ch == '[':
		return c.array(out, depth)
	case ch == '"':
		return c.str(out)
	case ch == 't':
		return c.literal(out, "true")
	case ch == 'f':
		return c.literal(out, "false")
	case ch == 'n':
		return c.literal(out, "null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number(out)
	}
	return out, false
}

func (c *canon) literal(out []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		return out, false
	}
	c.pos += len(lit)
	return append(out, lit...), true
}

func (c *canon) number(out []byte) ([]byte, bool) {
	end := jsonvalid.Number(c.in, c.pos)
	if end == c.pos {
		return out, false
	}
	out = append(out, c.in[c.pos:end]...)
	c.pos = end
	return out, true
}

// str copies a string literal verbatim after checking it is well formed.
func (c *canon) str(out []byte) ([]byte, bool) {
	end := jsonvalid.String(c.in, c.pos)
	if end < 0 {
		return out, false
	}
	lit := c.in[c.pos:end]
	c.pos = end
	return append(out, lit...), true
}

func (c *canon) array(out []byte, depth int) ([]byte, bool) {
	c.pos++
	out = append(out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(out, ']'), true
	}
	for {
		var ok bool
		if out, ok = c.value(out, depth+1); !ok {
			return out, false
		}
		c.space()
		if c.pos >= len(c.in) {
			return out, false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			out = append(out, ',')
		case ']':
			c.pos++
			return append(out, ']'), true
		default:
			return out, false
		}
	}
}

// member locates one "key":value pair written to the output.
type member struct {
	key        []byte // the key literal, quotes included, in the input
	start, end int    // the pair's span in the output
}

// object writes the members as they come, then reorders them in place only
// if their keys were not already sorted, which model output often is.
func (c *canon) object(out []byte, depth int) ([]byte, bool) {
	c.pos++
	c.space()
	out = append(out, '{')
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(out, '}'), true
	}
	var buf [8]member
	members := buf[:0]
	sorted := true
	for {
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return out, false
		}
		start := len(out)
		keyStart := c.pos
		var ok bool
		if out, ok = c.str(out); !ok {
			return out, false
		}
		key := c.in[keyStart:c.pos]
		c.space()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return out, false
		}
		c.pos++
		out = append(out, ':')
		if out, ok = c.value(out, depth+1); !ok {
			return out, false
		}
		if n := len(members); n > 0 && bytes.Compare(members[n-1].key, key) > 0 {
			sorted = false
		}
		members = append(members, member{key: key, start: start, end: len(out)})
		c.space()
		if c.pos >= len(c.in) {
			return out, false
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return out, false
		}
		c.pos++
		out = append(out, ',')
	}
	if !sorted {
		first := members[0].start
		region := slices.Clone(out[first:])
		slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		out = out[:first]
		for i, m := range members {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, region[m.start-first:m.end-first]...)
		}
	}
	return append(out, '}'), true
}
