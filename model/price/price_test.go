package price

import (
	"testing"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

func TestCost(t *testing.T) {
	tests := []struct {
		provider, model string
		u               model.Usage
		want            budget.Micros
		known           bool
	}{
		// $3/M in, $15/M out, $0.30/M read, $3.75/M write.
		{"anthropic", "claude-sonnet-4-5-20250929", model.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadTokens: 10000, CacheWriteTokens: 2000}, 3000 + 1500 + 3000 + 7500, true},
		{"anthropic", "claude-sonnet-4-5", model.Usage{InputTokens: 1_000_000}, 3_000_000, true}, // alias without the date
		{"openai", "gpt-4o-mini", model.Usage{InputTokens: 7, OutputTokens: 3}, 3, true},         // 1.05 + 1.8 = 2.85 → 3
		{"openai", "gpt-4o-mini", model.Usage{InputTokens: 1}, 0, true},                          // 0.15 rounds to 0 but is known
		// Pinned snapshots and aliases resolve to the model's price.
		{"openai", "gpt-4.1-2025-04-14", model.Usage{InputTokens: 1_000_000}, 2_000_000, true},
		{"openai", "gpt-4o-2024-08-06", model.Usage{InputTokens: 1_000_000}, 2_500_000, true},
		{"openai", "o3-mini-2025-01-31", model.Usage{InputTokens: 1_000_000}, 1_100_000, true},
		{"anthropic", "claude-sonnet-4-0", model.Usage{InputTokens: 1_000_000}, 3_000_000, true},
		{"anthropic", "claude-opus-4-0", model.Usage{InputTokens: 1_000_000}, 15_000_000, true},
		{"openai", "gpt-4o-2024-05-13", model.Usage{InputTokens: 1000}, 0, false}, // priced unlike gpt-4o
		{"openai", "gpt-4.1-2025-04", model.Usage{InputTokens: 1000}, 0, false},   // not a date
		{"anthropic", "claude-sonnet-4-5-0", model.Usage{InputTokens: 1000}, 0, false},
		{"openai", "llama3.1:8b", model.Usage{InputTokens: 1000}, 0, false},
		{"anthropic", "gpt-4o", model.Usage{InputTokens: 1000}, 0, false}, // the provider is part of the key
		// Gemini 2.5 Flash: $0.30/M in, $2.50/M out (thinking included), $0.03/M cached.
		{"gemini", "gemini-2.5-flash", model.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000}, 300_000 + 2_500_000 + 30_000, true},
		{"gemini", "gemini-1.5-flash", model.Usage{InputTokens: 1000}, 0, false},
	}
	for _, tt := range tests {
		got := Fill(tt.provider, tt.model, tt.u)
		if got.Cost != tt.want || got.CostKnown != tt.known {
			t.Errorf("Fill(%s, %s, %+v) = %v known=%v, want %v known=%v", tt.provider, tt.model, tt.u, got.Cost, got.CostKnown, tt.want, tt.known)
		}
	}
}

func TestTableSane(t *testing.T) {
	if len(rows) < 20 {
		t.Fatalf("only %d rows", len(rows))
	}
	for _, r := range rows {
		if r.in <= 0 || r.out < r.in || r.read <= 0 || r.read > r.in || r.write < 0 {
			t.Errorf("%s/%s: implausible price %+v", r.provider, r.model, r)
		}
		if r.provider == "anthropic" && r.write != r.in*5/4 {
			t.Errorf("%s: cache write %v is not 1.25× input %v", r.model, r.write, r.in)
		}
	}
}
