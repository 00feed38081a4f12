package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
)

// temporalCLI is the built ratchet binary and a directory holding the
// Temporal test's task files, its workspace and its run database, shared
// by every process the test starts.
type temporalCLI struct {
	bin, dir, db, addr string
	env                []string // more NAME=value for every process
}

func newTemporalCLI(t *testing.T, bin, addr string) *temporalCLI {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"task.yaml", "approve.yaml", "turns.yaml", "simple.yaml", "simple-turns.yaml", "suite.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "temporal", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &temporalCLI{bin: bin, dir: dir, db: filepath.Join(dir, "runs.db"), addr: addr}
}

func (c *temporalCLI) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(append(os.Environ(), "RATCHET_DB="+c.db, "RATCHET_NO_STREAM=1"), c.env...)
	return cmd
}

// run runs the CLI to its end and returns its exit code and output.
func (c *temporalCLI) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// worker starts 'ratchet worker' on the test's queue, with flags more;
// it is killed when the test ends if it is still running.
func (c *temporalCLI) worker(t *testing.T, flags ...string) *exec.Cmd {
	t.Helper()
	cmd := c.command(context.Background(), append([]string{"worker", "--temporal", c.addr, "--task-queue", "e2e"}, flags...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("worker output:\n%s", out.String())
		}
	})
	return cmd
}

func (c *temporalCLI) journal(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, "workspace", "journal.txt"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

func decodeResult(t *testing.T, out string) loop.Result {
	t.Helper()
	var res loop.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("the Result JSON: %v\n%s", err, out)
	}
	res.Usage.Time = 0
	return res
}

// TestTemporal runs the CLI against one real Temporal dev server.
func TestTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	addr := testenv.TemporalServer(t)
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("worker killed", func(t *testing.T) { testTemporalWorkerKilled(t, newTemporalCLI(t, bin, addr)) })
	t.Run("approve", func(t *testing.T) { testTemporalApprove(t, newTemporalCLI(t, bin, addr)) })
	t.Run("ui approve", func(t *testing.T) { testTemporalUIApprove(t, newTemporalCLI(t, bin, addr)) })
	t.Run("eval", func(t *testing.T) { testTemporalEval(t, newTemporalCLI(t, bin, addr)) })
	t.Run("subagents", func(t *testing.T) { testTemporalSubagents(t, newTemporalCLI(t, bin, addr)) })
	t.Run("shown", func(t *testing.T) { testTemporalShown(t, newTemporalCLI(t, bin, addr)) })
	t.Run("cache and record", func(t *testing.T) { testTemporalCacheAndRecord(t, newTemporalCLI(t, bin, addr)) })
	t.Run("secrets", func(t *testing.T) { testTemporalSecrets(t, newTemporalCLI(t, bin, addr)) })
	t.Run("fleet limits", func(t *testing.T) { testTemporalFleetLimits(t, newTemporalCLI(t, bin, addr)) })
}

