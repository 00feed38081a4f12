package model_test

import (
	"context"
	"errors"
	"strings"
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
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { got += d }})
	model.HooksFrom(ctx).OnText("hi")
	if got != "hi" {
		t.Errorf("OnText got %q", got)
	}
}

func TestReasoningProblems(t *testing.T) {
	for _, tc := range []struct {
		r    model.Reasoning
		want string
	}{
		{model.Reasoning{Effort: model.EffortHigh}, ""},
		{model.Reasoning{BudgetTokens: 1024}, ""},
		{model.Reasoning{Effort: "extreme"}, `reasoning.effort must be one of low, medium, high, max, got "extreme"`},
		{model.Reasoning{BudgetTokens: 1023}, "reasoning.budget_tokens must be at least 1024, got 1023"},
		{model.Reasoning{}, "reasoning needs effort: or budget_tokens:"},
		{model.Reasoning{Effort: "x", BudgetTokens: 5}, `reasoning.effort must be one of low, medium, high, max, got "x"; reasoning.budget_tokens must be at least 1024, got 5`},
	} {
		if got := strings.Join(tc.r.Problems(), "; "); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
	if b := (model.Reasoning{Effort: model.EffortLow, BudgetTokens: 5000}).Budget(); b != 5000 {
		t.Errorf("an explicit budget wins: %d", b)
	}
	for e, want := range map[model.Effort]int{model.EffortLow: 2048, model.EffortMedium: 8192, model.EffortHigh: 16384, model.EffortMax: 32768} {
		if b := (model.Reasoning{Effort: e}).Budget(); b != want {
			t.Errorf("%s: budget %d, want %d", e, b, want)
		}
	}
}

func TestAddBilled(t *testing.T) {
	reply := model.Usage{InputTokens: 10, OutputTokens: 5, Cost: 700, CostKnown: true}
	for _, tc := range []struct {
		name string
		u, v model.Usage
		want model.Usage
	}{
		{"nothing billed", reply, model.Usage{}, reply},
		{"to a reply", reply, model.Usage{InputTokens: 1, OutputTokens: 2, ReasoningTokens: 1, Cost: 300, CostKnown: true},
			model.Usage{InputTokens: 11, OutputTokens: 7, ReasoningTokens: 1, Cost: 1000, CostKnown: true}},
		{"to nothing yet", model.Usage{}, model.Usage{OutputTokens: 2, Cost: 300, CostKnown: true}, model.Usage{OutputTokens: 2, Cost: 300, CostKnown: true}},
		{"negative counts", reply, model.Usage{InputTokens: -50, OutputTokens: -50, CacheReadTokens: -1, CacheWriteTokens: -1, Cost: -5000, CostKnown: true}, reply},
		{"unknown price", reply, model.Usage{OutputTokens: 2}, model.Usage{InputTokens: 10, OutputTokens: 7, Cost: 700}},
	} {
		if got := model.AddBilled(tc.u, tc.v); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
