package taskfile_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

// writeTask writes data as dir/name and returns its path.
func writeTask(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// problems returns err as Problems, failing the test if it is anything else.
func problems(t *testing.T, err error) taskfile.Problems {
	t.Helper()
	if err == nil {
		t.Fatal("Parse succeeded, want problems")
	}
	var ps taskfile.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error is %T (%v), want taskfile.Problems", err, err)
	}
	if len(ps) == 0 {
		t.Fatal("empty Problems returned as an error")
	}
	return ps
}

func TestLoadFullFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeTask(t, dir, "task.yaml", `# A file that sets every field.
goal: |
  invoice.txt lists line items.
  Report the total.

instructions: "  Be brief.  "
model: scripted:turns.yaml
workspace: ws
tools: [list_files, read_file, write_file, edit_file]
checks:
  - regex: '^TOTAL: \d+\.\d{2}$'
  - contains: [TOTAL, "."]
  - contains: TOTAL
  - equals: "TOTAL: 142.50"
    tier: expensive
  - tier: cheap
    regex: x
budget:
  steps: 8
  model_calls: unlimited
  tool_calls: -1
  total_tokens: 200_000
  input_tokens: 1000
  output_tokens: unlimited
  cost: $0.25
  time: 2m
progress: {window: 4, patience: 7, waits: [read_file], max_waits: 12}
escalate: true
`)
	got, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &taskfile.File{
		Path:         path,
		Dir:          dir,
		Goal:         "invoice.txt lists line items.\nReport the total.",
		Instructions: "Be brief.",
		Model:        "scripted:turns.yaml",
		ModelLine:    7,
		Workspace:    filepath.Join(dir, "ws"),
		Tools:        []string{"list_files", "read_file", "write_file", "edit_file"},
		Checks: []taskfile.Check{
			{Kind: "regex", Args: []string{`^TOTAL: \d+\.\d{2}$`}, Tier: verify.Cheap, Line: 11},
			{Kind: "contains", Args: []string{"TOTAL", "."}, Tier: verify.Cheap, Line: 12},
			{Kind: "contains", Args: []string{"TOTAL"}, Tier: verify.Cheap, Line: 13},
			{Kind: "equals", Args: []string{"TOTAL: 142.50"}, Tier: verify.Expensive, Line: 14},
			{Kind: "regex", Args: []string{"x"}, Tier: verify.Cheap, Line: 16},
		},
		Budget: budget.Limits{
			Steps:        8,
			ModelCalls:   budget.Unlimited,
			ToolCalls:    budget.Unlimited,
			TotalTokens:  200_000,
			InputTokens:  1000,
			OutputTokens: budget.Unlimited,
			Cost:         budget.USD(0.25),
			Time:         2 * time.Minute,
		},
		Progress: progress.Config{Window: 4, Patience: 7, Waits: []string{"read_file"}, MaxWaits: 12},
		Escalate: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
}

