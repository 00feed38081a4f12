package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/taskfile"
)

const evalUsage = `Usage:
  ratchet eval run SUITE.yaml [flags]        run a suite, resuming a label's finished runs
  ratchet eval compare BASE CAND [flags]     compare two result sets; --gate exits 1 on a regression
  ratchet eval report RESULTS [flags]        print the metrics of one result set
  ratchet eval add --from-run LOG --suite SUITE.yaml [flags]
                                             turn a failed run into a suite case
  ratchet eval rescore LABEL [--suite SUITE.yaml] [flags]
                                             judge a result set's candidates again with the
                                             checks as they are now, no model calls: LABEL.rescore

RESULTS, BASE and CAND are result directories or labels (.ratchet/eval/LABEL,
or $RATCHET_EVAL_DIR/LABEL). Suite files, metrics and the tests are described
in docs/eval.md.
`

// evalCommand is 'ratchet eval' and its subcommands.
type evalCommand struct{ *Main }

// run dispatches the eval subcommands.
func (m evalCommand) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, evalUsage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return m.evalRun(ctx, args[1:])
	case "compare":
		return m.evalCompare(args[1:])
	case "report":
		return m.evalReport(args[1:])
	case "add":
		return m.evalAdd(ctx, args[1:])
	case "rescore":
		return rescoreCommand{m}.evalRescore(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, evalUsage)
		return exitDone
	}
	fmt.Fprintf(m.Stderr, "ratchet eval: unknown command %q\n\n%s", args[0], evalUsage)
	return exitUsage
}

// evalRoot is where labels live.
func evalRoot(getenv func(string) string) string {
	if d := getenv("RATCHET_EVAL_DIR"); d != "" {
		return d
	}
	return filepath.Join(".ratchet", "eval")
}

// resultDir resolves a result directory or a label.
func (m evalCommand) resultDir(arg string) (string, error) {
	if st, err := os.Stat(filepath.Join(arg, eval.ResultsFile)); err == nil && !st.IsDir() {
		return arg, nil
	}
	if eval.CheckLabel(arg) == nil {
		dir := filepath.Join(evalRoot(m.Getenv), arg)
		if _, err := os.Stat(filepath.Join(dir, eval.ResultsFile)); err == nil {
			return dir, nil
		}
		return "", fmt.Errorf("%q is neither a result directory nor a label with results in %s", arg, dir)
	}
	return "", fmt.Errorf("%q is not a result directory (no %s in it)", arg, eval.ResultsFile)
}

// evalRunFlags are the flags of 'ratchet eval run'.
type evalRunFlags struct {
	label, dir, model, html, cache string
	concurrency, limit, repeats    int
	asJSON, noLogs, quiet          bool
	unsafeSandbox, impossible      bool
	cost                           float64
	temporal                       runFlags // --temporal: where the runs go (temporal.go)
}

