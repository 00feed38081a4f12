package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"
)

// Option configures a tool built by [Func]. It runs after Func has filled in
// the name, description and derived schema, so it may also refine them.
type Option func(*Info)

// Idempotent marks the tool as safe to run again after a crash left its
// outcome unknown. See [Info].
func Idempotent() Option { return func(i *Info) { i.Idempotent = true } }

// Timeout bounds each call of the tool, overriding the executor's default.
func Timeout(d time.Duration) Option { return func(i *Info) { i.Timeout = d } }

// Inline runs the tool on the executor's goroutine. See [Info].
func Inline() Option { return func(i *Info) { i.Inline = true } }

// MoreHint sets [Info.MoreHint]: how the model can see output the
// executor elided.
func MoreHint(hint string) Option {
	return func(i *Info) { i.MoreHint = hint }
}

// MaxOutput bounds the output shown to the model, overriding the executor's
// defaults; zero keeps the default on that axis. See [Trim].
func MaxOutput(bytes, lines int) Option {
	return func(i *Info) { i.MaxOutputBytes, i.MaxOutputLines = bytes, lines }
}

// Func returns a Tool that decodes its arguments into In with encoding/json
// and calls fn. Its schema is derived from In by [jsonschema.For]: a struct's
// exported fields become properties named by their json tags, fields tagged
// omitempty or omitzero are optional and all others required, pointer and
// slice fields also accept null, unknown properties are rejected, and a
// jsonschema tag becomes the property's description.
//
// The arguments are checked by decoding them strictly into In, which is
// the value fn gets (see prepare); an Option that replaces the schema
// makes the schema check them instead, and Run decode them again.
//
// The output is fn's result as is when Out is string, and compact JSON
// otherwise. An error from fn is returned unchanged, as an observation for
// the model.
//
// Func panics if no object schema can be derived from In (In is not a struct
// or string-keyed map, or holds a type JSON cannot represent, such as a
// func or chan). That is a programming error, caught the first time the
// program runs, like an invalid pattern passed to regexp.MustCompile.
func Func[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) Tool {
	raw, typ, err := schemaFor[In]()
	if err != nil {
		panic(fmt.Sprintf("tool.Func(%q): %v", name, err))
	}
	if typ != "object" {
		panic(fmt.Sprintf("tool.Func(%q): arguments type %v must be a struct or a map with string keys", name, reflect.TypeFor[In]()))
	}
	t := &funcTool[In, Out]{
		info:    Info{Name: name, Description: description, Schema: raw},
		fn:      fn,
		derived: raw,
		strict:  strictType(reflect.TypeFor[In]()),
	}
	for _, o := range opts {
		o(&t.info)
	}
	return t
}

// SchemaFor returns the JSON Schema of T derived as [Func] derives its
// arguments' schema (a struct's fields by their json tags, omitempty and
// omitzero fields optional, unknown properties rejected, jsonschema tags
// as descriptions). It fails for a type JSON cannot represent.
func SchemaFor[T any]() (json.RawMessage, error) {
	raw, _, err := schemaFor[T]()
	return raw, err
}

// schemaFor is SchemaFor, with the schema's top-level type.
func schemaFor[T any]() (json.RawMessage, string, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, "", err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, "", fmt.Errorf("encoding schema: %v", err)
	}
	return raw, s.Type, nil
}

type funcTool[In, Out any] struct {
	info Info
	fn   func(context.Context, In) (Out, error)
	// derived is the schema derived from In; an Option may have replaced
	// it in info, and then only the schema can check the arguments.
	derived json.RawMessage
	// strict says a strict decode into In accepts only what derived
	// accepts, when it leaves no member at its zero value (strictType).
	strict bool
}

func (t *funcTool[In, Out]) typedSchema(schema json.RawMessage) bool {
	return t.strict && bytes.Equal(schema, t.derived)
}

// strictly are the decoding options of the typed check: what the derived
// schema's "additionalProperties": false says, at every depth.
var strictly = jsonv2.RejectUnknownMembers(true)

// prepare decodes args into In with encoding/json's next version
// (github.com/go-json-experiment/json), strictly: names match exactly,
// unknown and duplicate members and invalid UTF-8 are refused, and every
// value must have its field's JSON type. What it accepts with every
// member present and non-null, the derived schema accepts too: its
// properties are In's fields by the same names and types, required unless
// omitempty or omitzero, and nothing else. The decode cannot tell an
// absent or null member from a zero one, so a value with any zero member,
// at any depth, is left to the schema (a required member may be missing);
// so is null, which decodes to a zero value.
func (t *funcTool[In, Out]) prepare(args json.RawMessage) preparedCall {
	c := &funcCall[In, Out]{t: t}
	if err := jsonv2.Unmarshal(args, &c.in, strictly); err != nil {
		return nil
	}
	if !noZero(reflect.ValueOf(&c.in).Elem()) {
		return nil
	}
	return c
}

