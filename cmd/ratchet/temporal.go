package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/temporal"
)

// dialTemporal connects to a Temporal server. The SDK's log goes to w at
// warning level and above.
func dialTemporal(ctx context.Context, hostPort, namespace string, w io.Writer) (client.Client, error) {
	logger := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: namespace, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("temporal server %s: %w", hostPort, err)
	}
	return c, nil
}

// workerOpener builds a run's live task on a worker, from the task file
// and flags its row keeps, as ratchet run built it.
func (m *Main) workerOpener(unsafeSandbox bool) temporal.Opener {
	return func(ctx context.Context, row store.Run) (temporal.Live, error) {
		var info taskInfo
		if err := json.Unmarshal(row.Task, &info); err != nil || info.TaskFile == "" {
			return temporal.Live{}, fmt.Errorf("run %s was not started by 'ratchet run --temporal' (its row keeps no task file)", row.ID)
		}
		rf := info.flags()
		rf.quiet = true
		rf.unsafeSandbox = rf.unsafeSandbox || unsafeSandbox
		// The run's --provider-limit flags hold, as in a local run.
		if err := m.applyProviderLimits(rf.providerLimits); err != nil {
			return temporal.Live{}, err
		}
		built, err := m.build(ctx, info.TaskFile, &rf)
		if err != nil {
			return temporal.Live{}, err
		}
		// The task file's part of the run's config, as a local run takes it.
		cfg := built.Runner()
		return temporal.Live{Task: built.Task, Model: cfg.Model, Exec: cfg.Exec, Patch: cfg.Patch, Redactor: m.secrets, Close: built.Close}, nil
	}
}

// onTemporal says r runs on Temporal workers: no process of ours holds
// its lease, and it is never interrupted while Temporal carries it on.
func onTemporal(r store.Run) bool {
	_, ok := temporalInfo(r)
	return ok
}

// temporalInfo is the task info of row, and whether it says the run runs
// on Temporal.
func temporalInfo(row store.Run) (taskInfo, bool) {
	var info taskInfo
	ok := json.Unmarshal(row.Task, &info) == nil && info.Temporal != ""
	return info, ok
}

// workerCommand is 'ratchet worker'.
type workerCommand struct{ *Main }

// workerFlags are ratchet worker's flags.
type workerFlags struct {
	hostPort, queue, namespace, db, cacheDir string
	unsafeSandbox                            bool
}

// flags parses ratchet worker's arguments; on a problem it says so and
// returns the exit code.
func (m workerCommand) flags(args []string) (*workerFlags, int) {
	w := &workerFlags{}
	fs := flag.NewFlagSet("ratchet worker", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&w.hostPort, "temporal", "", "the Temporal server, HOST:PORT (required)")
	fs.StringVar(&w.queue, "task-queue", "", "the task queue to serve (required)")
	fs.StringVar(&w.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&w.db, "db", "", "the run database every worker and starter shares: a postgres:// DSN for workers on several machines (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.BoolVar(&w.unsafeSandbox, "unsafe-sandbox", false, "where no sandbox works, run exec checks without isolation (candidates could reach the host)")
	fs.StringVar(&w.cacheDir, "cache", "", cacheHelp+" (the calls of every run this worker serves)")
	m.providerLimitFlag(fs, nil)
	setUsage(fs, `Usage: ratchet worker --temporal HOST:PORT --task-queue Q [flags]

Serves a Temporal task queue: carries out the model calls, tool calls and
checks of the runs started with 'ratchet run --temporal' on that queue, and
records their entries in the run database. Run as many workers as you like,
on as many machines; each needs the task files (at the paths the runs were
started with) and the run database. Provider limits (--provider-limit,
the task files' provider_limits:, a run's own --provider-limit) hold across
every worker and process on the run database. See docs/temporal.md.

Flags:
`)
	pos, code, done := parseCommand(fs, args)
	if done {
		return nil, code
	}
	var problems []string
	if w.hostPort == "" {
		problems = append(problems, "--temporal HOST:PORT is required")
	}
	if w.queue == "" {
		problems = append(problems, "--task-queue is required")
	}
	if len(pos) > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments: %q", pos))
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(m.Stderr, "ratchet worker: %s\n", p)
		}
		return nil, exitUsage
	}
	return w, exitDone
}

