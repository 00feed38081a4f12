package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
)

// replayCmd re-drives the current core over a recorded log.
func (m *Main) replayCmd(args []string) int {
	fs := flag.NewFlagSet("ratchet replay", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: ratchet replay LOG.jsonl

Feeds the events of a recorded run (the JSONL log of 'ratchet run') to this
build of the loop core and checks that it issues the same commands and notes.
Exit 0 when identical, 1 at the first divergence (printed), 2 when the log
cannot be read.
`)
	}
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(m.Stderr, "ratchet replay: want exactly one log file")
		fs.Usage()
		return exitUsage
	}
	f, err := os.Open(pos[0])
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet replay: %v\n", err)
		return exitUsage
	}
	defer f.Close()
	records, err := observe.ReadJSONL(f)
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
