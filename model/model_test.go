package model_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ratchetloop/ratchet/model"
)

func TestAPIError(t *testing.T) {
	for _, tc := range []struct {
		err  *model.APIError
		want string
	}{
		{&model.APIError{Provider: "anthropic", Status: 401, Kind: model.ErrAuth, Message: "authentication_error: invalid x-api-key", Fix: "check ANTHROPIC_API_KEY"},
			"anthropic: 401 auth: authentication_error: invalid x-api-key (check ANTHROPIC_API_KEY)"},
		{&model.APIError{Provider: "openai-compatible", Kind: model.ErrTransport, Message: "connection refused"},
			"openai-compatible: transport: connection refused"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	wrapped := &model.APIError{Kind: model.ErrTimeout, Err: context.DeadlineExceeded}
	if !errors.Is(wrapped, context.DeadlineExceeded) || !wrapped.Temporary() {
		t.Errorf("a timeout should unwrap to its cause and be temporary")
	}
}

func TestHooks(t *testing.T) {
	if h := model.HooksFrom(context.Background()); h.OnRetry != nil || h.OnText != nil {
		t.Error("hooks from a bare context")
	}
	var got string
	ctx := model.WithHooks(context.Background(), model.Hooks{OnText: func(d string) { got += d }})
	model.HooksFrom(ctx).OnText("hi")
	if got != "hi" {
		t.Errorf("OnText got %q", got)
	}
}
