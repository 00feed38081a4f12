package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/taskfile"
)

const forkHelp = `Usage: ratchet fork RUN --at SEQ [flags]

Starts a new run from the state after entry SEQ of RUN's log: the entries
up to it are copied, not carried out again (no tool in them runs twice),
and the model's turn in flight there is made again, by --model if given,
within the budget flags if given, seeing --message if given. SEQ must be a
step's model call (a call_model command in 'ratchet show --events RUN');
without --at the points are listed. RUN is left as it was. The new run
records where it came from (ratchet show) and replays like any other.

A task with copy_workspace gets a workspace of its own, and RUN's copy is
not touched. When RUN ran on a layer (as root) the fork's layer starts from
the snapshot RUN kept at SEQ: the workspace as RUN's tools had left it
there. Otherwise it is a fresh copy: what the copied steps' tools changed
in RUN's copy is not in it.

Flags:
`

// forkCommand is 'ratchet fork'.
type forkCommand struct{ *Main }

// run starts a run from a point of another's log.
func (m forkCommand) run(ctx context.Context, args []string) int {
	var (
		f       runFlags
		at      int64
		message string
	)
	fs := flag.NewFlagSet("ratchet fork", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Int64Var(&at, "at", 0, "the entry of RUN's log to fork after: a step's model call")
	fs.StringVar(&f.model, "model", "", "the model the fork's turns use (default: RUN's, carrying on its script)")
	fs.StringVar(&message, "message", "", "a user message the fork's first model turn sees")
	f.addOutput(fs)
	fs.IntVar(&f.steps, "steps", 0, "the fork's limit on model turns (counting the copied ones)")
	fs.IntVar(&f.modelCalls, "model-calls", 0, "the fork's limit on model calls")
	fs.IntVar(&f.toolCalls, "tool-calls", 0, "the fork's limit on tool calls")
	fs.Int64Var(&f.tokens, "tokens", 0, "the fork's limit on total (input+output) tokens")
	fs.Float64Var(&f.cost, "cost", 0, "the fork's limit on cost in US dollars, e.g. 0.25")
	fs.DurationVar(&f.time, "time", 0, "the fork's limit on wall time, e.g. 90s")
	setUsage(fs, forkHelp)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	if errs := checkBudgetFlags(fs, f); len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(m.Stderr, "ratchet fork: %v\n", err)
		}
		return exitUsage
	}
	db, row, code := m.openRun(ctx, "fork", f.db, pos[0])
	if db == nil {
		return code
	}
	defer db.Close()
	if at == 0 {
		return m.listForkPoints(ctx, db, row.ID)
	}
	budgetSet := false
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "steps", "model-calls", "tool-calls", "tokens", "cost", "time":
			budgetSet = true
		}
	})
	return m.fork(ctx, db, row, f, runner.ForkOptions{From: row.ID, At: at, Message: message}, budgetSet)
}

// fork builds RUN's task again (with the fork's model, if any) and forks
// it; the budget flags of f, when set, override the task's budget.
func (m forkCommand) fork(ctx context.Context, db store.Store, row store.Run, f runFlags, opts runner.ForkOptions, budgetSet bool) int {
	built, cfg, rf, err := m.forkRun(ctx, db, row, f, &opts, budgetSet)
	if err != nil {
		m.reportProblems("ratchet fork", err, f.json)
		return exitUsage
	}
	defer built.Close()
	cfg.RunID = "run-" + time.Now().UTC().Format("20060102-150405.000000")
	return driver(m).carryOn("ratchet fork", built.Task, cfg, rf, func(cfg runner.Config) (loop.Result, error) {
		return runner.Fork(ctx, built.Task, cfg, opts)
	})
}

// forkRun builds what forking row needs: its task from the task file and
// flags its row keeps (the fork's spec is the parent's), the fork's model
// from f.model if set (in opts.Model), and the fork's budget from f's
// budget flags if budgetSet (in opts.Budget). ratchet fork and ratchet
// ui's "fork from here" both fork through it and runner.Fork.
func (m forkCommand) forkRun(ctx context.Context, db store.Store, row store.Run, f runFlags, opts *runner.ForkOptions, budgetSet bool) (*taskfile.Run, runner.Config, runFlags, error) {
	var info taskInfo
	if err := json.Unmarshal(row.Task, &info); err != nil || info.TaskFile == "" {
		return nil, runner.Config{}, f, fmt.Errorf("run %s was not started by 'ratchet run' (it keeps no task file to fork from)", row.ID)
	}
	rf := info.flags()
	// A fresh copy (or layer): the parent's stays as it is. Its start too:
	// taskfile.Config.Start would put the fork in the parent's copy.
	rf.workspace, rf.start = "", nil
	if info.Start != nil && info.Start.Layer != nil {
		// On a layer: the fork starts from the parent's snapshot there.
		rf.forkOf, rf.forkAt = info.Start.Layer, opts.At
	}
	rf.json, rf.quiet, rf.noWait, rf.db = f.json, f.quiet, f.noWait, f.db
	if f.model != "" {
		rf.model = f.model
	}
	built, err := m.build(ctx, info.TaskFile, &rf)
	if err != nil {
		return nil, runner.Config{}, rf, err
	}
	if budgetSet {
		limits := built.Task.Budget
		over := f.budget()
		for _, d := range budget.Dimensions {
			if v := over.Limit(d); v != 0 {
				limits.Set(d, v)
			}
		}
		opts.Budget = &limits
	}
	cfg := built.Runner()
	if f.model != "" {
		opts.Model = cfg.Model
	}
	child := info
	// The fork's own copy, for its resume and patch, not the parent's.
	child.Model, child.Workspace, child.Start = rf.model, rf.workspace, rf.start
	child.Temporal, child.Namespace, child.TaskQueue = "", "", ""
	if cfg.TaskInfo, err = json.Marshal(child); err != nil {
		built.Close()
		return nil, runner.Config{}, rf, err
	}
	cfg.Store = db
	return built, cfg, rf, nil
}

// listForkPoints prints the entries of run id a fork may start from.
func (m forkCommand) listForkPoints(ctx context.Context, db store.Store, id string) int {
	recs, err := runner.LoadLog(ctx, db, id)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet fork: %v\n", err)
		return exitInfra
	}
	points := runner.ForkPoints(recs)
	fmt.Fprintf(m.Stderr, "ratchet fork: --at SEQ says where to fork run %s; it can fork after:\n", id)
	for _, p := range points {
		fmt.Fprintf(m.Stderr, "  --at %-6d step %d's model call\n", p.Seq, p.Step)
	}
	if len(points) == 0 {
		fmt.Fprintln(m.Stderr, "  (nothing: its log has no step's model call)")
	}
	return exitUsage
}