// run serves a task queue: it carries out the commands of the runs
// started on it with ratchet run --temporal.
func (m workerCommand) run(ctx context.Context, args []string) int {
	wf, code := m.flags(args)
	if wf == nil {
		return code
	}
	closeCache, err := m.openCache("ratchet worker", wf.cacheDir, false)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet worker: %v\n", err)
		return exitInfra
	}
	defer closeCache()
	st, err := m.openStore(ctx, wf.db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet worker: %v\n", err)
		return exitInfra
	}
	defer st.Close()
	c, err := dialTemporal(ctx, wf.hostPort, wf.namespace, m.Stderr)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet worker: %v\n", err)
		return exitInfra
	}
	defer c.Close()
	// Models are opened without transport retries: the activity's retry
	// policy retries them, within the run's deadline.
	m.noModelRetry = true
	acts := temporal.NewActivities(st, m.workerOpener(wf.unsafeSandbox))
	defer acts.Close()
	w := worker.New(c, wf.queue, worker.Options{})
	temporal.Register(w, acts)
	fmt.Fprintf(m.Stderr, "ratchet worker: serving task queue %s on %s\n", wf.queue, wf.hostPort)
	stop := make(chan any)
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	if err := w.Run(stop); err != nil {
		fmt.Fprintf(m.Stderr, "ratchet worker: %v\n", err)
		return exitInfra
	}
	return exitDone
}

// runTemporal starts a loaded task's run on Temporal and follows it to its
// end, as ratchet run does locally.
func (m driver) runTemporal(ctx context.Context, task runner.Task, mdl model.Model, rec *scripted.Recorder, db store.Store, runID string, info []byte, f runFlags) int {
	c, err := dialTemporal(ctx, f.temporal, f.namespace, m.Stderr)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet run: %v\n", err)
		return exitInfra
	}
	defer c.Close()
	_, err = temporal.Start(ctx, c, db, task, temporal.StartOptions{Redactor: m.secrets,
		RunID: runID, TaskQueue: f.taskQueue, TaskInfo: info, Labels: f.labels, Human: !f.noWait,
	})
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet run: %v\n", err)
		return exitUsage
	}
	if !f.quiet {
		fmt.Fprintf(m.Stderr, "ratchet run: run %s started on Temporal (task queue %s)\n", runID, f.taskQueue)
	}
	cfg := runner.Config{Model: mdl}
	if rec != nil { // the replies, as the workers' log holds them
		cfg.Observers = []observe.Observer{logRecorder{rec}}
		cfg.ChildObservers = []observe.Observer{logRecorder{rec}}
	}
	return m.follow(ctx, "ratchet run", c, db, runID, f, task.Budget, cfg, nil)
}

// follow waits for a Temporal run to end or to wait for a person, showing
// its log as the workers record it (runner.Tail) as carryOn shows a local
// run, and reports it as carryOn does. cfg gives the model, for the
// telemetry's name of it; limits are the run's, for the progress line.
// With send, the run is shown from its log's end, as a resumed run is, and
// send (the answer that carries it on) is called once it is. Interrupting
// follow cancels the run, as Ctrl-C cancels a local one.
func (m driver) follow(ctx context.Context, name string, c client.Client, db store.Store, runID string, f runFlags, limits budget.Limits, cfg runner.Config, send func() int) int {
	v, code := m.view(name, limits, f, &cfg)
	if v == nil {
		return code
	}
	defer v.close()
	cfg.Store, cfg.RunID, cfg.Redactor = db, runID, m.secrets
	tail, err := runner.NewTail(ctx, cfg, send != nil)
	if err != nil {
		fmt.Fprintf(m.Stderr, "%s: %v\n", name, err)
		return exitInfra
	}
	if send != nil {
		if code := send(); code != 0 {
			return code
		}
	}
	// A log that cannot be read is said once; the run goes on.
	show := func() {
		if tail == nil {
			return
		}
		if err := tail.Poll(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(m.Stderr, "%s: showing run %s: %v\n", name, runID, err)
			tail = nil
		}
	}
	stopTicking := sync.OnceFunc(tick(v.ticking))
	defer stopTicking()
	type outcome struct {
		res loop.Result
		err error
	}
	got := make(chan outcome, 1)
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		var o outcome
		o.err = c.GetWorkflow(wctx, runID, "").Get(wctx, &o.res)
		got <- o
	}()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	cancelled := false
	for {
		select {
		case o := <-got:
			show()
			stopTicking()
			if o.err != nil && o.res.Status == "" {
				fmt.Fprintf(m.Stderr, "%s: run %s: %v\n", name, runID, o.err)
				return exitInfra
			}
			if o.err == nil && o.res.Status == loop.Failed {
				// A run that failed in its workers ended with a Result.
				o.err = errors.New(o.res.Reason)
			}
			return m.ended(name, runID, f, o.res, o.err, v.closeLog())
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				if err := c.CancelWorkflow(wctx, runID, ""); err != nil {
					fmt.Fprintf(m.Stderr, "%s: cancelling run %s: %v\n", name, runID, err)
					return exitInfra
				}
			}
		case <-t.C:
			show()
			row, err := db.Run(wctx, runID)
			if err == nil && row.Status == store.StatusAwaitingInput {
				show()
				if tail != nil {
					tail.Stop(time.Now())
				}
				stopTicking()
				return m.ended(name, runID, f, loop.Result{}, &runner.AwaitingError{Run: runID, Question: row.Question}, v.closeLog())
			}
		}
	}
}

