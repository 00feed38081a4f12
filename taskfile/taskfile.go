// Package taskfile reads ratchet task files: YAML that maps onto a run's
// Spec one field at a time. The schema is documented in docs/taskfile.md.
//
// Every problem in a file is reported at once, each as "file:line: problem",
// so that a user fixes a file in one pass.
package taskfile

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/yamlerr"
	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// File is a parsed task file. Paths in it are resolved against Dir.
type File struct {
	Path         string
	Dir          string
	Goal         string
	Instructions string
	// Model is the model string as written (e.g. "scripted:turns.yaml"),
	// a list's models joined by commas (a fallback chain), empty when the
	// file names none; ModelLine is its line.
	Model     string
	ModelLine int
	// Limits are the provider_limits: section, by provider: what the run's calls
	// share with every run of the process on that provider.
	Limits map[string]limit.Limits
	// Workspace is the directory the file tools work in, absolute; default
	// Dir.
	Workspace string
	Tools     []string
	Checks    []Check
	Budget    budget.Limits
	Progress  progress.Config
	// Escalate says a person is reachable when the run is stuck.
	Escalate bool
	// Mode is "agent" (default) or "generate".
	Mode string
	// Artifact is the file name a generate-mode candidate is written to for
	// exec checks (e.g. is_prime.py).
	Artifact string
	// Effort tunes confidence-driven search; zero fields take defaults.
	Effort Effort
	// Reasoning is the reasoning: section, for models that can reason; nil
	// leaves the provider's default.
	Reasoning *model.Reasoning
	// CopyWorkspace runs the task on a fresh copy of the workspace, leaving
	// the original untouched.
	CopyWorkspace bool
	// AllowSelfReview accepts a task whose gate checks are all self-judged
	// (vote, a grader that is not independent of the generator): such a
	// run's done carries no independent evidence, and says so.
	AllowSelfReview bool
	// Permissions decide which tool calls run, need a person's approval or
	// are refused; first match wins, no match allows.
	Permissions []loop.Permission
	// MCP lists the MCP servers whose tools join the run's tools.
	MCP []MCPServer
	// Context is the context: section (compaction, scratchpad).
	Context Context
	// Plan asks for a plan first, executed step by step (agent mode).
	Plan bool
	// ToolOutput bounds the output shown to the model, by tool name;
	// "default" bounds every tool not named.
	ToolOutput map[string]tool.OutputCaps
	// Subagents is the subagents: section; nil when absent.
	Subagents *Subagents
	// Reference is a known-good solution (absolute path), whose mutants
	// measure the strength of the checks; empty when absent.
	Reference string
	// MinStrength is the mutation score the checks must reach for a run to
	// start (0: no demand). It needs Reference.
	MinStrength float64
	// OutputSchema is the JSON Schema of a typed answer (inline, or a file
	// holding it): the model answers with a JSON value of it, checked by
	// the first cheap check, output_schema. Nil when absent.
	OutputSchema json.RawMessage
}

// Context is the task file's context: section; zero fields take the
// loop's defaults (see loop.Policy).
type Context struct {
	CompactAt     int64
	KeepTurns     int
	SummaryTokens int
	Scratchpad    bool
}

// Effort is the task file's effort: section.
type Effort struct {
	ConfidenceThreshold float64
	Samples             int
	HighStakes          bool
}

// Check is one check as written. Which fields are set depends on Kind.
type Check struct {
	Kind string // one of CheckKinds
	Args []string
	Tier verify.Tier
	Line int
	// syntax: the language.
	Lang string
	// json_schema: the schema.
	Schema json.RawMessage
	// length: bounds and unit (chars, words, lines).
	Min, Max int
	Unit     string
	// grounding: source files (absolute paths).
	Sources       []string
	AllowNoQuotes bool
	// grader.
	Grader *GraderSpec
	// vote: the share of candidates that must agree; 0 means a strict
	// majority.
	MinShare float64
	// exec.
	Exec *ExecSpec
}

// GraderSpec configures a rubric grader.
type GraderSpec struct {
	Model           string // a model string, like the task's model:
	Rubric          []RubricPoint
	PassMark        int
	AllowSelfReview bool
	// Independent says the grader is independent of the generator whatever
	// their names say (see check.GraderConfig.Independent).
	Independent bool
}

// RubricPoint is one named point of a rubric.
type RubricPoint struct{ Name, Description string }

// ExecSpec configures a command run against the candidate in the sandbox.
type ExecSpec struct {
	Command []string
	// Tests are files or directories mounted read-only into the sandbox at
	// the same path relative to the task file (absolute here).
	Tests []string
	// Format is how to read the outcome: pytest, go, node or exit.
	Format  string
	Timeout time.Duration
	// Copy lists workspace paths copied into the sandbox (agent mode);
	// default the whole workspace.
	Copy []string
	// Isolation is judge or in-process; empty lets the check choose
	// (execcheck.Config.Isolation).
	Isolation string
	// Env is added to the sandbox's scrubbed environment; ${WORKSPACE} in
	// a value, as in Command, is the workspace's path inside the sandbox.
	Env map[string]string
	// Cases and Checker are format io's (execcheck.Case).
	Cases   []execcheck.Case
	Checker []string
	// Shadow maps a test file's path inside the sandbox (relative, as it
	// is mounted) to a file mounted there in its place: how an impossible
	// twin (package eval) runs its changed copy of a test. It is never
	// read from a task file.
	Shadow map[string]string
}

// Problem is one error in a file. Its JSON form is what 'ratchet run
// --json' prints for a task file it refuses.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line"`             // 1-based; 0 when the problem has no place
	Column int    `json:"column,omitempty"` // 1-based; 0 when unknown
	Msg    string `json:"message"`
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// Problems is every error found in a file; it is what Load and Parse return.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// CheckKinds are the checks a task file can name.
var CheckKinds = []string{"equals", "regex", "contains", "syntax", "json_schema", "length", "grounding", "grader", "vote", "exec"}

// Languages are the languages a syntax check knows.
var Languages = []string{"python", "go", "json", "yaml"}

