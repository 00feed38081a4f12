package ui_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// The seeded store: real runs of the real runner over scripted models.

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// secret is a value the redactor knows; a tool prints it.
const secret = "sk-test-0123456789abcdef"

var add = tool.Func("add", "Add two integers.", func(_ context.Context, in addIn) (int, error) {
	return in.A + in.B, nil
}, tool.Idempotent(), tool.Inline())

var leak = tool.Func("env", "Print the environment.", func(_ context.Context, _ struct{}) (string, error) {
	return "API_KEY=" + secret + "\nHOME=/root", nil
}, tool.Idempotent(), tool.Inline())

func conf(f float64) *float64 { return &f }

func addTask() runner.Task {
	digits, err := check.Regex(`^\d+$`)
	if err != nil {
		panic(err)
	}
	return runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add, leak},
		Checks: verify.Tiers{Cheap: []verify.Verifier{digits}, Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 10, Cost: budget.USD(0.25), Time: time.Minute},
	}
}

func scriptedModel(t testing.TB, turns ...scripted.Turn) *scripted.Model {
	t.Helper()
	m, err := scripted.New(scripted.Script{Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// hostile is a model's text full of markup: the pages must show it as
// text.
const hostile = `<script>alert("owned")</script><img src=x onerror="alert(1)"><b>bold?</b> I'll add.`

func doneTurns() []scripted.Turn {
	return []scripted.Turn{
		{Text: hostile, Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}, {Name: "env"}}},
		{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.9)}},
		{Text: "The check says 5.", Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}},
	}
}

// escalateTurns stall until the run escalates; the person's answer makes
// the last turn finish.
func escalateTurns() []scripted.Turn {
	empty := scripted.Turn{Text: "Thinking."}
	return []scripted.Turn{empty, empty, empty, empty, empty, empty, {Expect: []string{"try 5"}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}}}
}

func escalateTask() runner.Task {
	task := addTask()
	task.Policy.Escalate = true
	task.Policy.Progress.Window = 2
	return task
}

// approveTurns call add, which needs a person's approval, then finish.
func approveTurns() []scripted.Turn {
	return []scripted.Turn{
		{Text: "Adding.", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}},
		{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}},
	}
}

func approveTask() runner.Task {
	task := addTask()
	task.Permissions = []loop.Permission{{Tool: "add", Action: loop.Ask}}
	return task
}

// waiting describes how to carry on each waiting run the seed leaves.
type waiting struct {
	task  runner.Task
	turns []scripted.Turn
}

type seeded struct {
	store   store.Store
	waiting map[string]waiting
}

// resume is Config.Resume over the seeded runs, as cmd/ratchet's does
// over task files: runner.Resume with a person to answer later.
func (sd *seeded) resume(t testing.TB) func(ctx context.Context, id string, opts runner.ResumeOptions) error {
	return func(ctx context.Context, id string, opts runner.ResumeOptions) error {
		w, ok := sd.waiting[id]
		if !ok {
			return fmt.Errorf("no such waiting run %s", id)
		}
		cfg := runner.Config{Model: scriptedModel(t, w.turns...), Store: sd.store, RunID: id, Human: runner.Later}
		_, err := runner.Resume(ctx, w.task, cfg, opts)
		if _, waits := errors.AsType[*runner.AwaitingError](err); waits {
			return nil
		}
		return err
	}
}

func run(t testing.TB, st store.Store, id string, task runner.Task, labels []string, turns ...scripted.Turn) {
	t.Helper()
	cfg := runner.Config{Model: scriptedModel(t, turns...), Store: st, RunID: id, Labels: labels, Human: runner.Later, TaskInfo: []byte(`{"model":"scripted:test"}`)}
	_, err := runner.Run(context.Background(), task, cfg)
	if _, waits := errors.AsType[*runner.AwaitingError](err); err != nil && !waits {
		t.Fatalf("run %s: %v", id, err)
	}
}

// seed fills a store with a done run, a run waiting for an answer, one
// waiting for an approval, and an exhausted one.
func seed(t testing.TB) *seeded {
	st := memory.New()
	sd := &seeded{store: st, waiting: map[string]waiting{}}
	run(t, st, "run-done", addTask(), []string{"demo"}, doneTurns()...)
	run(t, st, "run-ask", escalateTask(), []string{"demo", "human"}, escalateTurns()...)
	sd.waiting["run-ask"] = waiting{escalateTask(), escalateTurns()}
	run(t, st, "run-approve", approveTask(), []string{"human"}, approveTurns()...)
	sd.waiting["run-approve"] = waiting{approveTask(), approveTurns()}
	parent := addTask()
	parent.Subagents = &runner.Subagents{Checks: parent.Checks, Budget: budget.Limits{Steps: 3, Cost: budget.USD(0.05)}}
	run(t, st, "run-parent", parent, []string{"demo"},
		scripted.Turn{Text: "I'll delegate.", Tools: []scripted.ToolCall{{Name: loop.SpawnTool, Args: map[string]any{"goal": "Add 2 and 3.", "tools": []string{"add"}}}}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}}, // the child's turn
		scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.95)}})
	stuck := addTask()
	stuck.Budget.Steps = 2
	run(t, st, "run-exhausted", stuck, nil, scripted.Turn{Text: "Hmm."}, scripted.Turn{Text: "Hmm again."}, scripted.Turn{Text: "Still."})
	return sd
}

// seedEvals writes two result sets, base and cand, of two cases × two
// repeats; case "add" r1 fails in base and succeeds in cand.
func seedEvals(t testing.TB) string {
	root := t.TempDir()
	for _, label := range []string{"base", "cand"} {
		d, err := eval.OpenDir(filepath.Join(root, label))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"add", "sum"} {
			for rep := range 2 {
				turns := doneTurns()
				if label == "base" && c == "add" && rep == 1 {
					turns = []scripted.Turn{{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.9)}}, {Finish: &scripted.Finish{Answer: "7", Confidence: conf(0.9)}}, {Finish: &scripted.Finish{Answer: "8", Confidence: conf(0.9)}}, {Finish: &scripted.Finish{Answer: "9", Confidence: conf(0.9)}}}
				}
				task := addTask()
				task.Budget.Steps = 3
				w, name, err := d.Log(context.Background(), eval.Key{Case: c, Repeat: rep})
				if err != nil {
					t.Fatal(err)
				}
				jl := observe.NewJSONL(w)
				res, err := runner.Run(context.Background(), task, runner.Config{Model: scriptedModel(t, turns...), RunID: fmt.Sprintf("%s/%s/r%d", label, c, rep), Observers: []observe.Observer{jl}})
				if err != nil {
					t.Fatal(err)
				}
				if err := jl.Flush(); err != nil {
					t.Fatal(err)
				}
				w.Close()
				rec := eval.Record{Case: c, Repeat: rep, Model: "scripted:test", Result: res, Log: name, Wall: 20 * time.Millisecond, Finished: time.Now(),
					Tiers: map[string]verify.Tier{"regex": verify.Cheap, "equals": verify.Expensive}}
				if err := d.Put(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
			}
		}
		d.Close()
	}
	if _, err := os.Stat(filepath.Join(root, "base", eval.ResultsFile)); err != nil {
		t.Fatal(err)
	}
	return root
}

func runnerAnswer(s string) runner.ResumeOptions { return runner.ResumeOptions{Answer: &s} }

func itoa(n int64) string { return fmt.Sprint(n) }
