package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/sim"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

// Job is one run ready to go: a fresh model and task (with its own tools and
// workspace) for one repeat of a case.
type Job struct {
	Task runner.Task
	// Exec configures tool execution (a task file's tool_output: caps).
	Exec  tool.ExecConfig
	Model model.Model
	// ModelName names the model in the records.
	ModelName string
	// Close releases what the job holds (a workspace); may be nil.
	Close func()
	// CheckStrength is the strength of the task's gate checks, when
	// measured; it is copied into the record.
	CheckStrength *float64
	// Info is what rebuilds the task elsewhere (Config.Run may need it)
	// and, kept on the run's row in Config.Runs, what ratchet resume
	// rebuilds it from.
	Info []byte
	// Labels tag the run in the run database (RunLabels); Run sets them
	// before Config.Run sees the job.
	Labels []string
	// Patch, when set, takes the patch of the job's workspace as its run
	// finishes (runner.Config.Patch, as taskfile.Run.Runner sets it): the
	// run's Result keeps it.
	Patch func(ctx context.Context) *loop.Patch
}

// RunLabels are the labels of a suite's run in the run database: the
// suite's label and the case's name, so that ratchet ls --label finds
// them.
func RunLabels(label, caseName string) []string {
	return []string{"eval:" + label, "case:" + caseName}
}

// Config says how to run a suite. Store is required; Load is required when
// the suite has task cases. The zero value of every other field means its
// default.
type Config struct {
	Store Store
	// Runs, when set, is the run database each task case's run is recorded
	// in (runner.Config.Store), labelled RunLabels, so that ratchet ls,
	// show, replay and resume work on it; nil records none. Sim cases
	// (thousands of cheap runs, no task file to resume) are not recorded;
	// with Config.Run, Run records its runs itself.
	Runs store.Store
	// Load builds the job for repeat r of a task case (not called for sim
	// cases). It is called from several goroutines at once.
	Load func(ctx context.Context, c Case, repeat int) (Job, error)
	// Concurrency overrides the suite's.
	Concurrency int
	// Label names the runs in their logs (default the suite's label).
	Label string
	// Progress receives the progress display; nil shows none. Live redraws
	// one line with a bar and ETA (for a terminal); otherwise plain lines.
	Progress io.Writer
	Live     bool
	// NoLogs skips the per-run event logs.
	NoLogs bool
	// Now is the clock for wall times and ETAs; default time.Now.
	Now func() time.Time
	// Redactor knows the secrets the runs hold (runner.Config.Redactor):
	// their logs and results never show them.
	Redactor *redact.Redactor
	// TracerProvider and MeterProvider, when set, receive each run's spans
	// and metrics (runner.Config's): one trace per run.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Hooks and Guardrails take part in each run carried out here
	// (runner.Config's); a run that Config.Run carries out elsewhere takes
	// the hooks its driver gives it (temporal.Live's, on a worker).
	Hooks      runner.Hooks
	Guardrails []runner.Guardrail
	// Cost, when positive, caps the suite's spend (replacing the suite's
	// budget: cost), shared by its concurrent runs (see purse); the runs
	// already in the store count towards it. A run that cannot be granted
	// any of it does not start (Outcome.NotStarted).
	Cost budget.Micros
	// Run, when set, carries out a task case's job instead of runner.Run
	// in this process (on Temporal workers, say); it writes the run's JSONL
	// log to log when log is not nil. Sim cases run here either way.
	Run func(ctx context.Context, job Job, runID string, log io.Writer) (loop.Result, error)
}

// Outcome is what Run did.
type Outcome struct {
	// Records are the suite's runs: those resumed from the store and those
	// run now, for the (case, repeat) pairs of the suite.
	Records []Record
	Ran     int // runs made now
	Resumed int // runs found finished in the store
	// LoadErrors are cases that could not be set up; their runs are not
	// stored, so a later run tries them again.
	LoadErrors []error
	// NotStarted are the runs the suite's cost cap left nothing for, each
	// with why; not stored either.
	NotStarted []error
}

