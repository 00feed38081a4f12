package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/postgres"
	"github.com/ratchetloop/ratchet/store/sqlite"
	"github.com/ratchetloop/ratchet/verify"
)

// exitWaiting: the run is waiting for a person (ratchet answer/approve/deny).
const exitWaiting = 4

const defaultDBHint = "$XDG_STATE_HOME/ratchet/ratchet.db, XDG_STATE_HOME defaulting to ~/.local/state"

// openStore opens the run database: flagValue, else $RATCHET_DB, else the
// default SQLite file. A PostgreSQL DSN (postgres://…, or host=… dbname=…)
// opens PostgreSQL.
func (m *Main) openStore(ctx context.Context, flagValue string) (store.Store, error) {
	where, err := dbLocation(m.Getenv, flagValue)
	if err != nil {
		return nil, err
	}
	if isPostgresDSN(where) {
		m.secrets.Add(dsnPassword(where)) // a connection error may quote the DSN
		s, err := postgres.Open(ctx, where)
		if err != nil {
			return nil, fmt.Errorf("run database (PostgreSQL): %w", err)
		}
		return m.shareLimits(s, s.Ledger)
	}
	if err := os.MkdirAll(filepath.Dir(where), 0o700); err != nil {
		return nil, fmt.Errorf("run database: %w", err)
	}
	s, err := sqlite.Open(where)
	if err != nil {
		return nil, fmt.Errorf("run database %s: %w", where, err)
	}
	return m.shareLimits(s, s.Ledger)
}

// shareLimits makes the process's provider limits count in the run
// database's ledger while s is open: every process and machine with the
// same run database holds its calls against the same counts (see
// docs/providers.md, "Shared limits").
func (m *Main) shareLimits(s store.Store, ledger func() (limit.Ledger, error)) (store.Store, error) {
	if m.limits == nil {
		return s, nil // not opened by Run (a test's direct call): no model of this Main counts anything
	}
	l, err := ledger()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("run database: %w", err)
	}
	return sharing{Store: s, end: m.limits.Share(l)}, nil
}

// sharing is a run database the process's limits are shared in until it
// is closed.
type sharing struct {
	store.Store
	end func()
}

func (s sharing) Close() error {
	s.end()
	return s.Store.Close()
}

// dbLocation is the run database openStore opens: a SQLite file's path or
// a PostgreSQL DSN.
func dbLocation(getenv func(string) string, flagValue string) (string, error) {
	where := flagValue
	if where == "" {
		where = getenv("RATCHET_DB")
	}
	if where != "" {
		return where, nil
	}
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("run database: %w (set RATCHET_DB or --db)", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "ratchet", "ratchet.db"), nil
}

// shownDB is the run database's location as it may be printed: a DSN's
// password is masked.
func (m *Main) shownDB(flagValue string) string {
	where, err := dbLocation(m.Getenv, flagValue)
	if err != nil {
		return ""
	}
	if !isPostgresDSN(where) {
		if abs, err := filepath.Abs(where); err == nil {
			return abs
		}
		return where
	}
	if u, err := url.Parse(where); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return passwordField.ReplaceAllString(where, "password=xxxxx")
}

// passwordField is a password in a libpq key=value DSN.
var passwordField = regexp.MustCompile(`password=('(\\.|[^'])*'|\S+)`)

// isPostgresDSN tells a PostgreSQL DSN, as a URL or as libpq's key=value
// pairs, from a SQLite file path.
func isPostgresDSN(s string) bool {
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return true
	}
	for _, f := range strings.Fields(s) {
		if k, _, ok := strings.Cut(f, "="); ok && (k == "host" || k == "dbname" || k == "user") {
			return true
		}
	}
	return false
}