// ExecFormats are the ways an exec check reads a command's outcome.
var ExecFormats = []string{"pytest", "go", "node", "io", "exit"}

// ToolNames are the tools a task file can name: the workspace tools
// and run_command.
var ToolNames = []string{"list_files", "read_file", "write_file", "edit_file", "append_file", "grep", "glob", "run_command"}

// Load reads and parses the task file at path.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read one byte past the cap to tell a file at the cap from a larger one.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("the task file is larger than %d KiB; keep long texts (a goal's material) in the workspace, where tools read them", MaxFileBytes>>10)}}
	}
	return Parse(data, path)
}

// MaxFileBytes bounds a task file. Its goal and instructions go into every
// request, so a larger one would spend a run's token budget on its first
// call.
const MaxFileBytes = 1 << 20

// Parse parses task file data; path names it in errors and anchors relative
// paths.
func Parse(data []byte, path string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	p := &parser{file: path, f: &File{Path: path, Dir: filepath.Dir(abs)}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlerr.Locate(err, data)
		return nil, Problems{{File: path, Line: line, Msg: msg}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return nil, Problems{{File: path, Line: 1, Msg: "file is empty; a task needs at least a goal and a check"}}
	}
	p.top(doc.Content[0])
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, p.problems
	}
	return p.f, nil
}

type parser struct {
	file     string
	f        *File
	problems Problems
	// referenceNode and minStrengthNode locate the fields for problems
	// found once the whole file is read.
	referenceNode, minStrengthNode *yaml.Node
	// judged are the exec checks that ask for judge isolation, checked
	// against the mode and artifact once the whole file is read.
	judged []judgedCheck
	// testNodes locate each exec check's tests, in the order of its Tests.
	testNodes map[*ExecSpec][]*yaml.Node
}

type judgedCheck struct {
	node   *yaml.Node
	format string
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	prob := Problem{File: p.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		prob.Line, prob.Column = n.Line, n.Column
	}
	p.problems = append(p.problems, prob)
}

// fields walks a mapping node, calling set for each known key and reporting
// unknown and duplicate keys. It returns how many keys were unknown.
func (p *parser) fields(n *yaml.Node, where string, known []string, set func(key string, v *yaml.Node)) (unknown int) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", where)
		return 0
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(known, k.Value):
			p.errorf(k, "unknown field %q in %s%s (known: %s)", k.Value, where, DidYouMean(k.Value, known), strings.Join(known, ", "))
			unknown++
		case seen[k.Value]:
			p.errorf(k, "%s.%s is given twice", where, k.Value)
		default:
			seen[k.Value] = true
			set(k.Value, v)
		}
	}
	return unknown
}

func (p *parser) top(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "a task file must be a mapping of fields such as goal: and checks:")
		return
	}
	var goal *yaml.Node
	var checks, waits *yaml.Node
	p.fields(n, "task", []string{"mode", "goal", "instructions", "model", "workspace", "tools", "copy_workspace", "artifact", "checks", "permissions", "budget", "progress", "effort", "escalate", "mcp", "context", "plan", "tool_output", "subagents", "reference", "min_strength", "allow_self_review", "provider_limits", "output_schema", "reasoning"}, func(key string, v *yaml.Node) {
		switch key {
		case "reasoning":
			p.reasoning(v)
		case "provider_limits":
			p.f.Limits = p.providerLimits(v, key)
		case "reference", "min_strength":
			p.strengthField(key, v)
		case "subagents":
			p.subagents(v)
		case "context":
			p.context(v)
		case "plan":
			p.f.Plan = p.bool(v, key)
		case "tool_output":
			p.toolOutput(v)
		case "mode":
			p.f.Mode = p.str(v, key)
			if v.Kind == yaml.ScalarNode && p.f.Mode != "agent" && p.f.Mode != "generate" {
				p.errorf(v, "mode must be agent or generate, got %q", p.f.Mode)
			}
		case "artifact":
			p.f.Artifact = p.str(v, key)
			if a := p.f.Artifact; v.Kind == yaml.ScalarNode && (a == "" || filepath.IsAbs(a) || strings.Contains(filepath.ToSlash(filepath.Clean(a)), "..")) {
				p.errorf(v, "artifact must be a relative file name inside the sandbox, such as is_prime.py, got %q", a)
			}
		case "effort":
			p.effort(v)
		case "copy_workspace":
			p.f.CopyWorkspace = p.bool(v, key)
		case "allow_self_review":
			p.f.AllowSelfReview = p.bool(v, key)
		case "goal":
			goal = v
			p.f.Goal = strings.TrimSpace(p.str(v, key))
		case "instructions":
			p.f.Instructions = strings.TrimSpace(p.str(v, key))
		case "output_schema":
			p.outputSchema(v)
		case "model":
			p.f.Model, p.f.ModelLine = p.model(v, key), v.Line
		case "workspace":
			ws := p.str(v, key)
			if !filepath.IsAbs(ws) {
				ws = filepath.Join(p.f.Dir, ws)
			}
			if st, err := os.Stat(ws); err != nil || !st.IsDir() {
				p.errorf(v, "workspace %q is not a directory", ws)
			}
			p.f.Workspace = ws
		case "tools":
			p.tools(v)
		case "checks":
			checks = v
			p.checks(v)
		case "permissions":
			p.permissions(v)
		case "budget":
			p.budget(v)
		case "progress":
			p.fields(v, "progress", []string{"window", "patience", "waits", "max_waits"}, func(key string, v *yaml.Node) {
				switch key {
				case "window":
					p.f.Progress.Window = p.int(v, "progress.window", 2)
				case "patience":
					p.f.Progress.Patience = p.int(v, "progress.patience", 1)
				case "waits":
					waits = v
					p.f.Progress.Waits = p.strList(v, "progress.waits")
				case "max_waits":
					p.f.Progress.MaxWaits = p.int(v, "progress.max_waits", 1)
				}
			})
		case "escalate":
			p.f.Escalate = p.bool(v, key)
		case "mcp":
			p.mcpServers(v)
		}
	})
	if p.f.Workspace == "" {
		p.f.Workspace = p.f.Dir
	}
	if goal == nil || (goal.Kind == yaml.ScalarNode && p.f.Goal == "") {
		p.errorf(orNode(goal, n), "goal is missing or empty: say what the run must achieve")
	}
	if checks == nil && p.f.OutputSchema == nil { // the schema's check is a gate
		p.errorf(n, "checks are missing: ratchet never accepts an unchecked answer (add e.g. `checks: [{equals: \"42\"}]`)")
	}
	if p.f.Mode == "generate" && (len(p.f.Tools) > 0 || len(p.f.MCP) > 0) {
		p.errorf(n, "generate mode has no tools (every reply is a candidate); remove tools: and mcp: or use mode: agent")
	}
	if p.f.Mode == "generate" && (p.f.Plan || p.f.Context.Scratchpad) {
		p.errorf(n, "plan and context.scratchpad need tools; generate mode has none")
	}
	if p.f.Subagents != nil {
		p.checkSubagents()
	}
	if waits != nil {
		p.checkWaits(waits)
	}
	p.checkStrengthFields()
	p.checkHoldouts()
	p.checkTestPlaces()
	for _, j := range p.judged {
		artifact := p.f.Artifact
		if p.f.Mode != "generate" {
			artifact = ""
		}
		if err := execcheck.JudgeServes(j.format, artifact); err != nil {
			p.errorf(j.node, "exec.isolation: %v", err)
		}
	}
}

