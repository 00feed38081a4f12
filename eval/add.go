package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
)

// Diagnosis is a run read back from its event log, with a guess at why it
// failed.
type Diagnosis struct {
	Run    string
	Status loop.Status
	Reason string
	Spec   *loop.Spec
	// Answer is the best candidate's answer, empty when none.
	Answer string
	// HoldoutFailed: the run was accepted but a holdout check failed it.
	HoldoutFailed bool
	// Category is one of Categories, empty when the run did not fail.
	Category string
	// Evidence says in one line what the category rests on.
	Evidence string
}

// Diagnose reads a run's log and classifies its failure heuristically, in
// this order (the first that applies):
//
//   - done, and a holdout check failed the accepted answer: verifier_gap
//     (the visible checks passed a wrong answer);
//   - done otherwise, or cancelled: no category (nothing failed);
//   - failed (infrastructure) or the last model call errored: model_error;
//     failed with a check that could not run: verifier_gap;
//   - at least a quarter of the tool results and protocol observations name
//     an unknown tool: wrong_tool; or invalid arguments (schema or JSON):
//     bad_arguments;
//   - stalled: no_progress;
//   - escalated: insufficient_context (the loop had to ask);
//   - two or more protocol slips (a bad or missing finish, an empty reply,
//     tools and finish together): missed_instruction;
//   - exhausted, with tool errors saying something was not found:
//     insufficient_context; exhausted otherwise: budget;
//   - anything else (attempts rejected by the checks): missed_instruction.
func Diagnose(recs []observe.Record) (Diagnosis, error) {
	var d Diagnosis
	var res *loop.Result
	var (
		toolResults, unknownTool, badArgs, notFound int
		slips, modelErrors, checkErrors             int
		lastModelError                              bool
	)
	for _, r := range recs {
		if d.Run == "" {
			d.Run = r.Run
		}
		switch r.Kind {
		case observe.KindRun:
			d.Spec = r.Spec
		case observe.KindEvent:
			ev := r.Event
			if ev == nil {
				continue
			}
			switch ev.Type {
			case loop.EventToolResult:
				toolResults++
				if ev.Tool != nil {
					switch ev.Tool.Outcome {
					case "unknown_tool":
						unknownTool++
					case "invalid_args":
						badArgs++
					}
					if ev.Tool.IsError && mentionsNotFound(ev.Tool.Output) {
						notFound++
					}
				}
				lastModelError = false
			case loop.EventModelError:
				modelErrors++
				lastModelError = true
			case loop.EventModelReply:
				lastModelError = false
			case loop.EventCheckError:
				checkErrors++
			}
		case observe.KindNote:
			var n loop.Note
			if json.Unmarshal(r.Note, &n) != nil || n.Type != loop.NoteObservation {
				continue
			}
			switch n.Problem {
			case "unknown_tool":
				unknownTool++
			case "invalid_json":
				badArgs++
			case "bad_finish", "no_action", "tools_and_finish", "multiple_finish", "empty_reply":
				slips++
			}
		case observe.KindCommand:
			var c loop.Command
			if json.Unmarshal(r.Command, &c) == nil && c.Type == loop.Finish && c.Result != nil {
				res = c.Result
			}
		}
	}
	if res == nil {
		return d, errors.New("the log has no finish command: the run did not end (or the log is cut short)")
	}
	d.Status, d.Reason = res.Status, res.Reason
	if res.Best != nil {
		d.Answer = res.Best.Answer
		d.HoldoutFailed = res.Best.Accepted && len(res.Best.Holdout) > 0 && !passedAll(res.Best.Holdout)
	}
	signals := toolResults + unknownTool + badArgs
	share := func(k int) bool { return k > 0 && 4*k >= signals }
	kind, _, _ := cutStatus(res.Status)
	set := func(cat, format string, args ...any) { d.Category, d.Evidence = cat, fmt.Sprintf(format, args...) }
	switch {
	case res.Status == loop.Done && d.HoldoutFailed:
		set("verifier_gap", "accepted, but a holdout check failed the answer: the visible checks let it through")
	case res.Status == loop.Done:
		set("", "the run ended done and passed its holdout checks")
	case res.Status == loop.Cancelled:
		set("", "the run was cancelled, not failed")
	case res.Status == loop.Failed && checkErrors > 0 && modelErrors == 0:
		set("verifier_gap", "a check could not run (%d check errors): %s", checkErrors, res.Reason)
	case res.Status == loop.Failed || lastModelError:
		set("model_error", "%d model call(s) failed; %s", modelErrors, res.Reason)
	case share(unknownTool) && unknownTool >= badArgs:
		set("wrong_tool", "%d call(s) to unknown tools among %d tool results and observations", unknownTool, signals)
	case share(badArgs):
		set("bad_arguments", "%d call(s) with invalid arguments among %d tool results and observations", badArgs, signals)
	case kind == "stalled":
		set("no_progress", "%s: %s", res.Status, res.Reason)
	case res.Status == loop.Escalated:
		set("insufficient_context", "the run escalated with a question: %s", res.Question)
	case slips >= 2:
		set("missed_instruction", "%d protocol slips (bad or missing finish, empty replies)", slips)
	case kind == "exhausted" && notFound > 0:
		set("insufficient_context", "%s after %d tool error(s) saying something was not found", res.Status, notFound)
	case kind == "exhausted":
		set("budget", "%s: %s", res.Status, res.Reason)
	default:
		set("missed_instruction", "%d attempt(s) rejected by the checks; %s", len(res.Attempts), res.Reason)
	}
	return d, nil
}