// answerTemporal answers a Temporal run's question with the answer
// Update and follows the run on.
func (m driver) answerTemporal(ctx context.Context, name string, db store.Store, row store.Run, info taskInfo, opts runner.ResumeOptions, f runFlags) int {
	if name == "resume" {
		fmt.Fprintf(m.Stderr, "ratchet resume: run %s runs on Temporal (%s, task queue %s): its workers carry it on, so there is nothing to resume; start a worker if none serves that queue\n", row.ID, info.Temporal, info.TaskQueue)
		return exitUsage
	}
	c, err := dialTemporal(ctx, info.Temporal, info.Namespace, m.Stderr)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet %s: %v\n", name, err)
		return exitInfra
	}
	defer c.Close()
	f.temporal, f.namespace, f.taskQueue = info.Temporal, info.Namespace, info.TaskQueue
	send := func() int {
		if err := sendAnswer(ctx, c, row.ID, opts); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet %s: %v\n", name, err)
			return exitUsage
		}
		// The row says running again once a worker has written the answer.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if r, err := db.Run(ctx, row.ID); err != nil || r.Status != store.StatusAwaitingInput {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return 0
	}
	var limits budget.Limits
	if recs, err := runner.LoadLog(ctx, db, row.ID); err == nil {
		limits = recs[0].Spec.Budget
	}
	return m.follow(ctx, "ratchet "+name, c, db, row.ID, f, limits, runner.Config{}, send)
}

// sendAnswer gives a Temporal run's workflow a person's reply (opts, as
// for runner.Resume) by its answer Update: ratchet answer, approve and
// deny, and ratchet ui's answer form, all reply to such a run through it.
func sendAnswer(ctx context.Context, c client.Client, id string, opts runner.ResumeOptions) error {
	a := temporal.Answer{Approved: opts.Approved}
	if opts.Answer != nil {
		a.Text = *opts.Answer
	}
	return temporal.SendAnswer(ctx, c, id, a)
}

