package price

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/ratchetloop/ratchet/budget"
)

// File is a price file: the embedded prices.json, generated from the
// source it names, and a user's override file, which has the same format
// (docs/prices.md). Its shape is that of the @pydantic/genai-prices data,
// kept to the prices ratchet bills, so that an entry can be copied from
// that data as it is.
type File struct {
	// Source says where the prices came from; an override file may omit it.
	Source *Source `json:"source,omitzero"`
	// Providers are ratchet's provider names ("anthropic", "openai",
	// "gemini") to their models, tried in order: the first entry that
	// matches a model name prices it.
	Providers map[string][]Entry `json:"providers"`
}

// Source names the data a file was generated from.
type Source struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Published string `json:"published"` // the version's release date, YYYY-MM-DD
	Licence   string `json:"licence"`
	URL       string `json:"url"`
	Integrity string `json:"integrity,omitzero"` // of the package the data was taken from
}

func (s Source) String() string {
	return fmt.Sprintf("%s %s (%s, %s licence)", s.Name, s.Version, s.Published, s.Licence)
}

// Entry is one model's prices.
type Entry struct {
	ID string `json:"id"`
	// Match says which model names the entry prices; without it, the
	// name equal to ID.
	Match *Match `json:"match,omitzero"`
	// Prices are the entry's prices, or its prices over time.
	Prices Prices `json:"prices"`
	// Comment is the source's note on the prices, if any.
	Comment string `json:"comment,omitzero"`
}

// Match is the source's match logic: exactly one of its fields is set.
// Equals, StartsWith, EndsWith and Contains compare case-insensitively;
// Regex is an ECMAScript regular expression, as the source's JavaScript
// runs it, tried on the lower-cased name.
type Match struct {
	Equals     *string `json:"equals,omitzero"`
	StartsWith *string `json:"starts_with,omitzero"`
	EndsWith   *string `json:"ends_with,omitzero"`
	Contains   *string `json:"contains,omitzero"`
	Regex      *string `json:"regex,omitzero"`
	And        []Match `json:"and,omitzero"`
	Or         []Match `json:"or,omitzero"`

	re *regexp2.Regexp
}

// matchTimeout bounds a regex match: a user's pattern may backtrack
// catastrophically, and a model name is short.
const matchTimeout = 100 * time.Millisecond

// UnmarshalJSONFrom decodes m and checks it has one operator and a
// regex that compiles.
func (m *Match) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain Match
	var p plain
	if err := jsonv2.UnmarshalDecode(dec, &p); err != nil {
		return err
	}
	*m = Match(p)
	n := 0
	for _, set := range []bool{m.Equals != nil, m.StartsWith != nil, m.EndsWith != nil, m.Contains != nil, m.Regex != nil, m.And != nil, m.Or != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("a match needs exactly one of equals, starts_with, ends_with, contains, regex, and, or")
	}
	if m.Regex != nil {
		re, err := regexp2.Compile(*m.Regex, regexp2.ECMAScript)
		if err != nil {
			return fmt.Errorf("regex %q: %w", *m.Regex, err)
		}
		re.MatchTimeout = matchTimeout
		m.re = re
	}
	return nil
}

// matches reports whether m matches name, which is lower-cased.
func (m *Match) matches(name string) bool {
	switch {
	case m.Equals != nil:
		return name == strings.ToLower(*m.Equals)
	case m.StartsWith != nil:
		return strings.HasPrefix(name, strings.ToLower(*m.StartsWith))
	case m.EndsWith != nil:
		return strings.HasSuffix(name, strings.ToLower(*m.EndsWith))
	case m.Contains != nil:
		return strings.Contains(name, strings.ToLower(*m.Contains))
	case m.re != nil:
		ok, err := m.re.MatchString(name)
		return ok && err == nil // a timeout is no match
	case m.And != nil:
		for i := range m.And {
			if !m.And[i].matches(name) {
				return false
			}
		}
		return true
	}
	for i := range m.Or {
		if m.Or[i].matches(name) {
			return true
		}
	}
	return false
}

// Prices are an entry's prices: one set, or sets that each apply from a
// date, in the file as an object or a list of {"constraint":
// {"start_date": "YYYY-MM-DD"}, "prices": {...}} (the first without a
// constraint).
type Prices struct {
	Dated []Dated
}

