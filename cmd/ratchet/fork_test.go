package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
)

// crashDir copies the crash test's task (three appends to a journal, a
// rejected answer, the right one) into a new directory, with files beside.
func crashDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"task.yaml", "turns.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "crash", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(data)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var forkedRun = regexp.MustCompile(`(?m)^run: (\S+) \(ratchet show`)

// TestForkCommand: ratchet fork lists where a run can fork, refuses a point
// mid-way through a turn naming the nearest, and forks from step 4's model
// call with another model, a message and a budget: the journal the copied
// steps wrote is not written again, the parent's log is unchanged, and the
// fork shows where it came from and replays.
func TestForkCommand(t *testing.T) {
	dir := crashDir(t, map[string]string{"answer.yaml": "turns:\n  - finish: {answer: \"3\", confidence: 0.9}\n"})
	env := map[string]string{"RATCHET_DB": filepath.Join(dir, "runs.db")}
	run(t, env, "run", "--quiet", filepath.Join(dir, "task.yaml")).wantCode(t, exitDone)
	journal := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "workspace", "journal.txt"))
		return string(b)
	}
	if journal() != "one\ntwo\nthree\n" {
		t.Fatalf("parent journal = %q", journal())
	}
	before := run(t, env, "show", "--events", "last")

	list := run(t, env, "fork", "last")
	list.wantCode(t, exitUsage)
	points := regexp.MustCompile(`--at (\d+) +step (\d+)'s model call`).FindAllStringSubmatch(list.stderr, -1)
	if len(points) != 5 {
		t.Fatalf("fork without --at lists %d points; want 5 (one per step):\n%s", len(points), list.stderr)
	}
	mid := run(t, env, "fork", "last", "--at", "6")
	mid.wantCode(t, exitUsage)
	if !strings.Contains(mid.stderr, "not a point a fork can start from") || !strings.Contains(mid.stderr, "nearest: entry "+points[0][1]+" (step 1's model call) or entry "+points[1][1]) {
		t.Errorf("fork --at 6 says:\n%s", mid.stderr)
	}

	c := run(t, env, "fork", "last", "--at", points[3][1], "--model", "scripted:"+filepath.Join(dir, "answer.yaml"),
		"--message", "The journal has three lines.", "--steps", "9", "--json")
	c.wantCode(t, exitDone)
	res := c.result(t)
	if res.Status != loop.Done || res.Limits.Steps != 9 || res.Usage.Steps != 4 {
		t.Errorf("fork: %s, steps %d of %d; want done at step 4 of 9", res.Status, res.Usage.Steps, res.Limits.Steps)
	}
	if journal() != "one\ntwo\nthree\n" {
		t.Errorf("journal after the fork = %q; the copied steps' appends ran again", journal())
	}
	m := forkedRun.FindStringSubmatch(c.stderr)
	if m == nil {
		t.Fatalf("fork names no run:\n%s", c.stderr)
	}
	child := m[1]
	parentID := strings.TrimPrefix(regexp.MustCompile(`"run":"([^"]+)"`).FindString(before.stdout), `"run":"`)
	parentID = strings.TrimSuffix(parentID, `"`)
	if after := run(t, env, "show", "--events", parentID); after.stdout != before.stdout {
		t.Errorf("the parent's log changed with the fork")
	}
	show := run(t, env, "show", child)
	if !strings.Contains(show.stdout, "forked:  from "+parentID+" after entry "+points[3][1]) {
		t.Errorf("show of the fork does not say where it came from:\n%s", show.stdout)
	}
	var rows []map[string]any
	ls := run(t, env, "ls", "--json")
	if err := json.Unmarshal([]byte(ls.stdout), &rows); err != nil || !strings.Contains(ls.stdout, `"fork_of": "`+parentID+`"`) {
		t.Errorf("ls --json lacks the fork's parent (%v):\n%s", err, ls.stdout)
	}
	if text := run(t, env, "ls"); !strings.Contains(text.stdout, "(fork of "+parentID+"@"+points[3][1]+")") {
		t.Errorf("ls does not mark the fork:\n%s", text.stdout)
	}
	run(t, env, "replay", child).wantCode(t, exitDone)
	events := run(t, env, "show", "--events", child).stdout
	if !strings.Contains(events, `"type":"fork"`) || !strings.Contains(events, "The journal has three lines.") {
		t.Errorf("the fork's log lacks its fork event with the message:\n%s", events)
	}
}

// TestSayCommand: ratchet say refuses a finished run; a run waiting for a
// person takes the message when answered.
func TestSayCommand(t *testing.T) {
	dir := crashDir(t, map[string]string{})
	env := map[string]string{"RATCHET_DB": filepath.Join(dir, "runs.db")}
	run(t, env, "run", "--quiet", filepath.Join(dir, "task.yaml")).wantCode(t, exitDone)
	c := run(t, env, "say", "last", "too late")
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, "run has finished (done)") {
		t.Errorf("say to a finished run:\n%s", c.stderr)
	}
	run(t, env, "say", "nope", "hello").wantCode(t, exitUsage)
	run(t, env, "say", "last").wantCode(t, exitUsage)
}