// temporalEval is how ratchet eval run --temporal carries out a suite's
// runs: each (case, repeat) is a run workflow on the workers, a child of
// the eval's suite workflow, at most the suite's concurrency at once,
// recorded in the run database like any run.
type temporalEval struct {
	m     *Main
	c     client.Client
	suite *temporal.Suite
	db    store.Store
	queue string
	f     runFlags
	// tp and mp receive each run's spans and metrics (the eval's
	// telemetry), made from its log once it has ended.
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// evalOnTemporal sets cfg to run the suite's task cases on Temporal, as
// children of one suite workflow; done closes the suite workflow and what
// was opened for it.
func (m evalCommand) evalOnTemporal(ctx context.Context, cfg *eval.Config, suite *eval.Suite, modelFlag string, f runFlags) (done func(), code int) {
	db, err := m.openStore(ctx, f.db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
		return nil, exitInfra
	}
	c, err := dialTemporal(ctx, f.temporal, f.namespace, m.Stderr)
	if err != nil {
		db.Close()
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
		return nil, exitInfra
	}
	parent, err := temporal.StartSuite(ctx, c, "suite-"+suite.Label+"-"+time.Now().UTC().Format("20060102-150405.000000"), f.taskQueue)
	if err != nil {
		c.Close()
		db.Close()
		fmt.Fprintf(m.Stderr, "ratchet eval run: %v\n", err)
		return nil, exitInfra
	}
	te := &temporalEval{m: m.Main, c: c, suite: parent, db: db, queue: f.taskQueue, f: f, tp: cfg.TracerProvider, mp: cfg.MeterProvider}
	cfg.Load, cfg.Run = te.load(suite, modelFlag), te.run
	return func() {
		if err := parent.Close(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet eval run: closing the suite workflow: %v\n", err)
		}
		c.Close()
		db.Close()
	}, exitDone
}

// load builds a case's job as ratchet run builds a task file's, which is
// what the workers build again from the job's Info.
func (e *temporalEval) load(s *eval.Suite, modelFlag string) func(context.Context, eval.Case, int) (eval.Job, error) {
	return func(ctx context.Context, c eval.Case, repeat int) (eval.Job, error) {
		if c.Task == nil || c.TaskPath == "" {
			return eval.Job{}, errors.New("an inline task cannot run on Temporal: its workers build tasks from task files; move it to a file")
		}
		rf := e.f
		// A worker's response cache keeps the repeats independent samples,
		// as a local eval's does.
		rf.quiet, rf.cacheScope = true, cacheScope(c.Name, repeat)
		switch {
		case modelFlag != "":
			rf.model = modelFlag
		case c.Model != "":
			rf.model = absModel(c.Model, s.Dir)
		case s.Model != "":
			rf.model = absModel(s.Model, s.Dir)
		}
		abs, err := filepath.Abs(c.Task.Path)
		if err != nil {
			return eval.Job{}, err
		}
		rf.taskFile = abs
		built, err := e.m.build(ctx, abs, &rf)
		if err != nil {
			return eval.Job{}, err
		}
		rf.ran = modelName(built.ModelName, built.Model)
		info, err := json.Marshal(rf.info())
		if err != nil {
			built.Close()
			return eval.Job{}, err
		}
		return eval.Job{Task: built.Task, Exec: built.Exec, Model: built.Model, ModelName: modelName(rf.model, built.Model), Close: built.Close, Info: info}, nil
	}
}

// absModel makes a scripted model's file absolute against base (the
// suite's directory), as a worker elsewhere must find it.
func absModel(spec, base string) string {
	models := strings.Split(spec, ",") // a fallback chain: each of its models
	for i, one := range models {
		if file, ok := strings.CutPrefix(one, "scripted:"); ok && !filepath.IsAbs(file) {
			models[i] = "scripted:" + filepath.Join(base, file)
		}
	}
	return strings.Join(models, ",")
}

// run starts a job's run workflow and waits for its Result; cancelling
// ctx cancels the run.
func (e *temporalEval) run(ctx context.Context, job eval.Job, runID string, log io.Writer) (loop.Result, error) {
	// A second eval run with the same label runs again what was cut short:
	// its workflow must have an ID of its own.
	id := runID + "@" + time.Now().UTC().Format("20060102-150405.000000")
	run, err := e.suite.Start(ctx, e.db, job.Task, temporal.StartOptions{Redactor: e.m.secrets,
		RunID: id, TaskInfo: job.Info, Labels: job.Labels, Human: false,
	})
	if err != nil {
		return loop.Result{}, err
	}
	var res loop.Result
	if err := run.Get(ctx, &res); err != nil {
		if ctx.Err() != nil {
			_ = e.c.CancelWorkflow(context.WithoutCancel(ctx), id, "")
			return loop.Result{Status: loop.Cancelled, Reason: "the eval was interrupted"}, ctx.Err()
		}
		return loop.Result{}, err
	}
	if e.tp != nil || e.mp != nil {
		// From the log, as a local eval run's observer makes them as it
		// goes: timed by the entries, with the same trace IDs.
		tail, err := runner.NewTail(ctx, runner.Config{Model: job.Model, Store: e.db, RunID: id, Redactor: e.m.secrets,
			TracerProvider: e.tp, MeterProvider: e.mp}, false)
		if err == nil {
			err = tail.Poll(ctx)
		}
		if err != nil {
			return res, err
		}
	}
	if log != nil {
		// The run database holds its log in JSONL's form.
		entries, err := e.db.Entries(ctx, id, 0)
		if err != nil {
			return res, err
		}
		for _, en := range entries {
			if _, err := log.Write(append(en.Data, '\n')); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}
