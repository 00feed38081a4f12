package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/tool/command"
	"github.com/ratchetloop/ratchet/tool/workspace"
)

const quickstart = "../../examples/quickstart/task.yaml"

// cli is one in-process run of the command.
type cli struct {
	code           int
	stdout, stderr string
	state          string // XDG_STATE_HOME for the run
}

// run runs the command in-process with env as its environment (and
// XDG_STATE_HOME set to a fresh directory unless env sets it), so that no
// test writes to the real home directory.
func run(t *testing.T, env map[string]string, args ...string) cli {
	t.Helper()
	state := t.TempDir()
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}
	var stdout, stderr bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: getenv}
	code := m.Run(context.Background(), args)
	return cli{code: code, stdout: stdout.String(), stderr: stderr.String(), state: state}
}

func (c cli) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", c.code, c.stdout, c.stderr)
}

func (c cli) wantCode(t *testing.T, code int) {
	t.Helper()
	if c.code != code {
		t.Fatalf("want exit %d, got %v", code, c)
	}
}

// result decodes stdout as a Result; stdout must hold nothing else.
func (c cli) result(t *testing.T) loop.Result {
	t.Helper()
	var res loop.Result
	if err := json.Unmarshal([]byte(c.stdout), &res); err != nil {
		t.Fatalf("stdout is not one JSON Result: %v\n%v", err, c)
	}
	return res
}

// write writes files (name → content) into a new directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// wrongTurns is a script whose answers all differ and are all wrong.
const wrongTurns = `name: wrong-every-time
turns:
  - finish: {answer: "a", confidence: 0.9}
  - finish: {answer: "b", confidence: 0.9}
  - finish: {answer: "c", confidence: 0.9}
  - finish: {answer: "d", confidence: 0.9}
  - finish: {answer: "e", confidence: 0.9}
  - finish: {answer: "f", confidence: 0.9}
`

// rightTurns answers correctly at once.
const rightTurns = `name: right-first-time
turns:
  - finish: {answer: "please", confidence: 0.9}
`

const notice = "is playing recorded turns; it is a test double, not a real model"

func TestQuickstart(t *testing.T) {
	c := run(t, nil, "run", quickstart)
	c.wantCode(t, exitDone)
	for _, want := range []string{"step 1", "list_files", "✗ regex", "✓ equals", "\ndone: attempt 2 passed every check\n", "best: TOTAL: 142.50\n", "usage: steps=4/8"} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, c.stdout)
		}
	}
	wantNotice := `ratchet: scripted model "quickstart-recording" (`
	if n := strings.Count(c.stderr, wantNotice); n != 1 || !strings.Contains(c.stderr, notice) {
		t.Errorf("stderr has the scripted-model notice %d times, want once:\n%s", n, c.stderr)
	}
	// The run is kept in the default database under XDG_STATE_HOME and
	// named on stderr.
	m := regexp.MustCompile(`(?m)^run: (\S+) \(ratchet show (\S+)\)$`).FindStringSubmatch(c.stderr)
	if m == nil || m[1] != m[2] {
		t.Fatalf("stderr names no run:\n%s", c.stderr)
	}
	if st, err := os.Stat(filepath.Join(c.state, "ratchet", "ratchet.db")); err != nil || st.Size() == 0 {
		t.Errorf("run database: %v (size %v), want a non-empty file", err, st)
	}
	// show names the model, which came from the task file.
	show := run(t, map[string]string{"XDG_STATE_HOME": c.state}, "show", m[1])
	if !strings.Contains(show.stdout, "\nmodel:   scripted:quickstart-recording\n") {
		t.Errorf("show names no model:\n%s", show.stdout)
	}
}