// Run runs every (case, repeat) pair of s that the store does not hold yet,
// Concurrency at a time, and stores each as it finishes. Cancelling ctx
// stops it: finished runs are kept, runs cut short are not stored and run
// again on resume. The error is non-nil when the store fails or ctx was
// cancelled; load errors are reported in the Outcome.
func Run(ctx context.Context, s *Suite, cfg Config) (Outcome, error) {
	if cfg.Store == nil {
		return Outcome{}, errors.New("eval: Config.Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Label == "" {
		cfg.Label = s.Label
	}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = s.Concurrency
	}
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	prior, err := cfg.Store.Records(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("eval: reading the store: %w", err)
	}
	wanted := map[Key]bool{}
	type job struct {
		c      *Case
		repeat int
	}
	var jobs []job
	// Repeat-major order, so that a suite stopped early has covered every
	// case rather than repeated a few.
	maxRep := 0
	for _, c := range s.Cases {
		maxRep = max(maxRep, c.Repeats)
	}
	have := map[Key]Record{}
	for _, r := range prior {
		have[r.Key()] = r
	}
	var out Outcome
	for rep := range maxRep {
		for i := range s.Cases {
			c := &s.Cases[i]
			if rep >= c.Repeats {
				continue
			}
			k := Key{c.Name, rep}
			wanted[k] = true
			if r, ok := have[k]; ok {
				out.Records = append(out.Records, r)
				out.Resumed++
				continue
			}
			jobs = append(jobs, job{c, rep})
		}
	}

	var wallet *purse
	if capped := cmp.Or(cfg.Cost, s.Cost); capped > 0 {
		wallet = &purse{cap: capped, slots: conc}
		for _, r := range out.Records {
			wallet.spent += r.Result.Usage.Cost
		}
	}

	bar := newProgressBar(cfg.Progress, cfg.Live, len(out.Records)+len(jobs), out.Resumed, cfg.Now)
	for _, r := range out.Records {
		bar.count(r.Success())
	}
	bar.start()
	defer bar.stop()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(conc, len(jobs)) {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(jobs) || ctx.Err() != nil {
					return
				}
				rec, err := runOne(ctx, cfg, jobs[j].c, jobs[j].repeat, bar.watch(), wallet)
				switch {
				case errors.Is(err, errNotStarted):
					mu.Lock()
					out.NotStarted = append(out.NotStarted, err)
					mu.Unlock()
					bar.fail(jobs[j].c.Name, err)
					continue
				case errors.Is(err, errLoad):
					mu.Lock()
					out.LoadErrors = append(out.LoadErrors, err)
					mu.Unlock()
					bar.fail(jobs[j].c.Name, err)
					continue
				case err != nil:
					cancel(err)
					return
				case rec == nil: // cut short by cancellation
					return
				}
				if err := cfg.Store.Put(context.WithoutCancel(ctx), *rec); err != nil {
					cancel(fmt.Errorf("eval: storing %s#%d: %w", rec.Case, rec.Repeat, err))
					return
				}
				mu.Lock()
				out.Records = append(out.Records, *rec)
				out.Ran++
				mu.Unlock()
				bar.done(*rec)
			}
		})
	}
	wg.Wait()
	return out, context.Cause(ctx)
}

var (
	errLoad       = errors.New("cannot set up the case")
	errNotStarted = errors.New("not started")
)

