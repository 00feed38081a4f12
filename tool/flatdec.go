package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// flatDecoder decodes arguments into the commonest In of [Func]: a struct
// of string, bool, integer and float fields. encoding/json's reflection costs
// several allocations and a deep stack per call; a direct scan costs neither.
// It is a strict recognizer: it decodes only input on which it is sure to give
// json.Unmarshal's result (FuzzFlatDecodeMatchesJSON holds it to that), and
// reports anything else unhandled, for json.Unmarshal to decode afresh.
type flatDecoder struct {
	fields []flatField
}

// flatField is one exported field of the struct a flatDecoder decodes.
type flatField struct {
	name string       // JSON name
	off  uintptr      // offset in the struct
	kind reflect.Kind // a kind flatKind accepts; named types write as it
	bits int          // size in bits of numeric kinds
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// newFlatDecoder returns a decoder for values of type t, or nil if t is not
// a struct of flat fields whose decoding the decoder can be sure of.
func newFlatDecoder(t reflect.Type) *flatDecoder {
	if t.Kind() != reflect.Struct || decodesItself(t) {
		return nil
	}
	d := &flatDecoder{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // promotes fields by std's embedding rules
		}
		if !f.IsExported() {
			continue // std ignores them too
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for opt := range strings.SplitSeq(opts, ",") {
			// Not only ",string": other options may change decoding in
			// a future encoding/json (v2 has inline, format…).
			if opt != "" && opt != "omitempty" && opt != "omitzero" {
				return nil
			}
		}
		if name == "" {
			name = f.Name
		}
		if !plainName(name) || !flatKind(f.Type.Kind()) || decodesItself(f.Type) {
			return nil
		}
		for _, g := range d.fields {
			if g.name == name {
				return nil // std keeps one or neither by its dominance rules
			}
		}
		ff := flatField{name: name, off: f.Offset, kind: f.Type.Kind()}
		if ff.kind != reflect.String && ff.kind != reflect.Bool {
			ff.bits = f.Type.Bits()
		}
		d.fields = append(d.fields, ff)
	}
	return d
}

// decodesItself reports whether encoding/json would call a method of t or *t
// to decode it.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) ||
		p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType)
}

func flatKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// plainName reports whether name is non-empty and made of [A-Za-z0-9_-],
// so that keys need no unescaping or Unicode folding to be compared with it.
func plainName(name string) bool {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return name != ""
}

