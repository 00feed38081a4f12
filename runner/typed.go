package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/tool"
)

// RunAs runs task for an answer of type T: the answer's JSON Schema is
// derived from T as tool.Func derives a tool's (task.OutputSchema, when
// set, is used instead: it can say more, such as bounds), the model gives
// the answer as a JSON value of it, and the first cheap check,
// output_schema, validates it, decodes it into T and, when T (or *T) has
// a method Validate() error, applies it. A failure goes back to the model
// as feedback naming the JSON path and the rule ("output_schema failed at
// $.items[2].price: is -1, below the minimum 0"; a Validate error is given
// as it is) and counts as a failed cheap check.
//
// The T returned is the accepted answer, decoded: it is set only when the
// run ends done. The Result and error are Run's.
func RunAs[T any](ctx context.Context, task Task, cfg Config) (T, loop.Result, error) {
	var zero T
	if len(task.OutputSchema) == 0 {
		schema, err := tool.SchemaFor[T]()
		if err != nil {
			return zero, loop.Result{}, fmt.Errorf("runner: RunAs: no JSON Schema for the answer type %v: %w", reflect.TypeFor[T](), err)
		}
		task.OutputSchema = schema
	}
	task.decode = func(b []byte) error { _, err := decodeAnswer[T](b); return err }
	res, err := Run(ctx, task, cfg)
	if err != nil || !res.Status.IsDone() || res.Best == nil {
		return zero, res, err
	}
	v, err := decodeAnswer[T]([]byte(res.Best.Answer))
	if err != nil { // the check decoded it the same way: a bug
		return zero, res, fmt.Errorf("runner: RunAs: the accepted answer does not decode: %w", err)
	}
	return v, res, nil
}

// validator is a type with its own rules, applied after decoding.
type validator interface{ Validate() error }

// decodeAnswer decodes b into a T and applies T's Validate, if any. A type
// error names the JSON path of the value.
func decodeAnswer[T any](b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			path := "$"
			if te.Field != "" {
				path += "." + te.Field
			}
			return v, fmt.Errorf("%s: is a JSON %s, which does not fit the answer's Go type %v", path, te.Value, te.Type)
		}
		return v, err
	}
	var val validator
	if x, ok := any(v).(validator); ok {
		val = x
	} else if x, ok := any(&v).(validator); ok {
		val = x
	}
	if val != nil {
		if err := val.Validate(); err != nil {
			return v, err
		}
	}
	return v, nil
}
