package eval

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
)

// logOf builds a log: a spec, the given entries, then a finish with res.
func logOf(res loop.Result, entries ...observe.Record) []observe.Record {
	out := []observe.Record{{Run: "run-1", Kind: observe.KindRun, Spec: &loop.Spec{Goal: "g", Mode: loop.ModeGenerate, Budget: budget.Limits{Steps: 3}}}}
	out = append(out, entries...)
	fin, _ := json.Marshal(loop.Command{Type: loop.Finish, ID: "f", Result: &res})
	return append(out, observe.Record{Run: "run-1", Kind: observe.KindCommand, Command: fin})
}

func toolEv(outcome, output string, isErr bool) observe.Record {
	return observe.Record{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventToolResult, Tool: &loop.ToolOutcome{Outcome: outcome, Output: output, IsError: isErr}}}
}

func note(problem string) observe.Record {
	n, _ := json.Marshal(loop.Note{Type: loop.NoteObservation, Problem: problem})
	return observe.Record{Kind: observe.KindNote, Note: n}
}

func ev(t loop.EventType) observe.Record {
	return observe.Record{Kind: observe.KindEvent, Event: &loop.Event{Type: t}}
}

func TestDiagnose(t *testing.T) {
	exhausted := loop.Result{Status: loop.Exhausted(budget.Steps), Reason: "steps spent"}
	accepted := func(holdoutOK bool) loop.Result {
		a := loop.Attempt{Answer: "x", Accepted: true, Verdicts: []verify.Verdict{ok("t")}, Holdout: []verify.Verdict{{Check: "h", OK: holdoutOK}}}
		return loop.Result{Status: loop.Done, Best: &a, Attempts: []loop.Attempt{a}}
	}
	for _, tc := range []struct {
		name string
		log  []observe.Record
		want string
	}{
		{"overfit done", logOf(accepted(false)), "verifier_gap"},
		{"clean done", logOf(accepted(true)), ""},
		{"infrastructure", logOf(loop.Result{Status: loop.Failed}), "model_error"},
		{"check could not run", logOf(loop.Result{Status: loop.Failed}, ev(loop.EventCheckError)), "verifier_gap"},
		{"last model call failed", logOf(exhausted, ev(loop.EventModelReply), ev(loop.EventModelError)), "model_error"},
		{"unknown tools", logOf(exhausted, toolEv("ok", "", false), toolEv("unknown_tool", "", true), note("unknown_tool")), "wrong_tool"},
		{"invalid arguments", logOf(exhausted, toolEv("invalid_args", "", true), toolEv("ok", "", false), note("invalid_json")), "bad_arguments"},
		{"one bad call in many", logOf(exhausted, toolEv("invalid_args", "", true), toolEv("ok", "", false), toolEv("ok", "", false), toolEv("ok", "", false), toolEv("ok", "", false)), "budget"},
		{"stalled", logOf(loop.Result{Status: loop.Stalled(progress.Repeating)}), "no_progress"},
		{"escalated", logOf(loop.Result{Status: loop.Escalated, Question: "which file?"}), "insufficient_context"},
		{"protocol slips", logOf(exhausted, note("bad_finish"), note("empty_reply")), "missed_instruction"},
		{"missing file", logOf(exhausted, toolEv("tool_error", "open data.csv: no such file or directory", true)), "insufficient_context"},
		{"out of budget", logOf(exhausted), "budget"},
		{"cancelled", logOf(loop.Result{Status: loop.Cancelled}), ""},
		{"an exit of a later version", logOf(loop.Result{Status: "weird"}), "missed_instruction"},
	} {
		d, err := Diagnose(tc.log)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d.Category != tc.want {
			t.Errorf("%s: category %q (%s), want %q", tc.name, d.Category, d.Evidence, tc.want)
		}
	}
	if _, err := Diagnose(logOf(exhausted)[:1]); err == nil {
		t.Error("a log without finish was diagnosed")
	}
}

func TestCaseFromRun(t *testing.T) {
	wrong := loop.Attempt{Answer: "41"}
	d, _ := Diagnose(logOf(loop.Result{Status: loop.Exhausted(budget.Steps), Best: &wrong}))
	dir := t.TempDir()
	suite := filepath.Join(dir, "suites", "s.yaml")
	task := filepath.Join(dir, "tasks", "t.yaml")
	c, err := CaseFromRun(d, suite, task, "", "/logs/run-1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := NewCase{Name: "from-run-1", Task: "../tasks/t.yaml", Category: "budget", FromRun: "/logs/run-1.jsonl",
		Budget: &caseBudget{Steps: 3}, // the logged spec's: the run's effective budget
		Expect: &Expect{Status: loop.Done, NotAnswer: "41"}, Comment: "budget: exhausted:steps: "}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("case (-want +got):\n%s", diff)
	}
	if _, err := CaseFromRun(d, suite, "", "", ""); err == nil {
		t.Error("a case with neither a task nor an answer was made")
	}
	// Inline: the spec's goal with an equals check; it parses as a task.
	c, err = CaseFromRun(d, suite, "", "42", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "inline.yaml")
	if err := AppendCase(path, c); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSuite(path)
	if err != nil {
		t.Fatal(err)
	}
	tf := s.Cases[0].Task
	if tf.Goal != "g" || tf.Mode != "generate" || tf.Budget.Steps != 3 || len(tf.Checks) != 1 || tf.Checks[0].Kind != "equals" {
		t.Errorf("inline task: %+v", tf)
	}
	if e := s.Cases[0].Expect; e.Answer != "42" || e.NotAnswer != "41" {
		t.Errorf("expect: %+v", e)
	}
}

func TestAppendCase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "t.yaml", "goal: g\nmodel: scripted:x.yaml\nchecks: [{equals: \"1\"}]\n")
	c := NewCase{Name: "new", Task: "t.yaml", Category: "budget", Comment: "why"}
	for _, tc := range []struct{ name, before, after string }{
		{"cases last",
			"label: x\ncases:\n  - task: t.yaml\n",
			"label: x\ncases:\n  - task: t.yaml\n  # why\n  - name: new\n    task: t.yaml\n    category: budget\n"},
		{"cases then sim, comments kept",
			"# my suite\ncases:\n    - task: t.yaml # first\n\n# simulated\nsim:\n  - cases: 1\n",
			"# my suite\ncases:\n    - task: t.yaml # first\n    # why\n    - name: new\n      task: t.yaml\n      category: budget\n\n# simulated\nsim:\n  - cases: 1\n"},
		{"empty cases",
			"cases:\nsim:\n  - cases: 1\n",
			"cases:\n  # why\n  - name: new\n    task: t.yaml\n    category: budget\nsim:\n  - cases: 1\n"},
		{"no cases, no final newline",
			"sim:\n  - cases: 1",
			"sim:\n  - cases: 1\ncases:\n  # why\n  - name: new\n    task: t.yaml\n    category: budget\n"},
	} {
		path := writeFile(t, dir, "s.yaml", tc.before)
		if err := AppendCase(path, c); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(tc.after, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	// A new file.
	path := filepath.Join(dir, "fresh.yaml")
	if err := AppendCase(path, c); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "label: fresh\ncases:\n  # why\n  - name: new\n    task: t.yaml\n    category: budget\n"; string(got) != want {
		t.Errorf("new file:\n%s", got)
	}
	// The same name twice is refused and the file left alone.
	err := AppendCase(path, c)
	var ps taskfile.Problems
	if !errors.As(err, &ps) || !strings.Contains(err.Error(), `"new" is already used`) {
		t.Errorf("duplicate: %v", err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(got) {
		t.Error("a refused case changed the file")
	}
}