func TestJSON(t *testing.T) {
	c := run(t, nil, "run", "--json", quickstart)
	c.wantCode(t, exitDone)
	res := c.result(t)
	if res.Status != loop.Done {
		t.Errorf("status = %q, want done", res.Status)
	}
	if res.Best == nil || res.Best.Answer != "TOTAL: 142.50" || !res.Best.Accepted {
		t.Errorf("best = %+v, want the accepted answer TOTAL: 142.50", res.Best)
	}
	if got := len(res.Attempts); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
	if res.Limits.Steps != 8 || res.Limits.Cost != budget.USD(0.10) {
		t.Errorf("limits = %+v, want the task file's steps 8 and cost $0.10", res.Limits)
	}
	// Beside the Result, the JSON says where to find the run again.
	var where struct{ Run, DB string }
	if err := json.Unmarshal([]byte(c.stdout), &where); err != nil || !strings.Contains(c.stderr, "run: "+where.Run+" ") ||
		where.DB != filepath.Join(c.state, "ratchet", "ratchet.db") {
		t.Errorf("--json names run %q in DB %q (%v); want the run on stderr's run: line, in %s", where.Run, where.DB, err, c.state)
	}
	// Progress goes to stderr so that stdout is only JSON.
	if !strings.Contains(c.stderr, "step 1") || !strings.Contains(c.stderr, "done: attempt 2") {
		t.Errorf("--json: progress missing from stderr:\n%s", c.stderr)
	}
}

func TestQuiet(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		c := run(t, nil, "run", "--quiet", quickstart)
		c.wantCode(t, exitDone)
		if want := "done: attempt 2 passed every check\n"; c.stdout != want {
			t.Errorf("stdout = %q, want only %q", c.stdout, want)
		}
		wantQuietStderr(t, c.stderr)
	})
	t.Run("with --json", func(t *testing.T) {
		c := run(t, nil, "run", "--quiet", "--json", quickstart)
		c.wantCode(t, exitDone)
		if res := c.result(t); res.Status != loop.Done {
			t.Errorf("status = %q, want done", res.Status)
		}
		wantQuietStderr(t, c.stderr)
	})
}

// wantQuietStderr: a quiet run's stderr holds the scripted-model notice and
// the line naming the run, nothing else.
func wantQuietStderr(t *testing.T, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], notice) || !regexp.MustCompile(`^run: \S+ \(ratchet show \S+\)$`).MatchString(lines[1]) {
		t.Errorf("stderr = %q, want only the scripted-model notice and the run: line", stderr)
	}
}

func TestLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	c := run(t, nil, "run", "--quiet", "--log", path, quickstart)
	c.wantCode(t, exitDone)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var n int64
	runs := map[string]bool{}
	kinds := map[observe.Kind]int{}
	for sc.Scan() {
		n++
		var e struct {
			Seq  int64           `json:"seq"`
			Run  string          `json:"run"`
			Kind observe.Kind    `json:"kind"`
			Rest json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d does not decode: %v\n%s", n, err, sc.Bytes())
		}
		if e.Seq != n {
			t.Errorf("line %d has seq %d", n, e.Seq)
		}
		runs[e.Run] = true
		kinds[e.Kind]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("log has %d lines, want a whole run's", n)
	}
	if len(runs) != 1 {
		t.Errorf("log names runs %v, want one", runs)
	}
	if kinds[observe.KindEvent] == 0 || kinds[observe.KindCommand] == 0 {
		t.Errorf("log entry kinds %v, want events and commands", kinds)
	}
}

func TestFlagsAfterTaskFile(t *testing.T) {
	c := run(t, nil, "run", quickstart, "--json", "--quiet", "--steps", "6")
	c.wantCode(t, exitDone)
	res := c.result(t)
	if res.Status != loop.Done || res.Limits.Steps != 6 {
		t.Errorf("status %q, steps limit %d; want done under --steps 6", res.Status, res.Limits.Steps)
	}
}

func TestTaskFileProblems(t *testing.T) {
	dir := write(t, map[string]string{"bad.yaml": `goal: ""
colour: blue
budget:
  steps: -5
  time: soon
checks:
  - regex: '('
  - equals: a
    tier: medium
tools: [shell]
`})
	path := filepath.Join(dir, "bad.yaml")
	c := run(t, nil, "run", path)
	c.wantCode(t, exitUsage)
	if c.stdout != "" {
		t.Errorf("stdout = %q, want nothing", c.stdout)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(c.stderr, "\n"), "\n") {
		loc, _, _ := strings.Cut(strings.TrimPrefix(line, path), " ")
		got = append(got, loc)
		if !strings.HasPrefix(line, path+":") {
			t.Errorf("stderr line %q does not start with %s:", line, path)
		}
	}
	if diff := cmp.Diff([]string{":1:", ":2:", ":4:", ":5:", ":7:", ":9:", ":10:"}, got); diff != "" {
		t.Errorf("one line per problem, in line order (-want +got):\n%s\n%s", diff, c.stderr)
	}
}

