package taskfile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/command"
	"github.com/ratchetloop/ratchet/tool/mcp"
)

// Config says how Build turns a task file into a run: what the caller
// overrides and how it opens what the file names. The zero value means
// defaults: the file's model, budget and workspace; models opened by
// model/provider; exec checks in the default sandbox; the process's
// environment.
type Config struct {
	// Model, when set, replaces the file's model: (a model string such as
	// anthropic:claude-sonnet-4-5 or scripted:turns.yaml, or a fallback
	// chain of them joined by commas). Its relative paths resolve against
	// ModelDir; "" means the working directory.
	Model    string
	ModelDir string
	// DefaultModel is the model when neither Model nor the file names one
	// (the CLI passes $RATCHET_MODEL); relative paths resolve against the
	// working directory. (A model that takes over when another fails is a
	// fallback chain, written as a model string: see Model.)
	DefaultModel string
	// Limits is the registry of the limits the run's models share with
	// every other run of the process on their provider (model/limit):
	// Build tightens it by the file's provider_limits: section, and the default
	// OpenModel opens models with it; a custom OpenModel must open its
	// models with the same registry. Nil means a registry of the run's own.
	Limits *limit.Registry
	// Budget's non-zero fields replace the file's budget, field by field.
	Budget budget.Limits
	// Workspace, when set, is the directory the run works in instead of
	// the file's workspace: (a resumed run's copy); copy_workspace then
	// makes no new copy.
	Workspace string
	// Start, when set, is where a resumed run's copy started (the Run.Start
	// of the run that made it): the run works in Start.Copy and its patch
	// is taken against Start. It overrides Workspace.
	Start *patch.Start
	// ForkOf, when set, is the layer of the run a copy_workspace run forks
	// from, and ForkAt the entry it forks after: the fork's layer starts
	// from the snapshot the parent kept there (Run.Runner), else from the
	// original, as a fresh copy does.
	ForkOf *layer.Layer
	ForkAt int64
	// KeepCopy keeps the copy that copy_workspace makes after Close, so
	// that its result can be inspected; by default Close removes it.
	KeepCopy bool
	// OpenModel opens a model string, the generator's and every grader's;
	// base is the directory its relative paths resolve against; spec is ""
	// when nothing names a model. Default: provider.Open without streaming.
	OpenModel func(spec, base string) (model.Model, error)
	// Sandbox returns the runner of exec checks, called only when the file
	// has one. Default: sandbox.New with the zero sandbox.Config.
	Sandbox func() (sandbox.Runner, error)
	// Getenv reads the environment, for ${NAME} in the mcp: section and
	// for the default OpenModel; nil means os.Getenv.
	Getenv func(string) string
	// Secrets, when set, is taught every value a ${NAME} in the file
	// expands to and every MCP header value (Env.Secrets).
	Secrets *redact.Redactor
}

// Run is what a task file starts: the task with its live tools and checks,
// the model, and how to carry out its tools. Close it once the run is over.
type Run struct {
	// File is the file as built: its Workspace is the directory the run
	// works in (Config.Workspace, or the copy copy_workspace made).
	File *File
	Task runner.Task
	// Exec carries the file's tool_output: caps.
	Exec  tool.ExecConfig
	Model model.Model
	// ModelName is the model string Model was opened from.
	ModelName string
	// Copied says File.Workspace is a copy made for copy_workspace now.
	Copied bool
	// Start is where the workspace copy started (Config.Start, or the copy
	// made now); nil when the run works in a directory of its own.
	Start *patch.Start
	// MCP are the file's MCP servers, started, in file order.
	MCP []*mcp.Server

	closers []func()
}

// Runner returns the runner.Config fields the file decides (the model,
// tool execution and, for an agent run on a copied workspace, taking its
// patch); the caller adds the run's ID, store and observers.
func (r *Run) Runner() runner.Config {
	cfg := runner.Config{Model: r.Model, Exec: r.Exec}
	if s := r.Start; s != nil && r.Task.Mode != loop.ModeGenerate {
		cfg.Patch = func(ctx context.Context) *loop.Patch {
			p := patch.Take(ctx, *s)
			return &p
		}
		if s.Layer != nil {
			cfg.Observers = []observe.Observer{snapshots(s.Layer)}
		}
	}
	return cfg
}

