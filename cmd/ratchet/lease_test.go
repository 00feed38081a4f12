package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
)

// slowTurns makes the crash test's second model turn take a minute, so a
// test can look at the run while its process is alive and waiting.
func slowTurns(t *testing.T, r *crashRun) (restore func()) {
	t.Helper()
	path := filepath.Join(r.dir, "turns.yaml")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(orig), "\n")
	delays := 0
	for i, l := range lines {
		if strings.TrimSpace(l) == "- delay: 25ms" {
			if delays++; delays == 2 {
				lines[i] = strings.Replace(l, "25ms", "60s", 1)
			}
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond for up to 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestDeadRunLooksDead: while 'ratchet run' is alive its run is running and
// nobody else may resume it; once the process is killed (SIGKILL) ls and
// show call it interrupted and name the command that carries it on, and
// that command finishes it.
func TestDeadRunLooksDead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r := newCrashRun(t, bin, t.TempDir())
	restore := slowTurns(t, r)
	cmd := exec.Command(r.bin, "run", "--quiet", filepath.Join(r.dir, "task.yaml"))
	cmd.Env = append(os.Environ(), "RATCHET_DB="+r.db)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "the first append", func() bool { return r.journal(t) != "" })
	id := r.id(t)
	if _, ls := r.exec(t, nil, "ls"); !regexp.MustCompile(regexp.QuoteMeta(id) + ` +running`).MatchString(ls) {
		t.Errorf("ls while the run's process lives:\n%s", ls)
	}
	if code, msg := r.exec(t, nil, "resume", id); code != exitUsage || !strings.Contains(msg, "held by another process") {
		t.Errorf("resume of a run another process holds: exit %d\n%s", code, msg)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, ls := r.exec(t, nil, "ls"); !regexp.MustCompile(regexp.QuoteMeta(id) + ` +interrupted`).MatchString(ls) {
		t.Errorf("ls after SIGKILL:\n%s", ls)
	}
	if _, show := r.exec(t, nil, "show", id); !strings.Contains(show, "status:  interrupted") || !strings.Contains(show, "'ratchet resume "+id+"' carries it on") {
		t.Errorf("show after SIGKILL:\n%s", show)
	}
	restore()
	if code := r.resume(t, id, nil); code != exitDone {
		t.Fatalf("resume after SIGKILL exited %d", code)
	}
	if res := r.result(t); res.Status != loop.Done || r.journal(t) != "one\ntwo\nthree\n" {
		t.Errorf("resumed: %s, journal %q", res.Status, r.journal(t))
	}
}

// TestTerminalClosed: closing the terminal 'ratchet run' runs in (SIGHUP,
// sent by tmux as it kills the session) ends the run cancelled, not
// running, and it resumes to the uninterrupted Result.
func TestTerminalClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		testenv.Missing(t, "tmux is not installed (./test.sh installs it)")
	}
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r := newCrashRun(t, bin, t.TempDir())
	restore := slowTurns(t, r)
	session := "ratchet-hup-" + filepath.Base(r.dir)
	sock := filepath.Join(r.dir, "tmux.sock")
	line := "RATCHET_DB=" + r.db + " " + r.bin + " run " + filepath.Join(r.dir, "task.yaml")
	if out, err := exec.Command(tmux, "-S", sock, "new-session", "-d", "-s", session, "-x", "120", "-y", "30", line).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer exec.Command(tmux, "-S", sock, "kill-server").Run()
	waitFor(t, "the first append", func() bool { return r.journal(t) != "" })
	if out, err := exec.Command(tmux, "-S", sock, "kill-session", "-t", session).CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-session: %v\n%s", err, out)
	}
	var status string
	waitFor(t, "the run to stop running", func() bool {
		_, status = r.status(t)
		return status != "running"
	})
	if status != string(loop.Cancelled) {
		t.Fatalf("after SIGHUP the run is %q, want cancelled", status)
	}
	restore()
	if code := r.resume(t, r.id(t), nil); code != exitDone {
		t.Fatalf("resume after SIGHUP exited %d", code)
	}
	if res := r.result(t); res.Status != loop.Done || r.journal(t) != "one\ntwo\nthree\n" {
		t.Errorf("resumed: %s, journal %q", res.Status, r.journal(t))
	}
}
