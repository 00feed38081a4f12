package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
)

func TestFindRun(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, r := range []store.Run{
		{ID: "run-a1", Status: "done"},
		{ID: "run-a2", Status: "done"},
		{ID: "run-b7", Status: "done"},
		{ID: "run-b7/c1", Parent: "run-b7", Status: "done"}, // newest, but a sub-agent's
	} {
		r.Created = t0.Add(time.Duration(i) * time.Minute)
		r.Updated = r.Created
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ arg, want, err string }{
		{arg: "run-a1", want: "run-a1"},
		{arg: "run-b", want: "run-b7"},      // not ambiguous with its sub-agent run-b7/c1
		{arg: "run-b7/", want: "run-b7/c1"}, // no top-level run matches: sub-agents do
		{arg: "run-b7", want: "run-b7"},
		{arg: "run-b7/c1", want: "run-b7/c1"},
		{arg: "last", want: "run-b7"},
		{arg: "run-a", err: "run-a is the start of 2 run IDs (run-a2, run-a1); type more of it"},
		{arg: "zzz", err: "no run zzz in DB (ratchet ls lists runs)"},
		{arg: "", err: "an empty run ID"},
	} {
		got, err := findRun(ctx, s, tc.arg)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err || runErrCode(err) != exitUsage {
				t.Errorf("findRun(%q) = %q, %v; want the error %q (exit %d)", tc.arg, got.ID, err, tc.err, exitUsage)
			}
		case err != nil || got.ID != tc.want:
			t.Errorf("findRun(%q) = %q, %v; want %q", tc.arg, got.ID, err, tc.want)
		}
	}
}