// snapshots keeps the layer's change set at every step's model call, the
// points a fork may start from (runner.ForkPoints), so that a fork there
// starts from the workspace as it was (Config.ForkOf). Observers are
// called in order as the entry is logged, before the call is made: every
// tool of the steps before it has ended, and none of the next has begun.
// A snapshot that cannot be taken (more than 256 MiB of changes) is
// skipped: a fork from there starts from the original.
func snapshots(l *layer.Layer) observe.Observer {
	return observe.Func(func(e observe.Entry) {
		c := e.Command
		if c == nil || c.Type != loop.CallModel || c.Request == nil || c.Request.Purpose != model.PurposeStep {
			return
		}
		l.Snapshot(snapshotName(e.Seq))
	})
}

func snapshotName(seq int64) string { return strconv.FormatInt(seq, 10) }

// Close releases what the run holds: its MCP servers, its workspace and,
// unless Config.KeepCopy, the workspace copy. It is safe to call twice.
func (r *Run) Close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	r.closers = nil
}

// Build turns a parsed task file into a run: every field of the file
// reaches the task, the model or the tool execution config. It does not
// modify f, so that one parsed file can build many runs (an eval suite's
// repeats), concurrently. The problems of the task's and the sub-agents'
// checks come back together as Problems, each at its file:line, and so do
// those of the MCP servers, which start last, once everything cheaper to
// check is right. On error nothing is left open.
func Build(ctx context.Context, f *File, cfg Config) (*Run, error) {
	b := builder{cfg: cfg, run: &Run{}}
	b.defaults()
	run, err := b.build(ctx, f)
	if err != nil {
		b.run.Close()
		return nil, err
	}
	return run, nil
}

type builder struct {
	cfg Config
	run *Run
	// original and testRoot are Env's: where the workspace was copied
	// from and its tests are read from.
	original, testRoot string
	// sbx is run_command's sandbox (see sandbox).
	sbx     sandbox.Runner
	sbxErr  error
	sbxDone bool
}

func (b *builder) defaults() {
	if b.cfg.Getenv == nil {
		b.cfg.Getenv = os.Getenv
	}
	if b.cfg.Limits == nil {
		b.cfg.Limits = limit.NewRegistry(limit.Config{})
	}
	if b.cfg.OpenModel == nil {
		getenv, limits := b.cfg.Getenv, b.cfg.Limits
		b.cfg.OpenModel = func(spec, base string) (model.Model, error) {
			return provider.Open(spec, provider.Config{Dir: base, Getenv: getenv, Limits: limits})
		}
	}
	if b.cfg.Sandbox == nil {
		b.cfg.Sandbox = func() (sandbox.Runner, error) {
			r, err := sandbox.New(sandbox.Config{})
			if err != nil {
				return nil, fmt.Errorf("exec checks need a sandbox: %w", err)
			}
			return r, nil
		}
	}
}

