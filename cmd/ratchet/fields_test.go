package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
)

// The test binary doubles as a stdio MCP server when this variable is set,
// so that the mcp: section is tested without node.
const selfMCPEnv = "RATCHET_CMD_TEST_MCP"

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(selfMCPEnv) == "1":
		serveSelfMCP()
		return
	case os.Getenv(envServerVar) == "1": // secrets_test.go
		serveEnvPrinter()
		return
	case os.Getenv(fleetChild) != "": // fleet_test.go
		os.Exit(fleetProcess(os.Getenv(fleetChild)))
	}
	os.Exit(m.Run())
}

// serveSelfMCP offers cwd (the directory the server runs in: the run's
// workspace) and echo (a long text, to be capped by tool_output:).
func serveSelfMCP() {
	s := sdk.NewServer(&sdk.Implementation{Name: "self", Version: "v0"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	s.AddTool(&sdk.Tool{Name: "cwd", Description: "Says where the server runs.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			dir, err := os.Getwd()
			return text("CWD=" + dir), err
		})
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Returns a long text.", InputSchema: empty},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("ECHO" + strings.Repeat("e", 20000)), nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "self MCP server:", err)
		os.Exit(1)
	}
}

// observed is what one path (run, resume, eval) shows of a run: the spec
// it recorded, the tool outputs of the part of the run that path carried
// out, and how it ended.
type observed struct {
	path    string
	spec    loop.Spec
	outputs []string
	result  loop.Result
	// workspace is the directory the task file names; copies, where the
	// run worked (the MCP server's directory), each time it was asked.
	workspace string
	copies    []string
}

func (o *observed) output(substr string) string {
	for _, out := range o.outputs {
		if strings.Contains(out, substr) {
			return out
		}
	}
	return ""
}

// fieldCheck asserts that one task-file field reached a run. fixture names
// the task file that sets the field: agent or generate.
type fieldCheck struct {
	fixture string
	check   func(t *testing.T, o *observed)
}

// specIs returns a check that the recorded spec's value got(spec) is want.
func specIs[T any](fixture string, got func(loop.Spec) T, want T) fieldCheck {
	return fieldCheck{fixture, func(t *testing.T, o *observed) {
		t.Helper()
		if diff := cmp.Diff(want, got(o.spec)); diff != "" {
			t.Errorf("spec (-want +got):\n%s", diff)
		}
	}}
}

// notRun marks a field that describes the file rather than the run.
var notRun = fieldCheck{}

// fieldChecks says, for every field of taskfile.File (and of its Context,
// Effort and Subagents sections), how it shows in a run. A field missing
// here fails TestEveryTaskFieldReachesEachPath.
var fieldChecks = map[string]fieldCheck{
	"Path":      notRun, // names the file in problems
	"ModelLine": notRun, // places the model's problems
	// A gate before the run starts, not part of it: TestRunRefusesWeakChecks
	// and TestEvalReportShowsCheckStrength follow them.
	"MinStrength": notRun,
	"Reference":   notRun,
	// A gate at config time too (TestSelfJudgedGate), and the Result's
	// self_judged (TestSelfJudgedResult).
	"AllowSelfReview": notRun,
	// The limits every run of the process shares on a provider, not one
	// run's: TestProviderLimitsReachTheCalls measures, at a local server,
	// that they reach the calls of ratchet run and ratchet eval run.
	"Limits": notRun,
	"Dir": {"agent", func(t *testing.T, o *observed) {
		// The scripted model's file, the workspace and the MCP server's
		// command resolve against it: the run played its turns.
		if o.result.Status != loop.Done {
			t.Errorf("status %s: %s", o.result.Status, o.result.Reason)
		}
	}},
	"Goal": specIs("agent", func(s loop.Spec) string { return s.Goal }, "Reach every field, then finish with 42."),
	// TestBuildReasoningReachesEveryCall (taskfile) follows it into every
	// model request.
	"Reasoning": specIs("agent", func(s loop.Spec) *model.Reasoning { return s.Policy.Reasoning }, &model.Reasoning{Effort: model.EffortHigh, BudgetTokens: 2048}),
	"OutputSchema": {"generate", func(t *testing.T, o *observed) {
		// The schema reaches the spec, and its check ran on the answers.
		if string(o.spec.OutputSchema) != `{"type":"integer"}` || o.spec.Checks[0] != (loop.Check{Name: loop.OutputCheck, Tier: verify.Cheap}) {
			t.Errorf("output schema %s, checks %+v", o.spec.OutputSchema, o.spec.Checks)
		}
		if b := o.result.Best; b == nil || len(b.Verdicts) == 0 || b.Verdicts[0].Check != loop.OutputCheck || !b.Verdicts[0].OK {
			t.Errorf("the output_schema check did not pass the answer: %+v", b)
		}
	}},
	"Instructions": specIs("agent", func(s loop.Spec) string { return s.Instructions }, "Be brief."),
	"Model": {"agent", func(t *testing.T, o *observed) {
		if o.result.Best == nil || o.result.Best.Answer != "42" {
			t.Errorf("the scripted model's answer did not arrive: %+v", o.result.Best)
		}
	}},
	"Workspace": {"agent", func(t *testing.T, o *observed) {
		if out := o.output("marker.txt"); out == "" {
			t.Errorf("list_files did not list the workspace's marker.txt; %d outputs", len(o.outputs))
		}
	}},
	"Tools": {"agent", func(t *testing.T, o *observed) {
		for _, want := range []string{"list_files", "read_file", "write_file"} {
			if !slices.ContainsFunc(o.spec.Tools, func(s model.ToolSpec) bool { return s.Name == want }) {
				t.Errorf("spec lacks tool %s", want)
			}
		}
	}},
	"Checks": {"agent", func(t *testing.T, o *observed) {
		want := []loop.Check{{Name: "equals", Tier: verify.Cheap}, {Name: "contains", Tier: verify.Expensive}}
		if diff := cmp.Diff(want, o.spec.Checks); diff != "" {
			t.Errorf("spec checks (-want +got):\n%s", diff)
		}
		if b := o.result.Best; b == nil || len(b.Verdicts) != 2 || !b.Accepted {
			t.Errorf("the checks did not judge the answer: %+v", b)
		}
	}},
	"Budget": specIs("agent", func(s loop.Spec) budget.Limits { return s.Budget }, budget.Limits{
		Steps: 12, ModelCalls: 30, ToolCalls: 20, InputTokens: 900_000, OutputTokens: 90_000, TotalTokens: 990_000,
		Cost: budget.USD(0.5), Time: 5 * time.Minute,
	}),
	"Progress": specIs("agent", func(s loop.Spec) progress.Config { return s.Policy.Progress }, progress.Config{Window: 4, Patience: 5}),
	"Escalate": specIs("agent", func(s loop.Spec) bool { return s.Policy.Escalate }, true),
	"Mode":     specIs("generate", func(s loop.Spec) loop.Mode { return s.Mode }, loop.ModeGenerate),
	"Artifact": {"generate", func(t *testing.T, o *observed) {
		// The exec check reads the candidate from the artifact's file.
		if b := o.result.Best; o.result.Status != loop.Done || b == nil || !b.Accepted {
			t.Errorf("the exec check did not pass the answer written to answer.txt: %s %s", o.result.Status, o.result.Reason)
		}
	}},
	"Effort":                     notRun, // its fields are checked one by one
	"Effort.ConfidenceThreshold": specIs("agent", func(s loop.Spec) float64 { return s.Policy.ConfidenceThreshold }, 0.6),
	"Effort.Samples":             specIs("agent", func(s loop.Spec) int { return s.Policy.Samples }, -1),
	"Effort.HighStakes":          specIs("agent", func(s loop.Spec) bool { return s.Policy.HighStakes }, true),
	"CopyWorkspace": {"agent", func(t *testing.T, o *observed) {
		// One copy, kept for the whole run (a resumed run goes on in it).
		if len(o.copies) != 2 || o.copies[0] != o.copies[1] || o.copies[0] == o.workspace {
			t.Errorf("the run worked in %q, not in one copy of %s", o.copies, o.workspace)
		}
		if _, err := os.Stat(filepath.Join(o.workspace, "out.txt")); !os.IsNotExist(err) {
			t.Errorf("the original workspace was written to: %v", err)
		}
	}},
	"Permissions": specIs("agent", func(s loop.Spec) []loop.Permission { return s.Permissions },
		[]loop.Permission{{Tool: "write_file", Action: loop.Ask}}),
	"MCP": {"agent", func(t *testing.T, o *observed) {
		if o.output("CWD=") == "" || o.output("ECHO") == "" {
			t.Errorf("the MCP server's tools did not run; %d outputs", len(o.outputs))
		}
	}},
	"Context":               notRun,
	"Context.CompactAt":     specIs("agent", func(s loop.Spec) int64 { return s.Policy.CompactAt }, 500_000),
	"Context.KeepTurns":     specIs("agent", func(s loop.Spec) int { return s.Policy.KeepTurns }, 3),
	"Context.SummaryTokens": specIs("agent", func(s loop.Spec) int { return s.Policy.SummaryTokens }, 256),
	"Context.Scratchpad":    specIs("agent", func(s loop.Spec) bool { return s.Policy.Scratchpad }, true),
	"Plan":                  specIs("agent", func(s loop.Spec) bool { return s.Policy.Plan }, true),
	"ToolOutput": {"agent", func(t *testing.T, o *observed) {
		// read_file is capped at 4 lines, every other tool at 2000 bytes
		// (without tool_output: 200 lines and 16384 bytes).
		if out := o.output("line 01"); out == "" || strings.Contains(out, "line 30") {
			t.Errorf("read_file's output is not capped to its head and tail: %.300q", out)
		}
		if out := o.output("ECHO"); out == "" || len(out) > 2500 {
			t.Errorf("echo's output (%d bytes) is not capped near the default 2000 bytes", len(out))
		}
	}},
	"Subagents": {"agent", func(t *testing.T, o *observed) {
		if o.spec.Policy.Subagents == nil {
			t.Errorf("spec offers no sub-agents: %+v", o.spec.Policy.Subagents)
		}
	}},
	"Subagents.Tools": specIs("agent", func(s loop.Spec) []string { return subagents(s).Tools }, []string{"read_file"}),
	"Subagents.TaskChecks": {"agent", func(t *testing.T, o *observed) {
		if !slices.Contains(subagents(o.spec).Checks, loop.Check{Name: "equals", Tier: verify.Cheap}) {
			t.Errorf("sub-agents may not use the task's equals: %+v", subagents(o.spec).Checks)
		}
	}},
	"Subagents.Checks": {"agent", func(t *testing.T, o *observed) {
		if !slices.Contains(subagents(o.spec).Checks, loop.Check{Name: "length", Tier: verify.Cheap}) {
			t.Errorf("sub-agents lack their own length check: %+v", subagents(o.spec).Checks)
		}
	}},
	"Subagents.Budget":      specIs("agent", func(s loop.Spec) int { return subagents(s).Budget.Steps }, 3),
	"Subagents.MaxChildren": specIs("agent", func(s loop.Spec) int { return subagents(s).MaxChildren }, 2),
	"Subagents.Line":        notRun,
}

func subagents(s loop.Spec) loop.Subagents {
	if s.Policy.Subagents == nil {
		return loop.Subagents{}
	}
	return *s.Policy.Subagents
}

// taskFields lists the fields of taskfile.File and of its sections, as
// "Field" and "Section.Field".
func taskFields() []string {
	var names []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[taskfile.File]()) {
		names = append(names, f.Name)
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct && t.PkgPath() == reflect.TypeFor[taskfile.File]().PkgPath() {
			for _, sub := range reflect.VisibleFields(t) {
				names = append(names, f.Name+"."+sub.Name)
			}
		}
	}
	return names
}