// decode decodes data into the struct at p, of the type d was built for, and
// reports whether it did. If it did not, it may have written some fields.
//
// Writing through p is sound: each field's offset comes from reflect for
// that exact struct type, and each write is of the field's kind, which for a
// named type (type Celsius float64) has its underlying type's layout. p only
// receives writes and does not escape, so the caller's value can stay on the
// stack.
func (d *flatDecoder) decode(data []byte, p unsafe.Pointer) bool {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		key, end, ok := plainString(data, i)
		if !ok {
			return false
		}
		for _, c := range key {
			if c >= utf8.RuneSelf {
				return false // std folds some of these to ASCII (K, ſ)
			}
		}
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		if i == len(data) {
			return false
		}
		f := d.field(key)
		if f == nil && d.folds(key) {
			return false
		}
		c := data[i]
		switch {
		case c == '"':
			s, end, ok := plainString(data, i)
			if !ok || f != nil && f.kind != reflect.String {
				return false
			}
			if f != nil {
				*(*string)(unsafe.Add(p, f.off)) = string(s)
			}
			i = end
		case c == 't' || c == 'f' || c == 'n':
			lit := literal(data[i:])
			if lit == "" {
				return false
			}
			if f != nil && lit != "null" { // null leaves a non-pointer as it is
				if f.kind != reflect.Bool {
					return false
				}
				*(*bool)(unsafe.Add(p, f.off)) = lit == "true"
			}
			i += len(lit)
		case c == '-' || '0' <= c && c <= '9':
			end, integer := numberEnd(data, i)
			if end < 0 || f != nil && !f.setNumber(p, data[i:end], integer) {
				return false
			}
			i = end
		default:
			return false // objects, arrays, invalid
		}
		i = skipSpace(data, i)
		if i == len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// field returns the field named key exactly, nil if none is.
func (d *flatDecoder) field(key []byte) *flatField {
	for i := range d.fields {
		if string(key) == d.fields[i].name {
			return &d.fields[i]
		}
	}
	return nil
}

// folds reports whether key might name a field by std's case-insensitive
// matching. Ignoring '_' and '-' as well as ASCII case covers both v1's
// folding and v2's looser legacy modes.
func (d *flatDecoder) folds(key []byte) bool {
	for _, f := range d.fields {
		if looseEqual(key, f.name) {
			return true
		}
	}
	return false
}

func looseEqual(key []byte, name string) bool {
	i, j := 0, 0
	for {
		for i < len(key) && (key[i] == '_' || key[i] == '-') {
			i++
		}
		for j < len(name) && (name[j] == '_' || name[j] == '-') {
			j++
		}
		if i == len(key) || j == len(name) {
			return i == len(key) && j == len(name)
		}
		if lower(key[i]) != lower(name[j]) {
			return false
		}
		i, j = i+1, j+1
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// setNumber writes the number tok into f of the struct at p and reports
// whether it could do so exactly as std would.
func (f *flatField) setNumber(p unsafe.Pointer, tok []byte, integer bool) bool {
	ptr := unsafe.Add(p, f.off)
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !integer {
			return false // std refuses 1.5 and 1e2 for integers
		}
		n, err := strconv.ParseInt(string(tok), 10, f.bits)
		if err != nil {
			return false
		}
		switch f.kind {
		case reflect.Int:
			*(*int)(ptr) = int(n)
		case reflect.Int8:
			*(*int8)(ptr) = int8(n)
		case reflect.Int16:
			*(*int16)(ptr) = int16(n)
		case reflect.Int32:
			*(*int32)(ptr) = int32(n)
		case reflect.Int64:
			*(*int64)(ptr) = n
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !integer || tok[0] == '-' {
			return false // std refuses even -0
		}
		n, err := strconv.ParseUint(string(tok), 10, f.bits)
		if err != nil {
			return false
		}
		switch f.kind {
		case reflect.Uint:
			*(*uint)(ptr) = uint(n)
		case reflect.Uint8:
			*(*uint8)(ptr) = uint8(n)
		case reflect.Uint16:
			*(*uint16)(ptr) = uint16(n)
		case reflect.Uint32:
			*(*uint32)(ptr) = uint32(n)
		case reflect.Uint64:
			*(*uint64)(ptr) = n
		}
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(string(tok), f.bits)
		if err != nil {
			return false
		}
		if f.kind == reflect.Float32 {
			*(*float32)(ptr) = float32(n)
		} else {
			*(*float64)(ptr) = n
		}
	default:
		return false
	}
	return true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at data[i], which needs no unescaping:
// it returns its contents and the index after its closing quote, or false if
// it is not a string, has an escape or a control character, or is not
// valid UTF-8 (which std would replace).
func plainString(data []byte, i int) (s []byte, end int, ok bool) {
	if i == len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			s = data[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// literal returns the true, false or null at the start of data, or "".
func literal(data []byte) string {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(data) >= len(lit) && string(data[:len(lit)]) == lit {
			return lit
		}
	}
	return ""
}

// numberEnd returns the index after the JSON number starting at data[i],
// and whether it is a plain integer (no fraction or exponent); -1 if there
// is none by JSON's grammar, stricter than ParseFloat's (no Inf, 0x1p3, 1_0,
// +1, .5 or 01).
func numberEnd(data []byte, i int) (end int, integer bool) {
	digits := func() bool {
		start := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		digits()
	default:
		return -1, false
	}
	integer = true
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return -1, false
		}
		integer = false
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return -1, false
		}
		integer = false
	}
	return i, integer
}
