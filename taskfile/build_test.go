package taskfile_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

// opened records which model strings a build opened, and from where.
type opened struct{ spec, base string }

func opener(got *[]opened) func(spec, base string) (model.Model, error) {
	return func(spec, base string) (model.Model, error) {
		*got = append(*got, opened{spec, base})
		return nopModel{}, nil
	}
}

type nopModel struct{}

func (nopModel) Generate(context.Context, model.Request) (model.Response, error) {
	return model.Response{}, errors.New("not for running")
}

func TestBuildModelAndOverrides(t *testing.T) {
	dir := t.TempDir()
	path := writeTask(t, dir, "task.yaml", "goal: g\nmodel: scripted:turns.yaml\nchecks: [{equals: a}]\nbudget: {steps: 4, time: 1m}\n")
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  taskfile.Config
		want opened
	}{
		{"the file's model, against its directory", taskfile.Config{DefaultModel: "scripted:env.yaml"}, opened{"scripted:turns.yaml", dir}},
		{"Model overrides it", taskfile.Config{Model: "scripted:x.yaml", ModelDir: "/suite"}, opened{"scripted:x.yaml", "/suite"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []opened
			tc.cfg.OpenModel = opener(&got)
			tc.cfg.Budget = budget.Limits{Steps: 9}
			run, err := taskfile.Build(context.Background(), tf, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			if diff := cmp.Diff([]opened{tc.want}, got, cmp.AllowUnexported(opened{})); diff != "" {
				t.Errorf("opened (-want +got):\n%s", diff)
			}
			if run.ModelName != tc.want.spec {
				t.Errorf("ModelName = %q, want %q", run.ModelName, tc.want.spec)
			}
			if b := run.Task.Budget; b.Steps != 9 || b.Time.String() != "1m0s" {
				t.Errorf("budget %+v: want the override's steps and the file's time", b)
			}
		})
	}
	// No model anywhere: the fallback.
	tf.Model = ""
	var got []opened
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{DefaultModel: "scripted:env.yaml", OpenModel: opener(&got)})
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	if len(got) != 1 || got[0] != (opened{"scripted:env.yaml", ""}) {
		t.Errorf("opened %v, want the fallback from the working directory", got)
	}
}

// TestBuildProblemsTogether: the task's and the sub-agents' checks and the
// file's model report their problems in one list, each at its line.
func TestBuildProblemsTogether(t *testing.T) {
	dir := t.TempDir()
	path := writeTask(t, dir, "task.yaml", `goal: g
model: scripted:missing.yaml
tools: [read_file]
checks:
  - exec: {command: [true]}
subagents:
  checks:
    - grader: {model: "scripted:g.yaml", rubric: [{name: a, description: b}]}
`)
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = taskfile.Build(context.Background(), tf, taskfile.Config{
		OpenModel: func(string, string) (model.Model, error) { return nil, errors.New("cannot open") },
		Sandbox:   func() (sandbox.Runner, error) { return nil, errors.New("no sandbox") },
	})
	var ps taskfile.Problems
	if !errors.As(err, &ps) || len(ps) != 3 {
		t.Fatalf("error %v: want three problems", err)
	}
	if ps[0].Line != 5 || !strings.Contains(ps[0].Msg, "no sandbox") || ps[1].Line != 8 || !strings.Contains(ps[1].Msg, "cannot open") ||
		ps[2].Line != 2 || !strings.Contains(ps[2].Msg, "model scripted:missing.yaml: cannot open") {
		t.Errorf("problems:\n%v", ps)
	}
}