func TestTaskFileMissing(t *testing.T) {
	c := run(t, nil, "run", filepath.Join(t.TempDir(), "nope.yaml"))
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, "ratchet run: open ") || !strings.Contains(c.stderr, "no such file or directory") {
		t.Errorf("stderr = %q, want the open error", c.stderr)
	}
}

// TestBudgetTooSmall checks that a budget the core refuses is a config
// error naming the file.
func TestBudgetTooSmall(t *testing.T) {
	c := run(t, nil, "run", "--steps", "1", quickstart)
	c.wantCode(t, exitUsage)
	if want := "ratchet run: " + quickstart + ": budget: steps: "; !strings.HasPrefix(c.stderr, want) {
		t.Errorf("stderr = %q, want it to start %q", c.stderr, want)
	}
}

func TestModelSelection(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml":    "goal: Say the magic word.\nchecks: [{equals: please}]\n",
		"broken.yaml":  "goal: Say the magic word.\nmodel: scripted:missing.yaml\nchecks: [{equals: please}]\n",
		"right.yaml":   rightTurns,
		"unnamed.yaml": "turns:\n  - finish: {answer: please, confidence: 0.9}\n",
	})
	task, broken := filepath.Join(dir, "task.yaml"), filepath.Join(dir, "broken.yaml")
	right, unnamed := "scripted:"+filepath.Join(dir, "right.yaml"), "scripted:"+filepath.Join(dir, "unnamed.yaml")

	t.Run("none", func(t *testing.T) {
		c := run(t, nil, "run", task)
		c.wantCode(t, exitUsage)
		want := "ratchet run: no model configured: pass --model, set model: in the task file, or set RATCHET_MODEL; options: " + provider.Options + "\n"
		if c.stderr != want {
			t.Errorf("stderr = %q, want %q", c.stderr, want)
		}
	})
	t.Run("RATCHET_MODEL when the file has none", func(t *testing.T) {
		c := run(t, map[string]string{"RATCHET_MODEL": right}, "run", task)
		c.wantCode(t, exitDone)
		if !strings.Contains(c.stderr, `scripted model "right-first-time"`) {
			t.Errorf("stderr = %q, want the notice of the RATCHET_MODEL script", c.stderr)
		}
	})
	t.Run("the file's model over RATCHET_MODEL", func(t *testing.T) {
		c := run(t, map[string]string{"RATCHET_MODEL": right}, "run", broken)
		c.wantCode(t, exitUsage)
		if !strings.Contains(c.stderr, "missing.yaml") {
			t.Errorf("stderr = %q, want the file's model (missing.yaml) to be tried", c.stderr)
		}
	})
	t.Run("--model over the file", func(t *testing.T) {
		c := run(t, nil, "run", "--model", right, broken)
		c.wantCode(t, exitDone)
		if !strings.Contains(c.stderr, `scripted model "right-first-time"`) {
			t.Errorf("stderr = %q, want the notice of the --model script", c.stderr)
		}
	})
	t.Run("--model over RATCHET_MODEL", func(t *testing.T) {
		c := run(t, map[string]string{"RATCHET_MODEL": right}, "run", "--model", unnamed, task)
		c.wantCode(t, exitDone)
		if !strings.Contains(c.stderr, `scripted model "scripted"`) {
			t.Errorf("stderr = %q, want the notice of the --model script", c.stderr)
		}
	})
	for _, tc := range []struct{ model, want string }{
		{"openai:gpt-5", "ratchet run: openai: no API key: set OPENAI_API_KEY\n"},
		{"gpt-5", `ratchet run: unknown model "gpt-5"; options: ` + provider.Options + "\n"},
		{"scripted:", `ratchet run: model "scripted:": scripted needs a file, e.g. scripted:turns.yaml` + "\n"},
	} {
		t.Run("bad model "+tc.model, func(t *testing.T) {
			c := run(t, nil, "run", "--model", tc.model, task)
			c.wantCode(t, exitUsage)
			if c.stderr != tc.want {
				t.Errorf("stderr = %q, want %q", c.stderr, tc.want)
			}
		})
	}
	t.Run("unknown model in RATCHET_MODEL", func(t *testing.T) {
		c := run(t, map[string]string{"RATCHET_MODEL": "claude"}, "run", task)
		c.wantCode(t, exitUsage)
		if !strings.Contains(c.stderr, `unknown model "claude"; options: anthropic:MODEL`) {
			t.Errorf("stderr = %q", c.stderr)
		}
	})
}

