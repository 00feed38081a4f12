package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ratchetloop/ratchet/store"
)

// lastRun is the run argument that names the newest top-level run.
const lastRun = "last"

// userError is an error in what the user asked for (an argument that
// names no run, a run that may not be deleted): commands exit with the
// usage code for it.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func userErr(format string, args ...any) error { return &userError{fmt.Sprintf(format, args...)} }

// findRun resolves a run argument as people type it: a whole run ID, the
// word "last" (the newest run that is not a sub-agent's), or a prefix of
// exactly one run's ID (top-level runs first).
func findRun(ctx context.Context, s store.Store, arg string) (store.Run, error) {
	if arg == "" {
		return store.Run{}, userErr("an empty run ID")
	}
	row, err := s.Run(ctx, arg)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return row, err
	}
	all, err := s.ListRuns(ctx, store.Filter{})
	if err != nil {
		return store.Run{}, err
	}
	if arg == lastRun {
		for _, r := range all { // newest first
			if r.Parent == "" {
				return r, nil
			}
		}
		return store.Run{}, userErr("no runs in DB yet, so no last one (ratchet run TASK.yaml starts one)")
	}
	// A sub-agent's ID starts with its parent's, so a prefix of a parent
	// would always be ambiguous: top-level runs are matched first, and
	// sub-agents' only when no top-level run matches.
	var matches, children []store.Run
	for _, r := range all {
		switch {
		case !strings.HasPrefix(r.ID, arg):
		case r.Parent == "":
			matches = append(matches, r)
		default:
			children = append(children, r)
		}
	}
	if len(matches) == 0 {
		matches = children
	}
	switch len(matches) {
	case 0:
		return store.Run{}, userErr("no run %s in DB (ratchet ls lists runs)", arg)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, 0, 4)
	for _, r := range matches[:min(len(matches), 3)] {
		ids = append(ids, r.ID)
	}
	more := ""
	if len(matches) > 3 {
		more = fmt.Sprintf(" and %d more", len(matches)-3)
	}
	return store.Run{}, userErr("%s is the start of %d run IDs (%s%s); type more of it", arg, len(matches), strings.Join(ids, ", "), more)
}

// runErrCode is the exit code for an error from findRun or deleteRun: a
// userError is the user's mistake, anything else the database's.
func runErrCode(err error) int {
	if _, ok := errors.AsType[*userError](err); ok {
		return exitUsage
	}
	return exitInfra
}

// openRun opens the run database dbFlag names and finds in it the run ref
// names (findRun), for ratchet name. When it cannot, it has said why and
// the store is nil, code the exit code. The caller closes the store.
func (m *Main) openRun(ctx context.Context, name, dbFlag, ref string) (s store.Store, row store.Run, code int) {
	s, err := m.openStore(ctx, dbFlag)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet %s: %v\n", name, err)
		return nil, store.Run{}, exitInfra
	}
	row, err = findRun(ctx, s, ref)
	if err != nil {
		s.Close()
		fmt.Fprintf(m.Stderr, "ratchet %s: %v\n", name, err)
		return nil, store.Run{}, runErrCode(err)
	}
	return s, row, exitDone
}