// checkHoldouts reports each holdout test inside the agent's workspace,
// where read_file, grep and run_command would show it to the agent (in
// generate mode there are no tools). Links are resolved first, so a path
// that leads into the workspace through one counts as inside.
func (p *parser) checkHoldouts() {
	if p.f.Mode == "generate" {
		return
	}
	checks := p.f.Checks
	if p.f.Subagents != nil {
		checks = append(slices.Clip(checks), p.f.Subagents.Checks...)
	}
	ws := resolveLinks(p.f.Workspace)
	for _, c := range checks {
		if c.Exec == nil || c.Tier != verify.Holdout {
			continue
		}
		for i, path := range c.Exec.Tests {
			if rel, err := filepath.Rel(ws, resolveLinks(path)); path != "" && err == nil && filepath.IsLocal(rel) {
				p.errorf(p.testNodes[c.Exec][i], "exec.tests: holdout test %s is inside the agent's workspace %s, where read_file, grep and run_command would show it to the agent: keep holdout tests outside the workspace", path, p.f.Workspace)
			}
		}
	}
}

// checkTestPlaces reports each exec test that testMount could not place:
// a test is mounted at its path relative to the task file's directory (or,
// in agent mode, to the workspace), so one outside both has no place in
// the sandbox.
func (p *parser) checkTestPlaces() {
	checks := p.f.Checks
	if p.f.Subagents != nil {
		checks = append(slices.Clip(checks), p.f.Subagents.Checks...)
	}
	relativeTo := "it"
	if p.f.Mode != "generate" {
		relativeTo = "it or to the workspace"
	}
	for _, c := range checks {
		if c.Exec == nil {
			continue
		}
		for i, path := range c.Exec.Tests {
			if _, err := p.f.testMount(path, Env{}); path != "" && err != nil {
				p.errorf(p.testNodes[c.Exec][i], "%v: tests are mounted in the sandbox at their path relative to %s; move the task file up to a directory holding them, or copy them beside it", err, relativeTo)
			}
		}
	}
}

// resolveLinks is path with its links resolved, or path when that fails
// (it does not exist yet).
func resolveLinks(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

func (p *parser) permissions(n *yaml.Node) {
	for _, r := range p.nodes(n, "permissions") {
		var perm loop.Permission
		p.fields(r, "permission", []string{"tool", "args", "action"}, func(key string, v *yaml.Node) {
			switch key {
			case "tool":
				perm.Tool = p.str(v, "tool")
			case "action":
				perm.Action = loop.Action(p.str(v, "action"))
			case "args":
				if v.Kind != yaml.MappingNode {
					p.errorf(v, "args must map argument names to glob patterns, e.g. {path: \"*.md\"}")
					return
				}
				for i := 0; i+1 < len(v.Content); i += 2 {
					perm.Args = append(perm.Args, loop.ArgPattern{Name: v.Content[i].Value, Pattern: p.str(v.Content[i+1], "args."+v.Content[i].Value)})
				}
			}
		})
		if r.Kind != yaml.MappingNode {
			continue
		}
		if perm.Action == "" {
			p.errorf(r, "a permission needs action: allow, ask or deny")
		} else if err := perm.Validate(); err != nil {
			p.errorf(r, "permission: %v", err)
		}
		p.f.Permissions = append(p.f.Permissions, perm)
	}
	if p.f.Mode == "generate" && (p.f.Plan || p.f.Context.Scratchpad) {
		p.errorf(n, "plan and context.scratchpad need tools; generate mode has none")
	}
}

func (p *parser) context(n *yaml.Node) {
	c := &p.f.Context
	p.fields(n, "context", []string{"compact_at", "keep_turns", "summary_tokens", "scratchpad"}, func(key string, v *yaml.Node) {
		switch key {
		case "compact_at":
			c.CompactAt = p.int64(v, "context.compact_at", 1000)
		case "keep_turns":
			c.KeepTurns = p.int(v, "context.keep_turns", 1)
		case "summary_tokens":
			c.SummaryTokens = p.int(v, "context.summary_tokens", 64)
		case "scratchpad":
			c.Scratchpad = p.bool(v, "context.scratchpad")
		}
	})
}

// toolOutput reads tool_output: {TOOL: {max_bytes: N, max_lines: N}}.
func (p *parser) toolOutput(n *yaml.Node) {
	known := append([]string{"default"}, ToolNames...)
	p.f.ToolOutput = map[string]tool.OutputCaps{}
	p.fields(n, "tool_output", known, func(name string, v *yaml.Node) {
		var c tool.OutputCaps
		p.fields(v, "tool_output."+name, []string{"max_bytes", "max_lines"}, func(key string, v *yaml.Node) {
			if key == "max_bytes" {
				c.MaxBytes = p.int(v, "tool_output."+name+".max_bytes", 256)
			} else {
				c.MaxLines = p.int(v, "tool_output."+name+".max_lines", 4)
			}
		})
		p.f.ToolOutput[name] = c
	})
}

func (p *parser) effort(n *yaml.Node) {
	p.fields(n, "effort", []string{"confidence_threshold", "samples", "high_stakes"}, func(key string, v *yaml.Node) {
		switch key {
		case "confidence_threshold":
			f := p.float(v, "effort.confidence_threshold")
			if !(f > 0 && f <= 1) {
				p.errorf(v, "effort.confidence_threshold must be in (0, 1], got %q", v.Value)
			}
			p.f.Effort.ConfidenceThreshold = f
		case "samples":
			p.f.Effort.Samples = p.int(v, "effort.samples", budget.Unlimited)
			if p.f.Effort.Samples > 16 {
				p.errorf(v, "effort.samples must be at most 16, got %d", p.f.Effort.Samples)
			}
		case "high_stakes":
			p.f.Effort.HighStakes = p.bool(v, key)
		}
	})
}

// reasoning reads reasoning: {effort: low|medium|high|max, budget_tokens: N}.
func (p *parser) reasoning(n *yaml.Node) {
	before := len(p.problems)
	r := &model.Reasoning{}
	at := map[string]*yaml.Node{}
	p.fields(n, "reasoning", []string{"effort", "budget_tokens"}, func(key string, v *yaml.Node) {
		at[key] = v
		switch key {
		case "effort":
			r.Effort = model.Effort(p.str(v, "reasoning.effort"))
		case "budget_tokens":
			r.BudgetTokens = p.int(v, "reasoning.budget_tokens", 1)
		}
	})
	if len(p.problems) > before {
		return // said already
	}
	for _, problem := range r.Problems() {
		where := n
		for key, v := range at {
			if strings.HasPrefix(problem, "reasoning."+key+" ") {
				where = v
			}
		}
		p.errorf(where, "%s", problem)
	}
	p.f.Reasoning = r
}

func (p *parser) float(n *yaml.Node, field string) float64 {
	f, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.errorf(n, "%s must be a number, got %q", field, n.Value)
		return 0
	}
	return f
}