func (b *builder) build(ctx context.Context, file *File) (*Run, error) {
	f := *file
	r := b.run
	r.File = &f
	if err := b.workspace(ctx, &f); err != nil {
		return nil, err
	}
	if err := b.snapshotTests(&f); err != nil {
		return nil, err
	}
	spec, base := b.modelSpec(&f)
	r.ModelName = spec
	r.Task = runner.Task{
		Goal:         f.Goal,
		Instructions: f.Instructions,
		OutputSchema: f.OutputSchema,
		Permissions:  f.Permissions,
		Budget:       overrideBudget(f.Budget, b.cfg.Budget),
		Mode:         loop.Mode(f.Mode),
		Policy: loop.Policy{
			Progress:            f.Progress,
			Escalate:            f.Escalate,
			ConfidenceThreshold: f.Effort.ConfidenceThreshold,
			Samples:             f.Effort.Samples,
			HighStakes:          f.Effort.HighStakes,
			Reasoning:           f.Reasoning,
			CompactAt:           f.Context.CompactAt,
			KeepTurns:           f.Context.KeepTurns,
			SummaryTokens:       f.Context.SummaryTokens,
			Scratchpad:          f.Context.Scratchpad,
			Plan:                f.Plan,
		},
	}
	r.Exec = execConfig(f.ToolOutput)
	SetLimits(b.cfg.Limits, f.Limits)
	// The checks' and the model's problems are the file's: reported in one
	// list, each at its line.
	var problems Problems
	if err := b.checks(&f, spec); err != nil {
		if !errors.As(err, &problems) {
			return nil, err
		}
	}
	tools, err := b.tools(&f)
	if err != nil {
		return nil, err
	}
	r.Task.Tools = tools
	mdl, err := b.cfg.OpenModel(spec, base)
	switch {
	case err != nil && b.cfg.Model == "" && f.Model != "":
		// The file's own model (a scripted turns file's own problems name
		// their lines too).
		problems = append(problems, Problem{File: f.Path, Line: f.ModelLine, Msg: "model " + f.Model + ": " + err.Error()})
	case err != nil:
		return nil, err
	}
	if len(problems) > 0 {
		return nil, problems
	}
	r.Model = mdl
	if len(f.MCP) > 0 {
		servers, err := startMCP(ctx, &f, r.Task.Tools, Env{Getenv: b.cfg.Getenv, Secrets: b.cfg.Secrets})
		if err != nil {
			return nil, err
		}
		r.MCP = servers
		r.closers = append(r.closers, func() { closeMCP(servers) })
		for _, s := range servers {
			r.Task.Tools = append(r.Task.Tools, s.Tools()...)
		}
	}
	if _, _, err := r.Task.Spec(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return r, nil
}

// workspace settles the directory the run works in. The copy comes first:
// exec checks and MCP servers read the workspace the tools edit.
func (b *builder) workspace(ctx context.Context, f *File) error {
	switch {
	case b.cfg.Start != nil:
		b.run.Start = b.cfg.Start
		if l := b.cfg.Start.Layer; l != nil && !l.Mounted() {
			// A resumed run's layer: its changes are in the upper layer.
			if err := l.Mount(); err != nil {
				return fmt.Errorf("%s: copy_workspace: the run's layer %s: %w", f.Path, l.Dir, err)
			}
			b.run.closers = append(b.run.closers, func() { l.Unmount() })
		}
	case b.cfg.Workspace != "":
		f.Workspace = b.cfg.Workspace
		return nil
	case f.CopyWorkspace:
		s, err := b.begin(ctx, f)
		if err != nil {
			return fmt.Errorf("%s: copy_workspace: %w", f.Path, err)
		}
		keep := b.cfg.KeepCopy
		b.run.closers = append(b.run.closers, func() { s.End(keep) })
		b.run.Start, b.run.Copied = s, true
	default:
		return nil
	}
	// The tests inside the workspace are mounted from the original, which
	// the agent cannot reach.
	b.original, f.Workspace = b.run.Start.Original, b.run.Start.Copy
	return nil
}

// begin starts a copy_workspace run: on a layer over the workspace where
// one can be mounted (as root) and, with run_command, where its sandbox
// can run on it; otherwise on a copy (patch.Begin).
func (b *builder) begin(ctx context.Context, f *File) (*patch.Start, error) {
	uid, gid, ok := 0, 0, true
	if slices.Contains(f.Tools, command.Name) {
		if r, err := b.sandbox(); err == nil {
			uid, gid, ok = sandbox.LayerIDs(r)
		}
	}
	if from := b.cfg.ForkOf; ok && from != nil && from.HasSnapshot(snapshotName(b.cfg.ForkAt)) {
		s, err := patch.BeginFork(ctx, from, snapshotName(b.cfg.ForkAt), uid, gid)
		if !errors.Is(err, layer.ErrUnsupported) {
			return s, err
		}
	}
	if ok {
		s, err := patch.BeginLayer(ctx, f.Workspace, uid, gid)
		if !errors.Is(err, layer.ErrUnsupported) {
			return s, err
		}
	}
	return patch.Begin(ctx, f.Workspace)
}

// sandbox is Config.Sandbox, called once.
func (b *builder) sandbox() (sandbox.Runner, error) {
	if !b.sbxDone {
		b.sbx, b.sbxErr = b.cfg.Sandbox()
		b.sbxDone = true
	}
	return b.sbx, b.sbxErr
}

// snapshotTests copies the exec checks' tests inside a workspace the agent
// edits in place to a directory of their own, read from there: an agent
// that edits them changes its own copy, never what the checks run.
func (b *builder) snapshotTests(f *File) error {
	if b.original != "" || f.Mode == "generate" {
		return nil
	}
	tests := f.workspaceTests()
	if len(tests) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "ratchet-tests-")
	if err != nil {
		return err
	}
	b.run.closers = append(b.run.closers, func() { os.RemoveAll(dir) })
	for _, rel := range tests {
		src, dst := filepath.Join(f.Workspace, rel), filepath.Join(dir, rel)
		info, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("%s: exec.tests: %w", f.Path, err)
		}
		if info.IsDir() {
			err = os.CopyFS(dst, os.DirFS(src))
		} else if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			err = copyFile(src, dst)
		}
		if err != nil {
			return fmt.Errorf("%s: exec.tests: %w", f.Path, err)
		}
	}
	b.testRoot = dir
	return nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// modelSpec is the model string and the directory its paths resolve
