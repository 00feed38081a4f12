package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/model/provider"
)

// pricesCommand is 'ratchet prices'.
type pricesCommand struct{ *Main }

// run shows what models cost and where each figure came from.
func (m pricesCommand) run(args []string) int {
	fs := flag.NewFlagSet("ratchet prices", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	setUsage(fs, `Usage: ratchet prices MODEL...

Shows a model's prices per million tokens (input, output, cache read and
write, long-context tiers, dated changes), the entry that matched its name
and where the figures came from: the embedded table, from
`+price.EmbeddedSource().String()+`, or the override file
($RATCHET_PRICES, else $XDG_CONFIG_HOME/ratchet/prices.json; docs/prices.md).
MODEL is a model string (openai:gpt-4.1) or a bare name, looked up for every
provider that prices it. A model with no price exits 1.
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) == 0 {
		fs.Usage()
		return exitUsage
	}
	table, err := price.LoadOverride(m.Getenv)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet prices: %v\n", err)
		return exitUsage
	}
	exit := exitDone
	for i, arg := range pos {
		if i > 0 {
			fmt.Fprintln(m.Stdout)
		}
		found, err := findPrices(table, arg)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet prices: %v\n", err)
			exit = exitNotDone
			continue
		}
		for j, f := range found {
			if j > 0 {
				fmt.Fprintln(m.Stdout)
			}
			printPrice(m.Stdout, f)
		}
	}
	return exit
}

// findPrices finds a model string's price, or a bare name's (what does
// not parse as a model string, llama3.1:8b as well) with every provider
// that prices it.
func findPrices(table *price.Table, arg string) ([]price.Found, error) {
	if sp, err := provider.Parse(arg); err == nil {
		switch sp.Provider {
		case "openai-compatible":
			return nil, fmt.Errorf("%s: an OpenAI-compatible server's models have no price in the table (give one with the provider's Price)", arg)
		case "scripted":
			return nil, fmt.Errorf("%s: a scripted model is free", arg)
		case "openai-responses":
			sp.Provider = "openai"
		}
		f, err := table.Find(sp.Provider, sp.Model)
		if err != nil {
			return nil, err
		}
		return []price.Found{f}, nil
	}
	var found []price.Found
	var errs []error
	for _, p := range price.Providers {
		f, err := table.Find(p, arg)
		if err == nil {
			found = append(found, f)
		} else if f.Entry.ID != "" {
			errs = append(errs, err) // a match without a per-token price says why
		}
	}
	if len(found) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("model %q has no known price: no entry of %s matches it", arg, strings.Join(price.Providers, ", "))
	}
	return found, nil
}

func printPrice(w io.Writer, f price.Found) {
	match := "its id"
	if f.Entry.Match != nil {
		b, _ := jsonv2.Marshal(f.Entry.Match) // a decoded Match always marshals
		match = string(b)
	}
	fmt.Fprintf(w, "%s:%s\n", f.Provider, f.Model)
	fmt.Fprintf(w, "  entry        %s, matched by %s\n", f.Entry.ID, match)
	fmt.Fprintf(w, "  source       %s\n", f.Source)
	p := f.Price
	fmt.Fprintf(w, "  input        %s\n", usd(p.Input))
	fmt.Fprintf(w, "  output       %s (reasoning tokens included)\n", usd(p.Output))
	fmt.Fprintf(w, "  cache read   %s%s\n", usd(p.CacheRead), asInput(f.Set.CacheRead))
	fmt.Fprintf(w, "  cache write  %s%s\n", usd(p.CacheWrite), asInput(f.Set.CacheWrite))
	for _, t := range p.Tiers {
		fmt.Fprintf(w, "  above %d prompt tokens, the whole request: input %s, output %s, cache read %s, cache write %s\n",
			t.Above, usd(t.Input), usd(t.Output), usd(t.CacheRead), usd(t.CacheWrite))
	}
	today := time.Now().UTC().Format(time.DateOnly)
	for _, d := range f.Entry.Prices.Dated {
		if d.Constraint != nil && d.Constraint.StartDate > today {
			line := "no per-token price"
			if d.Prices.Input != nil && d.Prices.Output != nil {
				line = "input " + rate(d.Prices.Input) + ", output " + rate(d.Prices.Output)
			}
			fmt.Fprintf(w, "  from %s: %s\n", d.Constraint.StartDate, line)
		}
	}
	if f.Entry.Comment != "" {
		fmt.Fprintf(w, "  note         %s\n", f.Entry.Comment)
	}
}

func asInput(r *price.Rate) string {
	if r == nil {
		return " (billed as input: the source gives no price of its own)"
	}
	return ""
}

// usd is a price per million tokens in dollars.
func usd(m budget.Micros) string {
	return "$" + strconv.FormatFloat(float64(m)/1e6, 'f', -1, 64) + "/M"
}

func rate(r *price.Rate) string {
	s := "$" + strconv.FormatFloat(r.Base, 'f', -1, 64) + "/M"
	for _, t := range r.Tiers {
		s += fmt.Sprintf(" ($%s/M above %d prompt tokens)", strconv.FormatFloat(t.Price, 'f', -1, 64), t.Start)
	}
	return s
}