func mentionsNotFound(s string) bool {
	s = strings.ToLower(s)
	for _, w := range []string{"not found", "no such file", "does not exist", "cannot find", "not exist"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// NewCase is a case to append to a suite file.
type NewCase struct {
	Name string `yaml:"name"`
	// Task is a task file path (relative to the suite file) or an inline
	// task mapping.
	Task any `yaml:"task"`
	// Model and Budget are the run's effective model and budget, so that
	// the case runs as the run did.
	Model    string      `yaml:"model,omitempty"`
	Budget   *caseBudget `yaml:"budget,omitempty"`
	Expect   *Expect     `yaml:"expect,omitempty"`
	Category string      `yaml:"category,omitempty"`
	FromRun  string      `yaml:"from_run,omitempty"`
	// Comment goes on a line of its own above the case.
	Comment string `yaml:"-"`
}

// CaseFromRun builds the case for a diagnosed run. taskPath is the task
// file the run ran (absolute, or relative to the working directory); when
// empty, the case is an inline task rebuilt from the logged spec with an
// equals check on wantAnswer, which must then be set. The expected outcome
// is done, and never again the run's wrong answer.
func CaseFromRun(d Diagnosis, suitePath, taskPath, wantAnswer, logPath string) (NewCase, error) {
	c := NewCase{Name: "from-" + fileName(strings.ReplaceAll(d.Run, "/", "-")), Category: d.Category, FromRun: logPath}
	c.Expect = &Expect{Status: loop.Done}
	if d.Answer != "" && (d.Status != loop.Done || d.HoldoutFailed) {
		c.Expect.NotAnswer = d.Answer
	}
	if wantAnswer != "" {
		c.Expect.Answer = wantAnswer
	}
	switch {
	case taskPath != "":
		rel, err := relTo(filepath.Dir(suitePath), taskPath)
		if err != nil {
			return c, err
		}
		c.Task = rel
		if d.Spec != nil {
			c.Budget = newCaseBudget(d.Spec.Budget)
		}
	case wantAnswer == "":
		return c, errors.New("the log holds the run's goal but not its checks: pass --task (the task file the run ran) or --expect-answer (an inline case checked with equals)")
	case d.Spec == nil:
		return c, errors.New("the log has no spec entry to rebuild the task from: pass --task")
	default:
		task := yaml.Node{Kind: yaml.MappingNode}
		kv := func(k, v string) {
			style := yaml.Style(0)
			if strings.Contains(v, "\n") {
				style = yaml.LiteralStyle
			}
			task.Content = append(task.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: style})
		}
		if d.Spec.Mode != "" {
			kv("mode", string(d.Spec.Mode))
		}
		kv("goal", d.Spec.Goal)
		if d.Spec.Instructions != "" {
			kv("instructions", d.Spec.Instructions)
		}
		checks := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Value: "equals"}, {Kind: yaml.ScalarNode, Value: wantAnswer, Style: yaml.DoubleQuotedStyle},
		}}}}
		task.Content = append(task.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "checks"}, checks)
		if s := d.Spec.Budget.Steps; s > 0 {
			kv("budget", "")
			task.Content[len(task.Content)-1] = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Value: "steps"}, {Kind: yaml.ScalarNode, Value: strconv.Itoa(s)},
			}}
		}
		c.Task = &task
	}
	c.Comment = d.Category + ": " + d.Evidence
	return c, nil
}