func TestNotDone(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml":  "goal: Say the magic word.\nmodel: scripted:turns.yaml\nchecks: [{equals: please}]\nbudget: {steps: 4}\n",
		"turns.yaml": wrongTurns,
	})
	c := run(t, nil, "run", "--json", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitNotDone)
	res := c.result(t)
	if res.Status != loop.Exhausted(budget.Steps) {
		t.Errorf("status = %q, want exhausted:steps", res.Status)
	}
	if res.Usage.Steps != 4 || len(res.Attempts) != 4 || res.Best == nil || res.Best.Accepted {
		t.Errorf("usage %+v, %d attempts, best %+v: want 4 steps, 4 rejected attempts", res.Usage, len(res.Attempts), res.Best)
	}
}

func TestStepsOverride(t *testing.T) {
	// The file sets no step limit, so without --steps the 6-turn script runs
	// out before the default 30 steps: an infrastructure failure (exit 3).
	dir := write(t, map[string]string{
		"task.yaml":  "goal: Say the magic word.\nmodel: scripted:turns.yaml\nchecks: [{equals: please}]\n",
		"turns.yaml": wrongTurns,
	})
	task := filepath.Join(dir, "task.yaml")

	c := run(t, nil, "run", "--json", task)
	c.wantCode(t, exitInfra)
	if res := c.result(t); res.Status != loop.Failed || !strings.Contains(res.Reason, "script exhausted") {
		t.Errorf("without --steps: status %q (%s), want failed: script exhausted", res.Status, res.Reason)
	}

	c = run(t, nil, "run", "--json", task, "--steps", "2")
	c.wantCode(t, exitNotDone)
	res := c.result(t)
	if res.Status != loop.Exhausted(budget.Steps) || res.Limits.Steps != 2 || res.Usage.Steps != 2 {
		t.Errorf("--steps 2: status %q, limit %d, used %d; want exhausted:steps after 2", res.Status, res.Limits.Steps, res.Usage.Steps)
	}
}

func TestBudgetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(budget.Limits) bool
	}{
		{[]string{"--model-calls", "7"}, func(l budget.Limits) bool { return l.ModelCalls == 7 }},
		{[]string{"--tool-calls", "5"}, func(l budget.Limits) bool { return l.ToolCalls == 5 }},
		{[]string{"--tokens", "90000"}, func(l budget.Limits) bool { return l.TotalTokens == 90000 }},
		{[]string{"--cost", "0.5"}, func(l budget.Limits) bool { return l.Cost == budget.USD(0.5) }},
		{[]string{"--cost", "-1"}, func(l budget.Limits) bool { return l.Cost == budget.Unlimited }},
		{[]string{"--time", "90s"}, func(l budget.Limits) bool { return l.Time.Seconds() == 90 }},
		{[]string{"--steps", "-1"}, func(l budget.Limits) bool { return l.Steps == budget.Unlimited }},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c := run(t, nil, append([]string{"run", "--json", quickstart}, tc.args...)...)
			c.wantCode(t, exitDone)
			if l := c.result(t).Limits; !tc.want(l) {
				t.Errorf("limits %+v do not reflect %v", l, tc.args)
			}
		})
	}
}

func TestBadBudgetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "0"}, "ratchet run: --steps must be a positive whole number, or -1 for unlimited, got 0\n"},
		{[]string{"--tool-calls", "-3"}, "ratchet run: --tool-calls must be a positive whole number, or -1 for unlimited, got -3\n"},
		{[]string{"--cost", "-2"}, "ratchet run: --cost must be an amount in US dollars such as 0.25 (at least 0.000001), or -1 for unlimited, got -2\n"},
		{[]string{"--cost", "NaN"}, "ratchet run: --cost must be an amount in US dollars such as 0.25 (at least 0.000001), or -1 for unlimited, got NaN\n"},
		{[]string{"--cost", "0.0000001"}, "ratchet run: --cost must be an amount in US dollars such as 0.25 (at least 0.000001), or -1 for unlimited, got 1e-07\n"},
		{[]string{"--time", "0s"}, "ratchet run: --time must be a positive duration such as 90s, got 0s\n"},
		{[]string{"--model-calls", "0", "--time", "-1s"}, "ratchet run: --model-calls must be a positive whole number, or -1 for unlimited, got 0\nratchet run: --time must be a positive duration such as 90s, got -1s\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c := run(t, nil, append([]string{"run", quickstart}, tc.args...)...)
			c.wantCode(t, exitUsage)
			if c.stderr != tc.want {
				t.Errorf("stderr = %q, want %q", c.stderr, tc.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"no command", nil, []string{"Usage:\n  ratchet run TASK.yaml [flags]"}},
		{"unknown command", []string{"frobnicate"}, []string{`ratchet: unknown command "frobnicate"`, "Usage:"}},
		{"no task file", []string{"run"}, []string{"ratchet run: want exactly one task file", "Usage: ratchet run TASK.yaml [flags]"}},
		{"two task files", []string{"run", quickstart, quickstart}, []string{"ratchet run: want exactly one task file"}},
		{"unknown flag", []string{"run", "--frob", quickstart}, []string{"flag provided but not defined: -frob ('ratchet run -h' lists the flags)"}},
		{"bad flag value", []string{"run", "--steps", "many", quickstart}, []string{`invalid value "many" for flag -steps`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := run(t, nil, tc.args...)
			c.wantCode(t, exitUsage)
			if c.stdout != "" {
				t.Errorf("stdout = %q, want nothing", c.stdout)
			}
			for _, want := range tc.want {
				if !strings.Contains(c.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, c.stderr)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		c := run(t, nil, arg)
		c.wantCode(t, exitDone)
		if !regexp.MustCompile(`^ratchet \S.*\n$`).MatchString(c.stdout) || c.stderr != "" {
			t.Errorf("%s: %v", arg, c)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"help", "-h", "--help"} {
		c := run(t, nil, arg)
		c.wantCode(t, exitDone)
		if c.stdout != usage {
			t.Errorf("%s: stdout = %q, want the usage", arg, c.stdout)
		}
	}
}

func TestRunHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		c := run(t, nil, "run", arg)
		c.wantCode(t, exitDone)
		d := budget.Defaults
		for _, want := range []string{
			"Usage: ratchet run TASK.yaml [flags]",
			fmt.Sprintf("steps %d, model calls %d,", d.Steps, d.ModelCalls),
			fmt.Sprintf("tool calls %d, total tokens %d, cost %s, time %s.", d.ToolCalls, d.TotalTokens, d.Cost, d.Time),
			"-1 lifts a limit",
			"The model comes from --model, else the task file's model:, else $RATCHET_MODEL.",
			"scripted:FILE",
		} {
			if !strings.Contains(c.stderr, want) {
				t.Errorf("run %s: help lacks %q:\n%s", arg, want, c.stderr)
			}
		}
		for _, flag := range []string{"model", "json", "quiet", "log", "db", "label", "no-wait", "steps", "model-calls", "tool-calls", "tokens", "cost", "time"} {
			if !strings.Contains(c.stderr, "\n  -"+flag+" ") && !strings.Contains(c.stderr, "\n  -"+flag+"\n") {
				t.Errorf("run %s: help does not list -%s", arg, flag)
			}
		}
	}
}

// TestToolNames checks that the tools a task file may name are exactly the
// workspace's tools and run_command, so that the lists cannot drift apart.
func TestToolNames(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var names []string
	for _, tl := range ws.Tools() {
		names = append(names, tl.Info().Name)
	}
	names = append(names, command.Name)
	if !slices.Equal(names, taskfile.ToolNames) {
		t.Errorf("taskfile.ToolNames = %v, workspace tools = %v", taskfile.ToolNames, names)
	}
}

// TestEveryToolLoads runs a task that names every tool a task file may name
// (run_command only where a sandbox works).
func TestEveryToolLoads(t *testing.T) {
	names := taskfile.ToolNames
	if _, err := sandbox.New(sandbox.Config{}); err != nil {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == command.Name })
	}
	dir := write(t, map[string]string{
		"task.yaml":  "goal: Say the magic word.\nmodel: scripted:turns.yaml\ntools: [" + strings.Join(names, ", ") + "]\nchecks: [{equals: please}]\n",
		"turns.yaml": rightTurns,
	})
	c := run(t, nil, "run", "--quiet", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
}

// TestDoubleDash: after --, arguments are not flags, so a second positional
// argument is refused rather than parsed as --json.
func TestDoubleDash(t *testing.T) {
	c := run(t, nil, "run", "--quiet", "--", quickstart, "--json")
	c.wantCode(t, exitUsage)
	if strings.Contains(c.stdout, "{") || !strings.Contains(c.stderr, "want exactly one task file") {
		t.Errorf("want a refusal of two task files, got %v", c)
	}
}

// TestIncompleteLogIsInfrastructureFailure: a run whose event log could not
// be written exits 3 even though the run itself ended done.
func TestIncompleteLogIsInfrastructureFailure(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		testenv.Missing(t, "/dev/full")
	}
	c := run(t, nil, "run", quickstart, "--quiet", "--log", "/dev/full")
	c.wantCode(t, exitInfra)
	if !strings.Contains(c.stderr, "event log /dev/full is incomplete") {
		t.Errorf("stderr does not explain the failure: %v", c)
	}
}