// runOne runs one repeat of a case. It returns a nil record when ctx was
// cancelled mid-run (nothing to store), an error wrapping errLoad when the
// case could not be set up, and another error when a log could not be
// written. held follows the run for the progress display.
func runOne(ctx context.Context, cfg Config, c *Case, repeat int, held *holdWatch, wallet *purse) (*Record, error) {
	var job Job
	if c.Sim != nil {
		job = simJob(c.Sim, repeat)
	} else {
		if cfg.Load == nil {
			return nil, fmt.Errorf("%w %s: no loader for task cases", errLoad, c.Name)
		}
		var err error
		if job, err = cfg.Load(ctx, *c, repeat); err != nil {
			return nil, fmt.Errorf("%w %s: %w", errLoad, c.Name, err)
		}
	}
	if job.Close != nil {
		defer job.Close()
	}
	var spent budget.Micros // what the run spent, once it has run
	cut := false            // the cap cut the run's cost limit
	if wallet != nil {
		own := job.Task.Budget.WithDefaults().Cost
		g, err := wallet.grant(own)
		if err != nil {
			return nil, fmt.Errorf("%w: %s r%d: %w", errNotStarted, c.Name, repeat, err)
		}
		defer func() { wallet.settle(g, spent) }()
		job.Task.Budget.Cost, cut = g, g != own
	}
	spec, _, err := job.Task.Spec()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errLoad, c.Name, err)
	}
	if cut {
		if err := spec.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %s r%d: the suite's cost budget has %s left for it, too little: %w", errNotStarted, c.Name, repeat, job.Task.Budget.Cost, err)
		}
	}
	rec := &Record{Case: c.Name, Repeat: repeat, Model: job.ModelName, Expect: c.Expect, Tiers: map[string]verify.Tier{}, CheckStrength: job.CheckStrength, Twin: c.Twin}
	for _, ch := range spec.Checks {
		rec.Tiers[ch.Name] = ch.Tier
	}
	rcfg := runner.Config{Model: job.Model, Exec: job.Exec, Patch: job.Patch, RunID: fmt.Sprintf("%s/%s/r%d", cfg.Label, c.Name, repeat), Redactor: cfg.Redactor,
		TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider, Hooks: cfg.Hooks, Guardrails: cfg.Guardrails}
	elsewhere := cfg.Run != nil && c.Sim == nil // sim cases always run here
	job.Labels = RunLabels(cfg.Label, c.Name)
	if cfg.Runs != nil && !elsewhere && c.Sim == nil {
		// An earlier attempt at this pair, cut short, keeps its ID (ratchet
		// resume can carry it on): this attempt takes the next free one.
		id, err := freeRunID(ctx, cfg.Runs, rcfg.RunID)
		if err != nil {
			return nil, fmt.Errorf("eval: run database: %w", err)
		}
		rcfg.RunID, rcfg.Store, rcfg.Labels, rcfg.TaskInfo = id, cfg.Runs, job.Labels, job.Info
		rec.Run = id
	}
	var logW io.WriteCloser
	var jl *observe.JSONL
	if !cfg.NoLogs {
		var err error
		if logW, rec.Log, err = cfg.Store.Log(ctx, rec.Key()); err != nil {
			return nil, fmt.Errorf("eval: event log: %w", err)
		}
		jl = observe.NewJSONL(logW)
		rcfg.Observers = []observe.Observer{jl}
	}
	rcfg.Observers = append(rcfg.Observers, held)
	defer held.release()
	start := cfg.Now()
	var res loop.Result
	var runErr error
	if elsewhere {
		var w io.Writer
		if logW != nil {
			w = logW
		}
		res, runErr = cfg.Run(ctx, job, rcfg.RunID, w)
	} else {
		res, runErr = runner.Run(ctx, job.Task, rcfg)
	}
	spent = res.Usage.Cost
	rec.Wall = cfg.Now().Sub(start)
	rec.Finished = cfg.Now().UTC()
	if logW != nil {
		flush := error(nil)
		if !elsewhere {
			flush = jl.Flush()
		}
		if err := errors.Join(flush, logW.Close()); err != nil {
			return nil, fmt.Errorf("eval: event log of %s: %w", c.Name, err)
		}
	}
	if res.Status == "" {
		return nil, fmt.Errorf("%w %s: %w", errLoad, c.Name, runErr)
	}
	if ctx.Err() != nil && !res.Status.IsDone() {
		// Cut short (cancelled, or failed on the cancelled context): not a
		// result, and it runs again on resume.
		return nil, nil
	}
	rec.Result = res
	if runErr != nil {
		rec.Error = runErr.Error()
	}
	return rec, nil
}

// freeRunID is id, or id-2, id-3… when the run database already has it.
func freeRunID(ctx context.Context, runs store.Store, id string) (string, error) {
	for n := 1; ; n++ {
		try := id
		if n > 1 {
			try = fmt.Sprintf("%s-%d", id, n)
		}
		_, err := runs.Run(ctx, try)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return try, nil
		case err != nil:
			return "", err
		}
	}
}

// simJob builds repeat r of a simulated case: step Index+1... of trial r,
// so that every (case, repeat) pair has its own seeds.
func simJob(c *SimCase, repeat int) Job {
	task, gen := sim.StepTask(c.Config, c.Policy, c.Index, repeat+1)
	if c.Holdout {
		// The truth: passes exactly the correct answer (recall 1, no false
		// failures), so the holdout pass rate is the share of accepted
		// answers that are right.
		task.Checks.Holdout = []verify.Verifier{sim.Verifier{CheckName: "truth", Recall: 1}}
	}
	return Job{Task: task, Model: gen, ModelName: c.Model}
}
