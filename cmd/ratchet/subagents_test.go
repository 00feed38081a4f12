package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSubagentsTaskFile runs a task file with a subagents: section end to
// end: the scripted model (shared by parent and child, so its turns play in
// call order) spawns one sub-agent that reads a file; the parent sees only
// its result. The log holds the child's entries too, tagged with its run,
// and both runs replay: the parent from the log, the child by its ID.
func TestSubagentsTaskFile(t *testing.T) {
	dir := write(t, map[string]string{
		"notes.txt": "the answer is 42\n",
		"task.yaml": `goal: What number do the notes give? Finish with it.
model: scripted:turns.yaml
tools: [read_file, list_files]
checks: [{equals: "42"}]
subagents:
  tools: [read_file]
  checks: [{regex: '^\d+$'}]
  budget: {steps: 4}
`,
		"turns.yaml": `name: subagents
turns:
  - tools:
      - name: spawn_subagent
        args: {goal: "Read notes.txt and give the number in it, digits only."}
  - expect: ["Read notes.txt and give the number in it"]
    tools:
      - name: read_file
        args: {path: notes.txt}
  - expect: ["the answer is 42"]
    finish: {answer: "42", confidence: 0.9}
  - expect: ["Sub-agent c1 ended done", "passed its checks (regex)", "42", "charged to you: steps=2"]
    finish: {answer: "42", confidence: 0.9}
`,
	})
	log := filepath.Join(t.TempDir(), "run.jsonl")
	db := filepath.Join(t.TempDir(), "runs.db")
	c := run(t, nil, "run", "--json", "--db", db, "--log", log, filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	if res := c.result(t); res.Usage.Steps != 4 || res.Usage.ToolCalls != 1 {
		t.Errorf("parent usage %+v: want its 2 steps and the child's 2 steps and 1 tool call", res.Usage)
	}
	id := regexp.MustCompile(`run: (run-\S+) \(ratchet show`).FindStringSubmatch(c.stderr)
	if id == nil {
		t.Fatalf("no run ID in %v", c)
	}
	child := id[1] + "/c1"
	for _, want := range []string{"↳ sub-agent " + child + " started: Read notes.txt", "↳ sub-agent " + child + " ended done"} {
		if !strings.Contains(c.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, c.stderr)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"run_child"`, `"type":"child_result"`, `"run":"` + child + `"`, `"type":"subagent"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	c = run(t, nil, "replay", log)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "run "+id[1]+" replayed") {
		t.Errorf("replay of the log: %v", c)
	}
	c = run(t, nil, "replay", "--db", db, child)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "identical") {
		t.Errorf("replay of the child: %v", c)
	}
	c = run(t, nil, "show", "--db", db, child)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "steps          2 of 4") {
		t.Errorf("show %s: want its carved budget of 4 steps: %v", child, c)
	}
}
