package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// resumeCommand is 'ratchet resume', 'answer', 'approve' and 'deny'.
type resumeCommand struct{ *Main }

// run carries on a run after its process stopped; answerCmd carries
// on a run awaiting a person with their reply. They share everything but
// the reply.
func (m resumeCommand) run(ctx context.Context, name string, args []string) int {
	var f runFlags
	fs := flag.NewFlagSet("ratchet "+name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	f.addOutput(fs)
	usage := map[string]string{
		"resume":  "resume RUN        carry on a run whose process stopped (crash, Ctrl-C)",
		"answer":  "answer RUN TEXT   answer the question a run is waiting on, and carry it on",
		"approve": "approve RUN       approve the tool call a run is waiting on, and carry it on",
		"deny":    "deny RUN [WHY]    refuse the tool call a run is waiting on, and carry it on",
	}[name]
	setUsage(fs, "Usage: ratchet "+usage+"\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	want := map[string][2]int{"resume": {1, 1}, "answer": {2, 2}, "approve": {1, 1}, "deny": {1, 2}}[name]
	if len(pos) < want[0] || len(pos) > want[1] {
		fmt.Fprintf(m.Stderr, "Usage: ratchet %s\n", usage)
		return exitUsage
	}
	var opts runner.ResumeOptions
	switch name {
	case "answer":
		opts.Answer = &pos[1]
	case "approve", "deny":
		yes := name == "approve"
		opts.Approved = &yes
		if len(pos) == 2 {
			opts.Answer = &pos[1]
		}
	}
	db, row, code := m.openRun(ctx, name, f.db, pos[0])
	if db == nil {
		return code
	}
	defer db.Close()
	info, onTemporal := temporalInfo(row)
	if onTemporal {
		// Its workflow carries it on: the answer goes there.
		rf := info.flags()
		rf.json, rf.quiet, rf.noWait = f.json, f.quiet, f.noWait
		return driver(m).answerTemporal(ctx, name, db, row, info, opts, rf)
	}
	// The response cache the run was started with answers its calls again
	// (here, not in storedRun: ratchet ui's resumes share one process).
	closeCache, err := m.openCache("ratchet "+name, info.Cache, f.quiet)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet %s: %v\n", name, err)
		return exitInfra
	}
	defer closeCache()
	sr, err := m.storedRun(ctx, db, row.ID, f)
	if err != nil {
		m.reportProblems("ratchet "+name, err, f.json)
		return exitUsage
	}
	defer sr.cleanup()
	return driver(m).carryOn("ratchet "+name, sr.task, sr.cfg, sr.flags, func(cfg runner.Config) (loop.Result, error) {
		return runner.Resume(ctx, sr.task, cfg, opts)
	})
}

// storedRun is what carrying on a stored run needs: its task rebuilt from
// the task file its row names, and the runner.Config to resume it with.
type storedRun struct {
	task    runner.Task
	cfg     runner.Config
	flags   runFlags
	cleanup func()
}

// storedRun rebuilds run id of db from its task file, with the output
// flags of out. ratchet resume/answer/approve/deny and ratchet ui's answer
// form both carry runs on through it and runner.Resume.
func (m *Main) storedRun(ctx context.Context, db store.Store, id string, out runFlags) (storedRun, error) {
	row, err := db.Run(ctx, id)
	if err != nil {
		return storedRun{}, err
	}
	var info taskInfo
	if err := json.Unmarshal(row.Task, &info); err != nil || info.TaskFile == "" {
		return storedRun{}, fmt.Errorf("run %s was not started by 'ratchet run' (it keeps no task file to resume from)", row.ID)
	}
	rf := info.flags()
	rf.json, rf.quiet, rf.noWait = out.json, out.quiet, out.noWait
	// The limits the run shared when it started hold for it again.
	if err := m.applyProviderLimits(rf.providerLimits); err != nil {
		return storedRun{}, err
	}
	built, err := m.build(ctx, info.TaskFile, &rf)
	if err != nil {
		return storedRun{}, err
	}
	cfg := built.Runner()
	cfg.RunID, cfg.Store = row.ID, db
	return storedRun{task: built.Task, cfg: cfg, flags: rf, cleanup: built.Close}, nil
}
