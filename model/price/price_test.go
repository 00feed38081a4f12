package price

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

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
		{"anthropic", "claude-sonnet-4-5", model.Usage{InputTokens: 100_000}, 300_000, true}, // alias without the date
		{"openai", "gpt-4o-mini", model.Usage{InputTokens: 7, OutputTokens: 3}, 3, true},     // 1.05 + 1.8 = 2.85 → 3
		{"openai", "gpt-4o-mini", model.Usage{InputTokens: 1}, 0, true},                      // 0.15 rounds to 0 but is known
		// Pinned snapshots and aliases resolve to the model's price.
		{"openai", "gpt-4.1-2025-04-14", model.Usage{InputTokens: 1_000_000}, 2_000_000, true},
		{"openai", "gpt-4o-2024-08-06", model.Usage{InputTokens: 1_000_000}, 2_500_000, true},
		{"openai", "o3-mini-2025-01-31", model.Usage{InputTokens: 1_000_000}, 1_100_000, true},
		{"anthropic", "claude-sonnet-4-0", model.Usage{InputTokens: 1_000_000}, 3_000_000, true},
		{"anthropic", "claude-opus-4-0", model.Usage{InputTokens: 1_000_000}, 15_000_000, true},
		{"openai", "GPT-4.1", model.Usage{InputTokens: 1_000_000}, 2_000_000, true},          // names compare case-insensitively
		{"openai", "gpt-4.1-20250414", model.Usage{InputTokens: 1_000_000}, 2_000_000, true}, // a compact date is tried with dashes
		{"openai", "gpt-4o-2024-05-13", model.Usage{InputTokens: 1000}, 5000, true},          // priced unlike gpt-4o: $5/M
		{"openai", "gpt-4.1-2025-04", model.Usage{InputTokens: 1000}, 0, false},              // not a snapshot the source lists
		{"anthropic", "claude-unknown-1", model.Usage{InputTokens: 1000}, 0, false},
		{"openai", "llama3.1:8b", model.Usage{InputTokens: 1000}, 0, false},
		{"openai", "gpt-4o-mini-tts", model.Usage{InputTokens: 1000}, 600, true},
		{"openai", "whisper-1", model.Usage{InputTokens: 1000}, 0, false}, // priced by the hour of audio, not per token
		{"anthropic", "gpt-4o", model.Usage{InputTokens: 1000}, 0, false}, // the provider is part of the key
		// Gemini 2.5 Flash: $0.30/M in, $2.50/M out (thinking included), $0.03/M cached.
		{"gemini", "gemini-2.5-flash", model.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 1_000_000}, 300_000 + 2_500_000 + 30_000, true},
		{"gemini", "gemini-0.1-nonesuch", model.Usage{InputTokens: 1000}, 0, false},
		// OpenAI's cache writes: billed as input where the source gives no
		// price of their own (gpt-4.1: $2/M), at their own where it does
		// (gpt-5.6-terra: $2.50/M, up to 272k).
		{"openai", "gpt-4.1", model.Usage{CacheWriteTokens: 1_000_000}, 2_000_000, true},
		{"openai", "gpt-5.6-terra", model.Usage{CacheWriteTokens: 100_000}, 250_000, true},
		// Reasoning tokens are part of the output tokens: not billed again.
		{"openai", "o3", model.Usage{OutputTokens: 1_000_000, ReasoningTokens: 900_000}, 8_000_000, true},
		// Long context: above 200k prompt tokens (cache reads included),
		// Claude Sonnet 4.5 bills the whole request at $6/M in, $22.50/M
		// out, $0.60/M read; at 200k, the base prices.
		{"anthropic", "claude-sonnet-4-5", model.Usage{InputTokens: 150_000, CacheReadTokens: 60_000, OutputTokens: 1000}, 150_000*6 + 60_000*6/10 + 22_500, true},
		{"anthropic", "claude-sonnet-4-5", model.Usage{InputTokens: 140_000, CacheReadTokens: 60_000, OutputTokens: 1000}, 140_000*3 + 60_000*3/10 + 15_000, true},
		{"gemini", "gemini-2.5-pro", model.Usage{InputTokens: 200_001}, 500_003, true}, // $2.50/M above 200k
	}
	for _, tt := range tests {
		got := Fill(tt.provider, tt.model, tt.u)
		if got.Cost != tt.want || got.CostKnown != tt.known {
			t.Errorf("Fill(%s, %s, %+v) = %v known=%v, want %v known=%v", tt.provider, tt.model, tt.u, got.Cost, got.CostKnown, tt.want, tt.known)
		}
	}
}

