package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/store"
)

// rmCommand is 'ratchet rm' and 'ratchet gc'.
type rmCommand struct{ *Main }

// rm deletes runs by ID (or prefix, or "last"), with their sub-agents.
func (m rmCommand) rm(ctx context.Context, args []string) int {
	var db string
	fs := flag.NewFlagSet("ratchet rm", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	setUsage(fs, "Usage: ratchet rm RUN... [flags]\n\nDeletes runs, their logs, their sub-agents' runs and the workspace copies they kept. A running run is never deleted.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) == 0 {
		fs.Usage()
		return exitUsage
	}
	s, err := m.openStore(ctx, db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet rm: %v\n", err)
		return exitInfra
	}
	defer s.Close()
	exit := exitDone
	for _, arg := range pos {
		row, err := findRun(ctx, s, arg)
		if err == nil {
			err = deleteRun(ctx, s, row)
		}
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet rm: %v\n", err)
			exit = max(exit, runErrCode(err))
			continue
		}
		fmt.Fprintf(m.Stdout, "deleted %s\n", row.ID)
	}
	return exit
}

// gc deletes finished runs that have not changed for a while.
func (m rmCommand) gc(ctx context.Context, args []string) int {
	var (
		db, olderThan string
		dryRun        bool
	)
	fs := flag.NewFlagSet("ratchet gc", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.StringVar(&olderThan, "older-than", "", "delete finished runs last updated longer ago than this (30d, 12h, 90m); required")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be deleted, delete nothing")
	setUsage(fs, "Usage: ratchet gc --older-than AGE [flags]\n\nDeletes finished runs (with their logs and sub-agents' runs) that have not\nchanged for AGE. Running runs and runs waiting for a person are kept.\nAlso removes the sandbox directories that killed ratchet processes left\nin the temporary directory (a live process's are kept).\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 0 || olderThan == "" {
		fs.Usage()
		return exitUsage
	}
	maxAge, err := parseAge(olderThan)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet gc: --older-than: %v\n", err)
		return exitUsage
	}
	s, err := m.openStore(ctx, db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet gc: %v\n", err)
		return exitInfra
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, store.Filter{})
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet gc: %v\n", err)
		return exitInfra
	}
	cutoff := time.Now().Add(-maxAge)
	deleted := 0
	for _, r := range runs {
		// Sub-agents go with their parent, never on their own: a parent
		// that is kept keeps its children's logs.
		if r.Parent != "" || !finished(r.Status) || !r.Updated.Before(cutoff) {
			continue
		}
		if dryRun {
			fmt.Fprintf(m.Stdout, "would delete %s (%s, %s old)\n", r.ID, r.Status, observe.Age(time.Since(r.Updated)))
			deleted++
			continue
		}
		if err := deleteRun(ctx, s, r); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet gc: %v\n", err)
			return exitInfra
		}
		deleted++
	}
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	fmt.Fprintf(m.Stderr, "ratchet gc: %s %d run(s) last updated before %s\n", verb, deleted, cutoff.Local().Format(time.RFC3339))
	if dryRun {
		return exitDone
	}
	swept, err := sandbox.Sweep()
	if swept.Runs > 0 {
		fmt.Fprintf(m.Stderr, "ratchet gc: removed %d sandbox directory(ies) left by killed processes (%.1f MiB)\n", swept.Runs, float64(swept.Bytes)/(1<<20))
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet gc: sandboxes: %v\n", err)
		return exitInfra
	}
	return exitDone
}

// finished tells a final status from one of a run still under way.
func finished(status string) bool {
	return status != store.StatusRunning && status != store.StatusAwaitingInput
}

// deleteRun deletes row and, first, its sub-agents' runs, refusing when
// any of them is running (an interrupted run, whose process is gone, may go).
func deleteRun(ctx context.Context, s store.Store, row store.Run) error {
	if row.Status == store.StatusRunning && !interrupted(row, time.Now()) {
		return userErr("run %s is running; it is not deleted (stop it first)", row.ID)
	}
	children, err := s.ListRuns(ctx, store.Filter{Parent: row.ID})
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := deleteRun(ctx, s, c); err != nil {
			return err
		}
	}
	if err := s.DeleteRun(ctx, row.ID); err != nil {
		return err
	}
	return removeWorkspaceCopy(row)
}

// removeWorkspaceCopy removes the workspace copy (or layer) a deleted
// copy_workspace run worked in, which nothing else reads: a resumed or
// forked run needs it while its run exists, so it outlives the process that
// made it. Only a directory patch.Begin or BeginLayer made is removed.
func removeWorkspaceCopy(row store.Run) error {
	var info taskInfo
	if json.Unmarshal(row.Task, &info) != nil || info.Start == nil {
		return nil
	}
	dir := info.Start.Dir()
	if !strings.HasPrefix(filepath.Base(dir), "ratchet-workspace-") {
		return nil
	}
	if err := info.Start.End(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("run %s is deleted, but not its workspace copy %s: %w", row.ID, dir, err)
	}
	return nil
}

// parseAge reads a duration as time.ParseDuration does, plus whole days
// ("30d"), since that is how old runs are talked about.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age like 30d, 12h or 90m", s)
	}
	return d, nil
}