// against: Config.Model, else the file's model:, else the default.
func (b *builder) modelSpec(f *File) (spec, base string) {
	switch {
	case b.cfg.Model != "":
		return b.cfg.Model, b.cfg.ModelDir
	case f.Model != "":
		return f.Model, f.Dir
	}
	return b.cfg.DefaultModel, ""
}

// checks builds the task's and the sub-agents' checks, reporting the
// problems of both at once.
func (b *builder) checks(f *File, generator string) error {
	env := Env{OpenModel: b.cfg.OpenModel, Generator: generator, Sandbox: b.cfg.Sandbox, Getenv: b.cfg.Getenv, Secrets: b.cfg.Secrets,
		original: b.original, testRoot: b.testRoot}
	if b.run.Start != nil {
		env.layer = b.run.Start.Layer
	}
	var problems Problems
	collect := func(err error) error {
		var ps Problems
		if errors.As(err, &ps) {
			problems = append(problems, ps...)
			return nil
		}
		return err
	}
	checks, err := f.Verifiers(env)
	if err := collect(err); err != nil {
		return err
	}
	b.run.Task.Checks = checks
	if sub := f.Subagents; sub != nil {
		childChecks, err := f.SubagentVerifiers(env)
		if err := collect(err); err != nil {
			return err
		}
		b.run.Task.Subagents = &runner.Subagents{Tools: sub.Tools, TaskChecks: sub.TaskChecks, Checks: childChecks, Budget: sub.Budget, MaxChildren: sub.MaxChildren}
	}
	if len(problems) > 0 {
		return problems
	}
	return nil
}

// overrideBudget returns file with the non-zero fields of over.
func overrideBudget(file, over budget.Limits) budget.Limits {
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set64 := func(dst *int64, v int64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&file.Steps, over.Steps)
	set(&file.ModelCalls, over.ModelCalls)
	set(&file.ToolCalls, over.ToolCalls)
	set64(&file.InputTokens, over.InputTokens)
	set64(&file.OutputTokens, over.OutputTokens)
	set64(&file.TotalTokens, over.TotalTokens)
	if over.Cost != 0 {
		file.Cost = over.Cost
	}
	if over.Time != 0 {
		file.Time = over.Time
	}
	return file
}

// execConfig maps tool_output: onto the executor's caps; "default" bounds
// every tool not named.
func execConfig(caps map[string]tool.OutputCaps) tool.ExecConfig {
	if caps == nil {
		return tool.ExecConfig{}
	}
	d := caps["default"]
	exec := tool.ExecConfig{MaxOutputBytes: d.MaxBytes, MaxOutputLines: d.MaxLines, Output: maps.Clone(caps)}
	delete(exec.Output, "default")
	return exec
}

// startMCP connects to the file's MCP servers, all at once, and checks that
// their tools' names clash neither with builtin's nor with each other's.
// Problems name the server's line in the file.
func startMCP(ctx context.Context, f *File, builtin []tool.Tool, env Env) ([]*mcp.Server, error) {
	cfgs, err := f.MCPConfigs(env)
	if err != nil {
		return nil, err
	}
	servers := make([]*mcp.Server, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { servers[i], errs[i] = mcp.Connect(ctx, cfg) })
	}
	wg.Wait()
	var problems Problems
	problem := func(i int, msg string) {
		problems = append(problems, Problem{File: f.Path, Line: f.MCP[i].Line, Msg: msg})
	}
	owner := map[string]string{"finish": "the loop's own finish tool"} // tool name → who offers it
	for _, t := range builtin {
		owner[t.Info().Name] = "the workspace tool " + t.Info().Name
	}
	for i, s := range servers {
		if errs[i] != nil {
			problem(i, errs[i].Error())
			continue
		}
		for _, t := range s.Tools() {
			name := t.Info().Name
			if other, clash := owner[name]; clash {
				problem(i, fmt.Sprintf("MCP server %q: its tool %s clashes with %s; give the server a prefix: such as %s_", s.Name(), name, other, s.Name()))
				continue
			}
			owner[name] = fmt.Sprintf("a tool of MCP server %q", s.Name())
		}
	}
	if len(problems) > 0 {
		closeMCP(servers)
		return nil, problems
	}
	return servers, nil
}

// closeMCP closes the servers that started, all at once.
func closeMCP(servers []*mcp.Server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		if s != nil {
			wg.Go(func() { s.Close() })
		}
	}
	wg.Wait()
}