// TestDated: a price that changes on a date applies from that day, UTC.
func TestDated(t *testing.T) {
	for _, tt := range []struct {
		provider, model, day string
		input                budget.Micros
	}{
		{"openai", "o3", "2025-06-09", 10_000_000},
		{"openai", "o3", "2025-06-10", 2_000_000},
		{"gemini", "gemini-3.6-flash", "2026-12-31", 750_000},
		{"gemini", "gemini-3.6-flash", "2027-01-01", 1_500_000},
	} {
		at, _ := time.Parse(time.DateOnly, tt.day)
		f, err := base().find(tt.provider, tt.model, at)
		if err != nil || f.Price.Input != tt.input {
			t.Errorf("%s on %s: input %v, %v; want %v", tt.model, tt.day, f.Price.Input, err, tt.input)
		}
	}
}

func TestEmbedded(t *testing.T) {
	src := EmbeddedSource()
	if src.Name != "@pydantic/genai-prices" || src.Licence != "MIT" || src.Version == "" || src.Published == "" {
		t.Errorf("source %+v", src)
	}
	for _, p := range Providers {
		entries := base().entries[p]
		if len(entries) < 20 {
			t.Fatalf("%s: only %d entries", p, len(entries))
		}
		for _, e := range entries {
			pr, ok := e.Prices.at(time.Now()).price()
			if !ok {
				continue
			}
			if pr.CacheRead > pr.Input || pr.Input > 1000_000_000 {
				t.Errorf("%s/%s: implausible price %+v", p, e.ID, pr)
			}
		}
	}
}

// override writes a price file and loads it as $RATCHET_PRICES.
func override(t *testing.T, body string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { overridden.Store(nil) })
	_, err := LoadOverride(env{"RATCHET_PRICES": path}.get)
	return path, err
}

type env map[string]string

func (e env) get(k string) string { return e[k] }

func TestOverride(t *testing.T) {
	path, err := override(t, `{"providers": {
		"openai": [
			{"id": "my-model", "prices": {"input_mtok": 1, "output_mtok": 2}},
			{"id": "gpt-4o", "match": {"equals": "gpt-4o"}, "prices": {"input_mtok": 9, "output_mtok": 9}},
			{"id": "null-model", "prices": {"input_mtok": null, "output_mtok": 9}}
		],
		"anthropic": [
			{"id": "claude-mythos-5", "prices": [
				{"prices": {"input_mtok": 10, "output_mtok": 50, "cache_read_mtok": 1, "cache_write_mtok": 12.5}},
				{"constraint": {"start_date": "2099-01-01"}, "prices": {"input_mtok": 1, "output_mtok": 1}}
			]}
		]}}`)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Find("openai", "My-Model") // added
	if err != nil || f.Price.Input != 1_000_000 || f.Price.Output != 2_000_000 || f.Price.CacheRead != 1_000_000 || f.Source != path {
		t.Errorf("my-model: %+v, %v", f, err)
	}
	if f, err := Find("openai", "gpt-4o"); err != nil || f.Price.Input != 9_000_000 || f.Source != path { // replaced
		t.Errorf("gpt-4o: %+v, %v", f, err)
	}
	// The replaced entry is gone, its snapshot names with it.
	if _, err := Find("openai", "gpt-4o-2024-08-06"); err == nil {
		t.Error("gpt-4o-2024-08-06 is still priced by the replaced entry")
	}
	if f, err := Find("anthropic", "claude-mythos-5"); err != nil || f.Price.CacheWrite != 12_500_000 {
		t.Errorf("claude-mythos-5: %+v, %v", f, err)
	}
	// A null price is no price, never a free one.
	if _, ok := Lookup("openai", "null-model"); ok {
		t.Error("null-model, with a null input price, has a price")
	}
	// The rest is the embedded table's.
	if f, err := Find("openai", "gpt-4.1"); err != nil || f.Price.Input != 2_000_000 || !strings.Contains(f.Source, "genai-prices") {
		t.Errorf("gpt-4.1: %+v, %v", f, err)
	}
	if Current().Overrides() != path {
		t.Errorf("Overrides() = %q", Current().Overrides())
	}
}