// TestRunsByIDPrefixRmAndGC: runs are found by prefix and "last"; rm and gc
// delete finished runs and never a running one.
func TestRunsByIDPrefixRmAndGC(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	first := run(t, env, "run", "--quiet", quickstart)
	first.wantCode(t, exitDone)
	id := regexp.MustCompile(`(?m)^run: (\S+) `).FindStringSubmatch(first.stderr)[1]

	show := run(t, env, "show", "last")
	show.wantCode(t, exitDone)
	if !strings.Contains(show.stdout, "run:     "+id+"\n") {
		t.Errorf("show last does not show %s:\n%v", id, show)
	}
	if c := run(t, env, "replay", id[:len(id)-3]); c.code != exitDone || !strings.Contains(c.stdout, "identical") {
		t.Errorf("replay by prefix: %v", c)
	}
	if c := run(t, env, "show", "nope"); c.code != exitUsage || !strings.Contains(c.stderr, "no run nope in DB (ratchet ls lists runs)") {
		t.Errorf("show of an unknown run: %v", c)
	}
	if c := run(t, env, "ls", "--since", "1h"); !strings.Contains(c.stdout, id) {
		t.Errorf("ls --since 1h lacks the run just made: %v", c)
	}
	if c := run(t, env, "ls", "--since", "soon"); c.code != exitUsage || strings.Contains(c.stderr, "Usage") {
		t.Errorf("a bad --since should be one line and exit 2: %v", c)
	}

	// A running run (a process that holds it) is kept by rm and gc.
	ctx := context.Background()
	m := &Main{Getenv: func(k string) string { return env[k] }}
	s, err := m.openStore(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	host, _ := os.Hostname()
	me := strconv.Itoa(os.Getpid()) + "@" + host // this test process: alive
	if err := s.CreateRun(ctx, store.Run{ID: "run-live", Status: store.StatusRunning, Created: old, Updated: old, Holder: me, Heartbeat: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// A run whose process died: it says running, but nobody carries it out.
	if err := s.CreateRun(ctx, store.Run{ID: "run-dead", Status: store.StatusRunning, Created: old, Updated: old, Holder: "2147483646@" + host, Heartbeat: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if c := run(t, env, "rm", "run-live"); c.code != exitUsage || !strings.Contains(c.stderr, "run-live is running") {
		t.Errorf("rm of a running run: %v", c)
	}
	if c := run(t, env, "gc", "--older-than", "1d"); c.code != exitDone || !strings.Contains(c.stderr, "deleted 0 run(s)") {
		t.Errorf("gc deleted a running run or the fresh one: %v", c)
	}
	if c := run(t, env, "gc", "--older-than", "0s", "--dry-run"); !strings.Contains(c.stdout, "would delete "+id) || strings.Contains(c.stdout, "run-live") {
		t.Errorf("gc --dry-run: %v", c)
	}
	ls := run(t, env, "ls")
	if !regexp.MustCompile(`run-dead +interrupted`).MatchString(ls.stdout) || !regexp.MustCompile(`run-live +running`).MatchString(ls.stdout) {
		t.Errorf("ls should show the dead run interrupted and the live one running:\n%s", ls.stdout)
	}
	if c := run(t, env, "show", "run-dead"); !strings.Contains(c.stdout, "status:  interrupted\n") || !strings.Contains(c.stdout, "'ratchet resume run-dead' carries it on") {
		t.Errorf("show of an interrupted run: %v", c)
	}
	if c := run(t, env, "rm", "run-dead"); c.code != exitDone {
		t.Errorf("rm of an interrupted run: %v", c)
	}
	if c := run(t, env, "rm", id); c.code != exitDone || c.stdout != "deleted "+id+"\n" {
		t.Errorf("rm: %v", c)
	}
	if c := run(t, env, "ls"); strings.Contains(c.stdout, id) || !strings.Contains(c.stdout, "run-live") {
		t.Errorf("after rm, ls: %v", c)
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		c := run(t, nil, "completion", sh)
		c.wantCode(t, exitDone)
		if !strings.Contains(c.stdout, "ratchet __runs") || !strings.Contains(c.stdout, "resume") {
			t.Errorf("%s completion lacks run IDs or subcommands:\n%s", sh, c.stdout)
		}
	}
	run(t, nil, "completion", "tcsh").wantCode(t, exitUsage)
	// Every command the help lists completes, and so do eval's.
	help := run(t, nil, "help").stdout
	bash := run(t, nil, "completion", "bash").stdout
	for _, m := range regexp.MustCompile(`(?m)^  ratchet ([a-z]+)`).FindAllStringSubmatch(help, -1) {
		if !strings.Contains(bash, " "+m[1]+" ") && !strings.Contains(bash, `"`+m[1]+" ") {
			t.Errorf("the help lists %s, which bash completion does not offer", m[1])
		}
	}
	evalWords := regexp.MustCompile(`(?s)\teval\)\n.*?compgen -W "([^"]*)"`).FindStringSubmatch(bash)
	for _, sub := range []string{"run", "report", "compare", "add", "rescore"} {
		if evalWords == nil || !slices.Contains(strings.Fields(evalWords[1]), sub) {
			t.Errorf("bash completion does not offer eval %s:\n%s", sub, bash)
		}
	}
}

// TestConfigProblemsAsJSON: with --json, a task file's problems are a JSON
// array on stdout, every one with its place; a bad flag is one line.
func TestConfigProblemsAsJSON(t *testing.T) {
	dir := write(t, map[string]string{"task.yaml": "goal: g\nmodel: scripted:missing.yaml\nchecks: [{equal: a}]\nbudget: {stpes: 3}\n"})
	c := run(t, nil, "run", "--json", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitUsage)
	var got []struct {
		File         string
		Line, Column int
		Message      string
	}
	if err := json.Unmarshal([]byte(c.stdout), &got); err != nil || len(got) != 2 {
		t.Fatalf("stdout is not the two problems as JSON (%v):\n%v", err, c)
	}
	if got[0].Line != 3 || got[0].Column != 11 || !strings.Contains(got[0].Message, `did you mean "equals"?`) ||
		got[1].Line != 4 || !strings.Contains(got[1].Message, `did you mean "steps"?`) || got[1].File != filepath.Join(dir, "task.yaml") {
		t.Errorf("problems: %+v", got)
	}
	c = run(t, nil, "run", "--steps", "many", filepath.Join(dir, "task.yaml"))
	if c.code != exitUsage || strings.Count(c.stderr, "\n") != 1 || !strings.Contains(c.stderr, `invalid value "many" for flag -steps`) {
		t.Errorf("a bad flag value should be one line:\n%v", c)
	}
}

// TestGCSweepsStaleSandboxes: gc removes a sandbox directory whose owner is
// gone and keeps one whose owner holds its lock.
func TestGCSweepsStaleSandboxes(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stale := filepath.Join(tmp, "ratchet-sandbox-1")
	live := filepath.Join(tmp, "ratchet-sandbox-2")
	for _, d := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(d, "ws"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "ws", "f"), make([]byte, 3<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".owner"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(d, ".owner"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := os.Open(filepath.Join(live, ".owner"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	if c := run(t, env, "gc", "--older-than", "1d", "--dry-run"); c.code != exitDone || strings.Contains(c.stderr, "sandbox") {
		t.Errorf("gc --dry-run touched sandboxes: %v", c)
	}
	c := run(t, env, "gc", "--older-than", "1d")
	if c.code != exitDone || !strings.Contains(c.stderr, "removed 1 sandbox directory(ies) left by killed processes (3.0 MiB)") {
		t.Errorf("gc: %v", c)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale sandbox is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live, "ws", "f")); err != nil {
		t.Errorf("gc removed a live process's sandbox: %v", err)
	}
}