// evalRunFlags declares them on a flag set, parsed into f.
func (m evalCommand) evalRunFlags(f *evalRunFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("ratchet eval run", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&f.label, "label", "", "name of this result set (default the suite's label:); a second run with the same label resumes")
	fs.StringVar(&f.dir, "dir", "", "result directory (default .ratchet/eval/LABEL, or $RATCHET_EVAL_DIR/LABEL)")
	fs.IntVar(&f.concurrency, "concurrency", 0, "runs at once (default the suite's concurrency:)")
	modelFlag(fs, &f.model, "model for every task case, e.g. scripted:turns.yaml (sim cases keep theirs)")
	m.providerLimitFlag(fs, nil)
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report to this file")
	fs.BoolVar(&f.noLogs, "no-logs", false, "do not keep each run's event log")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress display")
	fs.IntVar(&f.limit, "limit", 0, "run only the suite's first N cases (0: all)")
	fs.IntVar(&f.repeats, "repeats", 0, "run every case this many times, whatever the suite says (0: the suite's)")
	fs.BoolVar(&f.unsafeSandbox, "unsafe-sandbox", false, "where no sandbox works, run exec checks without isolation")
	fs.Float64Var(&f.cost, "cost", 0, "cap the suite's spend at this many US dollars, shared by its runs (replaces the suite's budget: cost); a run the cap leaves nothing for does not start")
	fs.BoolVar(&f.impossible, "impossible", false, "also run each task case's impossible twin (its checks contradict the goal) and report the cheat rate: twins ended done / twins run")
	fs.StringVar(&f.cache, "cache", "", cacheHelp+";\neach case's repeat N gets the replies its own repeat N got, so repeats stay independent")
	tf := &f.temporal
	fs.StringVar(&tf.temporal, "temporal", "", "run the cases on Temporal workers (ratchet worker) at this server, HOST:PORT; see docs/temporal.md")
	fs.StringVar(&tf.taskQueue, "task-queue", "", "with --temporal: the task queue the workers serve")
	fs.StringVar(&tf.namespace, "namespace", "default", "with --temporal: the Temporal namespace")
	fs.StringVar(&tf.db, "db", "", "the run database each run is recorded in, labelled eval:LABEL and case:NAME (default $RATCHET_DB, else "+defaultDBHint+");\nwith --temporal, the one the workers share")
	setUsage(fs, "Usage: ratchet eval run SUITE.yaml [flags]\n\nRuns every case of the suite its number of repeats, stores each run in the\nresult directory as it finishes, and prints the metrics. Interrupted, it keeps\nwhat finished; run it again with the same label to do only the rest.\n\nFlags:\n")
	return fs
}

func (m evalCommand) evalRun(ctx context.Context, args []string) int {
	var f evalRunFlags
	pos, code, done := parseCommand(m.evalRunFlags(&f), args)
	if done {
		return code
	}
	if !m.evalRunWellUsed(pos, f) {
		return exitUsage
	}
	suite, removeTwins, code := m.loadSuite(ctx, pos[0], f)
	if suite == nil {
		return code
	}
	defer removeTwins()
	if f.dir == "" {
		f.dir = filepath.Join(evalRoot(m.Getenv), suite.Label)
	}
	store, err := eval.OpenDir(f.dir)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
		return exitInfra
	}
	defer store.Close()
	closeCache, err := m.openCache("ratchet eval run", f.cache, false)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
		return exitInfra
	}
	defer closeCache()

	// The progress display and the runs' notices write from several
	// goroutines at once.
	errOut := &lockedWriter{w: m.Stderr}
	cfg := eval.Config{
		Store:       store,
		Concurrency: f.concurrency,
		NoLogs:      f.noLogs,
		Load:        m.evalLoader(suite, f.model, f.unsafeSandbox, errOut),
		Redactor:    m.secrets,
		Cost:        budget.USD(f.cost),
	}
	if !f.quiet {
		cfg.Progress, cfg.Live = errOut, isTerminal(m.Stderr)
	}
	closeRuns, code := m.placeRuns(ctx, &cfg, suite, f)
	if closeRuns == nil {
		return code
	}
	defer closeRuns()
	out, runErr := eval.Run(ctx, suite, cfg)
	for _, err := range append(out.LoadErrors, out.NotStarted...) {
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
	}
	sum := eval.Summarize(suite.Label, out.Records)
	sum.Runs = eval.RunLinks(out.Records, f.dir)
	err = m.printSummary(sum, f.asJSON, fmt.Sprintf("\nresults: %s (%s now, %d resumed)\n", f.dir, words.Count(out.Ran, "run"), out.Resumed))
	if err == nil && f.html != "" {
		err = writeFileWith(f.html, func(w io.Writer) error { return eval.HTMLSummary(w, sum) })
	}
	return m.evalRunEnded(ctx, suite.Label, out, runErr, err)
}