// taskInfo is what a run's row keeps to rebuild its task on resume.
type taskInfo struct {
	TaskFile  string `json:"task_file"`
	Workspace string `json:"workspace,omitempty"`
	// Start is where the workspace copy started, for the run's patch.
	Start *patch.Start `json:"start,omitempty"`
	Model string       `json:"model,omitempty"`
	// Ran is the model the run started with, from --model or its task
	// file (a scripted one by its recording's name): what show and the UI
	// show. Unlike Model, a resume does not read it back.
	Ran           string        `json:"ran_model,omitempty"`
	UnsafeSandbox bool          `json:"unsafe_sandbox,omitempty"`
	Steps         int           `json:"steps,omitempty"`
	ModelCalls    int           `json:"model_calls,omitempty"`
	ToolCalls     int           `json:"tool_calls,omitempty"`
	Tokens        int64         `json:"tokens,omitempty"`
	Cost          float64       `json:"cost,omitempty"`
	Time          time.Duration `json:"time,omitempty"`
	// Temporal, Namespace and TaskQueue say where a run started with
	// --temporal runs: answers go to its workflow there.
	Temporal  string `json:"temporal,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	TaskQueue string `json:"task_queue,omitempty"`
	// Cache is the response cache (--cache) and ProviderLimits the
	// --provider-limit flags: a resume uses them again.
	Cache          string   `json:"cache,omitempty"`
	ProviderLimits []string `json:"provider_limits,omitempty"`
}

// runModel is the model a run started with, from its task info (Ran, else
// the Model override of a run recorded before Ran was); "" when unknown.
func runModel(task []byte) string {
	var i taskInfo
	if len(task) == 0 || json.Unmarshal(task, &i) != nil {
		return ""
	}
	return cmp.Or(i.Ran, i.Model)
}

func (f runFlags) info() taskInfo {
	return taskInfo{
		TaskFile: f.taskFile, Workspace: f.workspace, Start: f.start, Model: f.model, Ran: f.ran, UnsafeSandbox: f.unsafeSandbox,
		Steps: f.steps, ModelCalls: f.modelCalls, ToolCalls: f.toolCalls, Tokens: f.tokens, Cost: f.cost, Time: f.time,
		Temporal: f.temporal, Namespace: f.namespace, TaskQueue: f.taskQueue,
		Cache: f.cache, ProviderLimits: f.providerLimits,
	}
}

func (i taskInfo) flags() runFlags {
	return runFlags{
		taskFile: i.TaskFile, workspace: i.Workspace, start: i.Start, model: i.Model, unsafeSandbox: i.UnsafeSandbox,
		steps: i.Steps, modelCalls: i.ModelCalls, toolCalls: i.ToolCalls, tokens: i.Tokens, cost: i.Cost, time: i.Time,
		cache: i.Cache, providerLimits: i.ProviderLimits,
	}
}

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

// interrupted tells a run that says running but whose process is gone.
func interrupted(r store.Run, now time.Time) bool {
	if r.Status != store.StatusRunning || onTemporal(r) {
		return false
	}
	live, _ := runner.LeaseState(r, now)
	return !live
}

// shownStatus is a run's status as ls and show print it.
func shownStatus(r store.Run, now time.Time) string {
	if interrupted(r, now) {
		return "interrupted"
	}
	return r.Status
}

// oneLine shows s on one line of at most n characters, escaped for the
// terminal (the text is a model's or a tool's).
func oneLine(s string, n int) string {
	return observe.OneLine(observe.Escape(strings.Join(strings.Fields(s), " ")), n)
}

func (m *Main) printJSON(name string, v any) int {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(m.Stderr, "%s: %v\n", name, err)
		return exitInfra
	}
	return exitDone
}

// showCommand is 'ratchet show'.
type showCommand struct{ *Main }

// run prints one run: its Result, attempts, verdicts and usage.
func (m showCommand) run(ctx context.Context, args []string) int {
	var (
		db                                    string
		events, asJSON, showPatch, transcript bool
	)
	fs := flag.NewFlagSet("ratchet show", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.BoolVar(&events, "events", false, "print the run's event log (JSONL, docs/events.md) instead")
	fs.BoolVar(&transcript, "transcript", false, "print the run step by step instead, as ratchet run showed it: the model's text and thinking, tool calls and results, verdicts")
	fs.BoolVar(&asJSON, "json", false, "print the Result as JSON")
	fs.BoolVar(&showPatch, "patch", false, "print the run's patch instead: the unified diff of its workspace copy against the start, for git apply or patch -p1 (ratchet apply RUN applies it)")
	setUsage(fs, "Usage: ratchet show RUN [flags]\n\nPrints a run's Result, attempts, verdicts and usage.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	s, row, code := m.openRun(ctx, "show", db, pos[0])
	if s == nil {
		return code
	}
	defer s.Close()
	if showPatch {
		return m.printPatch(row)
	}
	if transcript {
		return m.printTranscript(ctx, s, row)
	}
	if events {
		return m.printEvents(ctx, s, row)
	}
	var res *loop.Result
	if row.Result != nil {
		res = new(loop.Result)
		if err := json.Unmarshal(row.Result, res); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet show: run %s: stored result: %v\n", row.ID, err)
			return exitInfra
		}
	}
	if asJSON {
		return m.printJSON("ratchet show", struct {
			ID       string       `json:"id"`
			Status   string       `json:"status"`
			Goal     string       `json:"goal"`
			Model    string       `json:"model,omitempty"`
			Labels   []string     `json:"labels,omitempty"`
			Question string       `json:"question,omitempty"`
			Created  time.Time    `json:"created"`
			ForkOf   string       `json:"fork_of,omitempty"`
			ForkSeq  int64        `json:"fork_seq,omitempty"`
			Result   *loop.Result `json:"result,omitempty"`
		}{row.ID, row.Status, row.Goal, m.secrets.String(runModel(row.Task)), row.Labels, row.Question, row.Created, row.ForkOf, row.ForkSeq, res})
	}
	return m.printRun(row, res)
}

// printTranscript prints the run step by step, as ratchet run showed it.
func (m showCommand) printTranscript(ctx context.Context, s store.Store, row store.Run) int {
	recs, err := runner.LoadLog(ctx, s, row.ID)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet show: %v\n", err)
		return exitInfra
	}
	var limits budget.Limits
	if len(recs) > 0 && recs[0].Spec != nil {
		limits = recs[0].Spec.Budget
	}
	// The text is a model's and its tools': shown escaped (observe.Escape).
	p := observe.NewPrinter(escaper{m.Stdout}, observe.PrinterConfig{Limits: limits})
	for _, r := range recs {
		e, err := r.Entry()
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet show: run %s: %v\n", row.ID, err)
			return exitInfra
		}
		p.Observe(e)
	}
	return exitDone
}

// printEvents prints the run's event log, one JSON entry a line.
func (m showCommand) printEvents(ctx context.Context, s store.Store, row store.Run) int {
	entries, err := s.Entries(ctx, row.ID, 0)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet show: %v\n", err)
		return exitInfra
	}
	for _, e := range entries {
		m.Stdout.Write(e.Data)
		io.WriteString(m.Stdout, "\n")
	}
	return exitDone
}

// printRun prints the run for a person: its row, and its Result if it has one.
func (m showCommand) printRun(row store.Run, res *loop.Result) int {
	// The text is a model's and its tools': shown escaped (observe.Escape).
	w := escaper{m.Stdout}
	fmt.Fprintf(w, "run:     %s\nstatus:  %s\ngoal:    %s\nstarted: %s\n", row.ID, shownStatus(row, time.Now()), oneLine(row.Goal, 200), row.Created.Local().Format(time.RFC3339))
	if mdl := runModel(row.Task); mdl != "" {
		fmt.Fprintf(w, "model:   %s\n", m.secrets.String(mdl))
	}
	if len(row.Labels) > 0 {
		fmt.Fprintf(w, "labels:  %s\n", strings.Join(row.Labels, ", "))
	}
	if row.ForkOf != "" {
		fmt.Fprintf(w, "forked:  from %s after entry %d (ratchet show --events %[1]s)\n", row.ForkOf, row.ForkSeq)
	}
	if row.Status == store.StatusAwaitingInput {
		fmt.Fprintf(w, "waiting: %s\n", row.Question)
	}
	if res == nil {
		if interrupted(row, time.Now()) {
			_, holder := runner.LeaseState(row, time.Now())
			fmt.Fprintf(w, "steps:   %d so far; interrupted: %s is gone ('ratchet resume %s' carries it on)\n", row.Steps, holder, row.ID)
		} else {
			fmt.Fprintf(w, "steps:   %d so far (no Result yet)\n", row.Steps)
		}
		return exitDone
	}
	fmt.Fprintf(w, "reason:  %s\n", res.Reason)
	if res.Question != "" {
		fmt.Fprintf(w, "question: %s\n", res.Question)
	}
	if res.Best != nil {
		fmt.Fprintf(w, "best:    attempt %d (accepted=%v, confidence %.2f)\n%s\n", res.Best.N, res.Best.Accepted, res.Best.Confidence, indent(res.Best.Answer))
	}
	fmt.Fprintf(w, "attempts:\n")
	for _, a := range res.Attempts {
		fmt.Fprintf(w, "  %s\n", a.Summary)
		for i, v := range append(append([]verify.Verdict(nil), a.Verdicts...), a.Holdout...) {
			mark := "FAIL"
			if v.OK {
				mark = "ok"
			}
			holdout := ""
			if i >= len(a.Verdicts) {
				holdout = "holdout, "
			}
			fmt.Fprintf(w, "    %-4s %s (%s%s)%s\n", mark, v.Check, holdout, v.Provenance, detail(v.Detail))
		}
	}
	if p := res.Patch; p != nil {
		fmt.Fprintf(w, "patch:   %s\n", patchLine(row.ID, p))
	}
	fmt.Fprintf(w, "usage:\n")
	for _, d := range budget.Dimensions {
		fmt.Fprintf(w, "  %-14s %s\n", d, budget.Format(d, res.Usage.Get(d))+limitText(d, res.Limits))
	}
	return exitDone
}

func limitText(d budget.Dimension, l budget.Limits) string {
	if v := l.Limit(d); v != budget.Unlimited {
		return " of " + budget.Format(d, v)
	}
	return ""
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func detail(s string) string {
	if s = oneLine(s, 100); s != "" {
		return ": " + s
	}
	return ""
}

// dsnPassword is the password in a PostgreSQL DSN, as a URL
// (postgres://user:pw@host/db) or as key=value pairs (password=pw), or "".
func dsnPassword(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		return pw
	}
	for _, field := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(field, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// escaper writes text escaped for the terminal (observe.Escape), one
// Write at a time: write whole lines.
type escaper struct{ w io.Writer }

func (e escaper) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, observe.Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
