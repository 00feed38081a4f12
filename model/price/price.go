// Package price turns a model call's token usage into its cost in integer
// micro-USD, from a table of per-million-token prices.
//
// The table is data: prices.json, embedded, generated (go generate, see
// internal/gen) from the price data of the npm package
// @pydantic/genai-prices (MIT licence; the version and date are in the
// file's source and in EmbeddedSource), which is maintained from the providers'
// pricing pages. A user's override file (LoadOverride) adds entries or
// replaces them. docs/prices.md describes the format.
//
// A model is priced by the first entry of its provider whose match rules
// take its name (exact names, prefixes, regular expressions, as the source
// gives them), so that snapshots and aliases (gpt-4.1-2025-04-14,
// claude-sonnet-4-0) find their model's price. Prices may change on a date
// and may be tiered by the prompt's length; cache reads and writes have
// their own prices, or are billed as input where the source gives none.
//
// An unlisted model has no known price: Lookup reports false and providers
// set Usage.CostKnown to false, never a cost of zero.
package price

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
)

//go:generate go run ./internal/gen -o prices.json

//go:embed prices.json
var embedded []byte

// Providers are the providers the table prices, by ratchet's names.
var Providers = []string{"anthropic", "gemini", "openai"}

// Price is what a model charges, in micro-USD per million tokens.
type Price struct {
	Input      budget.Micros // uncached input
	Output     budget.Micros // reasoning tokens included: they are billed as output
	CacheRead  budget.Micros // input read from the prompt cache
	CacheWrite budget.Micros // input written to the prompt cache
	// Tiers are the prices of a long prompt, by ascending Above: a request
	// whose prompt (input, cache read and cache write tokens together) is
	// longer than a tier's Above pays that tier's prices for all its tokens,
	// as Anthropic, OpenAI and Gemini bill long context.
	Tiers []Tier
}

// Tier is a Price's prices for prompts longer than Above tokens.
type Tier struct {
	Above                                int64
	Input, Output, CacheRead, CacheWrite budget.Micros
}