func TestOverrideFile(t *testing.T) {
	t.Cleanup(func() { overridden.Store(nil) })
	if p, req := OverrideFile(env{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}.get); p != "/x/ratchet/prices.json" || req {
		t.Errorf("XDG: %q %v", p, req)
	}
	if p, req := OverrideFile(env{"HOME": "/h"}.get); p != "/h/.config/ratchet/prices.json" || req {
		t.Errorf("HOME: %q %v", p, req)
	}
	// A missing default file is no override; a missing named one is an error.
	if _, err := LoadOverride(env{"XDG_CONFIG_HOME": t.TempDir()}.get); err != nil {
		t.Errorf("missing default file: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope.json")
	if _, err := LoadOverride(env{"RATCHET_PRICES": missing}.get); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing $RATCHET_PRICES: %v", err)
	}
	// The default file is read where it exists.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "ratchet"), 0o755)
	os.WriteFile(filepath.Join(dir, "ratchet", "prices.json"), []byte(`{"providers": {"gemini": [{"id": "g-x", "prices": {"input_mtok": 1, "output_mtok": 1}}]}}`), 0o600)
	if _, err := LoadOverride(env{"XDG_CONFIG_HOME": dir}.get); err != nil {
		t.Fatal(err)
	}
	if _, ok := Lookup("gemini", "g-x"); !ok {
		t.Error("the default override file was not read")
	}
}

