package eval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/yamlerr"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/sim"
	"github.com/ratchetloop/ratchet/taskfile"
)

// Suite is a parsed suite file: the cases to run, how often and how many at
// once. The schema is in docs/eval.md.
type Suite struct {
	Path string
	Dir  string
	// Label names the suite's results (default: the file name without its
	// extension).
	Label string
	// Repeats is how many times each case runs unless it says otherwise
	// (default 1).
	Repeats int
	// Concurrency is how many runs go at once (default 4).
	Concurrency int
	// Model, when set, replaces the model of every task case that does
	// not name its own.
	Model string
	// Limits are the provider_limits: every run of the suite shares, by
	// provider; the task files' own apply too (the strictest holds).
	Limits map[string]limit.Limits
	// Impossible runs each task case's impossible twin too (AddTwins).
	Impossible bool
	// Cost caps the spend of the suite's runs together (budget: cost);
	// zero means no cap (Config.Cost).
	Cost  budget.Micros
	Cases []Case
}

// Case is one task the suite runs Repeats times.
type Case struct {
	// Name is unique in the suite: given, or derived from the task path
	// (task cases), "inline-<n>" (inline tasks) or "<block>/<i>" (sim).
	Name    string
	Line    int
	Repeats int
	// Model, when set, replaces the task file's model.
	Model string
	// Budget's non-zero fields replace the task file's budget (a case made
	// from a run keeps the run's effective budget).
	Budget budget.Limits
	Expect *Expect
	// Category and FromRun record where a case made by `eval add` came
	// from.
	Category string
	FromRun  string
	// TaskPath is the task file of a file case, as written.
	TaskPath string
	// Task is the parsed task of a file or inline case; nil for sim cases.
	Task *taskfile.File
	// Sim is set for a simulated case.
	Sim *SimCase
	// Twin, set on an impossible twin (see Twin), says which expected
	// value its checks contradict.
	Twin string
}

// SimCase is one simulated case: step Index of a sim block, whose repeat r
// is sim.StepTask(Config, Policy, Index, r+1) with a truthful holdout check
// (when Holdout) that passes exactly the correct answers.
type SimCase struct {
	Block   string
	Model   string
	Index   int
	Config  sim.Config
	Policy  sim.Policy
	Holdout bool
}

// Defaults.
const (
	DefaultRepeats     = 1
	DefaultConcurrency = 4
	// MaxSimCases bounds one sim block.
	MaxSimCases = 100_000
)

// Categories are the failure categories of a case made from a failed run.
var Categories = []string{
	"wrong_tool", "bad_arguments", "missed_instruction", "verifier_gap",
	"insufficient_context", "budget", "no_progress", "model_error",
}

// LoadSuite reads and parses the suite file at path. Problems are reported
// all at once as taskfile.Problems ("file:line: problem"); those of a task
// file a case names carry that file's name and line.
func LoadSuite(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSuite(data, path)
}

// ParseSuite parses suite data; path names it in errors and anchors relative
// paths.
func ParseSuite(data []byte, path string) (*Suite, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	p := &suiteParser{file: path, data: data, s: &Suite{Path: path, Dir: filepath.Dir(abs), Label: base}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlerr.Locate(err, data)
		return nil, taskfile.Problems{{File: path, Line: line, Msg: msg}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return nil, taskfile.Problems{{File: path, Line: 1, Msg: "file is empty; a suite needs cases: or sim:"}}
	}
	p.top(doc.Content[0])
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b taskfile.Problem) int {
			if a.File != b.File {
				return strings.Compare(a.File, b.File)
			}
			return a.Line - b.Line
		})
		return nil, p.problems
	}
	return p.s, nil
}

type suiteParser struct {
	file     string
	data     []byte
	s        *Suite
	problems taskfile.Problems
}

func (p *suiteParser) errorf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, taskfile.Problem{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (p *suiteParser) fields(n *yaml.Node, where string, known []string, set func(key string, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", where)
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(known, k.Value):
			p.errorf(k, "unknown field %q in %s%s (known: %s)", k.Value, where, taskfile.DidYouMean(k.Value, known), strings.Join(known, ", "))
		case seen[k.Value]:
			p.errorf(k, "%s.%s is given twice", where, k.Value)
		default:
			seen[k.Value] = true
			set(k.Value, v)
		}
	}
}

