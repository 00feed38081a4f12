package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// flatSchema validates arguments against the commonest schema shape, the one
// Func derives from a struct of scalar fields: an object whose properties are
// each an integer, number, string or boolean (with optional minimum and
// maximum), some required, others possibly forbidden. For that shape a
// direct scan of the JSON gives the same verdict as the general validator
// without decoding into any, which costs several times more than the rest of
// a trivial call (FuzzFlatMatchesValidator holds the two to the same
// verdicts). Any other shape uses the general validator.
type flatSchema struct {
	props     []flatProp
	closed    bool // additionalProperties: false
	nRequired int
}

type flatProp struct {
	name     string
	typ      string // integer, number, string, boolean
	min, max *float64
	required bool
}

// flatKeys are the keywords a flat schema may use; anything else (formats,
// patterns, enums, nested types…) needs the general validator.
var (
	flatTopKeys  = []string{"type", "properties", "required", "additionalProperties", "description", "title"}
	flatPropKeys = []string{"type", "description", "title", "minimum", "maximum"}
	flatTypes    = []string{"integer", "number", "string", "boolean"}
)

// newFlatSchema returns the fast validator for raw, or nil when raw is not of
// the flat shape.
func newFlatSchema(raw json.RawMessage) *flatSchema {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	for k := range top {
		if !slices.Contains(flatTopKeys, k) {
			return nil
		}
	}
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil || typ != "object" {
		return nil
	}
	fs := &flatSchema{}
	if ap, ok := top["additionalProperties"]; ok {
		switch string(bytes.TrimSpace(ap)) {
		case "false":
			fs.closed = true
		case "true", "{}":
		default:
			return nil
		}
	}
	var props map[string]map[string]json.RawMessage
	if p, ok := top["properties"]; ok && json.Unmarshal(p, &props) != nil {
		return nil
	}
	var required []string
	if r, ok := top["required"]; ok && json.Unmarshal(r, &required) != nil {
		return nil
	}
	for name, p := range props {
		fp := flatProp{name: name, required: slices.Contains(required, name)}
		for k, v := range p {
			switch k {
			case "type":
				if json.Unmarshal(v, &fp.typ) != nil || !slices.Contains(flatTypes, fp.typ) {
					return nil
				}
			case "minimum", "maximum":
				var f float64
				if json.Unmarshal(v, &f) != nil {
					return nil
				}
				if k == "minimum" {
					fp.min = &f
				} else {
					fp.max = &f
				}
			default:
				if !slices.Contains(flatPropKeys, k) {
					return nil
				}
			}
		}
		if fp.typ == "" || ((fp.min != nil || fp.max != nil) && fp.typ != "integer" && fp.typ != "number") {
			return nil
		}
		fs.props = append(fs.props, fp)
	}
	for _, r := range required {
		if props[r] == nil {
			return nil // a required property without a schema: leave it to the validator
		}
	}
	slices.SortFunc(fs.props, func(a, b flatProp) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	for _, p := range fs.props {
		if p.required {
			fs.nRequired++
		}
	}
	return fs
}

// validate checks args, which must already be valid JSON, returning a
// message for the model or "".
func (fs *flatSchema) validate(args json.RawMessage) string {
	s := scanner{in: args}
	s.space()
	if !s.eat('{') {
		return "arguments must be a JSON object"
	}
	// The last occurrence of a key wins, as when decoding into a map, so
	// problems are recorded per property and judged at the end.
	var seenBuf [8]bool
	var probBuf [8]string
	var seen []bool
	var probs []string
	if len(fs.props) <= len(seenBuf) {
		seen, probs = seenBuf[:len(fs.props)], probBuf[:len(fs.props)]
	} else {
		seen, probs = make([]bool, len(fs.props)), make([]string, len(fs.props))
	}
	s.space()
	if !s.eat('}') {
		for {
			s.space()
			key := s.key()
			s.space()
			s.eat(':')
			s.space()
			start := s.pos
			s.skipValue()
			val := args[start:s.pos]
			i, found := slices.BinarySearchFunc(fs.props, key, func(p flatProp, k string) int {
				switch {
				case p.name < k:
					return -1
				case p.name > k:
					return 1
				}
				return 0
			})
			switch {
			case found:
				seen[i] = true
				probs[i] = fs.props[i].check(val)
			case fs.closed:
				return fmt.Sprintf("unexpected property %q", key)
			}
			s.space()
			if s.eat('}') {
				break
			}
			s.eat(',')
		}
	}
	for i, p := range fs.props {
		switch {
		case probs[i] != "":
			return fmt.Sprintf("property %q: %s", p.name, probs[i])
		case p.required && !seen[i]:
			return fmt.Sprintf("missing required property %q", p.name)
		}
	}
	return ""
}

// check judges one value against the property's type and bounds.
func (p flatProp) check(val []byte) string {
	got := jsonKind(val)
	switch p.typ {
	case "string", "boolean":
		if got != p.typ {
			return fmt.Sprintf("want %s, got %s", p.typ, got)
		}
		return ""
	}
	if got != "number" {
		return fmt.Sprintf("want %s, got %s", p.typ, got)
	}
	f, ok := smallInt(val)
	if !ok {
		var err error
		if f, err = strconv.ParseFloat(string(val), 64); err != nil {
			return fmt.Sprintf("number %s is out of range", val)
		}
	}
	if _, frac := math.Modf(f); p.typ == "integer" && frac != 0 {
		return fmt.Sprintf("want integer, got %s", val)
	}
	if p.min != nil && f < *p.min {
		return fmt.Sprintf("%s is less than the minimum %v", val, *p.min)
	}
	if p.max != nil && f > *p.max {
		return fmt.Sprintf("%s is more than the maximum %v", val, *p.max)
	}
	return ""
}

func jsonKind(val []byte) string {
	switch val[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "number"
}

// scanner walks JSON already known to be valid.
type scanner struct {
	in  []byte
	pos int
}

func (s *scanner) space() {
	for s.pos < len(s.in) && (s.in[s.pos] == ' ' || s.in[s.pos] == '\t' || s.in[s.pos] == '\n' || s.in[s.pos] == '\r') {
		s.pos++
	}
}

func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.in) && s.in[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// key reads a string and returns its decoded value.
func (s *scanner) key() string {
	start := s.pos
	s.skipString()
	lit := s.in[start:s.pos]
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var k string
	_ = json.Unmarshal(lit, &k)
	return k
}

func (s *scanner) skipString() {
	s.pos++ // opening quote
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case '\\':
			s.pos += 2
		case '"':
			s.pos++
			return
		default:
			s.pos++
		}
	}
}

func (s *scanner) skipValue() {
	if s.pos >= len(s.in) {
		return
	}
	switch s.in[s.pos] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for s.pos < len(s.in) {
			switch s.in[s.pos] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return
				}
			}
			s.pos++
		}
	default: // number, true, false, null
		for s.pos < len(s.in) {
			switch s.in[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			s.pos++
		}
	}
}

// smallInt reads a JSON number that is a plain integer of at most 15
// digits, exactly representable as a float64. Most arguments are; reading
// them so skips ParseFloat, whose large frame would grow a run's stack.
func smallInt(val []byte) (float64, bool) {
	digits := val
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(val) {
		n = -n
	}
	return float64(n), true
}
