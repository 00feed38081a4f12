package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/store"
)

// lsCommand is 'ratchet ls'.
type lsCommand struct{ *Main }

// run lists stored runs.
func (m lsCommand) run(ctx context.Context, args []string) int {
	var (
		db, status, label, since string
		limit                    int
		asJSON                   bool
	)
	fs := flag.NewFlagSet("ratchet ls", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.StringVar(&status, "status", "", "only runs with these statuses, comma-separated; a trailing colon matches a family (exhausted:, stalled:)")
	fs.StringVar(&label, "label", "", "only runs with this label")
	fs.IntVar(&limit, "limit", 20, "at most this many runs, newest first (0 for all)")
	fs.StringVar(&since, "since", "", "only runs started within this long (1h, 30m, 7d)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	setUsage(fs, "Usage: ratchet ls [flags]\n\nLists runs, newest first: status, goal, steps, cost and age.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return exitUsage
	}
	var window time.Duration
	if since != "" {
		d, err := parseAge(since)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet ls: --since: %v\n", err)
			return exitUsage
		}
		window = d
	}
	s, err := m.openStore(ctx, db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ls: %v\n", err)
		return exitInfra
	}
	defer s.Close()
	filter := store.Filter{Label: label, Limit: limit}
	if status != "" {
		filter.Status = strings.Split(status, ",")
		if bad := unknownStatuses(filter.Status); len(bad) > 0 {
			fmt.Fprintf(m.Stderr, "ratchet ls: --status: %s: not a status (%s)\n", strings.Join(bad, ", "), strings.Join(knownStatuses(), ", "))
			return exitUsage
		}
	}
	if limit > 0 {
		filter.Limit = limit + 1 // one more says whether there are more
	}
	if window > 0 {
		filter.Limit = 0 // the cap applies after the time filter
	}
	runs, err := s.ListRuns(ctx, filter)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ls: %v\n", err)
		return exitInfra
	}
	if window > 0 {
		cutoff := time.Now().Add(-window)
		// Newest first, so the runs inside the window are a prefix.
		n := 0
		for n < len(runs) && !runs[n].Created.Before(cutoff) {
			n++
		}
		runs = runs[:n]
	}
	more := limit > 0 && len(runs) > limit
	if more {
		runs = runs[:limit]
	}
	if asJSON {
		return m.printRunsJSON(runs)
	}
	return m.printTable(runs, more, limit)
}

// printRunsJSON prints runs as a JSON array.
func (m lsCommand) printRunsJSON(runs []store.Run) int {
	type row struct {
		ID string `json:"id"`
		// Parent is the run a sub-agent's run belongs to.
		Parent     string    `json:"parent,omitempty"`
		Status     string    `json:"status"`
		Goal       string    `json:"goal"`
		Labels     []string  `json:"labels,omitempty"`
		Steps      int64     `json:"steps"`
		CostMicros int64     `json:"cost_micros"`
		Question   string    `json:"question,omitempty"`
		Created    time.Time `json:"created"`
		Updated    time.Time `json:"updated"`
		// Interrupted: running, but the process carrying it out is gone.
		Interrupted bool `json:"interrupted,omitempty"`
		// ForkOf and ForkSeq: the run and entry this one was forked from.
		ForkOf  string `json:"fork_of,omitempty"`
		ForkSeq int64  `json:"fork_seq,omitempty"`
	}
	out := make([]row, len(runs))
	for i, r := range runs {
		out[i] = row{r.ID, r.Parent, r.Status, r.Goal, r.Labels, r.Steps, r.CostMicros, r.Question, r.Created, r.Updated, interrupted(r, time.Now()), r.ForkOf, r.ForkSeq}
	}
	return m.Main.printJSON("ratchet ls", out)
}

// printTable prints runs as a table, and on stderr what it left out: more
// says that runs beyond limit match.
func (m lsCommand) printTable(runs []store.Run, more bool, limit int) int {
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTEPS\tCOST\tAGE\tGOAL")
	now := time.Now()
	for _, r := range runs {
		goal := oneLine(r.Goal, 60)
		if r.ForkOf != "" {
			goal = fmt.Sprintf("(fork of %s@%d) %s", r.ForkOf, r.ForkSeq, goal)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, shownStatus(r, now), r.Steps, budget.Micros(r.CostMicros), observe.Age(now.Sub(r.Created)), goal)
	}
	tw.Flush()
	switch {
	case len(runs) == 0:
		fmt.Fprintln(m.Stderr, "no runs match")
	case more:
		fmt.Fprintf(m.Stderr, "the %d newest shown; more match (--limit 0 shows all, --limit N more)\n", limit)
	}
	return exitDone
}

// knownStatuses are what --status takes: every final status, each
// family with its trailing colon, and the statuses of unfinished runs.
func knownStatuses() []string {
	out := []string{string(loop.Done), string(loop.Escalated), string(loop.Failed), string(loop.Cancelled), store.StatusRunning, store.StatusAwaitingInput, "exhausted:", "stalled:"}
	for _, d := range budget.Dimensions {
		out = append(out, string(loop.Exhausted(d)))
	}
	for _, p := range progress.Patterns {
		out = append(out, string(loop.Stalled(p)))
	}
	return out
}

func unknownStatuses(given []string) []string {
	var bad []string
	for _, g := range given {
		if !slices.Contains(knownStatuses(), g) {
			bad = append(bad, strconv.Quote(g))
		}
	}
	return bad
}