func (p *suiteParser) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s must be a string", field)
		return ""
	}
	return n.Value
}

func (p *suiteParser) int(n *yaml.Node, field string, lo, hi int) int {
	v, err := strconv.Atoi(strings.ReplaceAll(n.Value, "_", ""))
	if n.Kind != yaml.ScalarNode || err != nil {
		p.errorf(n, "%s must be a whole number, got %q", field, n.Value)
		return 0
	}
	if v < lo || v > hi {
		p.errorf(n, "%s must be between %d and %d, got %d", field, lo, hi, v)
		return 0
	}
	return v
}

func (p *suiteParser) float(n *yaml.Node, field string) float64 {
	v, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || err != nil {
		p.errorf(n, "%s must be a number, got %q", field, n.Value)
	}
	return v
}

func (p *suiteParser) bool(n *yaml.Node, field string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.errorf(n, "%s must be true or false", field)
	}
	return b
}

func (p *suiteParser) top(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "a suite file must be a mapping of fields such as label: and cases:")
		return
	}
	var cases, sims *yaml.Node
	p.fields(n, "suite", []string{"label", "repeats", "concurrency", "model", "provider_limits", "impossible", "budget", "cases", "sim"}, func(key string, v *yaml.Node) {
		switch key {
		case "label":
			p.s.Label = p.str(v, key)
			if err := CheckLabel(p.s.Label); v.Kind == yaml.ScalarNode && err != nil {
				p.errorf(v, "%v", err)
			}
		case "repeats":
			p.s.Repeats = p.int(v, key, 1, 10_000)
		case "concurrency":
			p.s.Concurrency = p.int(v, key, 1, 10_000)
		case "model":
			m, probs := taskfile.ParseModel(v, p.file, key)
			p.s.Model = m
			p.problems = append(p.problems, probs...)
		case "provider_limits":
			l, probs := taskfile.ParseProviderLimits(v, p.file, key)
			p.s.Limits = l
			p.problems = append(p.problems, probs...)
		case "impossible":
			p.s.Impossible = p.bool(v, key)
		case "budget":
			// Only cost: the other limits are each run's own.
			p.fields(v, "suite budget", []string{"cost"}, func(_ string, v *yaml.Node) {
				c, probs := taskfile.ParseCost(v, p.file, "budget.cost")
				p.s.Cost = max(c, 0) // unlimited: no cap
				p.problems = append(p.problems, probs...)
			})
		case "cases":
			cases = v
		case "sim":
			sims = v
		}
	})
	if p.s.Repeats == 0 {
		p.s.Repeats = DefaultRepeats
	}
	if p.s.Concurrency == 0 {
		p.s.Concurrency = DefaultConcurrency
	}
	if cases == nil && sims == nil {
		p.errorf(n, "a suite needs cases: (task files or inline tasks) or sim: (simulated cases)")
	}
	if cases != nil {
		p.cases(cases)
	}
	if sims != nil {
		p.sims(sims)
	}
	seen := map[string]int{}
	for _, c := range p.s.Cases {
		if line, dup := seen[c.Name]; dup {
			p.problems = append(p.problems, taskfile.Problem{File: p.file, Line: c.Line,
				Msg: fmt.Sprintf("case name %q is already used on line %d; give one a name:", c.Name, line)})
			continue
		}
		seen[c.Name] = c.Line
	}
}

func (p *suiteParser) seq(n *yaml.Node, field string) []*yaml.Node {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s must be a list", field)
		return nil
	}
	return n.Content
}