// Cost is u's price, rounded to the nearest micro-USD. It is exact integer
// arithmetic: prices are per million tokens, so the sum is divided once.
// u.ReasoningTokens are part of u.OutputTokens and are not counted again.
func (p Price) Cost(u model.Usage) budget.Micros {
	in, out, read, write := p.Input, p.Output, p.CacheRead, p.CacheWrite
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	for _, t := range p.Tiers {
		if prompt > t.Above {
			in, out, read, write = t.Input, t.Output, t.CacheRead, t.CacheWrite
		}
	}
	sum := u.InputTokens*int64(in) + u.OutputTokens*int64(out) +
		u.CacheReadTokens*int64(read) + u.CacheWriteTokens*int64(write)
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

// Lookup returns the price of a provider's model ("anthropic", "openai" or
// "gemini") today, or false if it has none (see Find).
func Lookup(provider, modelName string) (Price, bool) {
	f, err := Find(provider, modelName)
	return f.Price, err == nil
}

// Found is a model's price and where it came from.
type Found struct {
	Provider, Model string
	Entry           Entry      // the entry that matched
	Source          string     // the override file's path, or the embedded data's source
	Set             ModelPrice // the entry's prices that apply today, as the file gives them
	Price           Price      // Set as a Price
}

// Find returns the price of a provider's model today: the first entry of
// the provider whose match takes the name, lower-cased; failing that, as
// the source does, the name with a YYYYMMDD date spelt YYYY-MM-DD. The
// error says why a model has no price.
func Find(provider, modelName string) (Found, error) {
	return Current().Find(provider, modelName)
}

// EmbeddedSource is the embedded data's source.
func EmbeddedSource() Source {
	return *base().file.Source
}

// Table is the embedded prices with, perhaps, an override file's.
type Table struct {
	file      *File // the embedded data
	entries   map[string][]entry
	overrides string // the override file's path, if any
}

type entry struct {
	Entry
	source string
}

// undated matches a compact snapshot date (claude-sonnet-4-20250514),
// which the source also tries spelt with dashes.
var undated = regexp.MustCompile(`-(20\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])([-:]|$)`)

// Find is a model's price today by t (see the package's Find).
func (t *Table) Find(provider, modelName string) (Found, error) {
	return t.find(provider, modelName, time.Now())
}

func (t *Table) find(provider, modelName string, now time.Time) (Found, error) {
	f := Found{Provider: provider, Model: modelName}
	entries, ok := t.entries[provider]
	if !ok {
		return f, fmt.Errorf("no prices for provider %q (the table has %s)", provider, strings.Join(Providers, ", "))
	}
	name := strings.ToLower(strings.TrimSpace(modelName))
	e := first(entries, name)
	if e == nil {
		e = first(entries, undated.ReplaceAllString(name, "-$1-$2-$3$4"))
	}
	if e == nil {
		return f, fmt.Errorf("%s model %q has no known price: no entry matches it", provider, modelName)
	}
	f.Entry, f.Source, f.Set = e.Entry, e.source, e.Prices.at(now)
	p, ok := f.Set.price()
	if !ok {
		return f, fmt.Errorf("%s model %q matches %q, which has no input and output price per token", provider, modelName, e.ID)
	}
	f.Price = p
	return f, nil
}

func first(entries []entry, name string) *entry {
	for i := range entries {
		if entries[i].matches(name) {
			return &entries[i]
		}
	}
	return nil
}

func (e *Entry) matches(name string) bool {
	if e.Match == nil {
		return name == strings.ToLower(e.ID)
	}
	return e.Match.matches(name)
}

// newTable is base with over's entries first, replacing base's of the
// same id.
func newTable(base, over *File, overPath string) *Table {
	t := &Table{file: base, entries: map[string][]entry{}, overrides: overPath}
	for _, p := range Providers {
		replaced := map[string]bool{}
		if over != nil {
			for _, e := range over.Providers[p] {
				t.entries[p] = append(t.entries[p], entry{e, overPath})
				replaced[e.ID] = true
			}
		}
		for _, e := range base.Providers[p] {
			if !replaced[e.ID] {
				t.entries[p] = append(t.entries[p], entry{e, "embedded table, from " + base.Source.String()})
			}
		}
	}
	return t
}

// base is the embedded table; a broken embedded file is a build error,
// which the tests catch.
var base = sync.OnceValue(func() *Table {
	f, err := Parse(embedded)
	if err != nil {
		panic("model/price: prices.json: " + err.Error())
	}
	if f.Source == nil {
		panic("model/price: prices.json has no source")
	}
	return newTable(f, nil, "")
})

var overridden atomic.Pointer[Table]

// Current is the table Lookup and Find price by: the embedded one, with
// the override file LoadOverride last loaded.
func Current() *Table {
	if t := overridden.Load(); t != nil {
		return t
	}
	return base()
}

// OverrideFile is the path of the user's override file: $RATCHET_PRICES,
// which must exist, else $XDG_CONFIG_HOME/ratchet/prices.json
// (~/.config/ratchet/prices.json), used if it exists.
func OverrideFile(getenv func(string) string) (path string, required bool) {
	if p := getenv("RATCHET_PRICES"); p != "" {
		return p, true
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", false
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "ratchet", "prices.json"), false
}

// LoadOverride reads the override file OverrideFile names, if any, and
// returns the table it makes with the embedded one, which Lookup and Find
// price by from now on; without a file, the embedded table alone. A file
// that cannot be read or parsed is an error naming it, and leaves the
// prices as they were.
func LoadOverride(getenv func(string) string) (*Table, error) {
	path, required := OverrideFile(getenv)
	if path == "" {
		overridden.Store(nil)
		return base(), nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		overridden.Store(nil)
		return base(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("prices file: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("prices file %s%s: %w", path, position(data, err), err)
	}
	t := newTable(base().file, f, path)
	overridden.Store(t)
	return t, nil
}

// Overrides is the path of t's override file, or "".
func (t *Table) Overrides() string {
	return t.overrides
}

// position is where in data a JSON error is, as ":LINE:COLUMN", or "".
func position(data []byte, err error) string {
	offset := int64(-1)
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn):
		offset = syn.ByteOffset
	case errors.As(err, &sem):
		offset = sem.ByteOffset
	}
	if offset < 0 || offset > int64(len(data)) {
		return ""
	}
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf(":%d:%d", line, col)
}
