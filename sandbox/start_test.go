package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startedWith starts s on backend and waits until its command says on
// descriptor 3 (a pipe the test holds) that it reached its gate, which is
// then descriptor 4.
func startedWith(t *testing.T, backend string, s Spec) *Started {
	t.Helper()
	st, ok := runnerFor(t, backend).(Starter)
	if !ok {
		t.Fatal("the Runner New returns is not a Starter")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s.ExtraFiles = []*os.File{w}
	started, err := st.Start(context.Background(), s)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(started.Close)
	buf := make([]byte, 5)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "ready" {
		t.Fatalf("the command did not reach its gate: %q, %v", buf[:n], err)
	}
	return started
}

// atGate is a shell command that says it is ready on descriptor 3, reads
// its gate (descriptor 4), then runs then; before the gate it prints
// "early" if the candidate's file is already there.
func atGate(then string) []string {
	return []string{"sh", "-c", "test -e cand.txt && echo early; echo ready >&3; exec 3>&-; head -c1 <&4 >/dev/null; " + then}
}

// TestStarted: a command started ahead sees the workspace without the
// candidate's files until its gate opens, then with them; its wall clock
// counts from the gate; the files written late are judged for shadowing
// as files given to Run are; and it serves one Run.
func TestStarted(t *testing.T) {
	tests := filepath.Join(t.TempDir(), "test_x.py")
	if err := os.WriteFile(tests, []byte("def test_x():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, backend := range append(isolated, IsolationUnsafe) {
		t.Run(backend, func(t *testing.T) {
			st := startedWith(t, backend, Spec{
				Command: atGate("cat cand.txt; rm -f conftest.py; cat test_x.py"),
				Mounts:  []Mount{{Source: tests, Target: "test_x.py"}},
				Limits:  Limits{Wall: time.Second},
			})
			time.Sleep(1500 * time.Millisecond) // longer than the wall limit, before the gate
			res, err := st.Run(context.Background(), map[string][]byte{
				"cand.txt":    []byte("the candidate\n"),
				"conftest.py": []byte("# removes itself\n"),
			}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.TimedOut || res.ExitCode != 0 {
				t.Fatalf("exit %d, timed out %v (the wall clock must start at the gate): %s", res.ExitCode, res.TimedOut, res.Stderr)
			}
			if got := string(res.Stdout); got != "the candidate\ndef test_x():\n    pass\n" {
				t.Errorf("stdout %q: want the candidate's file after the gate, the tests, and nothing before", got)
			}
			if !hasTampered(res, "conftest.py: ") {
				t.Errorf("a conftest.py written at the gate and removed by the command is not reported: %q", res.Tampered)
			}
			if _, err := st.Run(context.Background(), nil, 0); err == nil {
				t.Error("a second Run of one Started was accepted")
			}
			if _, err := os.Stat(st.rn.ws.run); !os.IsNotExist(err) {
				t.Errorf("the run directory is still there after Run: %v", err)
			}
			if backend != IsolationUnsafe {
				noSandboxProcs(t)
			}
		})
	}
}

// TestStartedGuards: bytecode supplied next to mounted tests at the gate
// is refused and reported, as prepare does for Run's files.
func TestStartedGuards(t *testing.T) {
	tests := filepath.Join(t.TempDir(), "test_x.py")
	if err := os.WriteFile(tests, []byte("def test_x():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := startedWith(t, IsolationBwrap, Spec{Command: atGate("ls __pycache__"), Mounts: []Mount{{Source: tests, Target: "test_x.py"}}})
	res, err := st.Run(context.Background(), map[string][]byte{"__pycache__/test_x.cpython-311.pyc": []byte("forged")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !hasTampered(res, "__pycache__: bytecode cache supplied next to mounted tests") || len(res.Stdout) > 0 {
		t.Errorf("tampered %q, the command saw %q: want the bytecode refused and reported", res.Tampered, res.Stdout)
	}
}

// TestStartedClose: a Started closed without a Run ends its command (it
// sees end of file at its gate) and leaves neither process nor files; so
// does one whose context is done.
func TestStartedClose(t *testing.T) {
	for _, backend := range isolated {
		t.Run(backend, func(t *testing.T) {
			st := startedWith(t, backend, Spec{Command: atGate("echo ran")})
			start := time.Now()
			st.Close()
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Close took %s", ms(took))
			}
			if _, err := os.Stat(st.rn.ws.run); !os.IsNotExist(err) {
				t.Errorf("the run directory is still there after Close: %v", err)
			}
			if _, err := st.Run(context.Background(), nil, 0); err == nil || !strings.Contains(err.Error(), "one Run") {
				t.Errorf("Run after Close: %v", err)
			}
			noSandboxProcs(t)
		})
	}
}

// TestStartRefuses: the files come with Run; no layer, no kept workspace.
func TestStartRefuses(t *testing.T) {
	st := runnerFor(t, IsolationBwrap).(Starter)
	for _, s := range []Spec{
		{Command: []string{"true"}, Files: map[string][]byte{"a": nil}},
		{Command: []string{"true"}, Keep: true},
	} {
		if started, err := st.Start(context.Background(), s); err == nil {
			started.Close()
			t.Errorf("Start(%+v) accepted", s)
		}
	}
}