// evalRunWellUsed says whether eval run's flags and arguments go together,
// and how not on stderr.
func (m evalCommand) evalRunWellUsed(pos []string, f evalRunFlags) bool {
	tf := f.temporal
	switch {
	case len(pos) != 1:
		fmt.Fprintln(m.Stderr, "ratchet eval run: want exactly one suite file")
	case (tf.temporal == "") != (tf.taskQueue == ""):
		fmt.Fprintln(m.Stderr, "ratchet eval run: --temporal and --task-queue go together")
	case tf.temporal != "" && f.cache != "":
		fmt.Fprintln(m.Stderr, "ratchet eval run: --cache answers the calls made in this process, and with --temporal the workers make them: give the workers --cache (ratchet worker --cache DIR)")
	case f.concurrency < 0 || f.limit < 0 || f.repeats < 0 || !(f.cost >= 0):
		fmt.Fprintln(m.Stderr, "ratchet eval run: --concurrency, --limit, --repeats and --cost must not be negative")
	default:
		return true
	}
	return false
}

// loadSuite loads the suite at path as the flags shape it: its first
// --limit cases, --repeats times, with their impossible twins (whose
// files removeTwins removes) and --label. A nil suite failed with code.
func (m evalCommand) loadSuite(ctx context.Context, path string, f evalRunFlags) (suite *eval.Suite, removeTwins func(), code int) {
	suite, err := eval.LoadSuite(path)
	if err != nil {
		printProblems(m.Stderr, "ratchet eval run", err)
		return nil, nil, exitUsage
	}
	taskfile.SetLimits(m.limits, suite.Limits)
	if f.limit > 0 && f.limit < len(suite.Cases) {
		suite.Cases = suite.Cases[:f.limit]
	}
	if f.repeats > 0 {
		suite.Repeats = f.repeats
		for i := range suite.Cases {
			suite.Cases[i].Repeats = f.repeats
		}
	}
	removeTwins = func() {}
	if f.impossible || suite.Impossible {
		twinDir, err := os.MkdirTemp("", "ratchet-twins-")
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
			return nil, nil, exitInfra
		}
		removeTwins = func() { os.RemoveAll(twinDir) }
		none, err := suite.AddTwins(ctx, twinDir)
		if err != nil {
			removeTwins()
			fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
			return nil, nil, exitInfra
		}
		for _, why := range none {
			fmt.Fprintf(m.Stderr, "ratchet eval run: no impossible twin for %s\n", why)
		}
	}
	if f.label != "" {
		if err := eval.CheckLabel(f.label); err != nil {
			removeTwins()
			fmt.Fprintf(m.Stderr, "ratchet eval run: --label: %v\n", err)
			return nil, nil, exitUsage
		}
		suite.Label = f.label
	}
	return suite, removeTwins, exitDone
}

// placeRuns sets where cfg's runs are recorded and traced: the run
// database (or, with --temporal, the workers that record them) and the
// OTEL_* variables' exporters, as ratchet run traces a run. A nil
// closeRuns failed with code.
func (m evalCommand) placeRuns(ctx context.Context, cfg *eval.Config, suite *eval.Suite, f evalRunFlags) (closeRuns func(), code int) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	tf := f.temporal
	if tf.temporal == "" { // on Temporal, the workflows record the runs
		runs, err := m.openStore(ctx, tf.db)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
			return nil, exitInfra
		}
		closers = append(closers, func() { runs.Close() })
		cfg.Runs = runs
	}
	// Flushed as the command returns.
	tel, err := m.startTelemetry(context.Background())
	if err != nil {
		closeAll()
		fmt.Fprintf(m.Stderr, "ratchet eval run: telemetry: %v\n", err)
		return nil, exitUsage
	}
	closers = append(closers, tel.shutdown)
	cfg.TracerProvider, cfg.MeterProvider = tel.providers()
	if tel != nil {
		m.secrets.Add(tel.Secrets...) // the OTLP headers' values (API keys)
	}
	if tf.temporal != "" {
		tf.unsafeSandbox = f.unsafeSandbox
		done, code := m.evalOnTemporal(ctx, cfg, suite, f.model, tf)
		if code != exitDone {
			closeAll()
			return nil, code
		}
		closers = append(closers, done)
	}
	return closeAll, exitDone
}