// requireSandboxTools fails under CI, and skips elsewhere, when the
// examples' checks cannot run here.
func requireSandboxTools(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/bin/prlimit"} {
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, p+" (./test.sh installs it)")
		}
	}
}

// TestExamples runs every example end to end: real checks (pytest and go
// test in the sandbox) against recorded model turns.
func TestExamples(t *testing.T) {
	requireSandboxTools(t)
	for _, ex := range []struct {
		dir      string
		attempts int
	}{
		{"quickstart", 2},
		{"is-prime", 2},
		{"go-primes", 2},
		{"fix-project", 2},
	} {
		t.Run(ex.dir, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "run.jsonl")
			c := run(t, nil, "run", "--json", "--quiet", "--log", log, filepath.Join("..", "..", "examples", ex.dir, "task.yaml"))
			c.wantCode(t, exitDone)
			res := c.result(t)
			if len(res.Attempts) != ex.attempts || res.Attempts[0].Accepted || !res.Best.Accepted {
				t.Errorf("attempts %+v; want the first rejected and attempt %d accepted", res.Attempts, ex.attempts)
			}
			// Replay is a test: the recorded run re-drives identically.
			c = run(t, nil, "replay", log)
			c.wantCode(t, exitDone)
			if !strings.Contains(c.stdout, "identical") {
				t.Errorf("replay: %v", c)
			}
		})
	}
}

