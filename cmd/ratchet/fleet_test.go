package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/store"
)

// fleetWindow stands in for the minute in the fleet test: the limits are
// the CLI's, counted over a window of 3 s instead of 60 s (limit.Config's
// Window; the same code path), so that 60 requests_per_minute means 60
// requests per 3 s.
const fleetWindow = 3 * time.Second

// fleetChild is set, in the environment of the fleet test's children, to
// the JSON of their fleetJob.
const fleetChild = "RATCHET_TEST_FLEET_CHILD"

type fleetJob struct {
	Args []string
	Env  map[string]string
}

// Four processes on one run database, each an eval run of 30 calls at
// concurrency 8, all under --provider-limit anthropic:requests_per_minute=60:
// measured at the server, no window holds more than 60 requests (the
// issue allows one more), because the processes count in the database's
// ledger; each alone would send its 30 in one window.
func TestFleetSharesProviderLimits(t *testing.T) {
	const procs, calls, rpm = 4, 30, 60
	var mu sync.Mutex
	var at []time.Time
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"finish","input":{"answer":"5","confidence":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)
	}))
	defer hs.Close()
	dir := write(t, map[string]string{
		"task.yaml":  "goal: What is 2+3?\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: \"5\"}]\nbudget: {steps: 2, time: 2m}\n",
		"suite.yaml": "cases: [{task: task.yaml}]\n",
	})
	db := filepath.Join(dir, "runs.db")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for i := range procs {
		job, err := json.Marshal(fleetJob{
			Args: []string{"eval", "run", "--quiet", "--repeats", fmt.Sprint(calls), "--concurrency", "8", "--label", fmt.Sprintf("p%d", i),
				"--db", db, "--provider-limit", fmt.Sprintf("anthropic:requests_per_minute=%d", rpm), filepath.Join(dir, "suite.yaml")},
			Env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": hs.URL, "RATCHET_NO_STREAM": "1",
				"RATCHET_EVAL_DIR": filepath.Join(dir, "eval"), "XDG_STATE_HOME": filepath.Join(dir, "state")},
		})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), fleetChild+"="+string(job))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != procs*calls {
		t.Fatalf("the server saw %d requests, want %d", len(at), procs*calls)
	}
	slices.SortFunc(at, time.Time.Compare)
	most := 0
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < fleetWindow; j++ {
			n++
		}
		most = max(most, n)
	}
	if most > rpm+1 {
		t.Errorf("a window of %s held %d requests: over the limit of %d shared by %d processes", fleetWindow, most, rpm, procs)
	}
	// The limit is a limit, not a stall: 120 requests at 60 a window take
	// a little over one window.
	if elapsed > 10*fleetWindow {
		t.Errorf("%d requests took %s", len(at), elapsed)
	}
	t.Logf("%d processes, %d requests in %s; the busiest %s window held %d (limit %d)", procs, len(at), elapsed.Round(time.Millisecond), fleetWindow, most, rpm)
}

// fleetProcess is one process of TestFleetSharesProviderLimits: the CLI
// with its limits counted over fleetWindow.
func fleetProcess(s string) int {
	var job fleetJob
	if err := json.Unmarshal([]byte(s), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m := &Main{Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: os.Stderr, Getenv: func(k string) string { return job.Env[k] },
		limits: limit.NewRegistry(limit.Config{Window: fleetWindow})}
	return m.Run(context.Background(), job.Args)
}

// ratchet worker takes --provider-limit as ratchet run does: a bad one is
// a usage error, a good one tightens the limits the worker's runs share.
func TestWorkerProviderLimit(t *testing.T) {
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	if code := m.Run(context.Background(), []string{"worker", "--provider-limit", "bedrock:max_in_flight=1", "--temporal", "127.0.0.1:1", "--task-queue", "q"}); code != exitUsage {
		t.Errorf("exit %d, want %d; stderr %s", code, exitUsage, errOut.String())
	}
	if !strings.Contains(errOut.String(), `unknown provider "bedrock" for limits`) {
		t.Errorf("stderr %q does not name the bad provider", errOut.String())
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	m = &Main{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// No Temporal server listens there: the worker stops at the dial, its
	// flags read.
	m.Run(ctx, []string{"worker", "--provider-limit", "anthropic:max_in_flight=2,requests_per_minute=60", "--db", db, "--temporal", "127.0.0.1:1", "--task-queue", "q"})
	if got, want := m.limits.Limiter("anthropic").Limits(), (limit.Limits{MaxInFlight: 2, RequestsPerMinute: 60}); got != want {
		t.Errorf("the worker's limits are %+v, want %+v", got, want)
	}
}

// A worker building a run takes the limits the run was started with (its
// --provider-limit flags, kept on its row) and its task file's
// provider_limits:, as a local run does.
func TestWorkerTakesTheRunsLimits(t *testing.T) {
	dir := write(t, map[string]string{"task.yaml": "goal: What is 2+3?\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: \"5\"}]\nprovider_limits: {anthropic: {max_in_flight: 3}}\n"})
	info, err := json.Marshal(taskInfo{TaskFile: filepath.Join(dir, "task.yaml"), ProviderLimits: []string{"anthropic:requests_per_minute=60"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"}[k] },
		limits: limit.NewRegistry(limit.Config{})}
	m.guard()
	live, err := m.workerOpener(false)(context.Background(), store.Run{ID: "r1", Task: info})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	defer live.Close()
	if got, want := m.limits.Limiter("anthropic").Limits(), (limit.Limits{RequestsPerMinute: 60, MaxInFlight: 3}); got != want {
		t.Errorf("the worker's limits for the run are %+v, want %+v", got, want)
	}
}
