package taskfile

import (
	"fmt"
	"slices"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/command"
	"github.com/ratchetloop/ratchet/tool/workspace"
	"github.com/ratchetloop/ratchet/verify"
)

// tools opens the file's tools, in the order tools: lists them: the
// workspace's file tools, and run_command in the sandbox exec checks use.
func (b *builder) tools(f *File) ([]tool.Tool, error) {
	if len(f.Tools) == 0 {
		return nil, nil
	}
	ws, err := workspace.New(f.Workspace)
	if err != nil {
		return nil, fmt.Errorf("%s: workspace: %w", f.Path, err)
	}
	b.run.closers = append(b.run.closers, func() { ws.Close() })
	names := slices.DeleteFunc(slices.Clone(f.Tools), func(n string) bool { return n == command.Name })
	fileTools, err := workspace.Lookup(ws, names)
	if err != nil {
		return nil, fmt.Errorf("%s: tools: %w", f.Path, err)
	}
	var run tool.Tool
	if slices.Contains(f.Tools, command.Name) {
		runner, err := b.sandbox()
		if err != nil {
			return nil, fmt.Errorf("%s: tools: %s: %w", f.Path, command.Name, err)
		}
		cfg := command.Config{Runner: runner, Workspace: f.Workspace, Tests: b.testMounts(f), Secrets: b.cfg.Secrets}
		if s := b.run.Start; s != nil {
			cfg.Layer = s.Layer
		}
		if run, err = command.New(cfg); err != nil {
			return nil, fmt.Errorf("%s: tools: %w", f.Path, err)
		}
	}
	out := make([]tool.Tool, 0, len(f.Tools))
	for _, name := range f.Tools {
		if name == command.Name {
			out = append(out, run)
			continue
		}
		out = append(out, fileTools[0])
		fileTools = fileTools[1:]
	}
	return out, nil
}

// testMounts are the tests of the task's gate exec checks, mounted
// read-only where the checks mount them (File.testMount); a holdout
// check's tests are never shown to the agent.
func (b *builder) testMounts(f *File) []sandbox.Mount {
	env := Env{original: b.original, testRoot: b.testRoot}
	var out []sandbox.Mount
	seen := map[string]bool{}
	for _, c := range f.Checks {
		if c.Exec == nil || c.Tier == verify.Holdout {
			continue
		}
		for _, p := range c.Exec.Tests {
			m, err := f.testMount(p, env)
			if err != nil {
				continue // refused by the check itself
			}
			if !seen[m.Target] {
				seen[m.Target] = true
				out = append(out, m)
			}
		}
	}
	return out
}