const agentTask = `goal: Reach every field, then finish with 42.
instructions: Be brief.
mode: agent
model: scripted:turns.yaml
workspace: ws
copy_workspace: true
tools: [list_files, read_file, write_file]
checks:
  - equals: "42"
  - contains: "4"
    tier: expensive
permissions:
  - {tool: write_file, action: ask}
budget: {steps: 12, model_calls: 30, tool_calls: 20, input_tokens: 900000, output_tokens: 90000, total_tokens: 990000, cost: 0.5, time: 5m}
progress: {window: 4, patience: 5}
effort: {confidence_threshold: 0.6, samples: -1, high_stakes: true}
escalate: true
reasoning: {effort: high, budget_tokens: 2048}
mcp:
  - name: self
    command: [SELF]
    env: {RATCHET_CMD_TEST_MCP: "1"}
    prefix: self_
context: {compact_at: 500000, keep_turns: 3, summary_tokens: 256, scratchpad: true}
plan: true
tool_output:
  read_file: {max_lines: 4}
  default: {max_bytes: 2000}
subagents:
  tools: [read_file]
  task_checks: [equals]
  checks: [{length: {max: 100}}]
  budget: {steps: 3}
  max_children: 2
`

// agentTurns: a plan, the tools before the pause, a write needing
// approval (the run path stops there), the tools again after it (the
// resume path's part), the answer.
const agentTurns = `turns:
  - tools: [{name: submit_plan, args: {steps: [{do: everything, check: none}]}}]
  - tools:
      - {name: list_files, args: {}}
      - {name: read_file, args: {path: big.txt}}
      - {name: self_cwd, args: {}}
      - {name: self_echo, args: {}}
  - tools: [{name: write_file, args: {path: out.txt, content: "done\n"}}]
  - tools:
      - {name: list_files, args: {}}
      - {name: read_file, args: {path: big.txt}}
      - {name: self_cwd, args: {}}
      - {name: self_echo, args: {}}
  - finish: {answer: "42", confidence: 0.9}
`