// schema reads a JSON Schema written inline or, for a scalar, in the file
// it names; nil when it cannot be read (the problem is reported).
func (p *parser) schema(v *yaml.Node, field string) json.RawMessage {
	var schema any
	if v.Kind == yaml.ScalarNode { // a file holding the schema
		path := p.path(v, field)
		if data, err := os.ReadFile(path); err == nil {
			if err := json.Unmarshal(data, &schema); err != nil {
				p.errorf(v, "%s: %s is not JSON: %v", field, v.Value, err)
			}
		}
	} else if err := v.Decode(&schema); err != nil {
		p.errorf(v, "%s: %v", field, err)
	}
	if schema == nil {
		return nil
	}
	raw, _ := json.Marshal(schema)
	return raw
}

// outputSchema reads output_schema: a JSON Schema object, which must
// resolve.
func (p *parser) outputSchema(v *yaml.Node) {
	raw := p.schema(v, "output_schema")
	if raw == nil {
		return
	}
	if raw[0] != '{' {
		p.errorf(v, "output_schema: must be a JSON Schema object (or a file holding one)")
		return
	}
	if _, err := check.Output(raw, nil); err != nil {
		p.errorf(v, "%v", err)
		return
	}
	p.f.OutputSchema = raw
}

// path resolves a path written in the file against its directory and checks
// that it exists.
func (p *parser) path(n *yaml.Node, field string) string {
	s := p.str(n, field)
	if n.Kind != yaml.ScalarNode {
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.f.Dir, s)
	}
	if _, err := os.Stat(s); err != nil {
		p.errorf(n, "%s: %q does not exist", field, n.Value)
	}
	return s
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

func (p *parser) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, "%s must be a string", field)
		return ""
	}
	return n.Value
}

func (p *parser) strList(n *yaml.Node, field string) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s must be a list of strings", field)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, p.str(c, field+" item"))
	}
	return out
}

// checkWaits reports a name in progress.waits that is no tool of the task.
// With MCP servers the names of their tools are known only once they are
// running, so only the built-in tools' names can be told apart.
func (p *parser) checkWaits(n *yaml.Node) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for i, name := range p.f.Progress.Waits {
		switch {
		case i >= len(items) || items[i].Kind != yaml.ScalarNode: // reported by strList
		case slices.Contains(p.f.Tools, name):
		case slices.Contains(ToolNames, name):
			p.errorf(items[i], "progress.waits: %s is not among the task's tools (add it to tools:)", name)
		case len(p.f.MCP) == 0:
			p.errorf(items[i], "progress.waits: %q is not one of the task's tools (%s) and there is no MCP server to offer it", name, strings.Join(p.f.Tools, ", "))
		}
	}
}

// tools reads the tool list, reporting unknown and repeated names.
func (p *parser) tools(n *yaml.Node) {
	if n.Tag == "!!null" { // tools: with nothing after it
		return
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for i, name := range p.strList(n, "tools") {
		switch {
		case items[i].Kind != yaml.ScalarNode: // reported by strList
		case !slices.Contains(ToolNames, name):
			p.errorf(items[i], "unknown tool %q (known: %s)", name, strings.Join(ToolNames, ", "))
		case slices.Contains(p.f.Tools, name):
			p.errorf(items[i], "tool %s is listed twice", name)
		default:
			p.f.Tools = append(p.f.Tools, name)
		}
	}
}

func (p *parser) bool(n *yaml.Node, field string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.errorf(n, "%s must be true or false", field)
	}
	return b
}

// int parses an integer of at least lo; "unlimited" and -1 give
// budget.Unlimited when lo is budget.Unlimited.
func (p *parser) int(n *yaml.Node, field string, lo int64) int {
	return int(p.int64(n, field, lo))
}

