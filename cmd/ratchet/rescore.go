package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
)

const rescoreHelp = `Usage: ratchet eval rescore LABEL [--suite SUITE.yaml] [flags]

Judges every stored candidate of the result set LABEL again with the checks
as they are now, with no model calls, and writes the result set those checks
would have made of the same candidates to LABEL.rescore (--label sets it), so
that a change to the checks alone can be measured:

  ratchet eval compare LABEL LABEL.rescore

Each run's attempts are judged in order; the first round with a candidate
passing every gate check ends the run done, and later attempts are dropped
(the run would have stopped there). A done run whose candidates all fail now
ends "rejected". The checks come from the suite (--suite: each case by name,
as edited) or else from the task file the run database recorded for the run.
Grader checks are answered only from --cache DIR (the replies the eval run
stored); a grader reply not there is a check that could not run. Agent-mode
cases with exec checks are judged on the workspace the run left, rebuilt
from its stored patch in a copy: only the last attempt is judged again. Sim
cases are kept as they were.

Exit 0 when rescored, 2 for a usage error or a case that cannot be rescored,
3 when a check could not run.

Flags:
`

// errNoCalls is what a model opened by a rescore says when called.
var errNoCalls = errors.New("ratchet eval rescore makes no model calls: a grader's reply must come from --cache DIR, where the eval run stored it")

// noCalls is a model that refuses every call but says which model it is,
// so that a cache keys its requests as the eval run's.
type noCalls struct{ inner model.Model }

func (n noCalls) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errNoCalls
}

func (n noCalls) Name() string {
	if nm, ok := n.inner.(model.Named); ok {
		return nm.Name()
	}
	return ""
}

// rescoreCommand is 'ratchet eval rescore': it shares eval's result sets
// and summary.
type rescoreCommand struct{ evalCommand }

func (m rescoreCommand) evalRescore(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("ratchet eval rescore", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	suitePath := fs.String("suite", "", "the suite whose (edited) checks judge the candidates, each case by name (default: each run's task file, from the run database)")
	label := fs.String("label", "", "the new result set's label (default LABEL.rescore); it is replaced whole")
	dir := fs.String("dir", "", "the new result set's directory (default .ratchet/eval/NEWLABEL, or $RATCHET_EVAL_DIR/NEWLABEL)")
	db := fs.String("db", "", "the run database the eval run recorded its runs in (default $RATCHET_DB, else "+defaultDBHint+")")
	cacheDir := fs.String("cache", "", "the response cache the eval run used (--cache): grader checks are answered from it, never by a call")
	conc := fs.Int("concurrency", eval.DefaultConcurrency, "runs judged at once")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	unsafeSandbox := fs.Bool("unsafe-sandbox", false, "where no sandbox works, run exec checks without isolation")
	setUsage(fs, rescoreHelp)
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(m.Stderr, "ratchet eval rescore: want one result directory or label")
		return exitUsage
	}
	if *conc < 1 {
		fmt.Fprintln(m.Stderr, "ratchet eval rescore: --concurrency must be at least 1")
		return exitUsage
	}
	src, cmpArg, ok := m.rescoreTarget(pos[0], label, dir)
	if !ok {
		return exitUsage
	}
	recs, err := eval.ReadRecords(src)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return exitInfra
	}
	var suite *eval.Suite
	if *suitePath != "" {
		if suite, err = eval.LoadSuite(*suitePath); err != nil {
			printProblems(m.Stderr, "ratchet eval rescore", err)
			return exitUsage
		}
	}
	runs, err := m.openStore(ctx, *db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return exitInfra
	}
	defer runs.Close()
	closeCache, err := m.openCache("ratchet eval rescore", *cacheDir, *asJSON)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return exitInfra
	}
	defer closeCache()
	checks := &rescoreChecks{m: m.Main, suite: suite, runs: runs, unsafeSandbox: *unsafeSandbox}
	out, err := eval.Rescore(ctx, recs, eval.RescoreConfig{Checks: checks.of, Concurrency: *conc})
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return exitInfra
	}
	for _, err := range out.Errors {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
	}
	if len(out.Errors) > 0 {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: nothing written: %d of %s cannot be rescored\n", len(out.Errors), words.Count(len(recs), "run"))
		return exitUsage
	}
	if err := eval.WriteRecords(*dir, out.Records); err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return exitInfra
	}
	return m.printRescored(out, *label, *dir, fmt.Sprintf("ratchet eval compare %s %s", pos[0], cmpArg), *asJSON)
}

// rescoreTarget resolves the result set arg names (src) and where its
// rescored copy goes, filling in *label and *dir; cmpArg is what eval
// compare is told to read it as. Not ok, it said why on stderr.
func (m rescoreCommand) rescoreTarget(arg string, label, dir *string) (src, cmpArg string, ok bool) {
	src, err := m.resultDir(arg)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return "", "", false
	}
	if *label == "" {
		*label = filepath.Base(filepath.Clean(src)) + ".rescore"
	}
	if err := eval.CheckLabel(*label); err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: --label: %v\n", err)
		return "", "", false
	}
	cmpArg = *dir // what eval compare is told to read
	if *dir == "" {
		*dir, cmpArg = filepath.Join(evalRoot(m.Getenv), *label), *label
	}
	if same(src, *dir) {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: the new result set would replace %s itself; pass another --label\n", src)
		return "", "", false
	}
	return src, cmpArg, true
}