// funcCall is a call of a funcTool with its arguments decoded.
type funcCall[In, Out any] struct {
	t  *funcTool[In, Out]
	in In
}

func (c *funcCall[In, Out]) run(ctx context.Context) (string, error) {
	return c.t.call(ctx, c.in)
}

func (t *funcTool[In, Out]) Info() Info { return t.info }

// Run does not check args against the schema; the executor does that before
// calling it. A decoding failure that the schema cannot catch, such as a
// number too large for an int field, wraps [ErrInvalidArgs].
func (t *funcTool[In, Out]) Run(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := t.decode(args)
	if err != nil {
		return "", err
	}
	return t.call(ctx, in)
}

func (t *funcTool[In, Out]) decode(args json.RawMessage) (In, error) {
	var in In
	if err := json.Unmarshal(args, &in); err != nil {
		return in, fmt.Errorf("%w: %v", ErrInvalidArgs, err)
	}
	return in, nil
}

// call calls fn and renders its result.
func (t *funcTool[In, Out]) call(ctx context.Context, in In) (string, error) {
	out, err := t.fn(ctx, in)
	if err != nil {
		return "", err
	}
	switch v := any(out).(type) {
	case string:
		return v, nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encoding result: %v", err)
	}
	return string(b), nil
}

// strictType reports whether a strict decode into t (prepare) and the
// schema jsonschema.For derives from t agree on every value whose members
// are all present and non-null. They do for booleans, numbers, strings,
// and structs, slices, string-keyed maps and pointers of them, and for
// any (whose schema accepts anything). They may not for a type that
// decodes itself (a method of encoding/json, encoding or the next
// version's), an array or []byte (a string of base64 to encoding/json),
// an embedded field, or a json tag option but omitempty and omitzero
// (",string", ",inline", ",format:..."): those go to the schema.
func strictType(t reflect.Type) bool {
	return strictTypeSeen(t, map[reflect.Type]bool{})
}

var (
	jsonUnmarshaler   = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler   = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
	v2Unmarshaler     = reflect.TypeFor[jsonv2.Unmarshaler]()
	v2UnmarshalerFrom = reflect.TypeFor[jsonv2.UnmarshalerFrom]()
)

func strictTypeSeen(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true // a recursive type: judged where it began
	}
	seen[t] = true
	if t.Kind() != reflect.Interface {
		for _, m := range []reflect.Type{jsonUnmarshaler, textUnmarshaler, v2Unmarshaler, v2UnmarshalerFrom} {
			if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
				return false
			}
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Interface:
		return t.NumMethod() == 0
	case reflect.Pointer:
		return strictTypeSeen(t.Elem(), seen)
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && strictTypeSeen(t.Elem(), seen)
	case reflect.Map:
		return t.Key().Kind() == reflect.String && t.Key().PkgPath() == "" && strictTypeSeen(t.Elem(), seen)
	case reflect.Struct:
		for f := range t.Fields() {
			if f.Anonymous {
				return false
			}
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			_, opts, _ := strings.Cut(tag, ",")
			for opt := range strings.SplitSeq(opts, ",") {
				if opt != "" && opt != "omitempty" && opt != "omitzero" {
					return false
				}
			}
			if !strictTypeSeen(f.Type, seen) {
				return false
			}
		}
		return true
	}
	return false
}

// noZero reports whether v and everything in it is non-zero: every field
// of a struct, every item of a slice and every value of a map, at every
// depth. A struct with no exported fields counts as zero (an absent or
// null member decodes to it too).
func noZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && noZero(v.Elem())
	case reflect.Interface:
		return !v.IsNil()
	case reflect.Struct:
		exported := false
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			exported = true
			if !noZero(v.Field(i)) {
				return false
			}
		}
		return exported
	case reflect.Slice:
		if v.IsNil() {
			return false
		}
		for i := range v.Len() {
			if !noZero(v.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if v.IsNil() {
			return false
		}
		for it := v.MapRange(); it.Next(); {
			if !noZero(it.Value()) {
				return false
			}
		}
		return true
	}
	return !v.IsZero()
}