// TestBuildCopyWorkspace: the copy is where the tools work, the original
// is untouched, and Close removes the copy unless KeepCopy; f is never
// changed, so that one file builds many runs.
func TestBuildCopyWorkspace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := writeTask(t, dir, "task.yaml", "goal: g\ntools: [write_file]\ncopy_workspace: true\nchecks: [{equals: a}]\ntool_output: {default: {max_bytes: 300}, write_file: {max_lines: 5}}\n")
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []opened
	for _, keep := range []bool{false, true} {
		run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&got), KeepCopy: keep})
		if err != nil {
			t.Fatal(err)
		}
		ws := run.File.Workspace
		if !run.Copied || ws == dir || tf.Workspace != dir {
			t.Fatalf("copied %v into %s; the file's workspace is now %s", run.Copied, ws, tf.Workspace)
		}
		if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
			t.Errorf("the copy lacks a.txt: %v", err)
		}
		// As root the run works on a layer (nothing copied); otherwise on
		// a copy.
		if onLayer := run.Start.Layer != nil; onLayer != (os.Geteuid() == 0) {
			t.Errorf("as uid %d, on a layer: %v", os.Geteuid(), onLayer)
		}
		want := tool.ExecConfig{MaxOutputBytes: 300, Output: map[string]tool.OutputCaps{"write_file": {MaxLines: 5}}}
		if diff := cmp.Diff(want, run.Exec); diff != "" {
			t.Errorf("Exec (-want +got):\n%s", diff)
		}
		run.Close()
		run.Close()
		if _, err := os.Stat(ws); os.IsNotExist(err) == keep {
			t.Errorf("KeepCopy %v: after Close the copy's stat says %v", keep, err)
		}
		os.RemoveAll(filepath.Dir(ws)) // the copy and its start
	}
	// A given workspace (a resumed run's) is used as it is.
	other := t.TempDir()
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&got), Workspace: other})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if run.Copied || run.File.Workspace != other {
		t.Errorf("Workspace %s: copied %v into %s", other, run.Copied, run.File.Workspace)
	}
}

// TestBuildLayerResume: a resumed run on a layer (Config.Start) mounts the
// layer again and sees what the first run wrote; Close unmounts it.
func TestBuildLayerResume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("layers need root; without it copy_workspace copies (TestBuildCopyWorkspace)")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	path := writeTask(t, dir, "task.yaml", "goal: g\ntools: [write_file]\ncopy_workspace: true\nchecks: [{equals: a}]\n")
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []opened
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&got), KeepCopy: true})
	if err != nil {
		t.Fatal(err)
	}
	start := run.Start
	defer os.RemoveAll(start.Dir())
	os.WriteFile(filepath.Join(run.File.Workspace, "b.txt"), []byte("b"), 0o644)
	run.Close()
	if start.Layer.Mounted() {
		t.Fatal("Close left the layer mounted")
	}
	again, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&got), Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(again.File.Workspace, "b.txt")); string(data) != "b" {
		t.Errorf("the resumed run's view: %q, %v", data, err)
	}
	again.Close()
	if start.Layer.Mounted() {
		t.Error("Close left the resumed layer mounted")
	}
}