// caseBudget is a case's budget: as a task file writes it.
type caseBudget struct {
	Steps        int    `yaml:"steps,omitempty"`
	ModelCalls   int    `yaml:"model_calls,omitempty"`
	ToolCalls    int    `yaml:"tool_calls,omitempty"`
	InputTokens  int64  `yaml:"input_tokens,omitempty"`
	OutputTokens int64  `yaml:"output_tokens,omitempty"`
	TotalTokens  int64  `yaml:"total_tokens,omitempty"`
	Cost         string `yaml:"cost,omitempty"`
	Time         string `yaml:"time,omitempty"`
}

// newCaseBudget writes the limits a run had (its logged spec's budget;
// zero fields were the defaults), nil when all are defaults.
func newCaseBudget(b budget.Limits) *caseBudget {
	cb := caseBudget{Steps: b.Steps, ModelCalls: b.ModelCalls, ToolCalls: b.ToolCalls, InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, TotalTokens: b.TotalTokens}
	switch {
	case b.Cost == budget.Unlimited:
		cb.Cost = "unlimited"
	case b.Cost != 0:
		cb.Cost = strconv.FormatFloat(b.Cost.Dollars(), 'f', -1, 64)
	}
	switch {
	case b.Time == budget.Unlimited:
		cb.Time = "unlimited"
	case b.Time != 0:
		cb.Time = b.Time.String()
	}
	if cb == (caseBudget{}) {
		return nil
	}
	return &cb
}

func relTo(dir, path string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, abs)
	ups := strings.Count(filepath.ToSlash(rel)+"/", "../")
	if err != nil || ups >= strings.Count(absDir, string(filepath.Separator)) {
		return abs, nil // nothing in common but the root: absolute reads better
	}
	return filepath.ToSlash(rel), nil
}

// AppendCase adds c to the cases: list of the suite file at path, creating
// the file (label: its base name) when it does not exist. The file's text is
// kept as it is, comments included: the case is inserted as text at the end
// of the cases: block. The result must parse as a suite (the case's name
// must be new); otherwise the file is left alone and the problems returned.
func AppendCase(path string, c NewCase) error {
	item, err := caseText(c)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		data = nil
		if CheckLabel(base) == nil {
			data = []byte("label: " + base + "\n")
		}
		data = append(data, "cases:\n"...)
		data = append(data, indent(item, "  ")...)
	case err != nil:
		return err
	default:
		if data, err = insertCase(data, path, item); err != nil {
			return err
		}
	}
	if _, err := ParseSuite(data, path); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func caseText(c NewCase) ([]byte, error) {
	var b bytes.Buffer
	if c.Comment != "" {
		for l := range strings.SplitSeq(c.Comment, "\n") {
			b.WriteString("# " + l + "\n")
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode([]NewCase{c}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func indent(text []byte, prefix string) []byte {
	var b bytes.Buffer
	for l := range bytes.SplitSeq(bytes.TrimRight(text, "\n"), []byte("\n")) {
		if len(l) > 0 {
			b.WriteString(prefix)
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// insertCase puts item at the end of the top-level cases: block of a suite
// file's text, or adds a cases: block at the end when there is none.
func insertCase(data []byte, path string, item []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s is not valid YAML: %w", path, err)
	}
	text := string(data)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a suite (a mapping with cases:)", path)
	}
	top := doc.Content[0]
	if top.Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("%s is written in flow style; add the case by hand", path)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "cases" {
			continue
		}
		v := top.Content[i+1]
		pad := "  "
		switch {
		case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0:
			// The items' dash sits two columns left of their content.
			pad = strings.Repeat(" ", max(0, v.Content[0].Column-3))
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		default:
			return nil, fmt.Errorf("%s: cases: is not a block list; add the case by hand", path)
		}
		// Insert before the next top-level key, above the blank and
		// comment lines that lead into it, or at the end.
		at := len(lines)
		if i+2 < len(top.Content) {
			at = top.Content[i+2].Line - 1
			for at > 0 {
				t := strings.TrimSpace(lines[at-1])
				if t != "" && !strings.HasPrefix(t, "#") {
					break
				}
				at--
			}
		}
		out := strings.Join(lines[:at], "") + string(indent(item, pad)) + strings.Join(lines[at:], "")
		return []byte(out), nil
	}
	return []byte(text + "cases:\n" + string(indent(item, "  "))), nil
}
