package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
)

// crashRuns is how many runs TestCrashResume kills; the issue asks for at
// least 200.
const crashRuns = 200

// TestCrashResume kills 'ratchet run' with SIGKILL at seeded random points
// and resumes each run (killing the resume too, sometimes) until it ends.
// A kill point is "k lines into the run's output, then d more": k and d
// are drawn from a seeded source, d up to about a line's time, so the
// kills spread over every step of the run however slow or fast the
// machine is. Every run must end with the
// uninterrupted run's Result, with a gap-free log in which no event answers
// the same call twice and which replays identically, and the journal that
// the non-idempotent append_file tool writes must never hold a line twice.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI hundreds of times")
	}
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	base := newCrashRun(t, bin, t.TempDir())
	start := time.Now()
	code, lines := base.run(t, nil)
	// The extra time of a kill point spans about a line of output, so
	// that it lands inside the run however fast the machine is.
	spread := min(40*time.Millisecond, max(time.Since(start)/time.Duration(lines), time.Millisecond))
	if code != 0 {
		t.Fatalf("uninterrupted run exited %d", code)
	}
	want := base.result(t)
	if want.Status != loop.Done || base.journal(t) != "one\ntwo\nthree\n" {
		t.Fatalf("uninterrupted run: %s, journal %q", want.Status, base.journal(t))
	}
	// The CLI's own inspection commands agree with the store.
	if code, out := base.exec(t, nil, "show", "--json", base.id(t)); code != 0 || !strings.Contains(out, `"status": "done"`) {
		t.Fatalf("show --json %s: %d %q", base.id(t), code, out)
	}

	rng := rand.New(rand.NewPCG(2026, 11))
	draw := func(r *rand.Rand) *killPoint {
		// The last lines are printed as the process exits: a kill there
		// would land too late.
		return &killPoint{line: r.IntN(lines - 2), after: time.Duration(r.Int64N(int64(spread)))}
	}
	points := make([]*killPoint, crashRuns)
	for i := range points {
		points[i] = draw(rng)
	}
	var (
		mu                                sync.Mutex
		kills, resumes, unknown, mismatch int
		sem                               = make(chan struct{}, 4)
		wg                                sync.WaitGroup
	)
	ignore := cmpopts.IgnoreFields(budget.Usage{}, "Time", "InputTokens")
	for i, p := range points {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := newCrashRun(t, bin, t.TempDir())
			k, n := 0, 0
			if code, _ := r.run(t, p); code == killed {
				k++
			}
			// Resume until the run ends; one resume in three is itself
			// killed, at a point drawn from the run's own seed.
			local := rand.New(rand.NewPCG(uint64(i), 7))
			var trail []string
			for attempt := 0; ; attempt++ {
				if attempt > 20 {
					t.Errorf("run %d: not finished after %d resumes: %s", i, attempt, strings.Join(trail, "; "))
					return
				}
				id, status := r.status(t)
				trail = append(trail, fmt.Sprintf("%q %q", id, status))
				if id == "" { // killed before the run was recorded: start again
					if code, _ := r.run(t, nil); code != 0 {
						t.Errorf("run %d: restart exited %d", i, code)
						return
					}
					continue
				}
				if status != "running" && status != "cancelled" {
					break
				}
				var kp *killPoint
				if local.IntN(3) == 0 {
					kp = draw(local)
				}
				n++
				if r.resume(t, id, kp) == killed {
					k++
				}
			}
			got := r.result(t)
			u := r.checkLog(t, i)
			mu.Lock()
			defer mu.Unlock()
			kills, resumes, unknown = kills+k, resumes+n, unknown+u
			if diff := cmp.Diff(want, got, ignore, cmpopts.EquateEmpty()); diff != "" {
				mismatch++
				t.Errorf("run %d (killed at line %d + %s): result differs (-want +got):\n%s", i, p.line, p.after, diff)
			}
			lines := strings.Split(strings.TrimSpace(r.journal(t)), "\n")
			if sorted := slices.Sorted(slices.Values(lines)); len(slices.Compact(sorted)) != len(lines) {
				t.Errorf("run %d: journal %q has a line twice: a non-idempotent call ran again", i, lines)
			}
		})
	}
	wg.Wait()
	t.Logf("crash test: %d runs, %d kills, %d resumes, %d calls answered unknown, %d mismatches", crashRuns, kills, resumes, unknown, mismatch)
	if kills < crashRuns*9/10 {
		t.Errorf("only %d kills landed in %d runs: the kill points miss the runs", kills, crashRuns)
	}
	if unknown == 0 {
		t.Error("no kill left a non-idempotent call's outcome unknown: the test misses that case")
	}
}

const killed = -1

// killPoint is when to kill a process: once its output has reached line
// lines, after more.
type killPoint struct {
	line  int
	after time.Duration
}

type crashRun struct {
	bin, dir, db string
}

