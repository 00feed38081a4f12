// Package taskfile reads ratchet task files: YAML that maps onto a run's
// Spec one field at a time. The schema is documented in docs/taskfile.md.
//
// Every problem in a file is reported at once, each as "file:line: problem",
// so that a user fixes a file in one pass.
package taskfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// File is a parsed task file. Paths in it are resolved against Dir.
type File struct {
	Path         string
	Dir          string
	Goal         string
	Instructions string
	// Model is the model string as written (e.g. "scripted:turns.yaml"),
	// empty when the file names none.
	Model string
	// Workspace is the directory the file tools work in, absolute; default
	// Dir.
	Workspace string
	Tools     []string
	Checks    []Check
	Budget    budget.Limits
	Progress  progress.Config
	// Escalate says a person is reachable when the run is stuck.
	Escalate bool
}

// Check is one check as written.
type Check struct {
	Kind string // equals, regex, contains
	Args []string
	Tier verify.Tier
	Line int
}

// Problem is one error in a file.
type Problem struct {
	File string
	Line int
	Msg  string
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
var CheckKinds = []string{"equals", "regex", "contains"}

// ToolNames are the tools a task file can name: the workspace file tools.
var ToolNames = []string{"list_files", "read_file", "write_file", "edit_file"}

// Load reads and parses the task file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

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
		line, msg := yamlErr(err, data)
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
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, Problem{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
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
			p.errorf(k, "unknown field %q in %s (known: %s)", k.Value, where, strings.Join(known, ", "))
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
	var checks *yaml.Node
	p.fields(n, "task", []string{"goal", "instructions", "model", "workspace", "tools", "checks", "budget", "progress", "escalate"}, func(key string, v *yaml.Node) {
		switch key {
		case "goal":
			goal = v
			p.f.Goal = strings.TrimSpace(p.str(v, key))
		case "instructions":
			p.f.Instructions = strings.TrimSpace(p.str(v, key))
		case "model":
			p.f.Model = p.str(v, key)
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
		case "budget":
			p.budget(v)
		case "progress":
			p.fields(v, "progress", []string{"window", "patience"}, func(key string, v *yaml.Node) {
				if key == "window" {
					p.f.Progress.Window = p.int(v, "progress.window", 2)
				} else {
					p.f.Progress.Patience = p.int(v, "progress.patience", 1)
				}
			})
		case "escalate":
			p.f.Escalate = p.bool(v, key)
		}
	})
	if p.f.Workspace == "" {
		p.f.Workspace = p.f.Dir
	}
	if goal == nil || (goal.Kind == yaml.ScalarNode && p.f.Goal == "") {
		p.errorf(orNode(goal, n), "goal is missing or empty: say what the run must achieve")
	}
	if checks == nil {
		p.errorf(n, "checks are missing: ratchet never accepts an unchecked answer (add e.g. `checks: [{equals: \"42\"}]`)")
	}
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

func (p *parser) budget(n *yaml.Node) {
	b := &p.f.Budget
	p.fields(n, "budget", []string{"steps", "model_calls", "tool_calls", "input_tokens", "output_tokens", "total_tokens", "cost", "time"}, func(key string, v *yaml.Node) {
		field := "budget." + key
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

func (p *parser) checks(n *yaml.Node) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.errorf(n, "checks must be a non-empty list, e.g. [{equals: \"42\"}]")
		return
	}
	for _, c := range n.Content {
		check := Check{Tier: verify.Cheap, Line: c.Line}
		unknown := p.fields(c, "check", append(slices.Clone(CheckKinds), "tier"), func(key string, v *yaml.Node) {
			if key == "tier" {
				check.Tier = verify.Tier(p.str(v, "tier"))
				if v.Kind == yaml.ScalarNode && check.Tier != verify.Cheap && check.Tier != verify.Expensive {
					p.errorf(v, "tier must be cheap or expensive, got %q", check.Tier)
				}
				return
			}
			if check.Kind != "" {
				p.errorf(v, "a check has one kind; this one has %s and %s (write two checks)", check.Kind, key)
				return
			}
			check.Kind = key
			if key == "contains" {
				check.Args = p.strList(v, key)
				if (v.Kind == yaml.ScalarNode || v.Kind == yaml.SequenceNode) && (len(check.Args) == 0 || slices.Contains(check.Args, "")) {
					p.errorf(v, "contains needs at least one string, and no empty ones: an empty string is in every answer")
				}
			} else {
				check.Args = []string{p.str(v, key)}
			}
			if key == "regex" {
				if _, err := verify.Regex(check.Args[0]); err != nil {
					p.errorf(v, "%v", err)
				}
			}
		})
		// A check whose only kind is misspelt has one problem, reported above.
		if c.Kind == yaml.MappingNode && check.Kind == "" && unknown == 0 {
			p.errorf(c, "check has no kind; use one of %s", strings.Join(CheckKinds, ", "))
		}
		p.f.Checks = append(p.f.Checks, check)
	}
}

// Verifiers builds the file's checks.
func (f *File) Verifiers() (verify.Tiers, error) {
	var t verify.Tiers
	for _, c := range f.Checks {
		var v verify.Verifier
		switch c.Kind {
		case "equals":
			v = verify.Equals(c.Args[0])
		case "regex":
			var err error
			if v, err = verify.Regex(c.Args[0]); err != nil {
				return t, Problem{File: f.Path, Line: c.Line, Msg: err.Error()}
			}
		case "contains":
			v = verify.Contains(c.Args...)
		default:
			return t, Problem{File: f.Path, Line: c.Line, Msg: "unknown check kind " + strconv.Quote(c.Kind)}
		}
		if c.Tier == verify.Expensive {
			t.Expensive = append(t.Expensive, v)
		} else {
			t.Cheap = append(t.Cheap, v)
		}
	}
	return t, nil
}

// yamlErr returns the 1-based line and the message of a YAML syntax error.
// yaml.v3 writes "yaml: line N: msg", but N is 1-based only for scanner
// errors: for parser errors ("did not find expected …" and the directive
// errors) it is 0-based, and an error on the first line has no "line N" at
// all. An error at the end of the stream is put on the file's last line
// rather than the one after it. An error with no place in the file (an
// unknown anchor) gets line 0.
func yamlErr(err error, data []byte) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, text, ok := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); ok && err == nil {
			if isParserError(text) {
				n++
			}
			return min(n, lineCount(data)), text
		}
	}
	if strings.HasPrefix(msg, "unknown anchor") {
		return 0, msg
	}
	return 1, msg
}

// lineCount returns how many lines data has, at least 1, counting line
// breaks as yaml.v3 does: \r\n, \r, \n, NEL, LS and PS.
func lineCount(data []byte) int {
	isBreak := func(r rune) bool { return strings.ContainsRune("\n\r\u0085\u2028\u2029", r) }
	n, last := 0, rune(0)
	for _, r := range strings.ReplaceAll(string(data), "\r\n", "\n") {
		if isBreak(r) {
			n++
		}
		last = r
	}
	if !isBreak(last) {
		n++ // a last line with no break after it
	}
	return n
}

// isParserError reports whether msg is one of yaml.v3's parser (as opposed
// to scanner) problems, whose line yaml.v3 reports 0-based.
func isParserError(msg string) bool {
	for _, prefix := range []string{"did not find expected", "found undefined tag handle", "found duplicate %", "found incompatible YAML document"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
