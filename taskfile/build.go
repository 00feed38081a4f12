package taskfile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/mcp"
	"github.com/ratchetloop/ratchet/tool/workspace"
)

// Config says how Build turns a task file into a run: what the caller
// overrides and how it opens what the file names. The zero value means
// defaults: the file's model, budget and workspace; models opened by
// model/provider; exec checks in the default sandbox; the process's
// environment.
type Config struct {
	// Model, when set, replaces the file's model: (a model string such as
	// anthropic:claude-sonnet-4-5 or scripted:turns.yaml). Its relative
	// paths resolve against ModelDir; "" means the working directory.
	Model    string
	ModelDir string
	// FallbackModel is the model when neither Model nor the file names one
	// (the CLI passes $RATCHET_MODEL); relative paths resolve against the
	// working directory.
	FallbackModel string
	// Budget's non-zero fields replace the file's budget, field by field.
	Budget budget.Limits
	// Workspace, when set, is the directory the run works in instead of
	// the file's workspace: (a resumed run's copy); copy_workspace then
	// makes no new copy.
	Workspace string
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
	// MCP are the file's MCP servers, started, in file order.
	MCP []*mcp.Server

	closers []func()
}

// Runner returns the runner.Config fields the file decides (the model and
// tool execution); the caller adds the run's ID, store and observers.
func (r *Run) Runner() runner.Config { return runner.Config{Model: r.Model, Exec: r.Exec} }

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
}

func (b *builder) defaults() {
	if b.cfg.Getenv == nil {
		b.cfg.Getenv = os.Getenv
	}
	if b.cfg.OpenModel == nil {
		getenv := b.cfg.Getenv
		b.cfg.OpenModel = func(spec, base string) (model.Model, error) {
			return provider.Open(spec, provider.Config{Dir: base, Getenv: getenv})
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
	if err := b.workspace(&f); err != nil {
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
			CompactAt:           f.Context.CompactAt,
			KeepTurns:           f.Context.KeepTurns,
			SummaryTokens:       f.Context.SummaryTokens,
			Scratchpad:          f.Context.Scratchpad,
			Plan:                f.Plan,
		},
	}
	r.Exec = execConfig(f.ToolOutput)
	// The checks' and the model's problems are the file's: reported in one
	// list, each at its line.
	var problems Problems
	if err := b.checks(&f, spec); err != nil {
		if !errors.As(err, &problems) {
			return nil, err
		}
	}
	if len(f.Tools) > 0 {
		ws, err := workspace.New(f.Workspace)
		if err != nil {
			return nil, fmt.Errorf("%s: workspace: %w", f.Path, err)
		}
		r.closers = append(r.closers, func() { ws.Close() })
		if r.Task.Tools, err = workspace.Lookup(ws, f.Tools); err != nil {
			return nil, fmt.Errorf("%s: tools: %w", f.Path, err)
		}
	}
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
func (b *builder) workspace(f *File) error {
	switch {
	case b.cfg.Workspace != "":
		f.Workspace = b.cfg.Workspace
	case f.CopyWorkspace:
		dir, err := os.MkdirTemp("", "ratchet-workspace-")
		if err != nil {
			return fmt.Errorf("%s: copy_workspace: %w", f.Path, err)
		}
		if !b.cfg.KeepCopy {
			b.run.closers = append(b.run.closers, func() { os.RemoveAll(dir) })
		}
		if err := os.CopyFS(dir, os.DirFS(f.Workspace)); err != nil {
			return fmt.Errorf("%s: copy_workspace: %w", f.Path, err)
		}
		f.Workspace, b.run.Copied = dir, true
	}
	return nil
}

// modelSpec is the model string and the directory its paths resolve
// against: Config.Model, else the file's model:, else the fallback.
func (b *builder) modelSpec(f *File) (spec, base string) {
	switch {
	case b.cfg.Model != "":
		return b.cfg.Model, b.cfg.ModelDir
	case f.Model != "":
		return f.Model, f.Dir
	}
	return b.cfg.FallbackModel, ""
}

// checks builds the task's and the sub-agents' checks, reporting the
// problems of both at once.
func (b *builder) checks(f *File, generator string) error {
	env := Env{OpenModel: b.cfg.OpenModel, Generator: generator, Sandbox: b.cfg.Sandbox, Getenv: b.cfg.Getenv, Secrets: b.cfg.Secrets}
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
