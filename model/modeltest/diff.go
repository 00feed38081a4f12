package modeltest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
)

// diffResponse compares replies, showing tool inputs as text. An empty
// Content equals a nil one.
func diffResponse(want, got model.Response) string {
	if len(want.Content) == 0 {
		want.Content = nil
	}
	if len(got.Content) == 0 {
		got.Content = nil
	}
	return cmp.Diff(want, got, cmp.Transformer("raw", func(r json.RawMessage) string { return string(r) }))
}

func errorsIsCanceled(err error) bool { return errors.Is(err, context.Canceled) }