// TestSayAcrossProcesses: 'ratchet say' in one process reaches a run that
// 'ratchet run' carries out in another, through the run database: said
// while step 2's model call is in flight, it is logged before step 3's
// call, which carries it, and the run's log replays.
func TestSayAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	turns := `turns:
  - tools: [{name: append_file, args: {path: journal.txt, text: "one\n"}}]
  - delay: 1500ms
    tools: [{name: append_file, args: {path: journal.txt, text: "two\n"}}]
  - finish: {answer: "3", confidence: 0.9}
  - finish: {answer: "2", confidence: 0.9}
`
	dir := crashDir(t, map[string]string{})
	if err := os.WriteFile(filepath.Join(dir, "turns.yaml"), []byte(turns), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	cmd := exec.Command(bin, "run", filepath.Join(dir, "task.yaml"))
	cmd.Env = append(os.Environ(), "RATCHET_DB="+db, "RATCHET_NO_STREAM=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Step 2's model call (entry 7) is logged before it is made, and it
	// takes 1.5s to answer: say while it is in flight.
	watch, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runs, err := watch.ListRuns(ctx, store.Filter{Limit: 1})
		if err == nil && len(runs) == 1 {
			if seq, _ := watch.LastSeq(ctx, runs[0].ID); seq >= 7 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not reach step 2's model call:\n%s", stderr.String())
		}
	}
	say := exec.Command(bin, "say", "last", "Only two lines, then answer 2.")
	say.Env = cmd.Env
	if b, err := say.CombinedOutput(); err != nil || !strings.Contains(string(b), "queued for run") {
		t.Errorf("ratchet say: %v\n%s", err, b)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ratchet run: %v\n%s", err, stderr.String())
	}
	env := map[string]string{"RATCHET_DB": db}
	events := strings.Split(run(t, env, "show", "--events", "last").stdout, "\n")
	said, m3 := -1, -1
	for i, line := range events {
		switch {
		case strings.Contains(line, `"type":"user_message"`) && strings.Contains(line, "Only two lines"):
			said = i
		case strings.Contains(line, `"type":"call_model","id":"m3"`):
			m3 = i
		}
	}
	if said < 0 || m3 < 0 || said > m3 {
		t.Errorf("user_message at line %d, step 3's call at %d; want the message logged before the call:\n%s", said, m3, strings.Join(events, "\n"))
	}
	run(t, env, "replay", "last").wantCode(t, exitDone)
}

var copyLine = regexp.MustCompile(`(?m)^ratchet: working on a copy of the workspace: (\S+)$`)

// TestForkCopyWorkspace: a fork of a copy_workspace run never works in
// the parent's copy, which keeps what its steps wrote. On a layer (root)
// it starts from the workspace as it was at the fork point (the parent's
// snapshot there: after step 1's append at step 2's call, after all three
// at step 4's); on a copy from the original (the copied steps' appends do
// not run again).
func TestForkCopyWorkspace(t *testing.T) {
	dir := crashDir(t, map[string]string{"answer.yaml": "turns:\n  - finish: {answer: \"3\", confidence: 0.9}\n"})
	task := filepath.Join(dir, "task.yaml")
	data, _ := os.ReadFile(task)
	os.WriteFile(task, append(data, "copy_workspace: true\n"...), 0o644)
	env := map[string]string{"RATCHET_DB": filepath.Join(dir, "runs.db")}
	parent := run(t, env, "run", task)
	parent.wantCode(t, exitDone)
	m := copyLine.FindStringSubmatch(parent.stderr)
	if m == nil {
		t.Fatalf("the run names no copy:\n%s", parent.stderr)
	}
	parentID := forkedRun.FindStringSubmatch(parent.stderr)[1]
	// A layer's view is unmounted with the run; its upper layer holds the
	// files it wrote.
	written := func(ws string) string {
		if filepath.Base(ws) == "merged" {
			ws = filepath.Join(filepath.Dir(ws), "upper")
		}
		b, _ := os.ReadFile(filepath.Join(ws, "journal.txt"))
		return string(b)
	}
	if got := written(m[1]); got != "one\ntwo\nthree\n" {
		t.Fatalf("the parent's copy holds %q", got)
	}
	points := regexp.MustCompile(`--at (\d+) +step (\d+)'s model call`).FindAllStringSubmatch(run(t, env, "fork", parentID).stderr, -1)
	if len(points) < 4 {
		t.Fatalf("fork points: %v", points)
	}
	onLayer := os.Geteuid() == 0
	var c cli
	var fm []string
	for _, at := range []struct {
		point     int
		want      string
		wantPatch string
	}{{1, "one\n", "+one"}, {3, "one\ntwo\nthree\n", "+three"}} {
		c = run(t, env, "fork", parentID, "--at", points[at.point][1], "--model", "scripted:"+filepath.Join(dir, "answer.yaml"), "--json")
		c.wantCode(t, exitDone)
		fm = copyLine.FindStringSubmatch(c.stderr)
		if fm == nil || fm[1] == m[1] {
			t.Fatalf("the fork works in %v, the parent in %s:\n%s", fm, m[1], c.stderr)
		}
		if got := written(m[1]); got != "one\ntwo\nthree\n" {
			t.Errorf("the fork changed the parent's copy: %q", got)
		}
		want := ""
		if onLayer {
			want = at.want
		}
		if got := written(fm[1]); got != want {
			t.Errorf("forked at step %s as uid %d, the fork's workspace holds %q, want %q", points[at.point][2], os.Geteuid(), got, want)
		}
		if p := c.result(t).Patch; onLayer && (p == nil || !strings.Contains(p.Diff, at.wantPatch)) {
			t.Errorf("the fork's patch: %+v", p)
		}
	}
	// The fork's row records its own copy's start, which a resume of the
	// fork goes on in and takes its patch against.
	db, err := sqlite.Open(env["RATCHET_DB"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	row, err := db.Run(context.Background(), forkedRun.FindStringSubmatch(c.stderr)[1])
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Start struct{ Copy string } `json:"start"`
	}
	if err := json.Unmarshal(row.Task, &info); err != nil || info.Start.Copy != fm[1] {
		t.Errorf("the fork's row records the start of %q, want %q (%v)", info.Start.Copy, fm[1], err)
	}
}
