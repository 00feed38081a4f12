package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/temporal"
)

// sayCommand is 'ratchet say'.
type sayCommand struct{ *Main }

// run queues a message for a running run's next model turn.
func (m sayCommand) run(ctx context.Context, args []string) int {
	var dbFlag string
	fs := flag.NewFlagSet("ratchet say", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&dbFlag, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	setUsage(fs, "Usage: ratchet say RUN MESSAGE\n\nQueues MESSAGE for RUN's next model turn, which sees it after the results of the\nturn before; the run's log records it (a user_message event). A run carried out\nby another process takes it at its next step; a run waiting for a person or\ninterrupted takes it when carried on.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 2 {
		fs.Usage()
		return exitUsage
	}
	db, row, code := m.openRun(ctx, "say", dbFlag, pos[0])
	if db == nil {
		return code
	}
	defer db.Close()
	if onTemporal(row) {
		return m.sayTemporal(ctx, row, pos[1])
	}
	if err := runner.Say(ctx, db, row.ID, pos[1]); err != nil {
		fmt.Fprintf(m.Stderr, "ratchet say: %v\n", err)
		if errors.Is(err, runner.ErrFinished) || errors.Is(err, store.ErrNotFound) {
			return exitUsage
		}
		return exitInfra
	}
	fmt.Fprintf(m.Stderr, "ratchet say: queued for run %s\n", row.ID)
	if row.Status != store.StatusRunning || interrupted(row, time.Now()) {
		fmt.Fprintf(m.Stderr, "ratchet say: run %s is %s: it sees the message once carried on (ratchet resume %[1]s, or answer it)\n", row.ID, shownStatus(row, time.Now()))
	}
	return exitDone
}

// sayTemporal sends the message to the run's workflow by Update.
func (m sayCommand) sayTemporal(ctx context.Context, row store.Run, text string) int {
	var info taskInfo
	_ = json.Unmarshal(row.Task, &info) // onTemporal read it
	c, err := dialTemporal(ctx, info.Temporal, info.Namespace, m.Stderr)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet say: %v\n", err)
		return exitInfra
	}
	defer c.Close()
	if err := temporal.SendSay(ctx, c, row.ID, text); err != nil {
		fmt.Fprintf(m.Stderr, "ratchet say: run %s: %v\n", row.ID, err)
		return exitUsage
	}
	fmt.Fprintf(m.Stderr, "ratchet say: queued for run %s (on Temporal)\n", row.ID)
	return exitDone
}