// Dated is a set of prices and the day they apply from (zero: always).
type Dated struct {
	Constraint *Constraint `json:"constraint,omitzero"`
	Prices     ModelPrice  `json:"prices"`
}

// Constraint is when a Dated set starts applying (the source's
// time-of-day prices are not supported: no provider ratchet has uses them).
type Constraint struct {
	StartDate string `json:"start_date"`
	Type      string `json:"type,omitzero"` // "start_date" or empty

	start time.Time
}

// UnmarshalJSONFrom decodes c and checks its date.
func (c *Constraint) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	type plain Constraint
	var p plain
	if err := jsonv2.UnmarshalDecode(dec, &p); err != nil {
		return err
	}
	*c = Constraint(p)
	if c.Type != "" && c.Type != "start_date" {
		return fmt.Errorf("constraint type %q is not supported (only start_date)", c.Type)
	}
	t, err := time.Parse(time.DateOnly, c.StartDate)
	if err != nil {
		return fmt.Errorf("start_date %q is not a YYYY-MM-DD date", c.StartDate)
	}
	c.start = t
	return nil
}

// MarshalJSONTo writes p as an object when it has one undated set.
func (p Prices) MarshalJSONTo(enc *jsontext.Encoder) error {
	if len(p.Dated) == 1 && p.Dated[0].Constraint == nil {
		return jsonv2.MarshalEncode(enc, p.Dated[0].Prices)
	}
	return jsonv2.MarshalEncode(enc, p.Dated)
}

// UnmarshalJSONFrom reads an object or a list of dated sets.
func (p *Prices) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		var one ModelPrice
		if err := jsonv2.UnmarshalDecode(dec, &one); err != nil {
			return err
		}
		p.Dated = []Dated{{Prices: one}}
		return nil
	}
	if err := jsonv2.UnmarshalDecode(dec, &p.Dated); err != nil {
		return err
	}
	if len(p.Dated) == 0 {
		return errors.New("an empty list of prices")
	}
	return nil
}

// at is the set that applies at t: as the source picks it, the last set
// whose start date has come, else the first.
func (p Prices) at(t time.Time) ModelPrice {
	for _, d := range slices.Backward(p.Dated) {
		if d.Constraint == nil || !t.Before(d.Constraint.start) {
			return d.Prices
		}
	}
	return p.Dated[0].Prices
}

// ModelPrice is a set of prices in USD per million tokens. A missing
// cache price bills those tokens as input, as the source does; a missing
// input or output price leaves the model without a price.
type ModelPrice struct {
	Input      *Rate `json:"input_mtok,omitzero"`
	Output     *Rate `json:"output_mtok,omitzero"`
	CacheRead  *Rate `json:"cache_read_mtok,omitzero"`
	CacheWrite *Rate `json:"cache_write_mtok,omitzero"`
}

// Rate is a price in USD per million tokens: a number, or in the file
// {"base": N, "tiers": [{"start": TOKENS, "price": N}]}, where a request
// whose prompt (input, cache read and cache write tokens together) is
// longer than a tier's start pays the tier's price for all its tokens.
type Rate struct {
	Base  float64 `json:"base"`
	Tiers []Step  `json:"tiers,omitzero"`
}

// Step is a Rate's price above a prompt length.
type Step struct {
	Start int64   `json:"start"`
	Price float64 `json:"price"`
}

// maxRate bounds a price, so that a cost cannot overflow: the dearest
// model's output costs hundreds of dollars per million tokens.
const maxRate = 10_000

// MarshalJSONTo writes an untiered rate as a number.
func (r Rate) MarshalJSONTo(enc *jsontext.Encoder) error {
	if len(r.Tiers) == 0 {
		return jsonv2.MarshalEncode(enc, r.Base)
	}
	type plain Rate
	return jsonv2.MarshalEncode(enc, plain(r))
}