func (p *suiteParser) cases(n *yaml.Node) {
	for i, cn := range p.seq(n, "cases") {
		c := Case{Line: cn.Line}
		var task *yaml.Node
		p.fields(cn, "case", []string{"name", "task", "repeats", "model", "budget", "expect", "category", "from_run"}, func(key string, v *yaml.Node) {
			switch key {
			case "name":
				c.Name = p.str(v, "case name")
				if err := checkName(c.Name, true); v.Kind == yaml.ScalarNode && err != nil {
					p.errorf(v, "case name: %v", err)
				} else if strings.HasSuffix(c.Name, TwinSuffix) {
					p.errorf(v, "case name: %q ends in %s, which names impossible twins", c.Name, TwinSuffix)
				}
			case "task":
				task = v
			case "repeats":
				c.Repeats = p.int(v, "case repeats", 1, 10_000)
			case "model":
				m, probs := taskfile.ParseModel(v, p.file, "case model")
				c.Model = m
				p.problems = append(p.problems, probs...)
			case "budget":
				b, probs := taskfile.ParseLimits(v, p.file, "case budget")
				c.Budget = b
				p.problems = append(p.problems, probs...)
			case "expect":
				c.Expect = p.expect(v)
			case "category":
				c.Category = p.str(v, "category")
				if v.Kind == yaml.ScalarNode && !slices.Contains(Categories, c.Category) {
					p.errorf(v, "category %q is not one of %s", c.Category, strings.Join(Categories, ", "))
				}
			case "from_run":
				c.FromRun = p.str(v, "from_run")
			}
		})
		if cn.Kind != yaml.MappingNode {
			continue
		}
		switch {
		case task == nil:
			p.errorf(cn, "case needs task: (a task file path or an inline task)")
			continue
		case task.Kind == yaml.ScalarNode:
			c.TaskPath = p.str(task, "task")
			path := c.TaskPath
			if !filepath.IsAbs(path) {
				path = filepath.Join(p.s.Dir, path)
			}
			tf, err := taskfile.Load(path)
			if err != nil {
				p.taskError(task, err)
				continue
			}
			c.Task = tf
			if c.Name == "" {
				c.Name = nameFromPath(c.TaskPath)
			}
		case task.Kind == yaml.MappingNode:
			tf, err := taskfile.Parse(p.inline(task), p.file)
			if err != nil {
				p.taskError(task, err)
				continue
			}
			c.Task = tf
			if c.Name == "" {
				c.Name = "inline-" + strconv.Itoa(i+1)
			}
		default:
			p.errorf(task, "task must be a task file path or an inline task mapping")
			continue
		}
		if c.Repeats == 0 {
			c.Repeats = p.s.Repeats
		}
		p.s.Cases = append(p.s.Cases, c)
	}
}

func (p *suiteParser) taskError(n *yaml.Node, err error) {
	var ps taskfile.Problems
	if errors.As(err, &ps) {
		p.problems = append(p.problems, ps...)
		return
	}
	p.errorf(n, "task: %v", err)
}

// inline returns the text of an inline task mapping as a task file of its
// own, on the same lines as in the suite (earlier lines blank), so that the
// task file parser's problems point at the suite's lines.
func (p *suiteParser) inline(n *yaml.Node) []byte {
	lines := strings.Split(strings.ReplaceAll(string(p.data), "\r\n", "\n"), "\n")
	indent := n.Column - 1
	if n.Style&yaml.FlowStyle != 0 || n.Line < 1 || n.Line > len(lines) {
		out, _ := yaml.Marshal(n)
		return append([]byte(strings.Repeat("\n", max(0, n.Line-1))), out...)
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("\n", n.Line-1))
	for i := n.Line - 1; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimLeft(l, " ")
		lead := len(l) - len(t)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			b.WriteString("\n")
			continue
		case i > n.Line-1 && lead < indent:
			return []byte(b.String())
		}
		b.WriteString(l[min(indent, lead):])
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func (p *suiteParser) expect(n *yaml.Node) *Expect {
	e := &Expect{}
	p.fields(n, "expect", []string{"status", "answer", "not_answer"}, func(key string, v *yaml.Node) {
		switch key {
		case "status":
			e.Status = loop.Status(p.str(v, "expect.status"))
			if v.Kind == yaml.ScalarNode && !validStatus(e.Status) {
				p.errorf(v, "expect.status %q is not an exit such as done, exhausted:steps, stalled:repeating, escalated", e.Status)
			}
		case "answer":
			e.Answer = p.str(v, "expect.answer")
		case "not_answer":
			e.NotAnswer = p.str(v, "expect.not_answer")
		}
	})
	return e
}

