// Package price turns a model call's token usage into its cost in integer
// micro-USD, from a table of per-million-token prices.
//
// The table is maintained by hand. Its prices were taken on 2026-11-30 from
// the model catalog charm.land/catwalk v0.52.1 (internal/providers/configs/
// anthropic.json, openai.json and, on 2026-12-03, gemini.json), which is
// itself compiled from the providers' pricing pages
// (https://www.anthropic.com/pricing, https://platform.openai.com/docs/pricing
// and https://ai.google.dev/gemini-api/docs/pricing). catwalk is not imported: its
// two cached-token columns mean different things from one model to the
// next, so they are normalised here into a cache-read and a cache-write
// price, and importing it would pull in its metrics dependencies.
//
// An unlisted model has no known price: Lookup reports false and providers
// set Usage.CostKnown to false, never a cost of zero.
package price

import (
	"regexp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

// Date is when the table was last checked against its sources.
const Date = "2026-11-30"

// Price is what a model charges, in micro-USD per million tokens.
type Price struct {
	Input      budget.Micros // uncached input
	Output     budget.Micros
	CacheRead  budget.Micros // input read from the prompt cache
	CacheWrite budget.Micros // input written to the prompt cache (Anthropic)
}

// Cost is u's price, rounded to the nearest micro-USD. It is exact integer
// arithmetic: prices are per million tokens, so the sum is divided once.
func (p Price) Cost(u model.Usage) budget.Micros {
	sum := u.InputTokens*int64(p.Input) + u.OutputTokens*int64(p.Output) +
		u.CacheReadTokens*int64(p.CacheRead) + u.CacheWriteTokens*int64(p.CacheWrite)
	return budget.Micros((sum + 500_000) / 1_000_000)
}

// Fill sets u.Cost and u.CostKnown from the table's price for the model
// (see Lookup) and returns u.
func Fill(provider, modelName string, u model.Usage) model.Usage {
	p, ok := Lookup(provider, modelName)
	u.Cost, u.CostKnown = 0, ok
	if ok {
		u.Cost = p.Cost(u)
	}
	return u
}

// dated matches a trailing snapshot date: Anthropic's, as in
// claude-sonnet-4-5-20250929, and OpenAI's, as in gpt-4.1-2025-04-14.
var dated = regexp.MustCompile(`-20\d{6}$|-20\d\d-\d\d-\d\d$`)

// zeroMinor matches Anthropic's "-0" aliases of a major version, as in
// claude-sonnet-4-0 for claude-sonnet-4.
var zeroMinor = regexp.MustCompile(`^(claude-[a-z]+-\d+)-0$`)

// repriced are snapshots priced unlike their alias: their price is not
// the alias's, so it is unknown.
var repriced = map[key]bool{{"openai", "gpt-4o-2024-05-13"}: true}

// Lookup returns the price of a provider's model ("anthropic", "openai" or "gemini").
// A model named with or without its snapshot date matches either form, and
// Anthropic's -0 aliases (claude-sonnet-4-0) their version.
func Lookup(provider, modelName string) (Price, bool) {
	if repriced[key{provider, modelName}] {
		return Price{}, false
	}
	p, ok := table[key{provider, canonical(modelName)}]
	return p, ok
}

func canonical(name string) string {
	return zeroMinor.ReplaceAllString(dated.ReplaceAllString(name, ""), "$1")
}

type key struct{ provider, model string }

var table = map[key]Price{}

func init() {
	for _, r := range rows {
		table[key{r.provider, canonical(r.model)}] = Price{r.in, r.out, r.read, r.write}
	}
}

// rows are micro-USD per million tokens: input, output, cache read, cache
// write. OpenAI and Gemini charge nothing to write their automatic caches;
// a model with no cache discount has its cache-read price equal to its
// input price. Gemini's prices are those of prompts up to 200k tokens
// (2.5 Pro and 3 Pro charge more above: such calls are under-counted).
var rows = []struct {
	provider, model      string
	in, out, read, write budget.Micros
}{
	{"anthropic", "claude-mythos-5", 10000000, 50000000, 1000000, 12500000},
	{"anthropic", "claude-opus-5", 5000000, 25000000, 500000, 6250000},
	{"anthropic", "claude-opus-4-8", 5000000, 25000000, 500000, 6250000},
	{"anthropic", "claude-opus-4-7", 5000000, 25000000, 500000, 6250000},
	{"anthropic", "claude-opus-4-6", 5000000, 25000000, 500000, 6250000},
	{"anthropic", "claude-opus-4-5-20251101", 5000000, 25000000, 500000, 6250000},
	{"anthropic", "claude-sonnet-5", 2000000, 10000000, 200000, 2500000},
	{"anthropic", "claude-sonnet-4-6", 3000000, 15000000, 300000, 3750000},
	{"anthropic", "claude-sonnet-4-5-20250929", 3000000, 15000000, 300000, 3750000},
	{"anthropic", "claude-haiku-4-5-20251001", 1000000, 5000000, 100000, 1250000},
	{"anthropic", "claude-opus-4-1-20250805", 15000000, 75000000, 1500000, 18750000},
	{"anthropic", "claude-opus-4-20250514", 15000000, 75000000, 1500000, 18750000},
	{"anthropic", "claude-sonnet-4-20250514", 3000000, 15000000, 300000, 3750000},
	{"anthropic", "claude-fable-5", 10000000, 50000000, 1000000, 12500000},
	{"openai", "gpt-5.6-sol", 5000000, 30000000, 500000, 0},
	{"openai", "gpt-5.6-terra", 2500000, 15000000, 250000, 0},
	{"openai", "gpt-5.6-luna", 1000000, 6000000, 100000, 0},
	{"openai", "gpt-5.5", 5000000, 30000000, 500000, 0},
	{"openai", "gpt-5.5-pro", 30000000, 180000000, 30000000, 0},
	{"openai", "gpt-5.4", 2500000, 15000000, 250000, 0},
	{"openai", "gpt-5.4-pro", 30000000, 180000000, 30000000, 0},
	{"openai", "gpt-5.4-mini", 750000, 4500000, 75000, 0},
	{"openai", "gpt-5.4-nano", 200000, 1250000, 20000, 0},
	{"openai", "gpt-5.3-codex", 1750000, 14000000, 175000, 0},
	{"openai", "gpt-5.2", 1750000, 14000000, 175000, 0},
	{"openai", "gpt-5.2-codex", 1750000, 14000000, 175000, 0},
	{"openai", "gpt-5.1", 1250000, 10000000, 125000, 0},
	{"openai", "gpt-5.1-codex", 1250000, 10000000, 125000, 0},
	{"openai", "gpt-5.1-codex-max", 1250000, 10000000, 125000, 0},
	{"openai", "gpt-5.1-codex-mini", 250000, 2000000, 25000, 0},
	{"openai", "gpt-5-codex", 1250000, 10000000, 125000, 0},
	{"openai", "gpt-5", 1250000, 10000000, 125000, 0},
	{"openai", "gpt-5-mini", 250000, 2000000, 25000, 0},
	{"openai", "gpt-5-nano", 50000, 400000, 5000, 0},
	{"openai", "o4-mini", 1100000, 4400000, 275000, 0},
	{"openai", "o3", 2000000, 8000000, 500000, 0},
	{"openai", "gpt-4.1", 2000000, 8000000, 500000, 0},
	{"openai", "gpt-4.1-mini", 400000, 1600000, 100000, 0},
	{"openai", "gpt-4.1-nano", 100000, 400000, 25000, 0},
	{"openai", "o3-mini", 1100000, 4400000, 550000, 0},
	{"openai", "gpt-4o", 2500000, 10000000, 1250000, 0},
	{"openai", "gpt-4o-mini", 150000, 600000, 75000, 0},
	{"gemini", "gemini-3.7-flash", 750000, 3750000, 75000, 0},
	{"gemini", "gemini-3.6-flash", 1500000, 7500000, 150000, 0},
	{"gemini", "gemini-3.5-flash", 1500000, 9000000, 1000000, 0},
	{"gemini", "gemini-3.5-flash-lite", 300000, 2500000, 30000, 0},
	{"gemini", "gemini-3.1-pro-preview-customtools", 2000000, 12000000, 200000, 0},
	{"gemini", "gemini-3.1-flash-lite", 250000, 1500000, 25000, 0},
	{"gemini", "gemini-3-pro-preview", 2000000, 12000000, 200000, 0},
	{"gemini", "gemini-3-flash-preview", 500000, 3000000, 50000, 0},
	{"gemini", "gemini-2.5-pro", 1250000, 10000000, 125000, 0},
	{"gemini", "gemini-2.5-flash", 300000, 2500000, 30000, 0},
}
