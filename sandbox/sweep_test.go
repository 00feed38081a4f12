package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSweepKilledOwner: a process killed with SIGKILL while its sandbox
// workspace holds a file leaves the run directory (as root, a mounted
// tmpfs holding the file's memory); Sweep keeps it while its owner lives
// or its lock file is new, and removes it, unmounted, once the owner is
// dead.
func TestSweepKilledOwner(t *testing.T) {
	if os.Getenv("RATCHET_SWEEP_CHILD") != "" {
		ws, err := prepare(Spec{Command: []string{"true"}}, ids{uid: testUID, gid: testUID, root: os.Geteuid() == 0}, false, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws.dir, "big"), make([]byte, 8<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("run=" + ws.run + "\n")
		select {} // until killed
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSweepKilledOwner$")
	child.Env = append(os.Environ(), "RATCHET_SWEEP_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var run string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if r, ok := strings.CutPrefix(sc.Text(), "run="); ok {
			run = r
			break
		}
	}
	if run == "" {
		child.Process.Kill()
		t.Fatalf("the child printed no run directory: %v", child.Wait())
	}
	if _, err := Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "ws", "big")); err != nil {
		t.Fatalf("Sweep removed the run of a live owner: %v", err)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	if os.Geteuid() == 0 && !mounted(t, run) {
		t.Fatalf("%s is not a mount point after its owner died: the test shows nothing", run)
	}
	if _, err := Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(run); err != nil {
		t.Fatalf("Sweep removed a run whose lock file is seconds old (its owner may be about to lock it): %v", err)
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(filepath.Join(run, ownerFile), old, old); err != nil {
		t.Fatal(err)
	}
	swept, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("after its owner died, Sweep left %s (%v)", run, err)
	}
	if mounted(t, run) {
		t.Errorf("after its owner died, %s is still mounted", run)
	}
	if swept.Runs < 1 || swept.Bytes < 8<<20 {
		t.Errorf("Sweep says %+v, want at least the one run and its 8 MiB", swept)
	}
}

// mounted reports whether dir is a mount point in the mount namespace of
// this goroutine's thread. Not /proc/self's: that is the main thread's,
// which a namespaces-backend run of an earlier test may have left in a
// private namespace of its own (the runtime keeps a locked main thread
// instead of ending it).
func mounted(t *testing.T, dir string) bool {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}
