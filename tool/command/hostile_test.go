package command_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/sandbox/gocache"
	"github.com/ratchetloop/ratchet/tool/command"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// hostileDir holds the sandbox's hostile candidates, run here through
// run_command.
var hostileDir = filepath.Join("..", "..", "sandbox", "testdata", "hostile")

// hostileSetup is what one case needs: a workspace with a correct
// solution.py and the script, the test mounted read-only at
// tests/test_sample.py, and whatever the case adds.
type hostileSetup struct {
	ws, tests string
	env       map[string]string
	paths     []string // host paths that must not exist afterwards
	accepted  atomic.Int32
	secrets   *redact.Redactor
}

// TestHostile runs the sandbox's hostile candidates through run_command
// and checks that each is contained as it is for an exec check: fork
// bombs, the network, writing outside the workspace, the host's secrets,
// editing the mounted test, processes left behind. It logs a table:
//
//	go test ./tool/command -run TestHostile -v -count=1
func TestHostile(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "pass").Run() != nil {
		testenv.Missing(t, "/usr/bin/python3")
	}
	testSrc, err := os.ReadFile(filepath.Join(hostileDir, "..", "tests", "test_sample.py"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, script string
		timeout      int
		setup        func(t *testing.T, s *hostileSetup)
		check        func(t *testing.T, s *hostileSetup, out string) string
	}{
		{name: "fork bomb (python, ignores EAGAIN)", script: "forkbomb.py", timeout: 3,
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "fork refused", "timed out after 3s")
				return "fork refused at RLIMIT_NPROC; tree killed at the 3s timeout"
			}},
		{name: "fork bomb (sh: b() { b | b & })", script: "forkbomb.sh", timeout: 3,
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "fork", "timed out after 3s")
				return "fork refused; killed at the timeout"
			}},
		{name: "connects to a listener on the host's 127.0.0.1", script: "connect.py",
			setup: func(t *testing.T, s *hostileSetup) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				go func() {
					for {
						conn, err := ln.Accept()
						if err != nil {
							return
						}
						s.accepted.Add(1)
						conn.Close()
					}
				}()
				s.env = map[string]string{"TARGET_PORT": strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
			},
			check: func(t *testing.T, s *hostileSetup, out string) string {
				time.Sleep(50 * time.Millisecond)
				want(t, out, "connect failed", "exit status 3")
				if n := s.accepted.Load(); n != 0 {
					t.Errorf("the host listener accepted %d connections", n)
				}
				return "connect failed; the listener accepted nothing"
			}},
		{name: "reads secrets: the host's environment, /proc/*/environ, a host file outside the workspace", script: "secrets.py",
			setup: func(t *testing.T, s *hostileSetup) {
				t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret-canary")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-canary")
				secret := filepath.Join(os.TempDir(), "ratchet-secret-"+strconv.Itoa(os.Getpid()))
				if err := os.WriteFile(secret, []byte("file-secret-canary"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(secret) })
				s.env = map[string]string{"SECRET_FILE": secret}
			},
			check: func(t *testing.T, s *hostileSetup, out string) string {
				if strings.Contains(out, "canary") {
					t.Errorf("a host secret reached the command:\n%s", out)
				}
				want(t, out, `"PATH"`, "ratchet-secret-", "No such file")
				return "no host variable and no host file reached the command"
			}},
		{name: "writes outside the workspace: host /tmp, host $HOME, the sandbox workspace's parent, /etc, the mounted test", script: "escape.py",
			setup: func(t *testing.T, s *hostileSetup) {
				home, _ := os.UserHomeDir()
				tmp := filepath.Join("/tmp", "ratchet-pwned-"+strconv.Itoa(os.Getpid()))
				homeFile := filepath.Join(home, "ratchet-pwned-"+strconv.Itoa(os.Getpid()))
				s.paths = []string{tmp, homeFile, "/etc/pwned", filepath.Join(filepath.Dir(s.ws), "pwned")}
				t.Cleanup(func() { os.Remove(tmp); os.Remove(homeFile) })
				s.env = map[string]string{"PWNED_TMP": tmp, "PWNED_HOME": homeFile}
			},
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "denied tests/test_sample.py")
				return "nothing written on the host; the mounted test is read-only"
			}},
		{name: "escapes the workspace through links it leaves behind", script: "",
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "up (a symbolic link)", "passwd (a symbolic link)")
				for _, p := range []string{"up", "passwd", "fifo"} {
					if _, err := os.Lstat(filepath.Join(s.ws, p)); err == nil {
						t.Errorf("%s was carried back into the workspace", p)
					}
				}
				return "links and FIFOs are not carried back"
			}},
		{name: "writes through a link the host workspace holds to a directory outside it", script: "",
			setup: func(t *testing.T, s *hostileSetup) {
				outside := t.TempDir()
				s.paths = []string{filepath.Join(outside, "f")}
				if err := os.Symlink(outside, filepath.Join(s.ws, "out")); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "could not be carried back", "out")
				return "the link is not followed: the change is refused and reported"
			}},
		{name: "edits the mounted test, then renames its directory and writes a fake one", script: "tamper_edit.sh",
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "in-place edit refused", "tests/test_sample.py: replaced")
				if _, err := os.Stat(filepath.Join(s.ws, "tests", "test_sample.py")); err == nil {
					t.Errorf("the fake test was carried back into the workspace")
				}
				return "the edit is refused; the fake test is reported and not carried back"
			}},
		{name: "orphan in its own session keeps running after the shell exits 0", script: "orphan.sh",
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "orphan started", "exit status 0")
				marker := filepath.Join(s.ws, "marker")
				before, _ := os.ReadFile(marker)
				time.Sleep(300 * time.Millisecond)
				after, _ := os.ReadFile(marker)
				if string(before) != string(after) {
					t.Error("the orphan still writes its marker after the call returned")
				}
				return "the orphan is dead when the call returns"
			}},
		{name: "orphan in its own session, the shell hangs", script: "orphan_hang.sh", timeout: 2,
			check: func(t *testing.T, s *hostileSetup, out string) string {
				want(t, out, "timed out after 2s")
				return "killed at the timeout, with the orphan"
			}},
		{name: "prints a secret the run knows and terminal escapes", script: "",
			setup: func(t *testing.T, s *hostileSetup) {
				s.secrets = redact.New("sk-run-secret-12345678")
				if err := os.WriteFile(filepath.Join(s.ws, "key.txt"), []byte("sk-run-secret-12345678"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, s *hostileSetup, out string) string {
				if strings.Contains(out, "sk-run-secret") || strings.ContainsAny(out, "\x1b\x07\x00") {
					t.Errorf("the output is not cleaned:\n%q", out)
				}
				want(t, out, "[redacted]")
				return "the secret is redacted; escapes and NULs are dropped"
			}},
	}
	lines := map[string]string{
		"escapes the workspace through links it leaves behind":                     "ln -s .. up; ln -s /etc/passwd passwd; mkfifo fifo; ls -la",
		"writes through a link the host workspace holds to a directory outside it": "mkdir out && echo pwned > out/f",
		"prints a secret the run knows and terminal escapes":                       `cat key.txt; printf '\033]0;title\007\033[2J\000done\n'`,
	}
	var rows []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &hostileSetup{ws: workspace(t, map[string]string{"solution.py": "def add(a, b):\n    return a + b\n"}), tests: filepath.Join(hostileDir, "..", "tests", "test_sample.py")}
			line := lines[c.name]
			if c.script != "" {
				data, err := os.ReadFile(filepath.Join(hostileDir, c.script))
				if err != nil {
					t.Fatal(err)
				}
				name := "hostile" + filepath.Ext(c.script)
				if err := os.WriteFile(filepath.Join(s.ws, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
				line = "sh " + name
				if strings.HasSuffix(name, ".py") {
					line = "python3 " + name
				}
				if c.script == "secrets.py" {
					line += `; cat "$SECRET_FILE"`
				}
			}
			if c.setup != nil {
				c.setup(t, s)
			}
			tl := newTool(t, command.Config{Workspace: s.ws, Env: s.env, Secrets: s.secrets,
				Tests: []sandbox.Mount{{Source: s.tests, Target: "tests/test_sample.py"}}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			r := call(t, ctx, tl, cmd{Command: line, Timeout: c.timeout})
			took := time.Since(start)
			if r.IsError {
				t.Fatalf("outcome %s: %s", r.Outcome, r.Output)
			}
			if left := testenv.ProcessesOf(testUID); len(left) > 0 {
				t.Errorf("processes of the sandbox uid alive after the call: %v", left)
			}
			for _, p := range s.paths {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the command wrote %s on the host", p)
				}
			}
			if src, _ := os.ReadFile(s.tests); string(src) != string(testSrc) {
				t.Error("the test file on the host changed")
			}
			what := c.check(t, s, r.Output)
			if t.Failed() {
				what = "FAILED: " + what
				t.Logf("output:\n%s", r.Output)
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %d ms |", c.name, what, took.Milliseconds()))
		})
	}
	t.Logf("\n| hostile command | what happened | call took |\n|---|---|---|\n%s", strings.Join(rows, "\n"))
}

func want(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// TestHostileGoCachePoison: an agent's command compiles a testing package
// in which no test fails and files it in the Go build cache under the
// real package's action ID (in its own run, a failing test then passes).
// A later exec check does not see it: a wrong candidate still fails. The cache is a copy of the default one, so that
// nothing here can poison what other tests use.
//
//	go test ./tool/command -run TestHostileGoCachePoison -v -count=1
func TestHostileGoCachePoison(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "go")
	}
	script, err := os.ReadFile(filepath.Join(hostileDir, "poison_gocache.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("ratchet-go-cache-poison-test-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(cache) })
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gocache.DefaultDir()); err == nil {
		if out, err := exec.Command("cp", "-a", gocache.DefaultDir()+"/.", cache).CombinedOutput(); err != nil {
			t.Fatalf("copying the Go build cache: %v: %s", err, out)
		}
	}
	testSrc := "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n"
	dir := workspace(t, map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.22\n",
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return 0 }\n",
		"calc_test.go": testSrc,
		"poison.sh":    string(script),
	})
	tl := newTool(t, command.Config{Workspace: dir, GoCache: cache})
	r := call(t, context.Background(), tl, cmd{Command: "sh poison.sh", Timeout: 300})
	want(t, r.Output, "poison works")

	tests := filepath.Join(t.TempDir(), "calc_test.go")
	if err := os.WriteFile(tests, []byte(testSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(mod, []byte("module example.com/calc\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := execcheck.New(execcheck.Config{
		Runner: sandboxRunner(t), Format: "go", Workspace: dir, Copy: []string{"calc.go"}, GoCache: cache,
		Command: []string{goBin, "test", "-json", "."},
		Tests:   []sandbox.Mount{{Source: tests, Target: "calc_test.go"}, {Source: mod, Target: "go.mod"}},
		Limits:  sandbox.Limits{Wall: 2 * time.Minute, CPU: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Check(context.Background(), verify.Candidate{})
	if err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Where != "TestAdd" {
		t.Errorf("after the poisoning, the wrong workspace got ok=%v where=%q, want a failure at TestAdd:\n%s", got.OK, got.Where, got.Detail)
	}
}