// testTemporalSecrets: a secret the processes know (a secret-named
// variable) that the model echoes reaches neither the workflow's history
// on the server nor the run database.
func testTemporalSecrets(t *testing.T, c *temporalCLI) {
	const canary = "tok-canary-5d1e8b2f7a"
	c.env = append(c.env, "E2E_SERVICE_TOKEN="+canary)
	for name, data := range map[string]string{
		"secret.yaml":       "goal: What is 2+3?\nmodel: scripted:secret-turns.yaml\nchecks: [{equals: \"5\"}]\nbudget: {steps: 3}\n",
		"secret-turns.yaml": "turns:\n  - text: \"The token is " + canary + ".\"\n    finish: {answer: \"5\", confidence: 0.9}\n",
	} {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.worker(t)
	code, out, errOut := c.run(t, "run", "--temporal", c.addr, "--task-queue", "e2e", "--json", "secret.yaml")
	if code != exitDone {
		t.Fatalf("ratchet run --temporal: exit %d:\n%s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, canary) {
		t.Errorf("the CLI printed the secret:\n%s%s", out, errOut)
	}
	_, ls, _ := c.run(t, "ls", "--json")
	var rows []struct{ ID string }
	if err := json.Unmarshal([]byte(ls), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("ratchet ls --json: %v %s", err, ls)
	}
	tc, err := client.Dial(client.Options{HostPort: c.addr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	it := tc.GetWorkflowHistory(context.Background(), rows[0].ID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events++
		if strings.Contains(ev.String(), canary) {
			t.Errorf("history event %d (%s) holds the secret", ev.GetEventId(), ev.GetEventType())
		}
	}
	if events < 5 {
		t.Errorf("%d history events: the history was not read", events)
	}
	for _, f := range []string{c.db, c.db + "-wal"} {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(canary)) {
			t.Errorf("%s holds the secret", filepath.Base(f))
		}
	}
}

// testTemporalSubagents: the sub-agents example runs on Temporal as it
// runs locally, its sub-agent a child workflow with a row of its own.
func testTemporalSubagents(t *testing.T, c *temporalCLI) {
	c.worker(t)
	example, err := filepath.Abs("../../examples/subagents/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := c.run(t, "run", "--temporal", c.addr, "--task-queue", "e2e", "--json", example)
	if code != exitDone {
		t.Fatalf("ratchet run --temporal: exit %d:\n%s%s", code, out, errOut)
	}
	if res := decodeResult(t, out); res.Status != loop.Done || res.Best.Answer != "42" || res.Usage.Steps != 4 {
		t.Errorf("%s with %q in %d steps; want done with 42 in the parent's 2 steps and the child's 2", res.Status, res.Best.Answer, res.Usage.Steps)
	}
	_, ls, _ := c.run(t, "ls", "--json")
	var rows []struct{ ID, Parent, Status string }
	if err := json.Unmarshal([]byte(ls), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("ratchet ls --json: %v %s", err, ls)
	}
	parent, child := rows[0], rows[1]
	if parent.Parent != "" {
		parent, child = child, parent
	}
	if child.ID != parent.ID+"/c1" || child.Parent != parent.ID || child.Status != "done" {
		t.Errorf("rows %+v: want the parent and its done child %s/c1", rows, parent.ID)
	}
	if code, out, errOut := c.run(t, "replay", child.ID); code != exitDone || !strings.Contains(out, "identical") {
		t.Errorf("ratchet replay of the child: exit %d:\n%s%s", code, out, errOut)
	}
}

// testTemporalShown: a run on Temporal is shown as a local run is, from
// the log its workers record: the same progress lines, the same --log
// entries, the same spans (OTEL_TRACES_EXPORTER=console), sub-agent's
// included.
func testTemporalShown(t *testing.T, c *temporalCLI) {
	c.worker(t)
	c.env = append(c.env, "OTEL_TRACES_EXPORTER=console")
	example, err := filepath.Abs("../../examples/subagents/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type shown struct{ progress, log, spans []string }
	show := func(flags ...string) shown {
		t.Helper()
		logFile := filepath.Join(t.TempDir(), "log.jsonl")
		args := append(append([]string{"run", "--log", logFile}, flags...), example)
		code, out, errOut := c.run(t, args...)
		if code != exitDone {
			t.Fatalf("ratchet %s: exit %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		var s shown
		runID := regexp.MustCompile(`run-[0-9.-]+`)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			line = runID.ReplaceAllString(line, "RUN")
			s.progress = append(s.progress, regexp.MustCompile(` time=\S+`).ReplaceAllString(line, ""))
		}
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var e struct {
				Seq   int64
				Run   string
				Kind  string
				Event struct{ Type string }
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("--log: %v: %s", err, line)
			}
			s.log = append(s.log, fmt.Sprintf("%s %d %s %s", runID.ReplaceAllString(e.Run, "RUN"), e.Seq, e.Kind, e.Event.Type))
		}
		for _, m := range regexp.MustCompile(`"Name":"([^"]+)"`).FindAllStringSubmatch(errOut, -1) {
			s.spans = append(s.spans, m[1])
		}
		slices.Sort(s.log) // a sub-agent's entries interleave with its parent's
		slices.Sort(s.spans)
		return s
	}
	local, onTemporal := show(), show("--temporal", c.addr, "--task-queue", "e2e")
	if d := cmp.Diff(local.progress, onTemporal.progress); d != "" {
		t.Errorf("progress (-local +temporal):\n%s", d)
	}
	if d := cmp.Diff(local.log, onTemporal.log); d != "" || len(local.log) < 20 {
		t.Errorf("--log, %d entries (-local +temporal):\n%s", len(local.log), d)
	}
	if d := cmp.Diff(local.spans, onTemporal.spans); d != "" || !slices.Contains(local.spans, "invoke_agent ratchet.subagent") {
		t.Errorf("spans (-local +temporal):\n%s", d)
	}
}

// testTemporalCacheAndRecord: a worker given --cache answers a run's calls
// from it (counted at a provider's server), and ratchet run --temporal
// --record writes the recording a local run writes, from the log.
func testTemporalCacheAndRecord(t *testing.T, c *temporalCLI) {
	srv := &countingAnthropic{}
	api := httptest.NewServer(srv)
	defer api.Close()
	c.env = append(c.env, "ANTHROPIC_API_KEY="+canaryKey, "ANTHROPIC_BASE_URL="+api.URL)
	task := filepath.Join(c.dir, "cached.yaml")
	writeFile(t, task, "goal: Say the magic word.\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: please}]\n")
	c.worker(t, "--cache", filepath.Join(c.dir, "cache"))
	recording := func(args ...string) string {
		t.Helper()
		file := filepath.Join(t.TempDir(), "turns.yaml")
		args = append(append([]string{"run", "--record", file}, args...), task)
		if code, out, errOut := c.run(t, args...); code != exitDone || !strings.Contains(errOut, "recorded the model's replies") {
			t.Fatalf("ratchet %s: exit %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), canaryKey) {
			t.Errorf("the recording holds the key:\n%s", data)
		}
		_, rest, _ := strings.Cut(string(data), "\n") // "# From run RUN."
		return rest
	}
	onTemporal := recording("--temporal", c.addr, "--task-queue", "e2e")
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("the first run made %d requests, want 1", n)
	}
	if again := recording("--temporal", c.addr, "--task-queue", "e2e"); again != onTemporal {
		t.Errorf("the cached run's recording differs:\n%s\nfrom\n%s", again, onTemporal)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("the second run made %d more requests: the worker's cache did not answer it", n-1)
	}
	if local := recording(); local != onTemporal || !strings.Contains(local, "raw_args") {
		t.Errorf("the local recording (-local +temporal):\n%s", cmp.Diff(local, onTemporal))
	}
	// An eval's repeats stay independent samples in the worker's cache,
	// as in a local eval's: each is asked once, and answered from the
	// cache when the eval runs again.
	suite := filepath.Join(c.dir, "cached-suite.yaml")
	writeFile(t, suite, "label: cached\nrepeats: 2\nconcurrency: 1\ncases:\n  - task: cached.yaml\n")
	for i, want := range []int64{2, 0} {
		before := srv.requests.Load()
		args := []string{"eval", "run", "--temporal", c.addr, "--task-queue", "e2e", "--quiet", "--dir", filepath.Join(c.dir, fmt.Sprint("eval", i)), suite}
		if code, out, errOut := c.run(t, args...); code != exitDone {
			t.Fatalf("ratchet eval run --temporal: exit %d:\n%s%s", code, out, errOut)
		}
		if n := srv.requests.Load() - before; n != want {
			t.Errorf("eval %d on the worker's cache made %d requests, want %d", i+1, n, want)
		}
	}
}

// testTemporalEval: ratchet eval run --temporal runs every repeat of a
// case as a run workflow on the workers; the records and the run database
// say what a local eval run says.
func testTemporalEval(t *testing.T, c *temporalCLI) {
	c.worker(t)
	c.env = append(c.env, "OTEL_TRACES_EXPORTER=console")
	code, out, errOut := c.run(t, "eval", "run", "--temporal", c.addr, "--task-queue", "e2e", "--json", "--quiet", "--dir", filepath.Join(c.dir, "eval"), "suite.yaml")
	if code != exitDone {
		t.Fatalf("ratchet eval run --temporal: exit %d:\n%s%s", code, out, errOut)
	}
	type summary struct {
		Records int `json:"records"`
		Suite   struct {
			Runs      int             `json:"runs"`
			Success   json.RawMessage `json:"success"`
			FirstPass json.RawMessage `json:"first_attempt_pass"`
			Iter      json.RawMessage `json:"iterations"`
		} `json:"suite"`
	}
	var remote summary
	if err := json.Unmarshal([]byte(out), &remote); err != nil || remote.Records != 3 {
		t.Fatalf("%v: %d records\n%s", err, remote.Records, out)
	}
	_, ls, _ := c.run(t, "ls", "--json", "--label", "eval:temporal")
	var rows []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(ls), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("ratchet ls --json --label eval:temporal: %v %s", err, ls)
	}
	tc, err := client.Dial(client.Options{HostPort: c.addr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	parents := map[string]bool{}
	for _, r := range rows {
		if r.Status != "done" {
			t.Errorf("run %s: %s", r.ID, r.Status)
		}
		desc, err := tc.DescribeWorkflow(context.Background(), r.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		parents[desc.RawResponse.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId()] = true
	}
	// One suite workflow is every run's parent, and it has ended.
	if len(parents) != 1 || parents[""] {
		t.Fatalf("the runs' parents: %v, want one suite workflow", parents)
	}
	for p := range parents {
		var n int
		if err := tc.GetWorkflow(context.Background(), p, "").Get(context.Background(), &n); err != nil || n != 3 {
			t.Errorf("suite workflow %s: %d children (%v), want 3", p, n, err)
		}
	}
	// A local eval of the same suite agrees, and so do its spans.
	code, localOut, localErr := c.run(t, "eval", "run", "--json", "--quiet", "--dir", filepath.Join(c.dir, "eval-local"), "suite.yaml")
	if code != exitDone {
		t.Fatalf("local eval: exit %d:\n%s", code, localErr)
	}
	spans := func(stderr string) []string {
		var names []string
		for _, m := range regexp.MustCompile(`"Name":"([^"]+)"`).FindAllStringSubmatch(stderr, -1) {
			names = append(names, m[1])
		}
		slices.Sort(names)
		return names
	}
	if d := cmp.Diff(spans(localErr), spans(errOut)); d != "" || strings.Count(errOut, `"Name":"invoke_agent ratchet"`) != 3 {
		t.Errorf("the eval's spans (-local +temporal):\n%s", d)
	}
	var local summary
	if err := json.Unmarshal([]byte(localOut), &local); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(local.Suite, remote.Suite, cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })); d != "" {
		t.Errorf("the suite's metrics differ (-local +temporal):\n%s", d)
	}
}

// testTemporalWorkerKilled runs a task on a real Temporal dev server with
// 'ratchet run --temporal', kills its worker with SIGKILL in the middle of
// the run, and lets a second worker finish it. The run ends as the same
// task run locally ends, no append (not safe to run twice) happens twice,
// and ls, show and replay read the run from the database like a local one.
func testTemporalWorkerKilled(t *testing.T, c *temporalCLI) {
	first := c.worker(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := c.command(ctx, "run", "--temporal", c.addr, "--task-queue", "e2e", "--json", "task.yaml")
	var out, errOut bytes.Buffer
	run.Stdout, run.Stderr = &out, &errOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the first append is in, the worker is in the second turn's
	// model call (1.5 s long): kill it there.
	deadline := time.Now().Add(time.Minute)
	for c.journal(t) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the first append never happened; run output:\n%s%s", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.worker(t)
	err := run.Wait()
	if code := run.ProcessState.ExitCode(); err != nil || code != exitDone {
		t.Fatalf("ratchet run --temporal exited %d (%v):\n%s%s", code, err, out.String(), errOut.String())
	}
	got := decodeResult(t, out.String())
	if j := c.journal(t); j != "one\ntwo\nthree\n" {
		t.Errorf("journal %q, want each line once", j)
	}

	// The same task run in this process, in a fresh workspace.
	if err := os.Remove(filepath.Join(c.dir, "workspace", "journal.txt")); err != nil {
		t.Fatal(err)
	}
	code, localOut, localErr := c.run(t, "run", "--json", "--db", filepath.Join(c.dir, "local.db"), "task.yaml")
	if code != exitDone {
		t.Fatalf("local run exited %d:\n%s", code, localErr)
	}
	if d := cmp.Diff(decodeResult(t, localOut), got); d != "" {
		t.Errorf("the Temporal run's Result differs from the local run's (-local +temporal):\n%s", d)
	}

	// The run database has it, as it has a local run.
	_, ls, _ := c.run(t, "ls", "--json")
	var rows []struct {
		ID, Status string
	}
	if err := json.Unmarshal([]byte(ls), &rows); err != nil || len(rows) != 1 || rows[0].Status != "done" {
		t.Fatalf("ratchet ls --json: %v %s", err, ls)
	}
	id := rows[0].ID
	if code, show, _ := c.run(t, "show", "--json", id); code != 0 || !strings.Contains(show, `"status": "done"`) {
		t.Errorf("ratchet show --json %s: %d %s", id, code, show)
	}
	if code, rep, repErr := c.run(t, "replay", id); code != 0 {
		t.Errorf("ratchet replay %s: %d %s%s", id, code, rep, repErr)
	}
	if code, _, resumeErr := c.run(t, "resume", id); code == 0 || !strings.Contains(resumeErr, "finished") && !strings.Contains(resumeErr, "Temporal") {
		t.Errorf("ratchet resume of a finished Temporal run: %d %s", code, resumeErr)
	}
}

// testTemporalApprove: a Temporal run that asks for an approval leaves
// 'ratchet run' waiting (exit 4); 'ratchet answer' is refused as for a
// local run, 'ratchet say' queues a message for it, and 'ratchet approve'
// carries it on to its end.
func testTemporalApprove(t *testing.T, c *temporalCLI) {
	c.worker(t)
	code, _, errOut := c.run(t, "run", "--temporal", c.addr, "--task-queue", "e2e", "approve.yaml")
	if code != exitWaiting || !strings.Contains(errOut, "is waiting for a person") {
		t.Fatalf("ratchet run --temporal: exit %d, want %d waiting:\n%s", code, exitWaiting, errOut)
	}
	_, ls, _ := c.run(t, "ls", "--json")
	var rows []struct{ ID, Status, Question string }
	if err := json.Unmarshal([]byte(ls), &rows); err != nil || len(rows) != 1 || rows[0].Status != "awaiting_input" {
		t.Fatalf("ratchet ls --json: %v %s", err, ls)
	}
	id := rows[0].ID
	if code, _, errOut := c.run(t, "answer", id, "yes"); code != exitUsage || !strings.Contains(errOut, "asks for an approval (approve or deny), not an answer") {
		t.Errorf("ratchet answer to an approval: exit %d:\n%s", code, errOut)
	}
	// A message said while it waits reaches its workflow by Update, and
	// its log once it goes on.
	if code, _, errOut := c.run(t, "say", id, "Approval is on its way."); code != exitDone || !strings.Contains(errOut, "queued for run") {
		t.Errorf("ratchet say to a waiting Temporal run: exit %d:\n%s", code, errOut)
	}
	code, out, errOut := c.run(t, "approve", "--json", id)
	if code != exitDone {
		t.Fatalf("ratchet approve: exit %d:\n%s%s", code, out, errOut)
	}
	if _, events, _ := c.run(t, "show", "--events", id); !strings.Contains(events, `"type":"user_message"`) || !strings.Contains(events, "Approval is on its way.") {
		t.Errorf("the run's log lacks the message said:\n%s", events)
	}
	if res := decodeResult(t, out); res.Status != loop.Done {
		t.Errorf("status %s", res.Status)
	}
	if j := c.journal(t); j != "one\ntwo\nthree\n" {
		t.Errorf("journal %q", j)
	}
}

// testTemporalUIApprove: ratchet ui's approval form answers a Temporal
// run as ratchet approve does, by its workflow's Update: the workers carry
// it on to its end, not the UI's process.
func testTemporalUIApprove(t *testing.T, c *temporalCLI) {
	c.worker(t)
	code, _, errOut := c.run(t, "run", "--temporal", c.addr, "--task-queue", "e2e", "approve.yaml")
	if code != exitWaiting {
		t.Fatalf("ratchet run --temporal: exit %d, want %d waiting:\n%s", code, exitWaiting, errOut)
	}
	_, ls, _ := c.run(t, "ls", "--json")
	var rows []struct{ ID string }
	if err := json.Unmarshal([]byte(ls), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("ratchet ls --json: %v %s", err, ls)
	}
	id := rows[0].ID
	ctx, cancel := context.WithCancel(context.Background())
	ui := c.command(ctx, "ui", "--addr", "127.0.0.1:0")
	ui.Env = append(ui.Env, "OTEL_TRACES_EXPORTER=console")
	// Stopped as Ctrl-C stops it, so that it flushes its spans.
	ui.Cancel = func() error { return ui.Process.Signal(syscall.SIGINT) }
	ui.WaitDelay = 10 * time.Second
	var out syncBuffer
	ui.Stdout, ui.Stderr = &out, &out
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			_ = ui.Wait()
		}
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("ratchet ui:\n%s", out.String())
		}
	}()
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`serving (http://\S+)/ `).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatal("ratchet ui printed no address")
		}
	}
	page := httpGet(t, base+"/runs/"+id)
	token := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if token == nil || !strings.Contains(page, "Waiting for approval") {
		t.Fatalf("no approval form:\n%s", page)
	}
	form := url.Values{"csrf": {token[1]}, "action": {"approve"}}
	req, _ := http.NewRequest("POST", base+"/answer/"+id, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, show, _ := c.run(t, "show", "--json", id)
		var row struct{ Status string }
		json.Unmarshal([]byte(show), &row)
		if row.Status == string(loop.Done) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run is %s, want done", row.Status)
		}
	}
	if j := c.journal(t); j != "one\ntwo\nthree\n" {
		t.Errorf("journal %q", j)
	}
	// What the workers did after the answer has its spans, made by the UI's
	// process from the run's log as ratchet approve would have made them.
	stop()
	for _, want := range []string{`"Name":"invoke_agent ratchet"`, `"Name":"execute_tool append_file"`, `"Name":"check equals"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the UI made no span %s", want)
		}
	}
	// The workflow carried it on, not the UI's process behind its back.
	tc, err := client.Dial(client.Options{HostPort: c.addr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	desc, err := tc.DescribeWorkflow(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if st := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("the run's workflow is %s, want completed", st)
	}
}

// TestTemporalUsage: the Temporal flags are checked before anything is
// dialled, every problem at once.
func TestTemporalUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"worker"}, []string{"--temporal HOST:PORT is required", "--task-queue is required"}},
		{[]string{"worker", "--temporal", "x:1", "extra"}, []string{"--task-queue is required", `unexpected arguments: ["extra"]`}},
		{[]string{"run", "--temporal", "x:1", "task.yaml"}, []string{"--temporal and --task-queue go together"}},
		{[]string{"eval", "run", "--task-queue", "q", "suite.yaml"}, []string{"--temporal and --task-queue go together"}},
	} {
		var out, errOut bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
		if code := m.Run(context.Background(), tc.args); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut.String(), w)
			}
		}
	}
	if got := absModel("scripted:turns.yaml", "/suites"); got != "scripted:/suites/turns.yaml" {
		t.Errorf("absModel: %s", got)
	}
	if got := absModel("anthropic:claude-sonnet-4-5", "/suites"); got != "anthropic:claude-sonnet-4-5" {
		t.Errorf("absModel: %s", got)
	}
}