// TestVerifyCommand runs a task's checks on files with no model.
func TestVerifyCommand(t *testing.T) {
	requireSandboxTools(t)
	task := filepath.Join("..", "..", "examples", "is-prime", "task.yaml")
	dir := write(t, map[string]string{
		"good.py": "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, int(n ** 0.5) + 1))\n",
		"bad.py":  "def is_prime(n):\n    return n != 1\n",
	})
	good, bad := filepath.Join(dir, "good.py"), filepath.Join(dir, "bad.py")

	c := run(t, nil, "verify", task, good)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "passed every gate check") || !strings.Contains(c.stdout, "✓ expensive exec (execution, judge)") {
		t.Errorf("stdout:\n%s", c.stdout)
	}
	// A check judge isolation cannot serve says why it runs in-process.
	inProcess := filepath.Join(dir, "task.yaml")
	os.WriteFile(inProcess, []byte("mode: generate\ngoal: g\nartifact: is_prime.py\nchecks:\n- exec: {command: [python3, is_prime.py]}\n"), 0o644)
	c = run(t, nil, "verify", inProcess, good)
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, "note: exec runs the candidate inside the tests' process (in-process isolation: judge isolation serves pytest, go and io checks, not format exit)") ||
		!strings.Contains(c.stdout, "(execution, in-process)") {
		t.Errorf("stdout:\n%s", c.stdout)
	}

	c = run(t, nil, "verify", "--json", task, good, bad)
	c.wantCode(t, exitNotDone)
	var reports []struct {
		File     string `json:"file"`
		OK       bool   `json:"ok"`
		Verdicts []struct {
			Check string `json:"check"`
			OK    bool   `json:"ok"`
			Where string `json:"where"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &reports); err != nil {
		t.Fatalf("%v\n%s", err, c.stdout)
	}
	if len(reports) != 2 || !reports[0].OK || reports[1].OK || reports[1].Verdicts[1].Where == "" {
		t.Errorf("reports %+v: want good ok, bad failing with a location", reports)
	}

	c = run(t, nil, "verify", task)
	c.wantCode(t, exitUsage)
}

// TestVerifyIOCases checks a program by its output, from a task file.
func TestVerifyIOCases(t *testing.T) {
	requireSandboxTools(t)
	dir := write(t, map[string]string{
		"task.yaml": `mode: generate
goal: print the sum of the numbers on stdin
artifact: sum.py
checks:
  - exec:
      command: [python3, sum.py]
      format: io
      cases:
        - {stdin: "1 2", stdout: "3"}
        - name: many
          stdin: |
            1
            2
            3
          stdout: "6\n"
`,
		"good.py": "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n",
		"bad.py":  "print(3)\n",
	})
	c := run(t, nil, "verify", filepath.Join(dir, "task.yaml"), filepath.Join(dir, "good.py"), filepath.Join(dir, "bad.py"))
	c.wantCode(t, exitNotDone)
	for _, want := range []string{"good.py: passed every gate check", "✓ cheap     exec (execution, judge): 2 cases passed", "bad.py: NOT accepted", "many: wrong output"} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, c.stdout)
		}
	}
}

// TestPostgresDatabase runs a task with its runs kept in PostgreSQL
// (test.sh starts a throwaway cluster and sets RATCHET_TEST_POSTGRES_DSN).
func TestPostgresDatabase(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	label := fmt.Sprintf("pg-%d", time.Now().UnixNano())
	c := run(t, nil, "run", "--db", dsn, "--label", label, quickstart)
	c.wantCode(t, exitDone)
	c = run(t, map[string]string{"RATCHET_DB": dsn}, "ls", "--label", label, "--json")
	c.wantCode(t, exitDone)
	var runs []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(c.stdout), &runs); err != nil || len(runs) != 1 || runs[0].Status != "done" {
		t.Fatalf("ls: %v %v", err, c)
	}
	run(t, map[string]string{"RATCHET_DB": dsn}, "replay", runs[0].ID).wantCode(t, exitDone)
}

func TestIsPostgresDSN(t *testing.T) {
	for s, want := range map[string]bool{
		"postgres://u@h/db":                true,
		"postgresql:///ratchet?host=/tmp":  true,
		"host=/run/postgresql dbname=r":    true,
		"dbname=ratchet":                   true,
		"/home/me/.local/state/ratchet.db": false,
		"runs.db":                          false,
		"weird=name.db":                    false,
	} {
		if got := isPostgresDSN(s); got != want {
			t.Errorf("isPostgresDSN(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestApproveAndAnswer: a run that needs a person waits for one with exit
// code 4; approve, deny and answer carry it on in a new process.
func TestApproveAndAnswer(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": `goal: Journal the word yes, then answer yes.
model: scripted:turns.yaml
tools: [append_file]
permissions:
  - {tool: append_file, args: {path: "*.txt"}, action: ask}
checks: [{equals: "yes"}]
`,
		"turns.yaml": `turns:
  - tools: [{name: append_file, args: {path: journal.txt, text: "yes\n"}}]
  - tools: [{name: append_file, args: {path: other.txt, text: "no\n"}}]
  - expect: ["a person refused this call: not that file"]
    finish: {answer: "yes", confidence: 0.9}
`,
	})
	state := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": state}
	c := run(t, env, "run", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitWaiting)
	m := regexp.MustCompile(`run (\S+) is waiting for a person:\n  (.*)\n`).FindStringSubmatch(c.stderr)
	if m == nil || !strings.Contains(m[2], `Allow the agent to call append_file with {"path":"journal.txt"`) {
		t.Fatalf("no specific question:\n%v", c)
	}
	id := m[1]
	c = run(t, env, "ls", "--status", "awaiting_input", "--json")
	if !strings.Contains(c.stdout, id) || !strings.Contains(c.stdout, `"question": "Allow`) {
		t.Errorf("ls does not show the waiting run:\n%v", c)
	}
	// An answer is not an approval.
	run(t, env, "answer", id, "sure").wantCode(t, exitUsage)
	c = run(t, env, "approve", id)
	c.wantCode(t, exitWaiting) // the second call asks again
	if data, _ := os.ReadFile(filepath.Join(dir, "journal.txt")); string(data) != "yes\n" {
		t.Errorf("journal = %q after approval", data)
	}
	c = run(t, env, "deny", id, "not that file")
	c.wantCode(t, exitDone)
	if _, err := os.Stat(filepath.Join(dir, "other.txt")); !os.IsNotExist(err) {
		t.Errorf("a denied call ran: %v", err)
	}
	run(t, env, "approve", id).wantCode(t, exitUsage) // nothing waits any more
	run(t, env, "replay", id).wantCode(t, exitDone)
}

// TestNoWait: with --no-wait nobody is asked: the call is refused.
func TestNoWait(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": `goal: Try to journal, then answer no.
model: scripted:turns.yaml
tools: [append_file]
permissions: [{tool: append_file, action: ask}]
checks: [{equals: "no"}]
`,
		"turns.yaml": `turns:
  - tools: [{name: append_file, args: {path: j.txt, text: "x"}}]
  - expect: ["nobody could approve it now"]
    finish: {answer: "no", confidence: 0.9}
`,
	})
	run(t, nil, "run", "--no-wait", filepath.Join(dir, "task.yaml")).wantCode(t, exitDone)
}

// TestLsSaysWhatItLeftOut: ls says when its limit hid runs, and refuses a
// status no run can have.
func TestLsSaysWhatItLeftOut(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	for range 3 {
		run(t, env, "run", "--quiet", filepath.Join("..", "..", "examples", "quickstart", "task.yaml")).wantCode(t, exitDone)
	}
	c := run(t, env, "ls", "--limit", "2")
	c.wantCode(t, exitDone)
	if strings.Count(c.stdout, "run-") != 2 || !strings.Contains(c.stderr, "the 2 newest shown; more match (--limit 0 shows all") {
		t.Errorf("ls --limit 2 of 3 runs:\n%v", c)
	}
	if c = run(t, env, "ls", "--limit", "3"); strings.Contains(c.stderr, "more match") {
		t.Errorf("ls --limit 3 of 3 runs says more match:\n%v", c)
	}
	c = run(t, env, "ls", "--status", "done,bogus")
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, `--status: "bogus": not a status (done, escalated,`) {
		t.Errorf("ls --status bogus:\n%v", c)
	}
	run(t, env, "ls", "--status", "exhausted:,done").wantCode(t, exitDone)
}

// TestShowTranscript: show --transcript prints a stored run step by step,
// as run printed it, the model's thinking included.
func TestShowTranscript(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	run(t, env, "run", "--quiet", filepath.Join("..", "..", "examples", "reasoning", "task.yaml")).wantCode(t, exitDone)
	c := run(t, env, "show", "last", "--transcript")
	c.wantCode(t, exitDone)
	for _, want := range []string{"step 1  thinking: ", "finish {\"answer\":", "done: attempt 1 passed every check", "usage: steps="} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, c.stdout)
		}
	}
}
