package main

import (
	"fmt"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/cache"
	"github.com/ratchetloop/ratchet/model/scripted"
)

// cacheHelp is the --cache flag's text, shared by run and eval run.
const cacheHelp = "answer model requests already answered from the response cache in this directory (a SQLite file,\n" +
	"shared by runs and processes), and keep new replies there; see docs/providers.md#response-cache"

// openCache opens --cache DIR into m.cache, so that the models opened
// after it are answered from it. done closes it and, unless quiet, says how
// many calls it saved.
func (m *Main) openCache(cmd, dir string, quiet bool) (done func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	c, err := cache.Open(cache.Config{Dir: dir, Redactor: m.secrets})
	if err != nil {
		return nil, fmt.Errorf("--cache: %w", err)
	}
	m.cache = c
	return func() {
		s := c.Stats()
		switch {
		case quiet:
		case s.Hits+s.Misses == 0:
			fmt.Fprintf(m.Stderr, "%s: cache %s: no model was answered from it (scripted models are not)\n", cmd, dir)
		default:
			fmt.Fprintf(m.Stderr, "%s: cache %s: %d replies from the cache, %d model calls\n", cmd, dir, s.Hits, s.Misses)
		}
		if s.Failures > 0 { // the runs went on without the cache where it failed
			fmt.Fprintf(m.Stderr, "%s: cache %s: %d reads or writes failed; the last: %v\n", cmd, dir, s.Failures, s.Last)
		}
		c.Close()
		m.cache = nil
	}, nil
}

// cached wraps mdl in m.cache under scope, when there is a cache. A
// scripted model is not: it is offline and free, and its turns play in
// order, which a reply from elsewhere would put out of step.
func (m *Main) cached(mdl model.Model, scope string) model.Model {
	if m.cache == nil {
		return mdl
	}
	if _, ok := mdl.(*scripted.Model); ok {
		return mdl
	}
	return m.cache.Wrap(mdl, "", scope)
}