func newCrashRun(t *testing.T, bin, dir string) *crashRun {
	t.Helper()
	for _, f := range []string{"task.yaml", "turns.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "crash", f))
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
	return &crashRun{bin: bin, dir: dir, db: filepath.Join(dir, "runs.db")}
}

// exec runs the CLI and returns its exit code (or killed) and output. With
// a kill point, it sends SIGKILL once the output has reached that many
// lines and the extra time has passed.
func (r *crashRun) exec(t *testing.T, kill *killPoint, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Env = append(os.Environ(), "RATCHET_DB="+r.db)
	var out, errOut bytes.Buffer
	cmd.Stderr = &errOut
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	n := 0
	var timer *time.Timer
	arm := func() {
		if kill != nil && timer == nil && n >= kill.line {
			timer = time.AfterFunc(kill.after, func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
	}
	arm()
	for sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		n++
		arm()
	}
	err = cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	out.Write(errOut.Bytes())
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() && st.Signal() == syscall.SIGKILL {
		return killed, out.String()
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		t.Fatalf("%v: %v\n%s", args, err, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// run starts the task and returns its exit code and how many lines of
// progress it printed.
func (r *crashRun) run(t *testing.T, kill *killPoint) (int, int) {
	code, out := r.exec(t, kill, "run", filepath.Join(r.dir, "task.yaml"))
	if code != killed && code != 0 {
		t.Errorf("run exited %d:\n%s", code, out)
	}
	return code, strings.Count(out, "\n")
}

func (r *crashRun) resume(t *testing.T, id string, kill *killPoint) int {
	code, out := r.exec(t, kill, "resume", id)
	if code != killed && code != 0 {
		t.Errorf("resume %s exited %d:\n%s", id, code, out)
	}
	return code
}

// open opens the run database in-process, as the next process would.
func (r *crashRun) open(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(r.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// status returns the run's ID and status, or "" if it was never recorded.
func (r *crashRun) status(t *testing.T) (id, status string) {
	if _, err := os.Stat(r.db); os.IsNotExist(err) {
		return "", ""
	}
	s := r.open(t)
	runs, err := s.ListRuns(context.Background(), store.Filter{})
	if err != nil || len(runs) > 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	if len(runs) == 0 {
		return "", ""
	}
	s.Close()
	return runs[0].ID, runs[0].Status
}

func (r *crashRun) id(t *testing.T) string {
	id, _ := r.status(t)
	return id
}

func (r *crashRun) result(t *testing.T) loop.Result {
	s := r.open(t)
	row, err := s.Run(context.Background(), r.id(t))
	var res loop.Result
	if err != nil || json.Unmarshal(row.Result, &res) != nil {
		t.Fatalf("run %s: %v, result %s", row.ID, err, row.Result)
	}
	return res
}

func (r *crashRun) journal(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(r.dir, "workspace", "journal.txt"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// checkLog checks the stored log: sequence numbers without gaps, no call
// answered twice, and replay identical. It returns how many calls were
// answered unknown.
func (r *crashRun) checkLog(t *testing.T, i int) (unknown int) {
	recs, err := runner.LoadLog(context.Background(), r.open(t), r.id(t))
	if err != nil {
		t.Fatalf("run %d: %v", i, err)
	}
	answered := map[string]bool{}
	for n, rec := range recs {
		if rec.Seq != int64(n+1) {
			t.Fatalf("run %d: entry %d has seq %d", i, n+1, rec.Seq)
		}
		if rec.Event == nil || rec.Event.Call == "" {
			continue
		}
		key := string(rec.Event.Type) + " " + rec.Event.Call
		if answered[key] {
			t.Errorf("run %d: %s recorded twice", i, key)
		}
		answered[key] = true
		if rec.Event.Tool != nil && rec.Event.Tool.Outcome == runner.OutcomeUnknown {
			unknown++
		}
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("run %d: replay: %v", i, err)
	}
	return unknown
}

// TestInterruptThenResume: SIGINT ends the run cancelled with its log
// flushed, and 'ratchet resume' carries it on to the uninterrupted Result.
func TestInterruptThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			r := newCrashRun(t, bin, t.TempDir())
			cmd := exec.Command(r.bin, "run", "--quiet", filepath.Join(r.dir, "task.yaml"))
			cmd.Env = append(os.Environ(), "RATCHET_DB="+r.db)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Mid-run: after the first append, during the second turn's delay.
			deadline := time.Now().Add(10 * time.Second)
			for r.journal(t) == "" && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != exitNotDone || !strings.Contains(out.String(), "cancelled") {
				t.Fatalf("interrupted run exited %d:\n%s", code, out.String())
			}
			id, status := r.status(t)
			if status != "cancelled" {
				t.Fatalf("status %q after %s", status, sig)
			}
			if r.checkLog(t, 0); t.Failed() {
				return
			}
			if code := r.resume(t, id, nil); code != 0 {
				t.Fatalf("resume exited %d", code)
			}
			if res := r.result(t); res.Status != loop.Done || r.journal(t) != "one\ntwo\nthree\n" {
				t.Errorf("resumed: %s, journal %q", res.Status, r.journal(t))
			}
		})
	}
}
