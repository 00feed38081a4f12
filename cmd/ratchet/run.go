package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/tool/mcp"
)

type runFlags struct {
	model         string
	ran           string // the model the run starts with, as ls and the UI show it (taskInfo.Ran)
	json          bool
	quiet         bool
	log           string
	record        string
	db            string
	noWait        bool
	labels        []string
	unsafeSandbox bool
	steps         int
	modelCalls    int
	toolCalls     int
	tokens        int64
	cost          float64
	time          time.Duration
	// taskFile is the task file's absolute path; workspace, when set, is
	// the workspace copy a resumed run goes on working in, and start where
	// that copy started (its patch is taken against it).
	taskFile  string
	workspace string
	start     *patch.Start
	// forkOf and forkAt are a fork's parent layer and point
	// (taskfile.Config.ForkOf).
	forkOf *layer.Layer
	forkAt int64
	// temporal (HOST:PORT), namespace and taskQueue run the task on
	// Temporal workers instead of in this process (temporal.go).
	temporal  string
	namespace string
	taskQueue string
	// cache is --cache DIR; cacheScope the response cache's scope of the
	// run's calls (an eval run's case and repeat), wherever it is opened.
	cache, cacheScope string
	// providerLimits are the --provider-limit flags, kept so that a resume
	// shares the same limits.
	providerLimits []string
}

