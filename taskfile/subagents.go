package taskfile

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/verify"
)

// Subagents is the task file's subagents: section: the model may start
// sub-agents with the spawn_subagent tool (see runner.Subagents).
type Subagents struct {
	// Tools names the task's tools a sub-agent may be given; nil means all
	// of them, an empty list none.
	Tools []string
	// TaskChecks names the task's own checks a sub-agent may be given, as
	// the run names them (equals, regex#2…).
	TaskChecks []string
	// Checks are checks only sub-agents use, in the syntax of checks:.
	Checks []Check
	// Budget is each sub-agent's default budget and the most it may ask
	// for; zero fields take the defaults.
	Budget      budget.Limits
	MaxChildren int
	Line        int
}

func (p *parser) subagents(n *yaml.Node) {
	s := &Subagents{Line: n.Line}
	p.f.Subagents = s
	p.fields(n, "subagents", []string{"tools", "task_checks", "checks", "budget", "max_children"}, func(key string, v *yaml.Node) {
		switch key {
		case "tools":
			s.Tools = []string{}
			if v.Tag == "!!null" {
				return
			}
			for _, name := range p.strList(v, "subagents.tools") {
				if slices.Contains(s.Tools, name) {
					p.errorf(v, "subagents.tools: %s is listed twice", name)
					continue
				}
				s.Tools = append(s.Tools, name)
			}
		case "task_checks":
			for _, name := range p.strList(v, "subagents.task_checks") {
				if slices.Contains(s.TaskChecks, name) {
					p.errorf(v, "subagents.task_checks: %s is listed twice", name)
					continue
				}
				s.TaskChecks = append(s.TaskChecks, name)
			}
		case "checks":
			s.Checks = p.checkList(v, "subagents.checks")
		case "budget":
			p.limits(v, "subagents.budget", &s.Budget)
		case "max_children":
			if s.MaxChildren = p.int(v, "subagents.max_children", 1); s.MaxChildren > loop.MaxChildrenCeiling {
				p.errorf(v, "subagents.max_children must be at most %d (sub-agents cannot start their own, so this bounds the fan-out), got %d", loop.MaxChildrenCeiling, s.MaxChildren)
			}
		}
	})
}

// checkSubagents checks the section against the rest of the file, once
// it is all read.
func (p *parser) checkSubagents() {
	s, line := p.f.Subagents, &yamlLine{p.f.Subagents.Line}
	if p.f.Mode == "generate" {
		p.errorf(line.node(), "subagents need tools; generate mode has none")
	}
	for _, name := range s.Tools {
		// Names of MCP tools are known only once their servers start; the
		// run checks those.
		if slices.Contains(ToolNames, name) && !slices.Contains(p.f.Tools, name) {
			p.errorf(line.node(), "subagents.tools: %s is not one of the task's tools (tools: %s)", name, strings.Join(p.f.Tools, ", "))
		}
	}
	gate := slices.ContainsFunc(s.Checks, func(c Check) bool { return c.Tier != verify.Holdout })
	if len(s.TaskChecks) == 0 && !gate {
		p.errorf(line.node(), "subagents needs checks: (checks only sub-agents use) or task_checks: (the task's checks they may use); a sub-agent's answer must be checked")
	}
}

// yamlLine stands in for a node when only its line is known.
type yamlLine struct{ line int }

func (l *yamlLine) node() *yaml.Node { return &yaml.Node{Line: l.line} }

// SubagentVerifiers builds the checks only sub-agents use.
func (f *File) SubagentVerifiers(env Env) (verify.Tiers, error) {
	if f.Subagents == nil {
		return verify.Tiers{}, nil
	}
	return f.verifiers(f.Subagents.Checks, env)
}