// TestExecChecksRunTheOriginalTests: in agent mode an exec check runs the
// whole workspace the agent edited, with the tests inside it mounted from
// outside: an agent that edits its copy of a test (on a copied workspace)
// or the test itself (in place) does not change what the check runs.
func TestExecChecksRunTheOriginalTests(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Missing(t, "/usr/bin/python3 with pytest")
	}
	r, err := sandbox.New(sandbox.Config{})
	if err != nil {
		testenv.Missing(t, "a sandbox: "+err.Error())
	}
	for _, copied := range []bool{true, false} {
		t.Run(map[bool]string{true: "copy", false: "in place"}[copied], func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "project")
			for name, data := range map[string]string{
				"calc/__init__.py":  "",
				"calc/ops.py":       "def add(a, b):\n    return a - b\n",
				"tests/test_ops.py": "from calc.ops import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
			} {
				p := filepath.Join(ws, name)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := writeTask(t, dir, "task.yaml", fmt.Sprintf(`goal: g
workspace: project
copy_workspace: %v
tools: [edit_file]
checks:
  - exec: {command: [python3, -m, pytest, -q, -p, "no:cacheprovider", tests], format: pytest, tests: [project/tests/test_ops.py]}
`, copied))
			tf, err := taskfile.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []opened
			run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&got), Sandbox: func() (sandbox.Runner, error) { return r, nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			check := run.Task.Checks.Cheap[0]
			edit := func(name, data string) {
				if err := os.WriteFile(filepath.Join(run.File.Workspace, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The agent "passes" by editing the test.
			edit("tests/test_ops.py", "def test_add():\n    assert True\n")
			v, err := check.Check(context.Background(), verify.Candidate{})
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || !strings.Contains(v.Detail, "test_add") {
				t.Fatalf("an edited test passed the check: %+v", v)
			}
			edit("calc/ops.py", "def add(a, b):\n    return a + b\n")
			if v, err := check.Check(context.Background(), verify.Candidate{}); err != nil || !v.OK {
				t.Fatalf("the fix failed the check: %+v %v", v, err)
			}
		})
	}
}

// A model: list is a fallback chain, opened as one model string; the
// provider_limits: section tightens the registry the caller shares among
// its runs, so that limits of several files all hold.
func TestBuildModelChainAndProviderLimits(t *testing.T) {
	dir := t.TempDir()
	path := writeTask(t, dir, "task.yaml", `goal: g
model: [anthropic:claude-sonnet-4-5, openai:gpt-4.1]
checks: [{equals: a}]
provider_limits:
  anthropic: {requests_per_minute: 50, tokens_per_minute: 40_000, max_in_flight: 8}
  openai-compatible:http://localhost:11434/v1: {max_in_flight: 2}
`)
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := limit.NewRegistry(limit.Config{})
	reg.Set("anthropic", limit.Limits{RequestsPerMinute: 20}) // a flag's, stricter
	var got []opened
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: opener(&got), Limits: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if want := []opened{{"anthropic:claude-sonnet-4-5,openai:gpt-4.1", dir}}; !cmp.Equal(want, got, cmp.AllowUnexported(opened{})) {
		t.Errorf("opened %+v, want %+v", got, want)
	}
	if got, want := reg.Limiter("anthropic").Limits(), (limit.Limits{RequestsPerMinute: 20, TokensPerMinute: 40000, MaxInFlight: 8}); got != want {
		t.Errorf("anthropic's limits %+v, want %+v (the stricter of each)", got, want)
	}
	if got := reg.Limiter("openai-compatible:http://localhost:11434/v1").Limits(); got.MaxInFlight != 2 {
		t.Errorf("the compatible server's limits %+v", got)
	}
}

// finisher records each request and finishes with answer a.
type finisher struct{ reqs []model.Request }

func (f *finisher) Generate(_ context.Context, req model.Request) (model.Response, error) {
	f.reqs = append(f.reqs, req)
	return model.Response{StopReason: "tool_use", Content: []model.Block{
		{Type: model.Thinking, Text: "a, surely", Signature: "sig"},
		{Type: model.ToolUse, ID: "c1", Name: "finish", Input: []byte(`{"answer":"a","confidence":0.99}`)},
	}}, nil
}

// The file's reasoning: goes with every model call of the run, and a
// reply's thinking is not taken as the answer.
func TestBuildReasoningReachesEveryCall(t *testing.T) {
	path := writeTask(t, t.TempDir(), "task.yaml", "goal: g\nchecks: [{equals: a}]\nreasoning: {effort: max}\nbudget: {steps: 4, time: 1m}\n")
	tf, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := &finisher{}
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{OpenModel: func(string, string) (model.Model, error) { return m, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	res, err := runner.Run(context.Background(), run.Task, run.Runner())
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %s (%s), %v", res.Status, res.Reason, err)
	}
	if len(m.reqs) == 0 {
		t.Fatal("no model call")
	}
	for i, req := range m.reqs {
		if req.Reasoning == nil || *req.Reasoning != (model.Reasoning{Effort: model.EffortMax}) {
			t.Errorf("call %d: reasoning %+v, want effort max", i+1, req.Reasoning)
		}
	}
}

// The reasoning example runs offline to done, its model asked to reason.
func TestReasoningExample(t *testing.T) {
	tf, err := taskfile.Load("../examples/reasoning/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tf.Reasoning == nil || tf.Reasoning.Effort != model.EffortHigh {
		t.Fatalf("reasoning %+v", tf.Reasoning)
	}
	run, err := taskfile.Build(context.Background(), tf, taskfile.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	res, err := runner.Run(context.Background(), run.Task, run.Runner())
	if err != nil || res.Status != loop.Done || res.Best == nil || res.Best.Answer != "0.05" {
		t.Fatalf("run: %s (%s), best %+v, %v", res.Status, res.Reason, res.Best, err)
	}
}
