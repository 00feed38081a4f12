package taskfile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
)

func TestParseSubagents(t *testing.T) {
	dir := t.TempDir()
	path := writeTask(t, dir, "task.yaml", `goal: g
tools: [read_file, list_files]
checks: [{equals: a}, {regex: "^b"}]
subagents:
  tools: [read_file]
  task_checks: [regex]
  checks:
    - length: {min: 1, max: 200}
    - contains: [x]
      tier: expensive
  budget: {steps: 6, cost: 0.05, time: 1m}
  max_children: 4
`)
	got, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := got.Subagents
	if s == nil {
		t.Fatal("subagents: was not read")
	}
	if diff := cmp.Diff([]string{"read_file"}, s.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"regex"}, s.TaskChecks); diff != "" {
		t.Errorf("task_checks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(budget.Limits{Steps: 6, Cost: budget.USD(0.05), Time: time.Minute}, s.Budget); diff != "" {
		t.Errorf("budget (-want +got):\n%s", diff)
	}
	if s.MaxChildren != 4 || len(s.Checks) != 2 || s.Checks[0].Kind != "length" || s.Checks[1].Tier != verify.Expensive {
		t.Errorf("subagents %+v", s)
	}
	if len(got.Checks) != 2 {
		t.Errorf("the sub-agents' checks leaked into the task's: %+v", got.Checks)
	}
	tiers, err := got.SubagentVerifiers(taskfile.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tiers.Cheap) != 1 || len(tiers.Expensive) != 1 || tiers.Cheap[0].Name() != "length" {
		t.Errorf("sub-agent verifiers %+v", tiers)
	}

	// tools: [] gives sub-agents no tools; no tools: gives them all (nil).
	path = writeTask(t, dir, "none.yaml", "goal: g\ntools: [read_file]\nchecks: [{equals: a}]\nsubagents: {tools: [], task_checks: [equals]}\n")
	if got, err := taskfile.Load(path); err != nil || got.Subagents.Tools == nil || len(got.Subagents.Tools) != 0 {
		t.Errorf("tools: [] read as %#v (%v)", got.Subagents, err)
	}
	path = writeTask(t, dir, "all.yaml", "goal: g\ntools: [read_file]\nchecks: [{equals: a}]\nsubagents: {task_checks: [equals]}\n")
	if got, err := taskfile.Load(path); err != nil || got.Subagents.Tools != nil {
		t.Errorf("no tools: read as %#v (%v)", got.Subagents, err)
	}
}

func TestParseSubagentsProblems(t *testing.T) {
	ok := "goal: g\ntools: [read_file]\nchecks: [{equals: a}]\n"
	for _, tc := range []struct {
		name, data string
		line       int
		msg        string
	}{
		{"unknown field", ok + "subagents: {task_checks: [equals], depth: 2}\n", 4, `unknown field "depth" in subagents`},
		{"no checks", ok + "subagents: {tools: [read_file]}\n", 4, "subagents needs checks: (checks only sub-agents use) or task_checks:"},
		{"holdout only", ok + "subagents:\n  checks: [{equals: b, tier: holdout}]\n", 5, "a sub-agent's answer must be checked"},
		{"a tool the task lacks", ok + "subagents: {tools: [write_file], task_checks: [equals]}\n", 4, "subagents.tools: write_file is not one of the task's tools"},
		{"a tool twice", ok + "subagents: {tools: [read_file, read_file], task_checks: [equals]}\n", 4, "read_file is listed twice"},
		{"bad budget", ok + "subagents: {task_checks: [equals], budget: {steps: 0}}\n", 4, "subagents.budget.steps must be positive"},
		{"bad check", ok + "subagents: {checks: [{equals: a, colour: red}]}\n", 4, `unknown field "colour" in check`},
		{"empty checks", ok + "subagents: {checks: []}\n", 4, "subagents.checks must be a non-empty list"},
		{"max_children zero", ok + "subagents: {task_checks: [equals], max_children: 0}\n", 4, "subagents.max_children must be at least 1"},
		{"max_children past the ceiling", ok + "subagents:\n  task_checks: [equals]\n  max_children: 65\n", 6, "subagents.max_children must be at most 64"},
		{"generate mode", "mode: generate\ngoal: g\nchecks: [{equals: a}]\nsubagents: {task_checks: [equals]}\n", 4, "subagents need tools; generate mode has none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := taskfile.Parse([]byte(tc.data), "dir/t.yaml")
			ps := problems(t, err)
			for _, p := range ps {
				if p.Line == tc.line && strings.Contains(p.Msg, tc.msg) {
					return
				}
			}
			t.Errorf("want a problem at line %d containing %q, got:\n%v", tc.line, tc.msg, ps)
		})
	}
}