func (p *parser) int64(n *yaml.Node, field string, lo int64) int64 {
	if n.Kind == yaml.ScalarNode && n.Value == "unlimited" && lo == budget.Unlimited {
		return budget.Unlimited
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
	if n.Kind != yaml.ScalarNode || err != nil {
		p.errorf(n, "%s must be a whole number, got %q", field, n.Value)
		return 0
	}
	if v < lo || (lo == budget.Unlimited && v == 0) {
		if lo == budget.Unlimited {
			p.errorf(n, "%s must be positive, or -1 / unlimited, got %d", field, v)
		} else {
			p.errorf(n, "%s must be at least %d, got %d", field, lo, v)
		}
		return 0
	}
	return v
}

func (p *parser) budget(n *yaml.Node) { p.limits(n, "budget", &p.f.Budget) }

// limits reads a budget mapping at where into b.
func (p *parser) limits(n *yaml.Node, where string, b *budget.Limits) {
	before := len(p.problems)
	nodes := map[budget.Dimension]*yaml.Node{}
	p.fields(n, where, []string{"steps", "model_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens", "cost", "time"}, func(key string, v *yaml.Node) {
		field := where + "." + key
		nodes[budget.Dimension(key)] = v
		switch key {
		case "steps":
			b.Steps = p.int(v, field, budget.Unlimited)
		case "model_calls":
			b.ModelCalls = p.int(v, field, budget.Unlimited)
		case "tool_calls":
			b.ToolCalls = p.int(v, field, budget.Unlimited)
		case "input_tokens":
			b.InputTokens = p.int64(v, field, budget.Unlimited)
		case "output_tokens":
			b.OutputTokens = p.int64(v, field, budget.Unlimited)
		case "total_tokens":
			b.TotalTokens = p.int64(v, field, budget.Unlimited)
		case "cost":
			b.Cost = p.cost(v, field)
		case "time":
			b.Time = p.duration(v, field)
		}
	})
	if len(p.problems) > before {
		return // a value that did not parse is not worth judging as a whole
	}
	// The limits together, as the run will check them: each problem at
	// its field's line, with the others of the file.
	for _, prob := range b.Problems(loop.Policy{}.ClosingReserve(*b)) {
		at, field := n, where
		if v := nodes[prob.Dimension]; v != nil {
			at, field = v, where+"."+string(prob.Dimension)
		} else if prob.Dimension != "" {
			field = where + "." + string(prob.Dimension) + " (its default)"
		}
		p.errorf(at, "%s: %s", field, prob.Msg)
	}
}

// cost parses US dollars ("0.25", "$0.25") into micro-USD.
func (p *parser) cost(n *yaml.Node, field string) budget.Micros {
	if n.Kind == yaml.ScalarNode && (n.Value == "unlimited" || n.Value == "-1") {
		return budget.Unlimited
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(n.Value, "$"), 64)
	// NaN fails every comparison, so test for the valid range. An amount
	// that rounds to 0 micro-USD would silently mean the default.
	if n.Kind != yaml.ScalarNode || err != nil || !(f > 0 && f <= 1e6) || budget.USD(f) == 0 {
		p.errorf(n, "%s must be an amount in US dollars such as 0.25 (at least 0.000001), or -1 / unlimited, got %q", field, n.Value)
		return 0
	}
	return budget.USD(f)
}

func (p *parser) duration(n *yaml.Node, field string) time.Duration {
	if n.Kind == yaml.ScalarNode && (n.Value == "unlimited" || n.Value == "-1") {
		return budget.Unlimited
	}
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || d <= 0 {
		p.errorf(n, "%s must be a positive duration such as 90s or 5m, or -1 / unlimited, got %q", field, n.Value)
		return 0
	}
	return d
}

func (p *parser) checks(n *yaml.Node) { p.f.Checks = append(p.f.Checks, p.checkList(n, "checks")...) }

// checkList reads a list of checks at where.
func (p *parser) checkList(n *yaml.Node, where string) []Check {
	var out []Check
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.errorf(n, "%s must be a non-empty list, e.g. [{equals: \"42\"}]", where)
		return nil
	}
	for _, c := range n.Content {
		check := Check{Tier: verify.Cheap, Line: c.Line}
		unknown := p.fields(c, "check", append(slices.Clone(CheckKinds), "tier"), func(key string, v *yaml.Node) {
			if key == "tier" {
				check.Tier = verify.Tier(p.str(v, "tier"))
				if v.Kind == yaml.ScalarNode && check.Tier != verify.Cheap && check.Tier != verify.Expensive && check.Tier != verify.Holdout {
					p.errorf(v, "tier must be cheap, expensive or holdout, got %q", check.Tier)
				}
				return
			}
			if check.Kind != "" {
				p.errorf(v, "a check has one kind; this one has %s and %s (write two checks)", check.Kind, key)
				return
			}
			check.Kind = key
			if p.structured(&check, key, v) {
				return
			}
			if key == "contains" {
				check.Args = p.strList(v, key)
				if (v.Kind == yaml.ScalarNode || v.Kind == yaml.SequenceNode) && (len(check.Args) == 0 || slices.Contains(check.Args, "")) {
					p.errorf(v, "contains needs at least one string, and no empty ones: an empty string is in every answer")
				}
			} else {
				check.Args = []string{p.str(v, key)}
			}
			if key == "regex" {
				if err := validRegex(check.Args[0]); err != nil {
					p.errorf(v, "%v", err)
				}
			}
		})
		// A check whose only kind is misspelt has one problem, reported above.
		if c.Kind == yaml.MappingNode && check.Kind == "" && unknown == 0 {
			p.errorf(c, "check has no kind; use one of %s", strings.Join(CheckKinds, ", "))
		}
		out = append(out, check)
	}
	return out
}

// validRegex says why pattern cannot be a regex check, if it cannot.
func validRegex(pattern string) error {
	_, err := check.Regex(pattern)
	return err
}

