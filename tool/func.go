package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

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
		info: Info{Name: name, Description: description, Schema: raw},
		fn:   fn,
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
