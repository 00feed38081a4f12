package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/store"
)

// storedPatch is the patch on a stored run's Result, or a userErr saying
// why it has none.
func storedPatch(row store.Run) (*loop.Patch, error) {
	if row.Result == nil {
		return nil, userErr("run %s has not finished (status %s): its patch is taken as it finishes", row.ID, row.Status)
	}
	var res loop.Result
	if err := json.Unmarshal(row.Result, &res); err != nil {
		return nil, fmt.Errorf("run %s: stored result: %w", row.ID, err)
	}
	if res.Patch == nil {
		return nil, userErr("run %s has no patch: only an agent run on a copied workspace (copy_workspace: true) has one", row.ID)
	}
	return res.Patch, nil
}

// printPatch prints a run's diff on stdout, for git apply or patch -p1:
// as it is through a pipe, escaped on a terminal (the text is the
// agent's). What the diff cannot carry goes to stderr; a run whose diff
// could not be kept exits 1.
func (m showCommand) printPatch(row store.Run) int {
	p, err := storedPatch(row)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet show: %v\n", err)
		return runErrCode(err)
	}
	var out io.Writer = m.Stdout
	if isTerminal(m.Stdout) {
		out = escaper{m.Stdout}
	}
	io.WriteString(out, p.Diff)
	for _, note := range patchNotes(p) {
		fmt.Fprintf(m.Stderr, "ratchet show: %s\n", note)
	}
	if p.Problem != "" {
		return exitNotDone // the diff is missing
	}
	return exitDone
}

// patchNotes says what in p keeps it from applying as it is.
func patchNotes(p *loop.Patch) []string {
	var notes []string
	if p.Problem != "" {
		notes = append(notes, p.Problem)
	}
	if len(p.Binary) > 0 {
		notes = append(notes, "binary files are named, not included: "+oneLine(strings.Join(p.Binary, ", "), 300)+"; they are in "+p.Copy)
	}
	if p.Redacted {
		notes = append(notes, "secrets in the diff are redacted")
	}
	if p.Diff == "" && p.Problem == "" {
		notes = append(notes, "the run changed nothing in the workspace")
	}
	return notes
}

// patchLine is the patch: line of 'ratchet show'.
func patchLine(id string, p *loop.Patch) string {
	switch {
	case p.Problem != "":
		return oneLine(p.Problem, 200)
	case len(p.Files) == 0:
		return "the run changed nothing in the workspace"
	}
	line := fmt.Sprintf("%s changed in the copy of %s ('ratchet show %s --patch' prints it, 'ratchet apply %[3]s' applies it)", fileCount(len(p.Files)), p.Original, id)
	if len(p.Binary) > 0 || p.Redacted {
		line += "; it cannot be applied as it is: " + strings.Join(patchNotes(p), "; ")
	}
	return line
}

// applyCommand is 'ratchet apply'.
type applyCommand struct{ *Main }

// run applies a run's patch to the workspace it copied.
func (m applyCommand) run(ctx context.Context, args []string) int {
	var db string
	fs := flag.NewFlagSet("ratchet apply", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	setUsage(fs, `Usage: ratchet apply RUN [flags]

Applies the patch of an agent run on a copied workspace (copy_workspace:
true) to the original workspace, all or nothing (with git apply, or with
patch -p1 where git is not installed). It refuses when the original
changed since the run started (its fingerprint, taken then, no longer
matches), and when the patch is incomplete: binary files named without
their content, redacted secrets, or a diff too large to keep.
'ratchet show RUN --patch' prints the patch itself.

Exit codes: 0 applied, 1 refused or did not apply (nothing was changed),
2 no such run or no patch, 3 infrastructure failure.

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	s, row, code := m.openRun(ctx, "apply", db, pos[0])
	if s == nil {
		return code
	}
	defer s.Close()
	p, err := storedPatch(row)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet apply: %v\n", err)
		return runErrCode(err)
	}
	if err := patch.Apply(ctx, *p); err != nil {
		// Refused, or it did not apply: nothing was changed either way.
		fmt.Fprintf(m.Stderr, "ratchet apply: run %s: %s\n", row.ID, oneLine(err.Error(), 2000))
		return exitNotDone
	}
	if len(p.Files) == 0 {
		fmt.Fprintf(m.Stdout, "run %s changed nothing; %s is as it was\n", row.ID, p.Original)
		return exitDone
	}
	fmt.Fprintf(m.Stdout, "applied run %s's patch to %s: %s (%s)\n", row.ID, p.Original, fileCount(len(p.Files)), oneLine(strings.Join(p.Files, ", "), 200))
	return exitDone
}

// fileCount says "1 file" or "N files".
func fileCount(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}