// structured parses the check kinds that take more than a string, reporting
// whether key was one of them.
func (p *parser) structured(c *Check, key string, v *yaml.Node) bool {
	switch key {
	case "syntax":
		c.Lang = p.str(v, "syntax")
		if v.Kind == yaml.ScalarNode && !slices.Contains(Languages, c.Lang) {
			p.errorf(v, "syntax: unknown language %q (known: %s)", c.Lang, strings.Join(Languages, ", "))
		}
	case "json_schema":
		c.Schema = p.schema(v, "json_schema")
	case "length":
		c.Unit = "chars"
		p.fields(v, "length", []string{"min", "max", "unit"}, func(k string, n *yaml.Node) {
			switch k {
			case "min":
				c.Min = p.int(n, "length.min", 0)
			case "max":
				c.Max = p.int(n, "length.max", 1)
			case "unit":
				c.Unit = p.str(n, "length.unit")
				if !slices.Contains([]string{"chars", "words", "lines"}, c.Unit) {
					p.errorf(n, "length.unit must be chars, words or lines, got %q", c.Unit)
				}
			}
		})
		if v.Kind == yaml.MappingNode && c.Min == 0 && c.Max == 0 {
			p.errorf(v, "length needs min:, max: or both")
		}
		if c.Max > 0 && c.Min > c.Max {
			p.errorf(v, "length.min %d is above length.max %d", c.Min, c.Max)
		}
	case "grounding":
		p.fields(v, "grounding", []string{"sources", "allow_no_quotes"}, func(k string, n *yaml.Node) {
			if k == "allow_no_quotes" {
				c.AllowNoQuotes = p.bool(n, "grounding.allow_no_quotes")
				return
			}
			for _, item := range p.nodes(n, "grounding.sources") {
				c.Sources = append(c.Sources, p.path(item, "grounding.sources"))
			}
		})
		if v.Kind == yaml.MappingNode && len(c.Sources) == 0 {
			p.errorf(v, "grounding needs sources: a list of files the quotes must come from")
		}
	case "grader":
		g := &GraderSpec{}
		c.Grader = g
		p.fields(v, "grader", []string{"model", "rubric", "pass_mark", "allow_self_review", "independent"}, func(k string, n *yaml.Node) {
			switch k {
			case "model":
				g.Model = p.str(n, "grader.model")
			case "pass_mark":
				g.PassMark = p.int(n, "grader.pass_mark", 1)
			case "allow_self_review":
				g.AllowSelfReview = p.bool(n, "grader.allow_self_review")
			case "independent":
				g.Independent = p.bool(n, "grader.independent")
			case "rubric":
				for _, item := range p.nodes(n, "grader.rubric") {
					var pt RubricPoint
					p.fields(item, "rubric point", []string{"name", "description"}, func(k string, n *yaml.Node) {
						if k == "name" {
							pt.Name = p.str(n, "rubric point name")
						} else {
							pt.Description = p.str(n, "rubric point description")
						}
					})
					if item.Kind == yaml.MappingNode && (pt.Name == "" || pt.Description == "") {
						p.errorf(item, "a rubric point needs a name and a description")
					}
					g.Rubric = append(g.Rubric, pt)
				}
			}
		})
		if v.Kind == yaml.MappingNode && (g.Model == "" || len(g.Rubric) == 0) {
			p.errorf(v, "grader needs model: (a separate model) and rubric: (named points)")
		}
		if g.PassMark > len(g.Rubric) {
			p.errorf(v, "grader.pass_mark %d is more than the %d rubric points", g.PassMark, len(g.Rubric))
		}
	case "vote":
		// No min_share: a strict majority (more than half).
		p.fields(v, "vote", []string{"min_share"}, func(_ string, n *yaml.Node) {
			c.MinShare = p.float(n, "vote.min_share")
			if !(c.MinShare > 0 && c.MinShare <= 1) {
				p.errorf(n, "vote.min_share must be in (0, 1], got %q", n.Value)
			}
		})
	case "exec":
		e := &ExecSpec{Format: "exit"}
		c.Exec = e
		var isolation *yaml.Node
		var cases *yaml.Node
		p.fields(v, "exec", []string{"command", "tests", "format", "timeout", "copy", "isolation", "cases", "checker", "env"}, func(k string, n *yaml.Node) {
			switch k {
			case "command":
				e.Command = p.strList(n, "exec.command")
				for _, item := range append([]*yaml.Node{n}, n.Content...) {
					if item.Kind == yaml.ScalarNode {
						p.sandboxRefs(item, "exec.command", item.Value)
					}
				}
			case "env":
				if e.Env = p.strMap(n, "exec.env", true); e.Env != nil {
					for i := 0; i+1 < len(n.Content); i += 2 {
						p.sandboxRefs(n.Content[i+1], "exec.env."+n.Content[i].Value, n.Content[i+1].Value)
					}
				}
			case "tests":
				for _, item := range p.nodes(n, "exec.tests") {
					e.Tests = append(e.Tests, p.path(item, "exec.tests"))
					if p.testNodes == nil {
						p.testNodes = map[*ExecSpec][]*yaml.Node{}
					}
					p.testNodes[e] = append(p.testNodes[e], item)
				}
			case "copy":
				e.Copy = p.strList(n, "exec.copy")
			case "format":
				e.Format = p.str(n, "exec.format")
				if !slices.Contains(ExecFormats, e.Format) {
					p.errorf(n, "exec.format must be one of %s, got %q", strings.Join(ExecFormats, ", "), e.Format)
				}
			case "timeout":
				e.Timeout = p.duration(n, "exec.timeout")
			case "cases":
				cases = n
				e.Cases = p.ioCases(n)
			case "checker":
				e.Checker = p.strList(n, "exec.checker")
			case "isolation":
				e.Isolation, isolation = p.str(n, "exec.isolation"), n
				if e.Isolation != execcheck.Judge && e.Isolation != execcheck.InProcess {
					p.errorf(n, "exec.isolation must be %s or %s, got %q", execcheck.Judge, execcheck.InProcess, e.Isolation)
				}
			}
		})
		if e.Isolation == execcheck.Judge {
			p.judged = append(p.judged, judgedCheck{isolation, e.Format})
		}
		switch {
		case e.Format == "io" && cases == nil && v.Kind == yaml.MappingNode:
			p.errorf(v, "exec format io needs cases: each an input (stdin, args) and the stdout it must give")
		case e.Format != "io" && (cases != nil || e.Checker != nil):
			p.errorf(orNode(cases, v), "exec.cases and exec.checker belong to format io")
		case e.Format == "io" && e.Isolation == execcheck.InProcess:
			p.errorf(isolation, "exec.isolation: format io always judges outside the candidate's process")
		}
		if v.Kind == yaml.MappingNode && len(e.Command) == 0 {
			p.errorf(v, "exec needs command: the program and its arguments, e.g. [python3, -m, pytest, -q]")
		}
	default:
		return false
	}
	return true
}