// evalRunEnded says how a suite's run ended and returns its exit code;
// err is the summary's printing's.
func (m evalCommand) evalRunEnded(ctx context.Context, label string, out eval.Outcome, runErr, err error) int {
	switch {
	case runErr != nil && ctx.Err() != nil:
		fmt.Fprintf(m.Stderr, "ratchet eval run: interrupted; run again with --label %s to finish\n", label)
		return exitNotDone
	case runErr != nil:
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", runErr)
		return exitInfra
	case err != nil:
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
		return exitInfra
	case len(out.LoadErrors) > 0:
		return exitUsage
	case len(out.NotStarted) > 0:
		fmt.Fprintf(m.Stderr, "ratchet eval run: %s not started: the cost cap is spent; raise it (--cost) and run again with --label %s to finish\n", words.Count(len(out.NotStarted), "run"), label)
		return exitNotDone
	}
	return exitDone
}

// printSummary prints an eval's summary: as JSON, or as Markdown followed
// by tail (where the results went, what to run next).
func (m evalCommand) printSummary(sum eval.Summary, asJSON bool, tail string) error {
	if asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	if err := sum.Markdown(m.Stdout, 20); err != nil {
		return err
	}
	_, err := io.WriteString(m.Stdout, tail)
	return err
}

func writeFileWith(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// evalLoader builds a fresh job for each run of a task case, with the one
// builder that ratchet run uses: its own model (a scripted model plays its
// turns from the start), its own tools and MCP servers and, for
// copy_workspace tasks, its own copy of the workspace, removed afterwards.
func (m evalCommand) evalLoader(s *eval.Suite, modelFlag string, unsafeSandbox bool, notices io.Writer) func(context.Context, eval.Case, int) (eval.Job, error) {
	notice := &onceWriter{w: notices}
	strengths := &strengthMemo{m: checkStrength(m), byCase: map[string]*strengthOnce{}}
	return func(ctx context.Context, c eval.Case, repeat int) (eval.Job, error) {
		cfg := taskfile.Config{
			DefaultModel: m.Getenv("RATCHET_MODEL"),
			Limits:       m.limits,
			OpenModel: func(spec, base string) (model.Model, error) {
				return m.openEvalModel(spec, base, notice, cacheScope(c.Name, repeat))
			},
			Sandbox: m.sandbox(unsafeSandbox),
			Getenv:  m.Getenv,
			Secrets: m.secrets,
		}
		switch {
		case modelFlag != "":
			cfg.Model = modelFlag
		case c.Model != "":
			cfg.Model, cfg.ModelDir = c.Model, s.Dir
		case s.Model != "":
			cfg.Model, cfg.ModelDir = s.Model, s.Dir
		}
		cfg.Budget = c.Budget
		// What ratchet resume rebuilds the run from: the task file (an
		// inline case has none to resume from) with the model and budget
		// the case set.
		info := taskInfo{Model: cfg.Model, UnsafeSandbox: unsafeSandbox,
			Steps: c.Budget.Steps, ModelCalls: c.Budget.ModelCalls, ToolCalls: c.Budget.ToolCalls, Tokens: c.Budget.TotalTokens, Cost: c.Budget.Cost.Dollars(), Time: c.Budget.Time}
		if c.Budget.Cost == budget.Unlimited {
			info.Cost = budget.Unlimited
		}
		if cfg.ModelDir != "" {
			info.Model = absModel(cfg.Model, cfg.ModelDir)
		}
		if c.TaskPath != "" && c.Twin == "" { // a twin's changed checks are in no file
			abs, err := filepath.Abs(c.Task.Path)
			if err != nil {
				return eval.Job{}, err
			}
			info.TaskFile = abs
		}
		run, err := taskfile.Build(ctx, c.Task, cfg)
		if err != nil {
			return eval.Job{}, err
		}
		info.Ran = modelName(run.ModelName, run.Model)
		infoJSON, err := json.Marshal(info)
		if err != nil {
			run.Close()
			return eval.Job{}, err
		}
		checkStrength, err := strengths.get(ctx, c.Name, run.File, run.Task.Checks)
		if err != nil {
			run.Close()
			return eval.Job{}, err
		}
		// The task file's part of the run's config, as a local run takes it.
		rcfg := run.Runner()
		return eval.Job{Task: run.Task, Exec: rcfg.Exec, Model: rcfg.Model, Patch: rcfg.Patch, ModelName: modelName(run.ModelName, run.Model), Close: run.Close, CheckStrength: checkStrength, Info: infoJSON}, nil
	}
}

// openEvalModel is openModel with the scripted model's notice printed once
// per suite rather than once per run, and the response cache's scope
// that of the run.
func (m evalCommand) openEvalModel(spec, base string, notice io.Writer, scope string) (model.Model, error) {
	if kind, arg, _ := strings.Cut(spec, ":"); kind == "scripted" && arg != "" && !strings.Contains(spec, ",") {
		if base != "" && !filepath.IsAbs(arg) {
			arg = filepath.Join(base, arg)
		}
		return scripted.Load(arg, scripted.Config{Notice: notice})
	}
	mdl, err := m.openUncached(spec, base)
	if err != nil {
		return nil, err
	}
	return m.cached(mdl, scope), nil
}

// cacheScope is the response cache's scope of repeat r of a case: not the
// label's, so that a suite run again under a new label after a change is
// answered with what the old label's runs got.
func cacheScope(caseName string, repeat int) string {
	return fmt.Sprintf("eval-case:%s/r%d", caseName, repeat)
}

// recordedTaskInfo is what a stored run's row keeps of how it was
// started, empty if it kept nothing.
func (m evalCommand) recordedTaskInfo(ctx context.Context, id, db string) taskInfo {
	var info taskInfo
	s, err := m.openStore(ctx, db)
	if err != nil {
		return info
	}
	defer s.Close()
	row, err := findRun(ctx, s, id)
	if err != nil {
		return info
	}
	_ = json.Unmarshal(row.Task, &info) // a row without task info: nothing kept
	return info
}

// modelName names a model in the records: the model string, except that a
// scripted model (whose file path says little and differs per task) goes by
// its script's name.
func modelName(spec string, mdl model.Model) string {
	if n, ok := mdl.(model.Named); ok && strings.HasPrefix(spec, "scripted:") && n.Name() != "" {
		return "scripted:" + n.Name()
	}
	return spec
}

// lockedWriter serializes the writes of several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// onceWriter passes on its first write only.
type onceWriter struct {
	w    io.Writer
	once sync.Once
}

func (o *onceWriter) Write(p []byte) (int, error) {
	o.once.Do(func() { o.w.Write(p) })
	return len(p), nil
}

func (m evalCommand) evalReport(args []string) int {
	fs := flag.NewFlagSet("ratchet eval report", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report to this file")
	cases := fs.Int("cases", 20, "cases listed in the Markdown (lowest success first; 0: all)")
	setUsage(fs, `Usage: ratchet eval report RESULTS [--json] [--html FILE] [--cases N]

Prints the metrics of a suite's stored runs (RESULTS: a result directory,
or a label: .ratchet/eval/LABEL, or $RATCHET_EVAL_DIR/LABEL): success,
iterations, pass@1 and pass^k, calibration, check strength, holdout pass
rate and cost per success, for the suite, each model and each case
(docs/eval.md defines each). Markdown by default; --json for machines;
--html also writes a report with charts.

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(m.Stderr, "ratchet eval report: want one result directory or label")
		return exitUsage
	}
	dir, err := m.resultDir(pos[0])
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval report: %v\n", err)
		return exitUsage
	}
	recs, err := eval.ReadRecords(dir)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval report: %v\n", err)
		return exitInfra
	}
	sum := eval.Summarize(pos[0], recs)
	sum.Runs = eval.RunLinks(recs, dir)
	if *asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(sum)
	} else {
		err = sum.Markdown(m.Stdout, *cases)
	}
	if err == nil && *htmlOut != "" {
		err = writeFileWith(*htmlOut, func(w io.Writer) error { return eval.HTMLSummary(w, sum) })
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval report: %v\n", err)
		return exitInfra
	}
	return exitDone
}

func (m evalCommand) evalCompare(args []string) int {
	fs := flag.NewFlagSet("ratchet eval compare", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	gate := fs.Bool("gate", false, "exit 1 when any metric regressed significantly")
	alpha := fs.Float64("alpha", eval.DefaultAlpha, "significance level of each metric's two-sided test")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report to this file")
	holmFlag := fs.Bool("holm", false, "adjust p-values for the number of gated metrics (Holm-Bonferroni): --alpha bounds\nthe chance of any false regression, not of each")
	ignore := fs.String("ignore", "wall time", "comma-separated metric names or prefixes shown but never counted as regressions\n(wall time depends on the machine's load; --ignore '' gates on it too)")
	setUsage(fs, `Usage: ratchet eval compare BASE CAND [flags]

Prints every metric of the baseline and the candidate side by side with the
difference, its 95% interval and a two-sided test: Fisher's exact test for
rates, Mann-Whitney for iterations to success, a seeded bootstrap for the
Brier score and spend per success. A regression is a significant difference
in the worse direction. Each metric is tested at --alpha on its own.

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintln(m.Stderr, "ratchet eval compare: want BASE and CAND (result directories or labels)")
		return exitUsage
	}
	if !(*alpha > 0 && *alpha < 1) {
		fmt.Fprintln(m.Stderr, "ratchet eval compare: --alpha must be between 0 and 1")
		return exitUsage
	}
	var sides [2][]eval.Record
	for i, arg := range pos {
		dir, err := m.resultDir(arg)
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet eval compare: %v\n", err)
			return exitUsage
		}
		if sides[i], err = eval.ReadRecords(dir); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet eval compare: %v\n", err)
			return exitInfra
		}
	}
	var ign []string
	for s := range strings.SplitSeq(*ignore, ",") {
		if s = strings.TrimSpace(s); s != "" {
			ign = append(ign, s)
		}
	}
	cmp := eval.Compare(pos[0], sides[0], pos[1], sides[1], eval.CompareOptions{Alpha: *alpha, Ignore: ign, Holm: *holmFlag})
	var err error
	if *asJSON {
		err = cmp.JSON(m.Stdout)
	} else {
		err = cmp.Markdown(m.Stdout)
	}
	if err == nil && *htmlOut != "" {
		err = writeFileWith(*htmlOut, func(w io.Writer) error { return eval.HTMLCompare(w, cmp) })
	}
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval compare: %v\n", err)
		return exitInfra
	}
	if *gate && len(cmp.Regressions) > 0 {
		fmt.Fprintf(m.Stderr, "ratchet eval compare: gate failed: %d significant regression(s): %s\n", len(cmp.Regressions), strings.Join(cmp.Regressions, ", "))
		return exitNotDone
	}
	return exitDone
}

