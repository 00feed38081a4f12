package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
)

// replayCommand is 'ratchet replay'.
type replayCommand struct{ *Main }

// run re-drives the current core over a recorded log.
func (m replayCommand) run(ctx context.Context, args []string) int {
	var db string
	fs := flag.NewFlagSet("ratchet replay", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	setUsage(fs, `Usage: ratchet replay RUN|LOG.jsonl [--db DB]

Feeds the events of a recorded run (a run in the database, or a JSONL log
written by 'ratchet run --log') to this build of the loop core and checks
that it issues the same commands and notes. Exit 0 when identical, 1 at the
first divergence (printed), 2 when the log cannot be read.

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(m.Stderr, "ratchet replay: want exactly one log file")
		fs.Usage()
		return exitUsage
	}
	records, err := m.records(ctx, pos[0], db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet replay: %s: %v\n", pos[0], err)
		return exitUsage
	}
	sum, err := replay.Run(records)
	var div *replay.Divergence
	switch {
	case errors.As(err, &div):
		fmt.Fprintf(m.Stdout, "%s: DIVERGED %v\n", pos[0], div)
		return exitNotDone
	case err != nil:
		fmt.Fprintf(m.Stderr, "ratchet replay: %s: %v\n", pos[0], err)
		return exitUsage
	}
	fmt.Fprintf(m.Stdout, "%s: run %s replayed: %d events, %d notes and commands, identical\n", pos[0], sum.Run, sum.Events, sum.Outputs)
	return exitDone
}

// records reads a run's log from a JSONL file, or else from the database.
func (m replayCommand) records(ctx context.Context, arg, db string) ([]observe.Record, error) {
	f, err := os.Open(arg)
	if err == nil {
		defer f.Close()
		recs, err := observe.ReadJSONL(f)
		if err != nil || len(recs) == 0 {
			return recs, err
		}
		// A log may also hold the entries of the run's sub-agents (their
		// own runs, replayed by their IDs): keep the first run's.
		return slices.DeleteFunc(recs, func(r observe.Record) bool { return r.Run != recs[0].Run }), nil
	}
	// Not a file: a run ID, which may hold slashes (a sub-agent's
	// PARENT/cN, an eval's LABEL/CASE/rN). A missing *.jsonl is a log.
	if !errors.Is(err, os.ErrNotExist) || strings.HasSuffix(arg, ".jsonl") {
		return nil, err
	}
	s, err := m.openStore(ctx, db)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	row, err := findRun(ctx, s, arg)
	if err != nil {
		return nil, fmt.Errorf("%w, and no such log file", err)
	}
	return runner.LoadLog(ctx, s, row.ID)
}
