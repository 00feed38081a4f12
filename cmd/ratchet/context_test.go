package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContextFeatures runs a task file that turns on plan mode, the
// scratchpad, compaction and a per-tool output cap, end to end with a
// scripted model whose expect: lines assert what each request carries,
// then replays the log.
func TestContextFeatures(t *testing.T) {
	var big strings.Builder
	for i := 1; i <= 300; i++ {
		big.WriteString(strings.Repeat("w", 40) + "\n")
	}
	dir := write(t, map[string]string{
		"big.txt": big.String(),
		"task.yaml": `goal: How many lines does big.txt have? Finish with the number.
model: scripted:turns.yaml
tools: [read_file]
checks: [{equals: "300"}]
plan: true
context:
  compact_at: 1000
  keep_turns: 1
  scratchpad: true
tool_output:
  read_file: {max_lines: 20}
`,
		"turns.yaml": `name: context-features
turns:
  - expect: ["[Plan] Before acting, call submit_plan"]
    tools:
      - name: submit_plan
        args: {steps: [{do: read big.txt, check: none}, {do: count its lines, check: equals}]}
  - expect: ["plan accepted", "[Plan: step 1 of 2] read big.txt", "[Your scratchpad is empty"]
    text: Reading.
    tools:
      - name: update_scratchpad
        args: {plan: "read big.txt, then count"}
      - name: read_file
        args: {path: big.txt}
  - expect: ["call read_file again with a smaller max_lines", "lines elided", "[Your scratchpad]", "read big.txt, then count"]
    tools:
      - name: read_file
        args: {path: big.txt, offset_line: 150}
  - expect: ["The transcript to summarise", "[assistant calls submit_plan", "read big.txt, then count"]
    text: "Task: count the lines of big.txt. Facts found: it has 300 lines (read_file header)."
  - expect: ["[Your scratchpad]", "[Plan: step 1 of 2]", "big.txt (lines 150"]
    tools:
      - name: step_done
        args: {result: "read it: 300 lines"}
  - expect: ["A summary of the work before this transcript", "it has 300 lines"]
    text: "Task: count the lines of big.txt. Facts found: 300 lines. Step 1 is done."
  - expect: ["step 1 done", "[Plan: step 2 of 2] count its lines"]
    tools:
      - name: step_done
        args: {result: "300"}
  - expect: ["Step 2 passed its check equals", "Every step of the plan is done"]
    finish: {answer: "300", confidence: 0.9}
`,
	})
	log := filepath.Join(t.TempDir(), "run.jsonl")
	c := run(t, nil, "run", "--json", "--quiet", "--log", log, filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// A failed compaction is not fatal, so an unmet expect: on a compaction
	// turn would not fail the run: the log must show both succeeded.
	for want, n := range map[string]int{`"purpose":"compact"`: 2, `"problem":"compacted"`: 2, `"problem":"compact_failed"`: 0, `"type":"plan"`: 3, `"type":"verify","id":"p1"`: 1} {
		if got := strings.Count(string(data), want); got != n {
			t.Errorf("the log has %s %d times, want %d", want, got, n)
		}
	}
	if !strings.Contains(string(data), `"input_estimate":`) {
		t.Error("the log has no input estimates")
	}
	c = run(t, nil, "replay", log)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "identical") {
		t.Errorf("replay: %v", c)
	}
}