// sandboxRefs reports a ${NAME} in an exec check's command or environment
// other than ${WORKSPACE}: the check runs in the sandbox, where nothing of
// ratchet's environment goes (the candidate could read it).
func (p *parser) sandboxRefs(n *yaml.Node, field, s string) {
	var others []string
	_, err := expand(s, func(name string) (string, bool) {
		if name != varWorkspace {
			others = append(others, "${"+name+"}")
		}
		return "", true
	})
	switch {
	case err != nil:
		p.errorf(n, "%s: %v", field, err)
	case others != nil:
		p.errorf(n, "%s: %s: an exec check may name only ${%s}, the workspace's path in the sandbox (ratchet's environment never reaches the sandbox, where the candidate could read it)",
			field, strings.Join(others, ", "), varWorkspace)
	}
}

// ioCases reads the cases of an io check.
func (p *parser) ioCases(n *yaml.Node) []execcheck.Case {
	var out []execcheck.Case
	for _, item := range p.nodes(n, "exec.cases") {
		var c execcheck.Case
		var stdout bool
		p.fields(item, "exec.cases", []string{"name", "stdin", "args", "stdout"}, func(k string, v *yaml.Node) {
			switch k {
			case "name":
				c.Name = p.str(v, "exec.cases.name")
			case "stdin":
				c.Stdin = p.str(v, "exec.cases.stdin")
			case "args":
				c.Args = p.strList(v, "exec.cases.args")
			case "stdout":
				c.Stdout, stdout = p.str(v, "exec.cases.stdout"), true
			}
		})
		if item.Kind == yaml.MappingNode && !stdout {
			p.errorf(item, "an io case needs stdout: the output the program must print")
		}
		out = append(out, c)
	}
	return out
}

// nodes returns the items of a list (a lone scalar counts as one item).
func (p *parser) nodes(n *yaml.Node, field string) []*yaml.Node {
	switch n.Kind {
	case yaml.SequenceNode:
		return n.Content
	case yaml.ScalarNode:
		return []*yaml.Node{n}
	}
	p.errorf(n, "%s must be a list", field)
	return nil
}

// Env supplies what some checks need to be built.
type Env struct {
	// OpenModel opens a model string for a grader; base is the task file's
	// directory, against which relative paths resolve.
	OpenModel func(spec, base string) (model.Model, error)
	// Generator is the model string of the run's generator, for the grader
	// independence rule.
	Generator string
	// Sandbox returns the runner for exec checks; called only if the file
	// has one.
	Sandbox func() (sandbox.Runner, error)
	// Getenv reads the environment for ${NAME} references in the mcp:
	// section; nil reads nothing.
	Getenv func(string) string
	// Secrets, when set, is taught every value a ${NAME} expands to from
	// the environment and every MCP header value, so that none of them is
	// ever printed or stored.
	Secrets *redact.Redactor

	// original is the workspace as the file names it when Build has made
	// File.Workspace a copy of it ("" means File.Workspace); testRoot is
	// where the exec checks' tests inside it are read from ("" means
	// original): the original, or a snapshot of the tests of a workspace
	// the agent edits in place.
	original, testRoot string
	// layer is the run's layer, whose view is File.Workspace (nil: none).
	layer *layer.Layer
}

// Verifiers builds the file's checks. Errors name the check's line. A file
// whose gate checks are all self-judged is refused unless AllowSelfReview.
// VerifiersOn is Verifiers for checks that judge dir, a copy of the task's
// workspace rebuilt as a run left it (eval rescore's): the exec checks read
// dir, and the tests inside the workspace are read from the task's own, as
// a run's are, never from what the run may have edited.
func (f *File) VerifiersOn(dir string, env Env) (verify.Tiers, error) {
	g := *f
	g.Workspace = dir
	env.original, env.testRoot = f.Workspace, ""
	return g.Verifiers(env)
}

func (f *File) Verifiers(env Env) (verify.Tiers, error) {
	t, err := f.verifiers(f.Checks, env)
	if err != nil || f.AllowSelfReview {
		return t, err
	}
	var names []string
	for _, v := range slices.Concat(t.Cheap, t.Expensive) {
		if v.Provenance() != verify.Self {
			return t, nil
		}
		names = append(names, v.Name())
	}
	if len(names) == 0 {
		return t, nil
	}
	return t, Problems{{File: f.Path, Line: f.Checks[0].Line, Msg: fmt.Sprintf(
		"every gate check is self-judged (%s): the generator would be judging itself, so done would carry no independent evidence; add an independent check (equals, exec, a grader of another provider and model family), or set allow_self_review: true to accept self-judged runs, which say so in their result",
		strings.Join(names, ", "))}}
}

func (f *File) verifiers(checks []Check, env Env) (verify.Tiers, error) {
	var t verify.Tiers
	var errs Problems
	for _, c := range checks {
		v, err := f.verifier(c, env)
		if err != nil {
			errs = append(errs, Problem{File: f.Path, Line: c.Line, Msg: err.Error()})
			continue
		}
		switch c.Tier {
		case verify.Expensive:
			t.Expensive = append(t.Expensive, v)
		case verify.Holdout:
			t.Holdout = append(t.Holdout, v)
		default:
			t.Cheap = append(t.Cheap, v)
		}
	}
	if len(errs) > 0 {
		return t, errs
	}
	return t, nil
}