// UnmarshalJSONFrom reads a number or a tiered rate, and checks each
// price converts to whole micro-USD per million tokens.
func (r *Rate) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == '0' {
		if err := jsonv2.UnmarshalDecode(dec, &r.Base); err != nil {
			return err
		}
	} else {
		// Pointers, so that a missing or null price is an error, not 0.
		var p struct {
			Base  *float64 `json:"base"`
			Tiers []struct {
				Start *int64   `json:"start"`
				Price *float64 `json:"price"`
			} `json:"tiers"`
		}
		if err := jsonv2.UnmarshalDecode(dec, &p); err != nil {
			return err
		}
		if p.Base == nil {
			return errors.New(`a tiered price needs a "base"`)
		}
		*r = Rate{Base: *p.Base}
		for _, t := range p.Tiers {
			if t.Start == nil || t.Price == nil {
				return errors.New(`a tier needs a "start" and a "price"`)
			}
			r.Tiers = append(r.Tiers, Step{Start: *t.Start, Price: *t.Price})
		}
	}
	if _, err := micros(r.Base); err != nil {
		return err
	}
	for _, s := range r.Tiers {
		if s.Start < 0 || s.Start == math.MaxInt64 {
			return fmt.Errorf("tier start %d is not a prompt length", s.Start)
		}
		if _, err := micros(s.Price); err != nil {
			return err
		}
	}
	slices.SortStableFunc(r.Tiers, func(a, b Step) int { return cmp.Compare(a.Start, b.Start) })
	return nil
}

// micros converts USD per million tokens to micro-USD per million tokens.
func micros(usd float64) (budget.Micros, error) {
	if !(usd >= 0 && usd <= maxRate) {
		return 0, fmt.Errorf("price %v is not between 0 and %d USD per million tokens", usd, maxRate)
	}
	m := math.Round(usd * 1e6)
	if math.Abs(m-usd*1e6) > 1e-3 {
		return 0, fmt.Errorf("price %v is finer than a micro-USD per million tokens", usd)
	}
	return budget.Micros(m), nil
}

// at is r's price for a prompt of n tokens.
func (r *Rate) at(n int64) budget.Micros {
	usd := r.Base
	for _, s := range r.Tiers {
		if n > s.Start {
			usd = s.Price
		}
	}
	m, _ := micros(usd) // checked when decoded
	return m
}

// price is mp as a Price, or false without an input and an output price.
func (mp ModelPrice) price() (Price, bool) {
	if mp.Input == nil || mp.Output == nil {
		return Price{}, false
	}
	var starts []int64
	for _, r := range []*Rate{mp.Input, mp.Output, mp.CacheRead, mp.CacheWrite} {
		if r != nil {
			for _, s := range r.Tiers {
				starts = append(starts, s.Start)
			}
		}
	}
	slices.Sort(starts)
	p := mp.rates(-1)
	for _, s := range slices.Compact(starts) {
		// One past the start is the first prompt length the tier prices.
		t := mp.rates(s + 1)
		p.Tiers = append(p.Tiers, Tier{Above: s, Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite})
	}
	return p, true
}

// rates are mp's prices for a prompt of n tokens, with the missing cache
// prices taken as the input's.
func (mp ModelPrice) rates(n int64) Price {
	p := Price{Input: mp.Input.at(n), Output: mp.Output.at(n)}
	p.CacheRead, p.CacheWrite = p.Input, p.Input
	if mp.CacheRead != nil {
		p.CacheRead = mp.CacheRead.at(n)
	}
	if mp.CacheWrite != nil {
		p.CacheWrite = mp.CacheWrite.at(n)
	}
	return p
}

// Parse reads a price file, strictly: an unknown field, a duplicate one,
// a malformed match or price is an error that says where it is.
func Parse(data []byte) (*File, error) {
	var f File
	if err := jsonv2.Unmarshal(data, &f, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, err
	}
	for provider, entries := range f.Providers {
		if !slices.Contains(Providers, provider) {
			return nil, fmt.Errorf("providers: unknown provider %q (want %s)", provider, strings.Join(Providers, ", "))
		}
		seen := map[string]bool{}
		for i, e := range entries {
			if e.ID == "" {
				return nil, fmt.Errorf("providers.%s[%d]: an entry needs an id", provider, i)
			}
			if seen[e.ID] {
				return nil, fmt.Errorf("providers.%s[%d]: id %q appears twice", provider, i, e.ID)
			}
			seen[e.ID] = true
			if len(e.Prices.Dated) == 0 {
				return nil, fmt.Errorf("providers.%s[%d] (%s): no prices", provider, i, e.ID)
			}
		}
	}
	return &f, nil
}