const generateTask = `goal: Write 42.
mode: generate
model: scripted:gen.yaml
artifact: answer.txt
output_schema: {type: integer}
checks:
  - exec: {command: [sh, -c, "grep -qx 42 answer.txt"]}
    tier: expensive
`

// generateTurns: a wrong answer, then the right one after a pause long
// enough to interrupt the run there (the resume path's part).
const generateTurns = "turns:\n  - text: \"```\\n41\\n```\\nCONFIDENCE: 0.9\"\n  - DELAY\n    text: \"```\\n42\\n```\\nCONFIDENCE: 0.9\"\n"

// TestEveryTaskFieldReachesEachPath runs two task files that between them
// set every task-file field through each way a task file becomes a run:
// ratchet run, ratchet resume (approve, and resume after an interruption),
// and ratchet eval run. Each field's check then runs on what each path
// recorded. A field added to taskfile.File fails here until it has a
// check, and a field a path drops fails that path's check. (ratchet sim,
// and an eval suite's sim: cases, build their tasks from sim.Config and
// never read a task file, so they are no path here.)
func TestEveryTaskFieldReachesEachPath(t *testing.T) {
	for _, name := range taskFields() {
		if _, ok := fieldChecks[name]; !ok {
			t.Errorf("task-file field %s has no check in fieldChecks: say how it reaches a run", name)
		}
	}
	for name := range fieldChecks {
		if !slices.Contains(taskFields(), name) {
			t.Errorf("fieldChecks names %s, which is no field of taskfile.File", name)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var big strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&big, "line %02d\n", i)
	}
	dir := write(t, map[string]string{
		"agent.yaml":    strings.ReplaceAll(agentTask, "SELF", exe),
		"turns.yaml":    agentTurns,
		"generate.yaml": generateTask,
		"gen.yaml":      strings.ReplaceAll(generateTurns, "DELAY", "delay: 1h"),
		"suite.yaml":    "cases:\n  - task: agent.yaml\n  - task: generate.yaml\n",
	})
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"marker.txt": "m\n", "big.txt": big.String()} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": state, "RATCHET_EVAL_DIR": filepath.Join(state, "eval")}
	paths := map[string]*observed{} // "fixture/path" → what it showed

	// ratchet run stops at the approval; ratchet approve carries it on.
	c := run(t, env, "run", filepath.Join(dir, "agent.yaml"))
	c.wantCode(t, exitWaiting)
	m := regexp.MustCompile(`run (\S+) is waiting for a person`).FindStringSubmatch(c.stderr)
	if m == nil {
		t.Fatalf("the run did not wait for the approval:\n%v", c)
	}
	id := m[1]
	paused := storedLog(t, state, id)
	run(t, env, "approve", id).wantCode(t, exitDone)
	all := storedLog(t, state, id)
	paths["agent/run"] = observeRun(t, "run", all[:len(paused)], all)
	paths["agent/resume"] = observeRun(t, "resume", all[len(paused):], all)
	// Only the end, and the copy's place, are the whole run's.
	paths["agent/run"].result = paths["agent/resume"].result

	// ratchet run interrupted during the second answer; ratchet resume
	// carries it on once the turn no longer waits.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan cli)
	go func() {
		done <- runCtx(ctx, env, "run", "--unsafe-sandbox", filepath.Join(dir, "generate.yaml"))
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if judged(t, state, "Write 42.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the generate run never judged its first answer")
		}
	}
	cancel()
	c = <-done
	m = regexp.MustCompile(`run: (\S+) \(ratchet show`).FindStringSubmatch(c.stderr)
	if m == nil {
		t.Fatalf("no run ID:\n%v", c)
	}
	id = m[1]
	paused = storedLog(t, state, id)
	if err := os.WriteFile(filepath.Join(dir, "gen.yaml"), []byte(strings.ReplaceAll(generateTurns, "DELAY", "delay: 1ms")), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, env, "resume", id).wantCode(t, exitDone)
	all = storedLog(t, state, id)
	paths["generate/run"] = observeRun(t, "run", all[:len(paused)], all)
	paths["generate/resume"] = observeRun(t, "resume", all[len(paused):], all)
	paths["generate/run"].result = paths["generate/resume"].result

	// ratchet eval run: nobody approves, so the write is refused.
	c = run(t, env, "eval", "run", "--unsafe-sandbox", "--quiet", "--label", "fields", filepath.Join(dir, "suite.yaml"))
	c.wantCode(t, exitDone)
	recs, err := eval.ReadRecords(filepath.Join(state, "eval", "fields"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		f, err := os.Open(filepath.Join(state, "eval", "fields", r.Log))
		if err != nil {
			t.Fatal(err)
		}
		entries, err := observe.ReadJSONL(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		o := observeRun(t, "eval", entries, entries)
		o.result = r.Result
		paths[r.Case+"/eval"] = o
	}

	for name, fc := range fieldChecks {
		if fc.check == nil {
			continue
		}
		for _, path := range []string{"run", "resume", "eval"} {
			t.Run(name+"/"+path, func(t *testing.T) {
				o := paths[fc.fixture+"/"+path]
				if o == nil {
					t.Fatalf("no %s run of the %s task file", path, fc.fixture)
				}
				o.workspace = ws
				fc.check(t, o)
			})
		}
	}
}

// observeRun reads what a path shows: the spec and the whole run's workspace
// from all, the tool outputs from part (the entries the path recorded).
func observeRun(t *testing.T, path string, part, all []observe.Record) *observed {
	t.Helper()
	o := &observed{path: path}
	for _, r := range all {
		if r.Spec != nil {
			o.spec = *r.Spec
		}
		if e := r.Event; e != nil && e.Tool != nil && strings.HasPrefix(e.Tool.Output, "CWD=") {
			o.copies = append(o.copies, strings.TrimPrefix(e.Tool.Output, "CWD="))
		}
		if r.Command != nil {
			var c loop.Command
			if json.Unmarshal(r.Command, &c) == nil && c.Type == loop.Finish && c.Result != nil {
				o.result = *c.Result
			}
		}
	}
	for _, r := range part {
		if e := r.Event; e != nil && e.Tool != nil {
			o.outputs = append(o.outputs, e.Tool.Output)
		}
	}
	return o
}

// storedLog is run id's log in the run database under state.
func storedLog(t *testing.T, state, id string) []observe.Record {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(state, "ratchet", "ratchet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := runner.LoadLog(context.Background(), db, id)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// judged says whether a run of goal in the database under state has a
// verdict.
func judged(t *testing.T, state, goal string) bool {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(state, "ratchet", "ratchet.db"))
	if err != nil {
		return false
	}
	defer db.Close()
	runs, err := db.ListRuns(context.Background(), store.Filter{})
	i := slices.IndexFunc(runs, func(r store.Run) bool { return r.Goal == goal })
	if err != nil || i < 0 {
		return false
	}
	recs, err := runner.LoadLog(context.Background(), db, runs[i].ID)
	return err == nil && slices.ContainsFunc(recs, func(r observe.Record) bool { return r.Event != nil && r.Event.Type == loop.EventVerdict })
}

// runCtx is run with a context, for a run to be interrupted.
func runCtx(ctx context.Context, env map[string]string, args ...string) cli {
	getenv := func(k string) string { return env[k] }
	var stdout, stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: getenv}
	code := m.Run(ctx, args)
	return cli{code: code, stdout: stdout.String(), stderr: stderr.String()}
}