func (f *File) verifier(c Check, env Env) (verify.Verifier, error) {
	switch c.Kind {
	case "equals":
		return check.Equals(c.Args[0]), nil
	case "regex":
		return check.Regex(c.Args[0])
	case "contains":
		return check.Contains(c.Args...), nil
	case "syntax":
		return check.Syntax(c.Lang)
	case "json_schema":
		return check.JSONSchema(c.Schema)
	case "length":
		return check.Length(c.Min, c.Max, c.Unit)
	case "grounding":
		sources := map[string]string{}
		for _, path := range c.Sources {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("grounding source: %w", err)
			}
			rel, _ := filepath.Rel(f.Dir, path)
			sources[rel] = string(data)
		}
		var opts []check.GroundingOption
		if c.AllowNoQuotes {
			opts = append(opts, check.AllowNoQuotes())
		}
		return check.Grounding(sources, opts...)
	case "vote":
		return check.Vote(c.MinShare)
	case "grader":
		if env.OpenModel == nil {
			return nil, errors.New("grader: no way to open its model here")
		}
		m, err := env.OpenModel(c.Grader.Model, f.Dir)
		if err != nil {
			return nil, fmt.Errorf("grader model: %w", err)
		}
		rubric := make([]check.Point, len(c.Grader.Rubric))
		for i, p := range c.Grader.Rubric {
			rubric[i] = check.Point{Name: p.Name, Description: p.Description}
		}
		return check.Grader(check.GraderConfig{
			Model: m, ModelName: c.Grader.Model, GeneratorName: env.Generator, AllowSelfReview: c.Grader.AllowSelfReview, Independent: c.Grader.Independent,
			Rubric: rubric, PassMark: c.Grader.PassMark, Goal: f.Goal,
		})
	case "exec":
		if env.Sandbox == nil {
			return nil, errors.New("exec: no sandbox here")
		}
		runner, err := env.Sandbox()
		if err != nil {
			return nil, err
		}
		cfg := execcheck.Config{Name: "exec", Runner: runner, Command: c.Exec.Command, Format: c.Exec.Format,
			Isolation: c.Exec.Isolation, Cases: c.Exec.Cases, Checker: c.Exec.Checker, Limits: sandbox.Limits{Wall: c.Exec.Timeout}, Env: c.Exec.Env}
		for _, path := range c.Exec.Tests {
			m, err := f.testMount(path, env)
			if err != nil {
				return nil, err
			}
			cfg.Tests = append(cfg.Tests, m)
		}
		for _, target := range slices.Sorted(maps.Keys(c.Exec.Shadow)) {
			m := sandbox.Mount{Source: c.Exec.Shadow[target], Target: target}
			if i := slices.IndexFunc(cfg.Tests, func(t sandbox.Mount) bool { return t.Target == target }); i >= 0 {
				cfg.Tests[i] = m
			} else { // a file of a mounted directory: mounted over it, after it
				cfg.Tests = append(cfg.Tests, m)
			}
		}
		if f.Mode == "generate" {
			if f.Artifact == "" {
				return nil, errors.New("exec in generate mode needs artifact: the file the answer is written to")
			}
			cfg.Artifact = f.Artifact
		} else {
			cfg.Workspace, cfg.Copy = f.Workspace, c.Exec.Copy
			// On the run's layer the check judges a scratch layer over
			// it, where its sandbox can run on one.
			if uid, gid, ok := sandbox.LayerIDs(runner); ok && env.layer != nil && uid == env.layer.UID && gid == env.layer.GID {
				cfg.Layer = env.layer
			}
		}
		return execcheck.New(cfg)
	}
	return nil, fmt.Errorf("unknown check kind %q", c.Kind)
}

// testMount is how an exec check's test path is mounted. In agent mode a
// test inside the workspace is mounted where it is in the workspace, read
// from outside the directory the agent edits (the original of a copy, or
// the snapshot Build took); any other test is mounted at its path relative
// to the task file's directory.
func (f *File) testMount(path string, env Env) (sandbox.Mount, error) {
	if f.Mode != "generate" {
		ws := cmp.Or(env.original, f.Workspace)
		if rel, err := filepath.Rel(ws, path); err == nil && filepath.IsLocal(rel) {
			return sandbox.Mount{Source: filepath.Join(cmp.Or(env.testRoot, ws), rel), Target: filepath.ToSlash(rel)}, nil
		}
	}
	rel, err := filepath.Rel(f.Dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return sandbox.Mount{}, fmt.Errorf("exec.tests: %s is outside the task file's directory", path)
	}
	return sandbox.Mount{Source: path, Target: filepath.ToSlash(rel)}, nil
}

// workspaceTests are the exec checks' test paths inside the workspace, of
// the task's checks and the sub-agents'.
func (f *File) workspaceTests() []string {
	checks := f.Checks
	if f.Subagents != nil {
		checks = append(slices.Clip(checks), f.Subagents.Checks...)
	}
	var out []string
	for _, c := range checks {
		if c.Exec == nil {
			continue
		}
		for _, path := range c.Exec.Tests {
			if rel, err := filepath.Rel(f.Workspace, path); err == nil && filepath.IsLocal(rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}

// ParseCost reads an amount in US dollars ("0.25", "$0.25", -1 or
// unlimited) as a task file's budget.cost is read, for an eval suite's
// budget.
func ParseCost(n *yaml.Node, file, field string) (budget.Micros, Problems) {
	p := &parser{file: file, f: &File{}}
	c := p.cost(n, field)
	return c, p.problems
}

// ParseLimits reads a budget mapping (the keys of a task file's budget:)
// at where in file; an eval suite's case uses it for its budget: override.
func ParseLimits(n *yaml.Node, file, where string) (budget.Limits, Problems) {
	p := &parser{file: file, f: &File{}}
	var b budget.Limits
	p.limits(n, where, &b)
	return b, p.problems
}