func TestOverrideErrors(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"syntax", `{"providers": {`, "unexpected EOF"},
		{"trailing comma", "{\"providers\": {\n  \"openai\": [],\n}}", "prices.json:2:15: jsontext: invalid character ','"},
		{"unknown field", `{"providers": {}, "prices": 1}`, `unknown object member name "prices"`},
		{"unknown provider", `{"providers": {"antropic": []}}`, `unknown provider "antropic"`},
		{"no id", `{"providers": {"openai": [{"prices": {"input_mtok": 1}}]}}`, "providers.openai[0]: an entry needs an id"},
		{"duplicate id", `{"providers": {"openai": [{"id": "a", "prices": {}}, {"id": "a", "prices": {}}]}}`, `id "a" appears twice`},
		{"no prices", `{"providers": {"openai": [{"id": "a"}]}}`, "no prices"},
		{"negative", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": -1}}]}}`, "price -1 is not between 0 and"},
		{"string price", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": "1"}}]}}`, "/providers/openai/0/prices/input_mtok"},
		{"fine price", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": 0.0000001}}]}}`, "finer than a micro-USD"},
		{"bad tier", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": {"base": 1, "tiers": [{"start": -5, "price": 2}]}}}]}}`, "tier start -5"},
		{"no base", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": {"tiers": [{"start": 5, "price": 2}]}}}]}}`, `needs a "base"`},
		{"null tier price", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": {"base": 1, "tiers": [{"start": 5, "price": null}]}}}]}}`, `a tier needs a "start" and a "price"`},
		{"tier without start", `{"providers": {"openai": [{"id": "a", "prices": {"input_mtok": {"base": 1, "tiers": [{"price": 3}]}}}]}}`, `a tier needs a "start" and a "price"`},
		{"two operators", `{"providers": {"openai": [{"id": "a", "match": {"equals": "a", "contains": "b"}, "prices": {}}]}}`, "exactly one of"},
		{"no operator", `{"providers": {"openai": [{"id": "a", "match": {}, "prices": {}}]}}`, "exactly one of"},
		{"unknown operator", `{"providers": {"openai": [{"id": "a", "match": {"glob": "a*"}, "prices": {}}]}}`, `unknown object member name "glob"`},
		{"bad regex", `{"providers": {"openai": [{"id": "a", "match": {"or": [{"regex": "(a"}]}, "prices": {}}]}}`, `regex "(a"`},
		{"bad date", `{"providers": {"openai": [{"id": "a", "prices": [{"constraint": {"start_date": "2026-13-01"}, "prices": {}}]}]}}`, `start_date "2026-13-01"`},
		{"time of day", `{"providers": {"openai": [{"id": "a", "prices": [{"constraint": {"type": "time_of_date", "start_date": "2026-01-01"}, "prices": {}}]}]}}`, "not supported"},
		{"empty list", `{"providers": {"openai": [{"id": "a", "prices": []}]}}`, "empty list of prices"},
		{"duplicate key", `{"providers": {"openai": [], "openai": []}}`, "duplicate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := Current()
			path, err := override(t, tt.body)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s and saying %q", err, path, tt.want)
			}
			if Current() != before {
				t.Error("a bad file changed the prices")
			}
		})
	}
}

// TestTimeout: a user's pattern that backtracks catastrophically is cut
// short, and is no match.
func TestTimeout(t *testing.T) {
	if _, err := override(t, `{"providers": {"openai": [{"id": "slow", "match": {"regex": "^(a+)+$"}, "prices": {"input_mtok": 1, "output_mtok": 1}}]}}`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, ok := Lookup("openai", strings.Repeat("a", 40)+"!"); ok {
		t.Error("a timed-out match priced the model")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// FuzzParse: a price file is user input; whatever it holds, parsing and
// pricing by it do not panic, and what parses writes back as it was read.
func FuzzParse(f *testing.F) {
	f.Add(`{"providers": {"openai": [{"id": "a", "match": {"and": [{"starts_with": "a"}, {"regex": "^(?!.*-tts)"}]}, "prices": {"input_mtok": {"base": 1, "tiers": [{"start": 10, "price": 2}]}, "output_mtok": 3}}]}}`)
	f.Add(`{"providers": {"gemini": [{"id": "b", "prices": [{"prices": {"input_mtok": 1, "output_mtok": 1}}, {"constraint": {"start_date": "2026-01-01"}, "prices": {}}]}]}}`)
	f.Add(string(embedded[:2000]))
	f.Fuzz(func(t *testing.T, body string) {
		file, err := Parse([]byte(body))
		if err != nil {
			return
		}
		tab := newTable(base().file, file, "fuzz.json")
		for _, name := range []string{"a", "b-tts", "gpt-4.1", "claude-sonnet-4-20250514", ""} {
			for _, p := range Providers {
				if f, err := tab.find(p, name, time.Now()); err == nil {
					f.Price.Cost(model.Usage{InputTokens: 1 << 30, OutputTokens: 1 << 30, CacheReadTokens: 1 << 30, CacheWriteTokens: 1 << 30})
				}
			}
		}
		out, err := jsonv2.Marshal(file)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("%s does not parse back: %v", out, err)
		}
	})
}

// TestDocsExamples: the price files docs/prices.md shows parse.
func TestDocsExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/prices.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 2 {
		t.Fatalf("found %d JSON examples in docs/prices.md", len(blocks))
	}
	for _, b := range blocks {
		if _, err := Parse(b[1]); err != nil {
			t.Errorf("docs/prices.md example does not parse: %v\n%s", err, b[1])
		}
	}
}