func validStatus(s loop.Status) bool {
	kind, detail, _ := cutStatus(s)
	switch kind {
	case "done", "escalated", "cancelled", "failed":
		return detail == ""
	case "exhausted", "stalled":
		return detail != ""
	}
	return false
}

func (p *suiteParser) sims(n *yaml.Node) {
	for i, bn := range p.seq(n, "sim") {
		name := "sim-" + strconv.Itoa(i+1)
		cfg := sim.DefaultConfig()
		cfg.Trials = 1
		policy := sim.ConfidenceDriven
		count, holdout, mdl := 0, true, ""
		p.fields(bn, "sim block", []string{"name", "model", "cases", "p", "recall", "false_fail", "retries", "k", "threshold", "sharpness", "policy", "seed", "holdout"}, func(key string, v *yaml.Node) {
			switch key {
			case "name":
				name = p.str(v, "sim.name")
			case "model":
				mdl = p.str(v, "sim.model")
			case "cases":
				count = p.int(v, "sim.cases", 1, MaxSimCases)
			case "p":
				cfg.P = p.float(v, "sim.p")
			case "recall":
				cfg.Recall = p.float(v, "sim.recall")
			case "false_fail":
				cfg.FalseFail = p.float(v, "sim.false_fail")
			case "retries":
				cfg.Retries = p.int(v, "sim.retries", 0, sim.MaxRetries)
			case "k":
				cfg.K = p.int(v, "sim.k", 1, sim.MaxK)
			case "threshold":
				cfg.Threshold = p.float(v, "sim.threshold")
			case "sharpness":
				cfg.Calibration.Sharpness = p.float(v, "sim.sharpness")
			case "policy":
				policy = sim.Policy(p.str(v, "sim.policy"))
				if v.Kind == yaml.ScalarNode && !slices.Contains(sim.Policies, policy) {
					p.errorf(v, "sim.policy %q is not one of %v", policy, sim.Policies)
				}
			case "seed":
				s, err := strconv.ParseUint(v.Value, 10, 64)
				if err != nil {
					p.errorf(v, "sim.seed must be a whole number, got %q", v.Value)
				}
				cfg.Seed = s
			case "holdout":
				holdout = p.bool(v, "sim.holdout")
			}
		})
		if bn.Kind != yaml.MappingNode {
			continue
		}
		if count == 0 {
			p.errorf(bn, "sim block needs cases: (how many simulated cases)")
			continue
		}
		if err := cfg.Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				p.errorf(bn, "sim: %s", line)
			}
			continue
		}
		if mdl == "" {
			mdl = "sim:" + name
		}
		cfg = cfg.WithDefaults()
		for j := range count {
			p.s.Cases = append(p.s.Cases, Case{
				Name: name + "/" + strconv.Itoa(j), Line: bn.Line, Repeats: p.s.Repeats,
				Sim: &SimCase{Block: name, Model: mdl, Index: j, Config: cfg, Policy: policy, Holdout: holdout},
			})
		}
	}
}

// nameFromPath derives a case name from a task path: the directory name for
// a file called task.yaml, else the file name without extension.
func nameFromPath(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if base == "task" {
		if d := filepath.Base(filepath.Dir(filepath.Clean(path))); d != "." && d != "/" {
			return d
		}
	}
	return base
}

// CheckLabel refuses labels that cannot name a directory: empty, "." or
// "..", or with characters other than letters, digits and ._-
func CheckLabel(s string) error { return checkName(s, false) }

// checkName is CheckLabel, allowing a slash between parts for case names.
func checkName(s string, slash bool) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%q has an empty, . or .. part", s)
		}
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r) || slash && r == '/') {
			return fmt.Errorf("%q may only hold letters, digits and . _ -", s)
		}
	}
	return nil
}

// Runs returns how many runs the suite makes: the sum of every case's
// repeats.
func (s *Suite) Runs() int {
	n := 0
	for _, c := range s.Cases {
		n += c.Repeats
	}
	return n
}