func (m evalCommand) evalAdd(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("ratchet eval add", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	from := fs.String("from-run", "", "the failed run: its ID in the run database, or its event log (JSONL, as written by ratchet run --log)")
	db := fs.String("db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	suitePath := fs.String("suite", "", "the suite file to append the case to (created when missing)")
	task := fs.String("task", "", "the task file the run ran (default: the one the database recorded; a log holds the goal, not the checks)")
	want := fs.String("expect-answer", "", "the right answer: checked by the case (and, without --task, by an inline equals check)")
	category := fs.String("category", "", "failure category, overriding the guess: "+strings.Join(eval.Categories, ", "))
	name := fs.String("name", "", "case name (default from-RUNID)")
	setUsage(fs, `Usage: ratchet eval add --from-run LOG --suite SUITE.yaml [--task TASK.yaml | --expect-answer A] [flags]

Turns a failed run into a suite case: the run's task, with the budget it ran
under and (for a run from the database) the model it was given, so that the
case fails as the run did; the expected outcome (done, and never again the
run's wrong answer) and a failure category guessed from the log (see
docs/eval.md; --category overrides it).

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if !m.evalAddWellUsed(pos, *from, *suitePath, *category, *name) {
		return exitUsage
	}
	recs, err := replayCommand(m).records(ctx, *from, *db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval add: %s: %v\n", *from, err)
		return exitUsage
	}
	d, err := eval.Diagnose(recs)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval add: %s: %v\n", *from, err)
		return exitUsage
	}
	if *category != "" {
		d.Category, d.Evidence = *category, "category set by hand; "+d.Evidence
	}
	if d.Category == "" {
		fmt.Fprintf(m.Stderr, "ratchet eval add: %s did not fail (%s); pass --category to add it anyway\n", *from, d.Evidence)
		return exitUsage
	}
	logRef, info := m.runRef(ctx, *from, *db, recs)
	if *task == "" {
		*task = info.TaskFile
	}
	c, err := eval.CaseFromRun(d, *suitePath, *task, *want, logRef)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval add: %v\n", err)
		return exitUsage
	}
	if info.Model != "" {
		// The model the run was given (its --model, or its suite's): a
		// scripted file relative to where it ran, which is here.
		wd, _ := os.Getwd()
		c.Model = absModel(info.Model, wd)
	}
	if *name != "" {
		c.Name = *name
	}
	if err := eval.AppendCase(*suitePath, c); err != nil {
		printProblems(m.Stderr, "ratchet eval add", err)
		return exitUsage
	}
	fmt.Fprintf(m.Stdout, "added case %s to %s\n  status:   %s\n  category: %s (%s)\n", c.Name, *suitePath, d.Status, d.Category, d.Evidence)
	return exitDone
}

// runRef is how a suite case names the run from (a log file or a run of
// db, whose first records are recs): the log's absolute path, or the run's
// ID; a run's info is what its row recorded (none for a log).
func (m evalCommand) runRef(ctx context.Context, from, db string, recs []observe.Record) (ref string, info taskInfo) {
	if _, err := os.Stat(from); err == nil {
		if abs, err := filepath.Abs(from); err == nil {
			return abs, info
		}
		return from, info
	}
	// A run by its ID, a prefix or "last": the suite keeps the ID.
	ref = from
	if len(recs) > 0 && recs[0].Run != "" {
		ref = recs[0].Run
	}
	return ref, m.recordedTaskInfo(ctx, ref, db)
}

// evalAddWellUsed says whether eval add's flags and arguments go
// together, and how not on stderr.
func (m evalCommand) evalAddWellUsed(pos []string, from, suitePath, category, name string) bool {
	if len(pos) > 0 || from == "" || suitePath == "" {
		fmt.Fprintln(m.Stderr, "ratchet eval add: want --from-run LOG and --suite SUITE.yaml, no other arguments")
		return false
	}
	if category != "" && !slices.Contains(eval.Categories, category) {
		fmt.Fprintf(m.Stderr, "ratchet eval add: --category %q is not one of %s\n", category, strings.Join(eval.Categories, ", "))
		return false
	}
	if name != "" {
		if err := eval.CheckLabel(name); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet eval add: --name: %v\n", err)
			return false
		}
	}
	return true
}