func (m runCommand) runUsage(fs *flag.FlagSet) func() {
	return func() {
		d := budget.Defaults
		fmt.Fprintf(fs.Output(), `Usage: ratchet run TASK.yaml [flags]

Runs the task file until its checks pass or it stops for a named reason.
The task file schema is in docs/taskfile.md.

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), `
Budget flags override the task file's budget; -1 lifts a limit (not
--time). Unset limits take these defaults: steps %d, model calls %d,
tool calls %d, total tokens %d, cost %s, time %s.

The model comes from --model, else the task file's model:, else $RATCHET_MODEL.
Model strings (docs/providers.md): %s.

Traces and metrics go to OpenTelemetry when the OTEL_* variables ask, e.g.
OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 (docs/observability.md).
`, d.Steps, d.ModelCalls, d.ToolCalls, d.TotalTokens, d.Cost, d.Time, provider.Options)
	}
}

// setUsage makes fs's usage text, shown by -h, text and then its flags'
// defaults.
func setUsage(fs *flag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		fs.PrintDefaults()
	}
}

// parseCommand parses a subcommand's flags. When parsing ends the command
// (-h, or a bad flag), done is true and code is the exit code. -h prints
// the whole usage; a bad flag gets one line that names it, not the usage
// it would be lost in.
func parseCommand(fs *flag.FlagSet, args []string) (pos []string, code int, done bool) {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, err := parseInterleaved(fs, args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return nil, exitDone, true
	case err != nil:
		fmt.Fprintf(out, "%s: %v ('%s -h' lists the flags)\n", fs.Name(), err, fs.Name())
		return nil, exitUsage, true
	}
	return pos, 0, false
}

// parseInterleaved parses flags that may come before or after positional
// arguments, returning the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil // after --, nothing is a flag
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// addRunFlags declares the flags shared by run and resume.
func (f *runFlags) addOutput(fs *flag.FlagSet) {
	fs.BoolVar(&f.json, "json", false, "print the Result as JSON on stdout; progress goes to stderr")
	fs.BoolVar(&f.quiet, "quiet", false, "print only the final status line (or, with --json, nothing but the JSON)")
	fs.StringVar(&f.db, "db", "", "the run database: a SQLite file or a postgres:// DSN (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.BoolVar(&f.noWait, "no-wait", false, "never wait for a person: a stuck run ends escalated, and calls needing approval are refused")
}

// runCommand is 'ratchet run'.
type runCommand struct{ *Main }

func (m runCommand) run(ctx context.Context, args []string) int {
	var f runFlags
	fs := m.flags(&f)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if !m.wellUsed(fs, f, pos) {
		return exitUsage
	}
	if f.cache != "" { // kept on the run's row for a resume, from anywhere
		if abs, err := filepath.Abs(f.cache); err == nil {
			f.cache = abs
		}
	}
	closeCache, err := m.openCache("ratchet run", f.cache, f.quiet)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet run: %v\n", err)
		return exitInfra
	}
	defer closeCache()
	if abs, err := filepath.Abs(pos[0]); err == nil {
		f.taskFile = abs
	}
	built, err := m.build(ctx, pos[0], &f)
	if err != nil {
		m.reportProblems("ratchet run", err, f.json)
		return exitUsage
	}
	defer built.Close()
	f.ran = modelName(built.ModelName, built.Model)
	db, err := m.openStore(ctx, f.db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet run: %v\n", err)
		return exitInfra
	}
	defer db.Close()
	info, err := json.Marshal(f.info())
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet run: %v\n", err)
		return exitInfra
	}
	runID := "run-" + time.Now().UTC().Format("20060102-150405.000000")
	var rec *scripted.Recorder
	if f.record != "" {
		rec = scripted.Record(built.Model)
	}
	if f.temporal != "" {
		built.Close() // the workers build the run themselves
		code = driver(m).runTemporal(ctx, built.Task, built.Model, rec, db, runID, info, f)
	} else {
		cfg := built.Runner()
		cfg.RunID, cfg.Store, cfg.Labels, cfg.TaskInfo = runID, db, f.labels, info
		if rec != nil {
			cfg.Model = rec
		}
		code = driver(m).carryOn("ratchet run", built.Task, cfg, f, func(cfg runner.Config) (loop.Result, error) {
			return runner.Run(ctx, built.Task, cfg)
		})
	}
	if rec != nil {
		if err := m.writeRecording(f.record, rec, runID); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet run: --record: %v\n", err)
			return max(code, exitInfra)
		}
		fmt.Fprintf(m.Stderr, "recorded the model's replies to %s (play them with --model scripted:%s)\n", f.record, f.record)
	}
	return code
}

// logRecorder keeps in a Recorder the replies a run's log holds, its
// sub-agents' included, for --record of a run whose calls other processes
// make (a Temporal run's workers): what Recorder.Generate would have kept
// in them. A call a hook, a guardrail, a panic or the deadline answered
// made no reply to keep.
type logRecorder struct{ rec *scripted.Recorder }

func (l logRecorder) Observe(e observe.Entry) {
	switch ev := e.Event; {
	case ev == nil:
	case ev.Type == loop.EventModelReply && ev.Reply != nil:
		l.rec.Replied(*ev.Reply)
	case ev.Type == loop.EventModelError && ev.Error != nil && ev.Error.Kind == "error":
		l.rec.Failed(ev.Error.Message)
	}
}

// flags are run's flags, parsed into f.
func (m runCommand) flags(f *runFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("ratchet run", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = m.runUsage(fs)
	modelFlag(fs, &f.model, "model to use, e.g. anthropic:claude-sonnet-4-5 or scripted:turns.yaml (overrides the task file)")
	m.providerLimitFlag(fs, &f.providerLimits)
	f.addOutput(fs)
	fs.StringVar(&f.log, "log", "", "also write the event log (JSONL, docs/events.md) to this file")
	fs.StringVar(&f.record, "record", "", "write the model's replies to this file as a scripted turns file, so the run can be played offline (--model scripted:FILE)")
	fs.Func("label", "tag the run (repeatable), for 'ratchet ls --label'", func(s string) error {
		f.labels = append(f.labels, s)
		return nil
	})
	fs.BoolVar(&f.unsafeSandbox, "unsafe-sandbox", false, "where no sandbox works, run exec checks without isolation (candidates could reach the host)")
	fs.IntVar(&f.steps, "steps", 0, "limit on model turns")
	fs.IntVar(&f.modelCalls, "model-calls", 0, "limit on model calls")
	fs.IntVar(&f.toolCalls, "tool-calls", 0, "limit on tool calls")
	fs.Int64Var(&f.tokens, "tokens", 0, "limit on total (input+output) tokens")
	fs.Float64Var(&f.cost, "cost", 0, "limit on cost in US dollars, e.g. 0.25")
	fs.DurationVar(&f.time, "time", 0, "limit on wall time, e.g. 90s")
	fs.StringVar(&f.cache, "cache", "", cacheHelp)
	fs.StringVar(&f.temporal, "temporal", "", "run on Temporal workers (ratchet worker) at this server, HOST:PORT, instead of in this process; see docs/temporal.md")
	fs.StringVar(&f.taskQueue, "task-queue", "", "with --temporal: the task queue the workers serve")
	fs.StringVar(&f.namespace, "namespace", "default", "with --temporal: the Temporal namespace")
	return fs
}

// wellUsed says whether run's flags and arguments go together, and how
// not on stderr.
func (m runCommand) wellUsed(fs *flag.FlagSet, f runFlags, pos []string) bool {
	if errs := checkBudgetFlags(fs, f); len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(m.Stderr, "ratchet run: %v\n", err)
		}
		return false
	}
	if (f.temporal == "") != (f.taskQueue == "") {
		fmt.Fprintln(m.Stderr, "ratchet run: --temporal and --task-queue go together")
		return false
	}
	if f.temporal != "" && f.cache != "" {
		fmt.Fprintln(m.Stderr, "ratchet run: --cache answers the calls made in this process, and with --temporal the workers make them: give the workers --cache (ratchet worker --cache DIR)")
		return false
	}
	if len(pos) != 1 {
		fmt.Fprintln(m.Stderr, "ratchet run: want exactly one task file")
		fs.Usage()
		return false
	}
	return true
}

// tick calls p.Tick twice a second until the returned function is called;
// a nil p needs no ticking.
func tick(p *observe.Printer) (stop func()) {
	if p == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				p.Tick(now)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// waiting says that run waits for a person and how to reply; with --json,
// stdout gets the same as one JSON object, since there is no Result yet.
func (m driver) waiting(name, run, question string, f runFlags) int {
	fmt.Fprintf(m.Stderr, "%s: run %s is waiting for a person:\n  %s\n", name, run, question)
	fmt.Fprintf(m.Stderr, "reply with: ratchet answer %[1]s \"...\"  (or, for an approval: ratchet approve %[1]s / ratchet deny %[1]s \"why\")\n", run)
	if f.json {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		err := enc.Encode(struct {
			Run      string `json:"run"`
			DB       string `json:"db"`
			Status   string `json:"status"`
			Question string `json:"question"`
		}{run, m.shownDB(f.db), store.StatusAwaitingInput, question})
		if err != nil {
			fmt.Fprintf(m.Stderr, "%s: %v\n", name, err)
			return exitInfra
		}
	}
	return exitWaiting
}

// printResult prints a run's Result as JSON on stdout, and beside its
// fields where to find the run again: its ID and database.
func (m driver) printResult(runID, db string, res loop.Result) error {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Run string `json:"run"`
		DB  string `json:"db"`
		loop.Result
	}{runID, m.shownDB(db), res})
}

// driver carries a run on at the terminal (or follows it on Temporal) and
// reports how it ended: what ratchet run, resume, answer and fork share.
type driver struct{ *Main }

// carryOn runs (or resumes) a stored run with the terminal's observers and
// reports how it ended.
func (m driver) carryOn(name string, task runner.Task, cfg runner.Config, f runFlags, start func(runner.Config) (loop.Result, error)) int {
	v, code := m.view(name, task.Budget, f, &cfg)
	if v == nil {
		return code
	}
	defer v.close()
	cfg.Human = m.human(f)
	cfg.Redactor = m.secrets

	stopTicking := tick(v.ticking)
	res, runErr := start(cfg)
	stopTicking()
	return m.ended(name, cfg.RunID, f, res, runErr, v.closeLog())
}

// runView is how a run is shown as it goes, local or on Temporal: the
// progress printer (unless --quiet), --log's event log, and the spans and
// metrics the OTEL_* variables ask for.
type runView struct {
	ticking  *observe.Printer // the live line, whose clock ticks while the run waits
	closeLog func() error     // flushes --log: its record is incomplete if it fails
	close    func()
}

// view adds the run's observers and telemetry to cfg; on failure it says
// why and returns the exit code.
func (m driver) view(name string, limits budget.Limits, f runFlags, cfg *runner.Config) (*runView, int) {
	progressOut := m.Stdout
	if f.json {
		progressOut = m.Stderr
	}
	v := &runView{closeLog: func() error { return nil }, close: func() {}}
	if !f.quiet {
		live := isTerminal(progressOut)
		p := observe.NewPrinter(progressOut, observe.PrinterConfig{
			Live: live, Limits: limits, Width: terminalWidth(progressOut),
		})
		cfg.Observers = append(cfg.Observers, p)
		// A sub-agent's lines go above the live line, not onto it.
		cfg.ChildObservers = append(cfg.ChildObservers, childPrinter{p.Above(progressOut)})
		if live {
			v.ticking = p
			m.notices = p.Above(m.Stderr)
			v.close = func() { m.notices = nil }
		}
	}
	if f.log != "" {
		lf, err := os.OpenFile(f.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			v.close()
			fmt.Fprintf(m.Stderr, "%s: event log: %v\n", name, err)
			return nil, exitInfra
		}
		jl := observe.NewJSONL(lf)
		cfg.Observers = append(cfg.Observers, jl)
		cfg.ChildObservers = append(cfg.ChildObservers, jl) // sub-agents' entries, tagged with their run IDs
		v.closeLog = func() error { return errors.Join(jl.Flush(), lf.Close()) }
	}
	// Spans and metrics, when the OTEL_* variables ask for them; flushed
	// as the command returns, also after SIGINT or SIGTERM cancelled the run.
	tel, err := m.startTelemetry(context.Background())
	if err != nil {
		v.close()
		fmt.Fprintf(m.Stderr, "%s: telemetry: %v\n", name, err)
		return nil, exitUsage
	}
	tel.configure(cfg)
	if tel != nil { // nil when telemetry is off
		m.secrets.Add(tel.Secrets...) // the OTLP headers' values (API keys)
	}
	unset := v.close
	v.close = func() { tel.shutdown(); unset() }
	return v, 0
}

// ended reports how a run ended (or that it waits) and returns the exit
// code that says so; logErr is --log's, whose record is then incomplete.
func (m driver) ended(name, runID string, f runFlags, res loop.Result, runErr, logErr error) int {
	var awaiting *runner.AwaitingError
	if errors.As(runErr, &awaiting) {
		code := m.waiting(name, awaiting.Run, awaiting.Question, f)
		if logErr != nil {
			fmt.Fprintf(m.Stderr, "%s: event log %s is incomplete: %v\n", name, f.log, logErr)
			return exitInfra
		}
		return code
	}
	if res.Status == "" { // the run never started
		fmt.Fprintf(m.Stderr, "%s: %v\n", name, runErr)
		return exitUsage
	}
	switch {
	case f.json:
		if err := m.printResult(runID, f.db, res); err != nil {
			fmt.Fprintf(m.Stderr, "%s: %v\n", name, err)
			return exitInfra
		}
	case f.quiet:
		fmt.Fprintf(m.Stdout, "%s: %s\n", res.Status, res.Reason)
	}
	if logErr != nil {
		// The run's record is incomplete: that is an infrastructure failure
		// whatever the run's status.
		fmt.Fprintf(m.Stderr, "%s: event log %s is incomplete: %v\n", name, f.log, logErr)
		return exitInfra
	}
	// Even --quiet names the run: without its ID nothing else can find it.
	fmt.Fprintf(m.Stderr, "run: %s (ratchet show %s)\n", runID, runID)
	if res.Patch != nil && !f.quiet {
		fmt.Fprintf(m.Stderr, "patch: %s\n", oneLine(patchLine(runID, res.Patch), 400))
	}
	switch {
	case runErr != nil:
		// Infrastructure failed: the run ended failed, or its record could
		// not be completed whatever its status.
		if res.Reason != runErr.Error() {
			fmt.Fprintf(m.Stderr, "%s: %v\n", name, runErr)
		}
		return exitInfra
	case res.Status == loop.Done:
		return exitDone
	}
	return exitNotDone
}

// childPrinter prints one line when a sub-agent starts and one when it
// ends; its whole log is in the run database (ratchet show CHILD).
type childPrinter struct{ w io.Writer }

func (p childPrinter) Observe(e observe.Entry) {
	switch {
	case e.Spec != nil:
		fmt.Fprintf(p.w, "        ↳ sub-agent %s started: %s\n", e.Run, oneLine(e.Spec.Goal, 100))
	case e.Command != nil && e.Command.Type == loop.Finish:
		fmt.Fprintf(p.w, "        ↳ sub-agent %s ended %s: %s\n", e.Run, e.Command.Result.Status, oneLine(e.Command.Result.Reason, 120))
	}
}

// human is who answers a run's questions: the person at the terminal, or,
// when nobody is there, whoever runs 'ratchet answer' later.
func (m driver) human(f runFlags) runner.Asker {
	if f.noWait {
		return nil
	}
	if in, ok := m.Stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		return &terminalAsker{in: bufio.NewReader(in), out: m.Stderr}
	}
	return runner.Later
}

// build reads the task file and builds its run with the flags' overrides.
// A resumed run (f.workspace set) goes on in the workspace it worked in; a
// new copy_workspace copy is kept after the run, and f records it.
func (m *Main) build(ctx context.Context, path string, f *runFlags) (*taskfile.Run, error) {
	tf, err := taskfile.Load(path)
	if err != nil {
		return nil, err
	}
	run, err := taskfile.Build(ctx, tf, taskfile.Config{
		Model:        f.model,
		DefaultModel: m.Getenv("RATCHET_MODEL"),
		Limits:       m.limits,
		Budget:       f.budget(),
		Workspace:    f.workspace,
		Start:        f.start,
		ForkOf:       f.forkOf,
		ForkAt:       f.forkAt,
		KeepCopy:     true,
		OpenModel: func(spec, base string) (model.Model, error) {
			mdl, err := m.openUncached(spec, base)
			if err != nil {
				return nil, err
			}
			return m.cached(mdl, f.cacheScope), nil
		},
		Sandbox: m.sandbox(f.unsafeSandbox),
		Getenv:  m.Getenv,
		Secrets: m.secrets,
	})
	if err != nil {
		return nil, err
	}
	if tf.MinStrength > 0 {
		if err := (checkStrength{m}).requireStrength(ctx, tf, run.Task.Checks); err != nil {
			run.Close()
			return nil, err
		}
	}
	if run.Copied {
		fmt.Fprintf(m.Stderr, "ratchet: working on a copy of the workspace: %s\n", run.File.Workspace)
		f.workspace, f.start = run.File.Workspace, run.Start
	}
	if !f.quiet {
		printMCP(m.Stderr, run.MCP)
	}
	return run, nil
}

// printMCP names the tools each MCP server offers.
func printMCP(w io.Writer, servers []*mcp.Server) {
	for _, s := range servers {
		names := make([]string, 0, len(s.Tools()))
		for _, t := range s.Tools() {
			names = append(names, t.Info().Name)
		}
		fmt.Fprintf(w, "ratchet: MCP server %s offers %s\n", s.Name(), strings.Join(names, ", "))
	}
}

// budget is the budget flags as limits: zero where a flag is unset.
func (f runFlags) budget() budget.Limits {
	b := budget.Limits{Steps: f.steps, ModelCalls: f.modelCalls, ToolCalls: f.toolCalls, TotalTokens: f.tokens, Time: f.time}
	switch {
	case f.cost == budget.Unlimited:
		b.Cost = budget.Unlimited
	case f.cost != 0:
		b.Cost = budget.USD(f.cost)
	}
	return b
}

// checkBudgetFlags refuses budget flags that were given values the task
// file would refuse, rather than letting 0 mean "unset" or a negative cost
// turn into a confusing limit.
func checkBudgetFlags(fs *flag.FlagSet, f runFlags) []error {
	var errs []error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "steps", "model-calls", "tool-calls", "tokens":
			if n, _ := strconv.ParseInt(fl.Value.String(), 10, 64); n < 1 && n != budget.Unlimited {
				errs = append(errs, fmt.Errorf("--%s must be a positive whole number, or -1 for unlimited, got %s", fl.Name, fl.Value))
			}
		case "cost":
			if f.cost != budget.Unlimited && !(f.cost > 0 && f.cost <= 1e6 && budget.USD(f.cost) != 0) {
				errs = append(errs, fmt.Errorf("--cost must be an amount in US dollars such as 0.25 (at least 0.000001), or -1 for unlimited, got %s", fl.Value))
			}
		case "time":
			if f.time <= 0 {
				errs = append(errs, fmt.Errorf("--time must be a positive duration such as 90s, got %s", fl.Value))
			}
		}
	})
	return errs
}

// openModel resolves a model string (see model/provider); relative files
// resolve against base (the task file's directory) when it is set. Replies
// stream to the terminal unless $RATCHET_NO_STREAM is set.
func (m *Main) openModel(spec, base string) (model.Model, error) {
	mdl, err := m.openUncached(spec, base)
	if err != nil {
		return nil, err
	}
	return m.cached(mdl, ""), nil
}

// openUncached is openModel without the response cache.
func (m *Main) openUncached(spec, base string) (model.Model, error) {
	if spec == "" {
		return nil, fmt.Errorf("no model configured: pass --model, set model: in the task file, or set RATCHET_MODEL; options: %s", provider.Options)
	}
	cfg := provider.Config{Dir: base, Stream: m.Getenv("RATCHET_NO_STREAM") == "", Notice: noticeWriter{m}, Getenv: m.Getenv, Limits: m.limits}
	if m.noModelRetry {
		cfg.Retry.MaxAttempts = 1
	}
	return provider.Open(spec, cfg)
}

// writeRecording writes a recorded run's turns, secrets redacted, to path
// (replacing it only once the whole file is written).
func (m runCommand) writeRecording(path string, rec *scripted.Recorder, runID string) error {
	name := "recorded"
	if n := rec.Name(); n != "" {
		name += "-" + n
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# From run %s.\n", runID)
	if err := scripted.WriteScript(&buf, rec.Script(name)); err != nil {
		return err
	}
	r := redact.New(redact.FromEnviron(os.Environ())...)
	r.Add(m.Getenv("ANTHROPIC_API_KEY"), m.Getenv("OPENAI_API_KEY"))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, r.Bytes(buf.Bytes()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// printProblems prints a task file's problems one "file:line: problem" per
// line, unprefixed, as compilers print them, so that editors can jump to
// each; other errors get the command's prefix.
func printProblems(w io.Writer, cmd string, err error) {
	var problems taskfile.Problems
	if errors.As(err, &problems) {
		fmt.Fprintln(w, problems)
		return
	}
	fmt.Fprintf(w, "%s: %v\n", cmd, err)
}

// reportProblems is printProblems for a command that may have been asked
// for --json: then stdout gets every problem as a JSON array of {file,
// line, column, message} (an error with no file has file ""), for editors
// and scripts, and stderr the usual lines.
func (m *Main) reportProblems(cmd string, err error, asJSON bool) {
	printProblems(m.Stderr, cmd, err)
	if !asJSON {
		return
	}
	var problems taskfile.Problems
	if !errors.As(err, &problems) {
		problems = taskfile.Problems{{Msg: err.Error()}}
	}
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(problems)
}

// sandbox returns the runner of exec checks, created only when one is
// needed.
func (m *Main) sandbox(allowUnsafe bool) func() (sandbox.Runner, error) {
	return func() (sandbox.Runner, error) {
		r, err := sandbox.New(sandbox.Config{AllowUnsafe: allowUnsafe})
		if err != nil {
			return nil, fmt.Errorf("exec checks need a sandbox: %w (or pass --unsafe-sandbox to run candidates without isolation)", err)
		}
		return r, nil
	}
}

// terminalWidth is w's width in columns when it is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	f, ok := w.(interface{ Fd() uintptr }) // an *os.File, or a redact.Writer on one
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalAsker asks a person at the terminal.
type terminalAsker struct {
	in  *bufio.Reader
	out io.Writer
}

func (a *terminalAsker) Ask(ctx context.Context, question string) (string, error) {
	fmt.Fprintf(a.out, "\nratchet needs a person: %s\n> ", question)
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		s, err := a.in.ReadString('\n')
		got <- line{strings.TrimSpace(s), err}
	}()
	select {
	case l := <-got:
		if l.err != nil && l.s == "" {
			return "", fmt.Errorf("%w: %v", runner.ErrNoHuman, l.err)
		}
		return l.s, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

var _ runner.Asker = (*terminalAsker)(nil)