// printRescored prints the rescored set's summary, with the eval compare
// command that compares it, and the runs that could not be judged.
func (m rescoreCommand) printRescored(out eval.RescoreOutcome, label, dir, compare string, asJSON bool) int {
	sum := eval.Summarize(label, out.Records)
	sum.Runs = eval.RunLinks(out.Records, dir)
	err := m.printSummary(sum, asJSON, fmt.Sprintf("\nresults: %s (%d runs rescored, %d candidates judged, %d sim runs kept; no model calls)\ncompare: %s\n",
		dir, out.Rescored, out.Judged, out.Kept, compare))
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet eval rescore: %v\n", err)
		return exitInfra
	}
	ret := exitDone
	for _, r := range out.Records {
		if r.Error != "" {
			fmt.Fprintf(m.Stderr, "ratchet eval rescore: %s#%d: %s\n", r.Case, r.Repeat, r.Error)
			ret = exitInfra
		}
	}
	return ret
}

func same(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// rescoreChecks finds the checks of each record's case.
type rescoreChecks struct {
	m             *Main
	suite         *eval.Suite
	runs          store.Store
	unsafeSandbox bool
}

func (rc *rescoreChecks) of(ctx context.Context, rec eval.Record) (eval.RescoreChecks, error) {
	tf, generator, keep, err := rc.task(ctx, rec)
	if err != nil || keep {
		return eval.RescoreChecks{Keep: keep}, err
	}
	// An agent's exec checks judge the workspace, which the record keeps
	// as its patch: rebuilt on a fresh layer over the case's workspace
	// (a copy where no layer mounts), it is the workspace of the last
	// attempt only.
	var workspace string
	var close func()
	if i := slices.IndexFunc(tf.Checks, func(c taskfile.Check) bool { return c.Kind == "exec" }); tf.Mode != "generate" && i >= 0 {
		p := rec.Result.Patch
		if p == nil {
			return eval.RescoreChecks{}, fmt.Errorf("%s:%d: an exec check in agent mode judges the workspace as the run left it, and this run kept no patch of it (run before eval runs kept patches): this case cannot be rescored", tf.Path, tf.Checks[i].Line)
		}
		var err error
		if workspace, close, err = rebuild(ctx, *p); err != nil {
			return eval.RescoreChecks{}, fmt.Errorf("%s:%d: rebuilding the workspace the run left for its exec check: %w", tf.Path, tf.Checks[i].Line, err)
		}
	}
	scope := cacheScope(rec.Case, rec.Repeat)
	env := taskfile.Env{
		OpenModel: func(spec, base string) (model.Model, error) {
			// Opening a provider makes no call; the model only names the
			// requests, which the cache answers or noCalls refuses.
			mdl, err := rc.m.openUncached(spec, base)
			if err != nil {
				return nil, err
			}
			return rc.m.cached(noCalls{mdl}, scope), nil
		},
		Generator: generator,
		Sandbox:   rc.m.sandbox(rc.unsafeSandbox),
		Getenv:    rc.m.Getenv,
		Secrets:   rc.m.secrets,
	}
	var tiers verify.Tiers
	if workspace != "" {
		tiers, err = tf.VerifiersOn(workspace, env)
	} else {
		tiers, err = tf.Verifiers(env)
	}
	if err != nil && close != nil {
		close()
		close = nil
	}
	return eval.RescoreChecks{Tiers: tiers, LastOnly: workspace != "", Close: close}, err
}

// task is the task file rec's checks come from and its generator's model
// string; keep says rec is a sim run, kept as it is.
func (rc *rescoreChecks) task(ctx context.Context, rec eval.Record) (_ *taskfile.File, generator string, keep bool, _ error) {
	if rc.suite != nil {
		for _, c := range rc.suite.Cases {
			if c.Name != rec.Case {
				continue
			}
			if c.Sim != nil {
				return nil, "", true, nil
			}
			// The model the run was given (its --model included), for the
			// grader independence rule.
			gen := cmp.Or(rec.Model, c.Model, rc.suite.Model, c.Task.Model)
			return c.Task, gen, false, nil
		}
		return nil, "", false, fmt.Errorf("case %s is not in %s", rec.Case, rc.suite.Path)
	}
	if strings.HasPrefix(rec.Model, "sim:") {
		return nil, "", true, nil
	}
	if rec.Run == "" {
		return nil, "", false, errors.New("the record names no run in the run database (a run on Temporal, or made before eval runs were recorded): pass --suite")
	}
	row, err := rc.runs.Run(ctx, rec.Run)
	if err != nil {
		return nil, "", false, fmt.Errorf("run %s: %w", rec.Run, err)
	}
	var info taskInfo
	if json.Unmarshal(row.Task, &info) != nil || info.TaskFile == "" {
		return nil, "", false, fmt.Errorf("run %s recorded no task file (an inline case): pass --suite", rec.Run)
	}
	tf, err := taskfile.Load(info.TaskFile)
	if err != nil {
		return nil, "", false, err
	}
	gen := info.Model
	if gen == "" {
		gen = tf.Model
	}
	return tf, gen, false, nil
}

// rebuild makes the workspace p's run left: p applied on a fresh layer
// over its original, or in a copy of it where no layer can be mounted (not
// root). done removes it.
func rebuild(ctx context.Context, p loop.Patch) (dir string, done func(), err error) {
	s, err := patch.ApplyLayer(ctx, p)
	if err == nil {
		return s.Copy, func() { s.End(false) }, nil
	}
	if !errors.Is(err, layer.ErrUnsupported) {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "ratchet-rescore-")
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(tmp, "workspace")
	if err := patch.ApplyCopy(ctx, p, dir); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(tmp) }, nil
}
