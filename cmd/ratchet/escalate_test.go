package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEscalateRaise: through the binary, a run with escalate: true that
// would end exhausted:steps waits for a person with a specific question;
// an answer not understood is asked again, "raise steps to 4" carries it
// on to done within the raised limit, and the log replays identically.
func TestEscalateRaise(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": `goal: Answer yes.
model: scripted:turns.yaml
checks: [{equals: "yes"}]
budget: {steps: 2}
escalate: true
`,
		"turns.yaml": `turns:
  - finish: {answer: "no", confidence: 0.9}
  - finish: {answer: "no", confidence: 0.9}
  - expect: ["raised steps from 2 to 4"]
    finish: {answer: "yes", confidence: 0.9}
`,
	})
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	// With --json, stdout holds the waiting run as one JSON object.
	c := run(t, env, "run", "--json", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitWaiting)
	var waiting struct{ Run, Status, Question string }
	if err := json.Unmarshal([]byte(c.stdout), &waiting); err != nil || waiting.Status != "awaiting_input" || waiting.Run == "" || !strings.Contains(waiting.Question, "Raise steps") {
		t.Fatalf("run --json of a waiting run: want its ID, status and question on stdout (%v):\n%v", err, c)
	}
	m := regexp.MustCompile(`run (\S+) is waiting for a person:\n  (.*)\n`).FindStringSubmatch(c.stderr)
	if m == nil || !strings.Contains(m[2], "would end exhausted:steps") || !strings.Contains(m[2], "Raise steps from 2 to 4, or stop?") {
		t.Fatalf("no specific question:\n%v", c)
	}
	id := m[1]
	c = run(t, env, "answer", id, "more")
	c.wantCode(t, exitWaiting)
	if !strings.Contains(c.stderr, "Your answer was not understood") {
		t.Errorf("an answer not understood is not asked again:\n%v", c)
	}
	c = run(t, env, "answer", id, "raise steps to 4")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout+c.stderr, "steps=3/4") {
		t.Errorf("want done at step 3 of the raised 4:\n%v", c)
	}
	run(t, env, "replay", id).wantCode(t, exitDone)
}