func TestParseMinimalDefaults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "task.yaml")
	got, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: '42'}]\n"), path)
	if err != nil {
		t.Fatal(err)
	}
	want := &taskfile.File{
		Path:      path,
		Dir:       dir,
		Goal:      "g",
		Workspace: dir, // the default workspace is the task file's directory
		Checks:    []taskfile.Check{{Kind: "equals", Args: []string{"42"}, Tier: verify.Cheap, Line: 2}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestParseWorkspace(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, workspace string
		wantDir, wantWS       string
	}{
		{"relative to the file", filepath.Join(dir, "task.yaml"), "a/b", dir, sub},
		{"dot", filepath.Join(dir, "task.yaml"), ".", dir, dir},
		{"up from a nested file", filepath.Join(sub, "task.yaml"), "../..", sub, dir},
		{"absolute", filepath.Join(dir, "task.yaml"), other, dir, other},
		{"empty means the file's dir", filepath.Join(sub, "task.yaml"), "''", sub, sub},
		// A relative task path is resolved against the working directory.
		{"relative task path", "task.yaml", ".", cwd, cwd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := "goal: g\nchecks: [{equals: a}]\nworkspace: " + tc.workspace + "\n"
			f, err := taskfile.Parse([]byte(data), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Path != tc.path {
				t.Errorf("Path = %q, want %q as given", f.Path, tc.path)
			}
			if f.Dir != tc.wantDir {
				t.Errorf("Dir = %q, want %q", f.Dir, tc.wantDir)
			}
			if f.Workspace != tc.wantWS {
				t.Errorf("Workspace = %q, want %q", f.Workspace, tc.wantWS)
			}
		})
	}
}

func TestParseTools(t *testing.T) {
	for _, tc := range []struct {
		tools string
		want  []string
	}{
		{"", nil}, // tools: with nothing after it
		{"[]", nil},
		{"read_file", []string{"read_file"}},
		{"[edit_file, list_files]", []string{"edit_file", "list_files"}},
	} {
		t.Run(tc.tools, func(t *testing.T) {
			f, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: a}]\ntools: "+tc.tools+"\n"), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.Tools); diff != "" {
				t.Errorf("Tools mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		budget string
		want   budget.Limits
	}{
		{"{}", budget.Limits{}},
		{"{steps: 8}", budget.Limits{Steps: 8}},
		{"{steps: -1}", budget.Limits{Steps: budget.Unlimited}},
		{"{steps: unlimited}", budget.Limits{Steps: budget.Unlimited}},
		{"{model_calls: 20, tool_calls: 50}", budget.Limits{ModelCalls: 20, ToolCalls: 50}},
		{"{total_tokens: 2_000_000}", budget.Limits{TotalTokens: 2_000_000}},
		{"{input_tokens: unlimited, output_tokens: -1}", budget.Limits{InputTokens: budget.Unlimited, OutputTokens: budget.Unlimited}},
		{"{cost: 0.25}", budget.Limits{Cost: budget.USD(0.25)}},
		{`{cost: "$0.25"}`, budget.Limits{Cost: budget.USD(0.25)}},
		{"{cost: $0.25}", budget.Limits{Cost: budget.USD(0.25)}},
		{"{cost: 2}", budget.Limits{Cost: 2_000_000}},
		{"{cost: 0.000001}", budget.Limits{Cost: 1}},
		{"{cost: unlimited}", budget.Limits{Cost: budget.Unlimited}},
		{"{cost: -1}", budget.Limits{Cost: budget.Unlimited}},
		{"{time: 2m}", budget.Limits{Time: 2 * time.Minute}},
		{"{time: 1h30m}", budget.Limits{Time: 90 * time.Minute}},
		{"{time: 90s}", budget.Limits{Time: 90 * time.Second}},
		{"{time: unlimited}", budget.Limits{Time: budget.Unlimited}},
		{"{time: -1}", budget.Limits{Time: budget.Unlimited}},
	} {
		t.Run(tc.budget, func(t *testing.T) {
			f, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: a}]\nbudget: "+tc.budget+"\n"), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.Budget); diff != "" {
				t.Errorf("Budget mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseChecks(t *testing.T) {
	for _, tc := range []struct {
		name, checks string
		want         []taskfile.Check
	}{
		{"equals", "[{equals: 42}]", []taskfile.Check{{Kind: "equals", Args: []string{"42"}, Tier: verify.Cheap, Line: 2}}},
		{"equals empty string", `[{equals: ""}]`, []taskfile.Check{{Kind: "equals", Args: []string{""}, Tier: verify.Cheap, Line: 2}}},
		{"regex", `[{regex: '^a+$'}]`, []taskfile.Check{{Kind: "regex", Args: []string{"^a+$"}, Tier: verify.Cheap, Line: 2}}},
		{"contains string", "[{contains: TOTAL}]", []taskfile.Check{{Kind: "contains", Args: []string{"TOTAL"}, Tier: verify.Cheap, Line: 2}}},
		{"contains list", "[{contains: [a, b, c]}]", []taskfile.Check{{Kind: "contains", Args: []string{"a", "b", "c"}, Tier: verify.Cheap, Line: 2}}},
		{"tiers", "\n  - {equals: a, tier: expensive}\n  - {regex: b, tier: cheap}\n  - contains: c\n", []taskfile.Check{
			{Kind: "equals", Args: []string{"a"}, Tier: verify.Expensive, Line: 3},
			{Kind: "regex", Args: []string{"b"}, Tier: verify.Cheap, Line: 4},
			{Kind: "contains", Args: []string{"c"}, Tier: verify.Cheap, Line: 5},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := taskfile.Parse([]byte("goal: g\nchecks: "+tc.checks+"\n"), "t.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.Checks); diff != "" {
				t.Errorf("Checks mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseProblems checks that each mistake is reported on its own line,
// and only once.
func TestParseContext(t *testing.T) {
	dir := t.TempDir()
	path := writeTask(t, dir, "task.yaml", `goal: g
checks: [{equals: a}]
context:
  compact_at: 60_000
  keep_turns: 3
  summary_tokens: 800
  scratchpad: true
plan: true
tool_output:
  default: {max_bytes: 8192, max_lines: 100}
  read_file: {max_lines: 50}
`)
	got, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(taskfile.Context{CompactAt: 60000, KeepTurns: 3, SummaryTokens: 800, Scratchpad: true}, got.Context); diff != "" {
		t.Errorf("context (-want +got):\n%s", diff)
	}
	if !got.Plan {
		t.Error("plan: true was not read")
	}
	want := map[string]tool.OutputCaps{"default": {MaxBytes: 8192, MaxLines: 100}, "read_file": {MaxLines: 50}}
	if diff := cmp.Diff(want, got.ToolOutput); diff != "" {
		t.Errorf("tool_output (-want +got):\n%s", diff)
	}
}

func TestParseReasoning(t *testing.T) {
	path := writeTask(t, t.TempDir(), "task.yaml", "goal: g\nchecks: [{equals: a}]\nreasoning:\n  effort: high\n  budget_tokens: 8_000\n")
	got, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&model.Reasoning{Effort: model.EffortHigh, BudgetTokens: 8000}); !cmp.Equal(want, got.Reasoning) {
		t.Errorf("reasoning %+v, want %+v", got.Reasoning, want)
	}
}

func TestParseProblems(t *testing.T) {
	type want struct {
		line int
		msg  string // a substring of the problem's message
	}
	ok := "goal: g\nchecks: [{equals: a}]\n"
	for _, tc := range []struct {
		name, data string
		want       []want
	}{
		{"unknown top-level field", ok + "colour: blue\n", []want{{3, `unknown field "colour" in task (known: mode, goal, instructions,`}}},
		{"unknown budget field", ok + "budget:\n  steps: 3\n  widgets: 3\n", []want{{5, `unknown field "widgets" in budget`}}},
		{"negative steps", ok + "budget: {steps: -5}\n", []want{{3, "budget.steps must be positive, or -1 / unlimited, got -5"}}},
		{"zero steps", ok + "budget: {steps: 0}\n", []want{{3, "budget.steps must be positive, or -1 / unlimited, got 0"}}},
		{"fractional steps", ok + "budget: {steps: 2.5}\n", []want{{3, `budget.steps must be a whole number, got "2.5"`}}},
		{"bad duration", ok + "budget: {time: 2 minutes}\n", []want{{3, `budget.time must be a positive duration such as 90s or 5m, or -1 / unlimited, got "2 minutes"`}}},
		{"negative duration", ok + "budget: {time: -5s}\n", []want{{3, "budget.time must be a positive duration"}}},
		{"zero cost", ok + "budget: {cost: 0}\n", []want{{3, "budget.cost must be an amount in US dollars"}}},
		{"negative cost", ok + "budget: {cost: -0.5}\n", []want{{3, "budget.cost must be an amount in US dollars"}}},
		{"NaN cost", ok + "budget: {cost: .nan}\n", []want{{3, "budget.cost must be an amount"}}},
		{"NaN cost spelled NaN", ok + "budget: {cost: NaN}\n", []want{{3, "budget.cost must be an amount"}}},
		{"infinite cost", ok + "budget: {cost: +Inf}\n", []want{{3, "budget.cost must be an amount"}}},
		{"cost below a micro-dollar", ok + "budget: {cost: 0.0000001}\n", []want{{3, "(at least 0.000001)"}}},
		{"cost words", ok + "budget: {cost: ten dollars}\n", []want{{3, `got "ten dollars"`}}},
		{"budget not a mapping", ok + "budget: 5\n", []want{{3, "budget must be a mapping"}}},
		{"no turn limit", ok + "budget: {steps: -1,\n  model_calls: -1}\n", []want{{3, "budget: steps and model_calls are both unlimited"}}},
		{"steps inside the reserve", ok + "budget:\n  steps: 1\ntools: [bogus]\n", []want{{4, "budget.steps: limit 1 leaves nothing beyond the closing reserve of 1"}, {5, `unknown tool "bogus"`}}},
		{"a default inside the reserve", ok + "budget: {time: 10m, model_calls: 1}\n", []want{{3, "budget.model_calls: limit 1 leaves nothing"}}},
		{"io without cases", "goal: g\nmode: generate\nartifact: a.py\nchecks:\n- exec: {command: [python3, a.py], format: io}\n",
			[]want{{5, "exec format io needs cases"}}},
		{"io case without stdout", "goal: g\nmode: generate\nartifact: a.py\nchecks:\n- exec:\n    command: [python3, a.py]\n    format: io\n    cases:\n    - {stdin: x, stdot: y}\n",
			[]want{{9, `unknown field "stdot" in exec.cases`}, {9, "an io case needs stdout"}}},
		{"cases of a pytest check", "goal: g\nmode: generate\nartifact: a.py\nchecks:\n- exec:\n    command: [pytest]\n    format: pytest\n    cases: [{stdout: x}]\n",
			[]want{{8, "exec.cases and exec.checker belong to format io"}}},
		{"isolation unknown", "goal: g\nmode: generate\nartifact: a.py\nchecks:\n- exec: {command: [pytest], format: pytest,\n    isolation: sideways}\n",
			[]want{{6, `exec.isolation must be judge or in-process, got "sideways"`}}},
		{"judge in agent mode", "goal: g\nchecks:\n- exec: {command: [pytest], format: pytest,\n    isolation: judge}\ntools: [bogus]\n",
			[]want{{4, "exec.isolation: judge isolation needs the candidate as one module"}, {5, `unknown tool "bogus"`}}},
		{"judge of an exit check", "goal: g\nmode: generate\nartifact: a.py\nchecks:\n- exec: {command: [python3, a.py], isolation: judge}\n",
			[]want{{5, "exec.isolation: judge isolation serves pytest, go and io checks, not format exit"}}},
		{"exec env from ratchet's environment", "goal: g\nmode: generate\nartifact: a.go\nchecks:\n- exec:\n    command: [go, test, \"${HOME}/x\", \"${WORKSPACE}/y\"]\n    env:\n      GOFLAGS: -mod=vendor\n      TOKEN: ${GITHUB_TOKEN}\n      1X: y\n",
			[]want{{6, "exec.command: ${HOME}: an exec check may name only ${WORKSPACE}"}, {9, "exec.env.TOKEN: ${GITHUB_TOKEN}: an exec check may name only ${WORKSPACE}"}, {10, `exec.env: "1X" is not a variable name`}}},
		{"unknown reasoning effort", ok + "reasoning:\n  effort: extreme\n", []want{{4, `reasoning.effort must be one of low, medium, high, max, got "extreme"`}}},
		{"reasoning budget too small", ok + "reasoning:\n  effort: low\n  budget_tokens: 500\n", []want{{5, "reasoning.budget_tokens must be at least 1024, got 500"}}},
		{"reasoning budget not a number", ok + "reasoning: {budget_tokens: lots}\n", []want{{3, `reasoning.budget_tokens must be a whole number, got "lots"`}}},
		{"empty reasoning", ok + "reasoning: {}\n", []want{{3, "reasoning needs effort: or budget_tokens:"}}},
		{"reasoning not a mapping", ok + "reasoning: high\n", []want{{3, "reasoning must be a mapping"}}},
		{"unknown reasoning field", ok + "reasoning: {effort: low, budget: 3}\n", []want{{3, `unknown field "budget" in reasoning`}}},
		{"subagent steps inside the reserve", ok + "tools: [read_file]\nsubagents: {budget: {steps: 1}, checks: [{equals: b}]}\n", []want{{4, "subagents.budget.steps: limit 1 leaves nothing beyond the closing reserve"}}},
		{"progress window too small", ok + "progress: {window: 1}\n", []want{{3, "progress.window must be at least 2, got 1"}}},
		{"progress patience zero", ok + "progress: {patience: 0}\n", []want{{3, "progress.patience must be at least 1, got 0"}}},
		{"progress max_waits zero", ok + "progress: {max_waits: 0}\n", []want{{3, "progress.max_waits must be at least 1, got 0"}}},
		{"a wait that is no tool", ok + "mode: agent\ntools: [read_file]\nprogress:\n  waits:\n    - read_file\n    - job_status\n", []want{{8, `progress.waits: "job_status" is not one of the task's tools (read_file) and there is no MCP server`}}},
		{"a wait on a tool not listed", ok + "mode: agent\ntools: [read_file]\nprogress: {waits: [run_command]}\n", []want{{5, "progress.waits: run_command is not among the task's tools (add it to tools:)"}}},
		{"unknown context field", ok + "context: {compact: 5}\n", []want{{3, `unknown field "compact" in context`}}},
		{"compact_at too small", ok + "context: {compact_at: 10}\n", []want{{3, "context.compact_at must be at least 1000, got 10"}}},
		{"keep_turns zero", ok + "context: {keep_turns: 0}\n", []want{{3, "context.keep_turns must be at least 1, got 0"}}},
		{"plan not a bool", ok + "plan: maybe\n", []want{{3, "plan must be true or false"}}},
		{"plan in generate mode", ok + "mode: generate\nplan: true\n", []want{{1, "plan and context.scratchpad need tools"}}},
		{"tool_output for an unknown tool", ok + "tool_output: {shell: {max_lines: 9}}\n", []want{{3, `unknown field "shell" in tool_output`}}},
		{"tool_output cap too small", ok + "tool_output: {read_file: {max_lines: 1, max_bytes: 10}}\n", []want{{3, "tool_output.read_file.max_lines must be at least 4, got 1"}, {3, "tool_output.read_file.max_bytes must be at least 256, got 10"}}},
		{"bad regex", "goal: g\nchecks:\n  - regex: '('\n", []want{{3, "regex check: error parsing regexp: missing closing ): `(`"}}},
		{"check with two kinds", "goal: g\nchecks:\n  - equals: a\n    regex: b\n", []want{{4, "a check has one kind; this one has equals and regex (write two checks)"}}},
		{"check with no kind", "goal: g\nchecks:\n  - equals: a\n  - tier: expensive\n", []want{{4, "check has no kind; use one of equals, regex, contains, syntax, json_schema, length, grounding, grader, vote, exec"}}},
		{"misspelt kind with a tier", "goal: g\nchecks: [{equal: a, tier: expensive}]\n", []want{{2, `unknown field "equal" in check`}}},
		{"no kind and a bad tier", "goal: g\nchecks:\n  - tier: medium\n", []want{{3, `tier must be cheap, expensive or holdout, got "medium"`}, {3, "check has no kind"}}},
		{"empty check", "goal: g\nchecks: [{}]\n", []want{{2, "check has no kind"}}},
		{"check not a mapping", "goal: g\nchecks: [equals]\n", []want{{2, "check must be a mapping"}}},
		{"unknown model", "goal: g\nmodel: bogus:x\nchecks: [{equals: a}]\nbudget: {stpes: 2}\n", []want{{2, `model: unknown model "bogus:x"`}, {4, `unknown field "stpes" in budget; did you mean "steps"?`}}},
		{"unknown check field", "goal: g\nchecks: [{equal: a}]\n", []want{{2, `unknown field "equal" in check; did you mean "equals"? (known: equals, regex, contains, syntax, json_schema, length, grounding, grader, vote, exec, tier)`}}},
		{"tier not cheap or expensive", "goal: g\nchecks:\n  - equals: a\n    tier: medium\n", []want{{4, `tier must be cheap, expensive or holdout, got "medium"`}}},
		{"tier not a string", "goal: g\nchecks: [{equals: a, tier: [cheap]}]\n", []want{{2, "tier must be a string"}}},
		{"empty contains list", "goal: g\nchecks: [{contains: []}]\n", []want{{2, "contains needs at least one string"}}},
		{"empty contains string", "goal: g\nchecks: [{contains: [a, '']}]\n", []want{{2, "contains needs at least one string"}}},
		{"missing goal", "checks: [{equals: a}]\n", []want{{1, "goal is missing or empty: say what the run must achieve"}}},
		{"blank goal", "goal: '   '\nchecks: [{equals: a}]\n", []want{{1, "goal is missing or empty"}}},
		{"null goal", "checks: [{equals: a}]\ngoal:\n", []want{{2, "goal is missing or empty"}}},
		{"goal not a string", "goal: [a]\nchecks: [{equals: a}]\n", []want{{1, "goal must be a string"}}},
		{"missing checks", "goal: g\n", []want{{1, "checks are missing: ratchet never accepts an unchecked answer"}}},
		{"empty checks", "goal: g\nchecks: []\n", []want{{2, "checks must be a non-empty list"}}},
		{"null checks", "goal: g\nchecks:\n", []want{{2, "checks must be a non-empty list"}}},
		{"duplicate top-level key", "goal: g\nchecks: [{equals: a}]\ngoal: h\n", []want{{3, "task.goal is given twice"}}},
		{"duplicate budget key", ok + "budget:\n  steps: 3\n  steps: 4\n", []want{{5, "budget.steps is given twice"}}},
		{"duplicate check key", "goal: g\nchecks:\n  - equals: a\n    equals: b\n", []want{{4, "check.equals is given twice"}}},
		{"unknown tool", ok + "tools: [read_file, shell]\n", []want{{3, `unknown tool "shell" (known: list_files, read_file, write_file, edit_file, append_file, grep, glob, run_command)`}}},
		{"tool listed twice", ok + "tools:\n  - read_file\n  - read_file\n", []want{{5, "tool read_file is listed twice"}}},
		{"tool not a string", ok + "tools: [[read_file]]\n", []want{{3, "tools item must be a string"}}},
		{"escalate not a bool", ok + "escalate: sometimes\n", []want{{3, "escalate must be true or false"}}},
		{"model not a string", ok + "model: {scripted: x}\n", []want{{3, "model must be a string"}}},
		{"task not a mapping", "- goal: g\n", []want{{1, "a task file must be a mapping"}}},
		{"task a scalar", "hello\n", []want{{1, "a task file must be a mapping"}}},
		{"empty file", "", []want{{1, "file is empty; a task needs at least a goal and a check"}}},
		{"only comments", "# nothing yet\n", []want{{1, "file is empty"}}},
		{"only a document marker", "---\n", []want{{1, "file is empty"}}},
		{"null document", "~\n", []want{{1, "file is empty"}}},
		{"workspace missing", ok + "workspace: nope\n", []want{{3, "nope\" is not a directory"}}},
		{"workspace is a file", ok + "workspace: task.yaml\n", []want{{3, "task.yaml\" is not a directory"}}},
		// YAML syntax errors: yaml.v3 numbers parser errors from 0 and leaves
		// out the line of an error on the first line; Parse corrects both.
		{"yaml unclosed flow sequence", "goal: g\nchecks: [{equals: a}\n", []want{{2, "did not find expected ',' or ']'"}}},
		{"yaml unclosed flow sequence later", "goal: g\ninstructions: i\nmodel: m\nchecks: [{equals: a}\nbudget: {}\n", []want{{4, "did not find expected ',' or ']'"}}},
		{"yaml bad indentation", "goal: g\ninstructions: i\nmodel: m\nchecks:\n  - equals: a\n bad: [\n", []want{{6, "did not find expected key"}}},
		{"yaml mapping value", "goal: g\ninstructions: i\nfoo: : bar\n", []want{{3, "mapping values are not allowed in this context"}}},
		{"yaml error on the first line", "goal: : g\n", []want{{1, "mapping values are not allowed in this context"}}},
		{"yaml tab", "goal: g\n\tchecks: []\n", []want{{2, "found a tab character that violates indentation"}}},
		{"yaml unterminated string", "goal: g\nchecks:\n  - equals: \"a\n", []want{{3, "found unexpected end of stream"}}},
		{"yaml error at the end of the file", "goal: g\nchecks: [{equals: a}\n", []want{{2, "did not find expected ',' or ']'"}}},
		{"yaml error at the end of a file with no newline", "goal: g\nchecks: {", []want{{2, "did not find expected node content"}}},
		{"yaml undefined tag handle", "goal: g\nchecks: !x!y g\n", []want{{2, "found undefined tag handle"}}},
		{"yaml duplicate directive", "%YAML 1.1\n%YAML 1.1\n---\ngoal: g\n", []want{{2, "found duplicate %YAML directive"}}},
		{"yaml incompatible version", "%YAML 2.0\n---\ngoal: g\n", []want{{1, "found incompatible YAML document"}}},
		{"yaml incompatible version on line 2", "# a comment\n%YAML 2.0\n---\ngoal: g\n", []want{{2, "found incompatible YAML document"}}},
		{"yaml error at the end of a file with \\r line breaks", "goal: g\rchecks: {", []want{{2, "did not find expected node content"}}},
		{"yaml unknown anchor", "goal: *g\nchecks: [{equals: a}]\n", []want{{0, "unknown anchor 'g' referenced"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTask(t, dir, "task.yaml", tc.data)
			_, err := taskfile.Load(path)
			ps := problems(t, err)
			if len(ps) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(tc.want), err)
			}
			for i, w := range tc.want {
				p := ps[i]
				if p.File != path || p.Line != w.line || !strings.Contains(p.Msg, w.msg) {
					t.Errorf("problem %d = %q, want %s:%d: …%s…", i, p.Error(), path, w.line, w.msg)
				}
			}
		})
	}
}

// TestParseProblemsAllAtOnce checks that a file with many mistakes reports
// every one of them, once each, in line order, with exact messages.
func TestParseProblemsAllAtOnce(t *testing.T) {
	data := `goal: ""
colour: blue
budget:
  steps: -5
  time: 2 minutes
  widgets: 3
  cost: 0.25
  cost: 0.5
checks:
  - regex: '('
  - equals: a
    regex: b
  - tier: cheap
  - equals: x
    tier: medium
tools: [read_file, shell]
progress: {window: 1}
`
	_, err := taskfile.Parse([]byte(data), "dir/bad.yaml")
	want := `dir/bad.yaml:1: goal is missing or empty: say what the run must achieve
dir/bad.yaml:2: unknown field "colour" in task (known: mode, goal, instructions, model, workspace, tools, copy_workspace, artifact, checks, permissions, budget, progress, effort, escalate, mcp, context, plan, tool_output, subagents, reference, min_strength, allow_self_review, provider_limits, output_schema, reasoning)
dir/bad.yaml:4: budget.steps must be positive, or -1 / unlimited, got -5
dir/bad.yaml:5: budget.time must be a positive duration such as 90s or 5m, or -1 / unlimited, got "2 minutes"
dir/bad.yaml:6: unknown field "widgets" in budget (known: steps, model_calls, tool_calls, input_tokens, output_tokens, total_tokens, cost, time)
dir/bad.yaml:8: budget.cost is given twice
dir/bad.yaml:10: regex check: error parsing regexp: missing closing ): ` + "`(`" + `
dir/bad.yaml:12: a check has one kind; this one has equals and regex (write two checks)
dir/bad.yaml:13: check has no kind; use one of equals, regex, contains, syntax, json_schema, length, grounding, grader, vote, exec
dir/bad.yaml:15: tier must be cheap, expensive or holdout, got "medium"
dir/bad.yaml:16: unknown tool "shell" (known: list_files, read_file, write_file, edit_file, append_file, grep, glob, run_command)
dir/bad.yaml:17: progress.window must be at least 2, got 1`
	const mistakes = 12
	ps := problems(t, err)
	if len(ps) != mistakes {
		t.Errorf("got %d problems for %d mistakes", len(ps), mistakes)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestProblemError(t *testing.T) {
	for _, tc := range []struct {
		p    taskfile.Problem
		want string
	}{
		{taskfile.Problem{File: "t.yaml", Line: 3, Msg: "bad"}, "t.yaml:3: bad"},
		{taskfile.Problem{File: "t.yaml", Msg: "bad"}, "t.yaml: bad"},
	} {
		if got := tc.p.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := taskfile.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: err = %v, want os.ErrNotExist", err)
	}
}

func TestVerifiers(t *testing.T) {
	f, err := taskfile.Parse([]byte(`goal: g
checks:
  - regex: '^TOTAL: \d+\.\d{2}$'
  - equals: "TOTAL: 142.50"
    tier: expensive
  - contains: [TOTAL, "."]
  - contains: "142"
    tier: expensive
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tiers, err := f.Verifiers(taskfile.Env{})
	if err != nil {
		t.Fatal(err)
	}
	names := func(vs []verify.Verifier) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Name())
		}
		return out
	}
	if diff := cmp.Diff([]string{"regex", "contains"}, names(tiers.Cheap)); diff != "" {
		t.Errorf("cheap tier (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"equals", "contains"}, names(tiers.Expensive)); diff != "" {
		t.Errorf("expensive tier (-want +got):\n%s", diff)
	}

	// Each verifier checks what its line says: judge a few answers by all of
	// them, in order cheap then expensive.
	verdicts := func(answer string) []bool {
		var out []bool
		for _, v := range tiers.All() {
			vd, err := v.Check(context.Background(), verify.Candidate{Answer: answer})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, vd.OK)
		}
		return out
	}
	for _, tc := range []struct {
		answer string
		want   []bool // regex, contains [TOTAL .], equals, contains 142
	}{
		{"TOTAL: 142.50", []bool{true, true, true, true}},
		{"TOTAL: 142.5", []bool{false, true, false, true}},
		{"TOTAL: 100.00", []bool{true, true, false, false}},
		{"total 142", []bool{false, false, false, true}},
		{"TOTAL: 142", []bool{false, false, false, true}}, // no "."
	} {
		if diff := cmp.Diff(tc.want, verdicts(tc.answer)); diff != "" {
			t.Errorf("verdicts for %q (-want +got):\n%s", tc.answer, diff)
		}
	}
}

func TestVerifiersErrors(t *testing.T) {
	for _, tc := range []struct {
		check taskfile.Check
		want  string
	}{
		{taskfile.Check{Kind: "regex", Args: []string{"("}, Line: 7}, "t.yaml:7: regex check: error parsing regexp: missing closing ): `(`"},
		{taskfile.Check{Kind: "shell", Args: []string{"true"}, Line: 9}, `t.yaml:9: unknown check kind "shell"`},
	} {
		f := &taskfile.File{Path: "t.yaml", Checks: []taskfile.Check{{Kind: "equals", Args: []string{"a"}, Line: 3}, tc.check}}
		_, err := f.Verifiers(taskfile.Env{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Verifiers() error = %v, want %q", err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"goal: g\nchecks: [{equals: a}]\n",
		"goal: |\n  multi\n  line\nchecks:\n  - regex: '^a$'\n  - contains: [a, b]\n    tier: expensive\n",
		"goal: g\nchecks: [{contains: x}]\nbudget: {steps: unlimited, model_calls: 5, cost: $0.25, time: 2m}\n",
		"goal: g\nchecks: [{equals: a}]\nbudget: {cost: .nan, time: -1}\nprogress: {window: 2, patience: 1}\n",
		"goal: g\nchecks: [{equals: a}]\ntools: [list_files, read_file]\nworkspace: .\nescalate: true\n",
		"goal: g\nchecks: [{equals: a, regex: b}, {tier: cheap}]\n",
		"goal: &a g\ninstructions: *a\nchecks: [{equals: *a}]\n",
		"goal: g\nchecks: [{equals: a}\n",
		"- a\n- b\n",
		"goal: g\ngoal: h\nchecks: [{regex: '('}]\n",
		"---\n---\n",
		"checks: [{equals: a}]\n",
		"goal: g\n",
		"goal: g\nchecks: [{regex: '('}]\n",
		"goal: g\nchecks: {",
		"goal: g\nchecks: [{equals: a}]\nmcp:\n  - {name: fs, command: [npx, '${WORKSPACE}'], env: {A: '${B}'}, tools: [t], prefix: p_, timeout: 1s}\n  - {name: h, url: 'http://h/${X}', headers: {H: v}}\n",
		"goal: g\nchecks: [{equals: a}]\nmcp: [{name: a, command: ''}, {name: a, url: x, command: y}]\n",
		"goal: g\ntools: [read_file]\nchecks: [{equals: a}]\nsubagents: {tools: [read_file], task_checks: [equals], checks: [{length: {min: 1}}], budget: {steps: 4}, max_children: 2}\n",
		"goal: g\nchecks: [{equals: a}]\nsubagents:\n  tools:\n  checks: {}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := taskfile.Parse(data, "fuzz.yaml")
		if err != nil {
			var ps taskfile.Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error is %T %v, want non-empty Problems", err, err)
			}
			lines := 1
			for _, r := range string(data) { // every kind of YAML line break, \r\n counted twice
				if strings.ContainsRune("\n\r\u0085\u2028\u2029", r) {
					lines++
				}
			}
			for _, p := range ps {
				if p.File != "fuzz.yaml" || p.Line < 0 || p.Line > lines || p.Msg == "" {
					t.Errorf("problem %q: want file fuzz.yaml, a line in 0..%d and a message", p.Error(), lines)
				}
			}
			return
		}
		if tf.Goal == "" {
			t.Error("parsed with an empty goal")
		}
		if len(tf.Checks) == 0 {
			t.Error("parsed with no checks")
		}
		if tf.Workspace == "" {
			t.Error("parsed with no workspace")
		}
		if _, err := tf.Verifiers(taskfile.Env{}); err != nil {
			t.Errorf("parsed, but Verifiers fails: %v", err)
		}
		cfgs, err := tf.MCPConfigs(taskfile.Env{Getenv: func(string) string { return "v" }})
		if err != nil {
			t.Errorf("parsed, but MCPConfigs fails: %v", err)
		}
		for _, c := range cfgs {
			if err := c.Validate(); err != nil {
				t.Errorf("parsed, but MCP server %q is invalid: %v", c.Name, err)
			}
		}
	})
}

func TestParsePermissions(t *testing.T) {
	data := `goal: g
checks: [{equals: "1"}]
permissions:
  - {tool: remove_*, action: deny}
  - tool: write_file
    args: {path: "*.py"}
    action: ask
  - {action: allow}
`
	f, err := taskfile.Parse([]byte(data), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []loop.Permission{
		{Tool: "remove_*", Action: loop.Deny},
		{Tool: "write_file", Args: []loop.ArgPattern{{Name: "path", Pattern: "*.py"}}, Action: loop.Ask},
		{Action: loop.Allow},
	}
	if diff := cmp.Diff(want, f.Permissions); diff != "" {
		t.Errorf("permissions (-want +got):\n%s", diff)
	}

	bad := `goal: g
checks: [{equals: "1"}]
permissions:
  - {tool: x, action: maybe}
  - {tool: "[", action: deny}
  - {tool: y}
  - {tool: z, action: ask, args: [path]}
  - {tool: w, action: ask, colour: red}
`
	_, err = taskfile.Parse([]byte(bad), "p.yaml")
	wantErr := `p.yaml:4: permission: action "maybe" is not allow, ask or deny
p.yaml:5: permission: tool pattern "[": syntax error in pattern
p.yaml:6: a permission needs action: allow, ask or deny
p.yaml:7: args must map argument names to glob patterns, e.g. {path: "*.md"}
p.yaml:8: unknown field "colour" in permission (known: tool, args, action)`
	if err == nil {
		t.Fatal("no problems reported")
	}
	if diff := cmp.Diff(wantErr, err.Error()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestSelfJudgedGate: a task whose gate checks are all self-judged (a vote,
// a grader sharing the generator's provider) is refused unless it says
// allow_self_review; one independent check, or a holdout aside, changes
// nothing about that; a grader named independent counts as independent.
func TestSelfJudgedGate(t *testing.T) {
	grader := func(extra string) string {
		return "  - grader: {model: scripted:g.yaml, rubric: [{name: a, description: b}]" + extra + "}\n"
	}
	env := taskfile.Env{Generator: "scripted:turns.yaml", OpenModel: func(string, string) (model.Model, error) {
		return scripted.New(scripted.Script{}, scripted.Config{Quiet: true})
	}}
	for _, tc := range []struct {
		name, file string
		refused    bool
	}{
		{"a vote alone", "checks:\n  - vote: {}\n", true},
		{"a vote and a holdout", "checks:\n  - vote: {}\n  - equals: a\n    tier: holdout\n", true},
		{"a self-review grader", "checks:\n" + grader(", allow_self_review: true"), true},
		{"a vote and a self-review grader", "checks:\n  - vote: {}\n" + grader(", allow_self_review: true"), true},
		{"allowed", "allow_self_review: true\nchecks:\n  - vote: {}\n", false},
		{"a vote and an equals", "checks:\n  - vote: {}\n  - equals: a\n", false},
		{"a grader named independent", "checks:\n" + grader(", independent: true"), false},
	} {
		f, err := taskfile.Parse([]byte("goal: g\n"+tc.file), "t.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err = f.Verifiers(env)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), "t.yaml:3: every gate check is self-judged") || !strings.Contains(err.Error(), "allow_self_review: true")):
			t.Errorf("%s: error %v, want the self-judged gate refused at line 3", tc.name, err)
		case !tc.refused && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// The problems of model: lists and provider_limits: come back together,
// each at its line.
func TestModelChainAndProviderLimitsProblems(t *testing.T) {
	data := `goal: g
checks: [{equals: a}]
model: [anthropic:claude-sonnet-4-5, mistral:large, anthropic:claude-sonnet-4-5]
provider_limits:
  anthropic: {requests_per_minute: 0, tokens: 5}
  bedrock: {max_in_flight: 2}
  openai: 3
`
	_, err := taskfile.Parse([]byte(data), "dir/bad.yaml")
	want := `dir/bad.yaml:3: model: unknown model "mistral:large"; options: ` + provider.Options + `
dir/bad.yaml:5: provider_limits.anthropic.requests_per_minute must be at least 1, got 0
dir/bad.yaml:5: unknown field "tokens" in provider_limits.anthropic (known: requests_per_minute, tokens_per_minute, max_in_flight)
dir/bad.yaml:6: provider_limits: unknown provider "bedrock" for limits: use anthropic, openai, gemini or openai-compatible:BASE_URL
dir/bad.yaml:7: provider_limits.openai must be a mapping`
	if err == nil {
		t.Fatal("no problems")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	_, err = taskfile.Parse([]byte("goal: g\nchecks: [{equals: a}]\nmodel: [anthropic:claude-sonnet-4-5, anthropic:claude-sonnet-4-5]\n"), "dup.yaml")
	if err == nil || !strings.Contains(err.Error(), "dup.yaml:3: model: a model is listed twice") {
		t.Errorf("a repeated model: %v", err)
	}
	f, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: a}]\nmodel: [anthropic:claude-sonnet-4-5, openai:gpt-4.1]\n"), "ok.yaml")
	if err != nil || f.Model != "anthropic:claude-sonnet-4-5,openai:gpt-4.1" {
		t.Errorf("model %q, err %v", f.Model, err)
	}
}

// TestParseOutputSchema: output_schema is a schema inline or in a file;
// one that is not an object, or does not resolve, is a problem at its line.
func TestParseOutputSchema(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "order.json"), []byte(`{"type":"object","required":["items"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"output_schema: {type: object, properties: {n: {type: integer, minimum: 0}}}", `{"properties":{"n":{"minimum":0,"type":"integer"}},"type":"object"}`},
		{"output_schema: order.json", `{"required":["items"],"type":"object"}`},
	} {
		f, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: '42'}]\n"+tt.yaml+"\n"), filepath.Join(dir, "task.yaml"))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if string(f.OutputSchema) != tt.want {
			t.Errorf("%s: schema %s, want %s", tt.yaml, f.OutputSchema, tt.want)
		}
	}
	// The schema's check is a gate: no other check is needed.
	if _, err := taskfile.Parse([]byte("goal: g\noutput_schema: {type: integer}\n"), filepath.Join(dir, "task.yaml")); err != nil {
		t.Errorf("output_schema without checks: %v", err)
	}
	_, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: '42'}]\noutput_schema: [1]\n"), "dir/a.yaml")
	if ps := problems(t, err); len(ps) != 1 || !strings.Contains(err.Error(), "dir/a.yaml:3: output_schema: must be a JSON Schema object") {
		t.Errorf("a list: %v", err)
	}
	_, err = taskfile.Parse([]byte("goal: g\nchecks: [{equals: '42'}]\noutput_schema: {$ref: 'http://example.com/s.json'}\n"), "dir/a.yaml")
	if ps := problems(t, err); len(ps) != 1 || !strings.Contains(err.Error(), "dir/a.yaml:3: output_schema check: the schema does not resolve") {
		t.Errorf("a remote ref: %v", err)
	}
}

// TestHoldoutTestsOutsideWorkspace: in agent mode a holdout test inside
// the workspace (where the agent's tools would show it) is a problem at
// its line, also when a link leads there; outside it, or in generate
// mode, it is fine.
func TestHoldoutTestsOutsideWorkspace(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"ws/sub", "hold"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"hold/h_test.go", "hold/h2_test.go", "h2_test.go", "ws/sub/h_test.go"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("package h\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "ws", "sub"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	const testsLine = 7 // without head
	task := func(head, tests string) string {
		return "goal: g\n" + head + "checks:\n  - equals: a\n  - exec:\n      command: [go, test, -json, ./...]\n      format: go\n      tests: [" + tests + "]\n    tier: holdout\n"
	}
	for _, tc := range []struct {
		name, data string
		problem    bool
	}{
		{"in the default workspace, the task's directory", task("", "h2_test.go"), true},
		{"in the workspace", task("workspace: ws\n", "hold/h_test.go, ws/sub/h_test.go"), true},
		{"the workspace itself", task("workspace: ws\n", "hold/h_test.go, ws"), true},
		{"through a link into the workspace", task("workspace: ws\n", "hold/h_test.go, link"), true},
		{"outside the workspace", task("workspace: ws\n", "hold/h_test.go, hold/h2_test.go"), false},
		{"generate mode has no tools", task("mode: generate\nartifact: a.go\n", "hold/h_test.go, h2_test.go"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := taskfile.Parse([]byte(tc.data), filepath.Join(dir, "task.yaml"))
			if !tc.problem {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			line := testsLine + strings.Count(tc.data, "\n") - strings.Count(task("", ""), "\n")
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Line != line || !strings.Contains(ps[0].Msg, "holdout test") || !strings.Contains(ps[0].Msg, "inside the agent's workspace") {
				t.Errorf("problems %v, want one at line %d about the holdout test inside the workspace", err, line)
			}
		})
	}
}

// TestLoadSizeCap: a task file past MaxFileBytes is refused with a problem
// that says why, before it is parsed; one at the cap is read.
func TestLoadSizeCap(t *testing.T) {
	dir := t.TempDir()
	head := "goal: g\nchecks: [{equals: a}]\ninstructions: "
	at := filepath.Join(dir, "at.yaml")
	os.WriteFile(at, []byte(head+strings.Repeat("x", taskfile.MaxFileBytes-len(head)-1)+"\n"), 0o644)
	if _, err := taskfile.Load(at); err != nil {
		t.Errorf("a file at the cap: %v", err)
	}
	over := filepath.Join(dir, "over.yaml")
	os.WriteFile(over, []byte(head+strings.Repeat("x", taskfile.MaxFileBytes)+"\n"), 0o644)
	_, err := taskfile.Load(over)
	if err == nil || !strings.Contains(err.Error(), "over.yaml: the task file is larger than 1024 KiB") {
		t.Errorf("a file over the cap: %v", err)
	}
}

// TestExecTestsWithoutAPlace: a test outside the task file's directory
// (and, in agent mode, the workspace) has no place in the sandbox: a
// problem at its line, with the others of the file, not an error of the
// first run. Exec env: is kept for the check.
func TestExecTestsWithoutAPlace(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"task", "ws", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"task/a_test.go", "ws/w_test.go", "elsewhere/e_test.go"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("package a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task := func(head, tests string) string {
		return "goal: g\n" + head + "checks:\n  - exec:\n      command: [go, test, -json, ./...]\n      format: go\n      env: {GOFLAGS: -mod=vendor}\n      tests: [" + tests + "]\n"
	}
	for _, tc := range []struct {
		name, data string
		line       int // of the problem; 0: none
	}{
		{"beside the task file", task("mode: generate\nartifact: a.go\n", "a_test.go"), 0},
		{"outside it, generate mode", task("mode: generate\nartifact: a.go\n", "a_test.go, ../elsewhere/e_test.go"), 9},
		{"in the workspace, agent mode", task("workspace: ../ws\n", "a_test.go, ../ws/w_test.go"), 0},
		{"outside both, agent mode", task("workspace: ../ws\n", "../elsewhere/e_test.go"), 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := taskfile.Parse([]byte(tc.data), filepath.Join(dir, "task", "task.yaml"))
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got := f.Checks[0].Exec.Env; !maps.Equal(got, map[string]string{"GOFLAGS": "-mod=vendor"}) {
					t.Errorf("exec env %v", got)
				}
				return
			}
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Line != tc.line || !strings.Contains(ps[0].Msg, "e_test.go is outside the task file's directory: tests are mounted in the sandbox at their path relative to") {
				t.Errorf("problems %v, want one at line %d about the test outside the task's directory", err, tc.line)
			}
		})
	}
}
