package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ratchetloop/ratchet/model/limit"
)

// modelFlag adds --model to fs: repeated or comma-separated, its models
// are a fallback chain, tried in order, kept in *dst joined by commas.
func modelFlag(fs *flag.FlagSet, dst *string, usage string) {
	fs.Func("model", usage+"; repeat it, or join models with commas, for a fallback chain: the next takes a call the one before could not answer (overloaded, rate limited)", func(s string) error {
		if s = strings.TrimSpace(s); s != "" {
			if *dst != "" {
				*dst += ","
			}
			*dst += s
		}
		return nil
	})
}

// providerLimitFlag adds --provider-limit to fs, tightening m.limits;
// kept, when not nil, collects the flags given.
func (m *Main) providerLimitFlag(fs *flag.FlagSet, kept *[]string) {
	fs.Func("provider-limit", "limits every run of this process, and every process on the same run database, shares on a provider (repeatable), PROVIDER:FIELD=N,...: fields requests_per_minute, tokens_per_minute, max_in_flight, e.g. anthropic:requests_per_minute=50,max_in_flight=8 (see docs/providers.md)", func(s string) error {
		name, l, err := limit.ParseFlag(s)
		if err != nil {
			return err
		}
		m.limits.Set(name, l)
		if kept != nil {
			*kept = append(*kept, s)
		}
		return nil
	})
}

// applyProviderLimits tightens m.limits with --provider-limit flags a run
// was started with, as its resume carries it on.
func (m *Main) applyProviderLimits(flags []string) error {
	for _, s := range flags {
		name, l, err := limit.ParseFlag(s)
		if err != nil {
			return fmt.Errorf("the run's --provider-limit %q: %w", s, err)
		}
		m.limits.Set(name, l)
	}
	return nil
}
