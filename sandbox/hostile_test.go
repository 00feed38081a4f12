package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hostileCase is one hostile candidate. The candidate runs in a workspace
// holding a correct solution.py and its script (testdata/hostile), with
// testdata/tests/test_sample.py mounted read-only at tests/test_sample.py.
type hostileCase struct {
	name   string // what the candidate does
	script string // file in testdata/hostile
	// command defaults to python3 or sh on the script.
	command []string
	// files replace or add candidate files.
	files  map[string][]byte
	limits Limits
	// report asks for Spec.Report, its path in $REPORT.
	report bool
	// cache mounts a fresh host directory as a cache, its path in $CACHE.
	cache bool
	// env is called before the run, for its environment and set-up.
	env func(t *testing.T, c *caseState) map[string]string
	// check asserts that the attack was contained and reported and says
	// what happened.
	check func(t *testing.T, c *caseState, res Result) string
}

// caseState carries what a case set up to what it checks.
type caseState struct {
	accepted atomic.Int32 // connections the host listener accepted
	paths    []string     // host paths that must not exist afterwards
	alloc    uint64       // bytes allocated by the test process
}

const solution = "def add(a, b):\n    return a + b\n"

func randomName(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "ratchet-pwned-" + hex.EncodeToString(b)
}

// markerStops checks that the marker file the orphan kept rewriting stays
// unchanged after Run returned.
func markerStops(t *testing.T, res Result) string {
	marker := filepath.Join(res.Workspace, "marker")
	before, err := os.ReadFile(marker)
	if err != nil {
		t.Errorf("marker: %v (the orphan never ran?)", err)
		return "no marker"
	}
	time.Sleep(300 * time.Millisecond)
	after, _ := os.ReadFile(marker)
	if string(before) != string(after) {
		t.Errorf("the orphan is still writing its marker after Run returned")
		return "orphan SURVIVED"
	}
	return "orphan dead when Run returned (marker unchanged 300 ms later)"
}

var hostileCases = []hostileCase{
	{
		name:   "fork bomb (python, ignores EAGAIN)",
		script: "forkbomb.py",
		limits: Limits{Wall: 3 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if !contains(res.Stdout, "fork refused") {
				t.Errorf("fork was never refused: RLIMIT_NPROC not enforced? stdout %q", res.Stdout)
			}
			if !res.TimedOut {
				t.Errorf("not stopped by the wall timeout: %+v", res)
			}
			return "fork refused at RLIMIT_NPROC=64; tree killed at the wall limit (TimedOut)"
		},
	},
	{
		name:   "fork bomb (sh: b() { b | b & })",
		script: "forkbomb.sh",
		limits: Limits{Wall: 3 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if !contains(res.Stderr, "fork") {
				t.Errorf("no fork failure reported; stderr %q", res.Stderr)
			}
			return fmt.Sprintf("sh reported %q; exit %d, timed out %v",
				firstLine(res.Stderr, "fork"), res.ExitCode, res.TimedOut)
		},
	},
	{
		name:   "memory bomb (64 MiB chunks, 256 MiB limit)",
		script: "membomb.py",
		limits: Limits{Memory: 256 << 20},
		check: func(t *testing.T, c *caseState, res Result) string {
			var mib int
			fmt.Sscanf(firstLine(res.Stdout, "MemoryError"), "MemoryError after %d MiB", &mib)
			if res.ExitCode == 0 || !contains(res.Stdout, "MemoryError") || mib >= 256 {
				t.Errorf("memory bomb not stopped by RLIMIT_AS: exit %d, stdout %q", res.ExitCode, res.Stdout)
			}
			return fmt.Sprintf("MemoryError after %d MiB; exit %d", mib, res.ExitCode)
		},
	},
	{
		name:   "busy loop (1 s CPU limit)",
		script: "cpuloop.py",
		limits: Limits{CPU: time.Second, Wall: 20 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if res.TimedOut || !res.CPUExceeded || (res.Signal != "SIGXCPU" && res.Signal != "SIGKILL") {
				t.Errorf("busy loop not stopped by RLIMIT_CPU and reported: %+v", res)
			}
			return "killed by " + res.Signal + " at RLIMIT_CPU; CPUExceeded"
		},
	},
	{
		name:   "busy loop that ignores SIGXCPU (1 s CPU limit)",
		script: "cpuloop_ignore.py",
		limits: Limits{CPU: time.Second, Wall: 20 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if res.TimedOut || !res.CPUExceeded || res.Signal != "SIGKILL" {
				t.Errorf("busy loop not stopped by the hard RLIMIT_CPU and reported: %+v", res)
			}
			return "killed by " + res.Signal + " at the hard RLIMIT_CPU; CPUExceeded"
		},
	},
	{
		name:   "sleeps forever (1 s wall limit)",
		script: "sleeper.sh",
		limits: Limits{Wall: time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if !res.TimedOut || res.Duration > 4*time.Second {
				t.Errorf("sleeper not stopped by the wall limit: %+v", res)
			}
			return "killed at the wall limit (TimedOut, " + res.Signal + ")"
		},
	},
	{
		name:   "orphan in its own session keeps running after the parent exits 0",
		script: "orphan.sh",
		check: func(t *testing.T, c *caseState, res Result) string {
			if res.ExitCode != 0 || !contains(res.Stdout, "orphan started") {
				t.Errorf("orphan never started: %+v", res)
			}
			return "parent exited 0; " + markerStops(t, res)
		},
	},
	{
		name:   "orphan in its own session, parent hangs (2 s wall limit)",
		script: "orphan_hang.sh",
		limits: Limits{Wall: 2 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if !res.TimedOut {
				t.Errorf("not timed out: %+v", res)
			}
			return "TimedOut; " + markerStops(t, res)
		},
	},
	{
		name:   "connects to a listener on the host's 127.0.0.1",
		script: "connect.py",
		env: func(t *testing.T, c *caseState) map[string]string {
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
					c.accepted.Add(1)
					conn.Close()
				}
			}()
			return map[string]string{"TARGET_PORT": fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)}
		},
		check: func(t *testing.T, c *caseState, res Result) string {
			time.Sleep(50 * time.Millisecond)
			if n := c.accepted.Load(); n != 0 || res.ExitCode != 3 {
				t.Errorf("host listener accepted %d connections; exit %d, stdout %q", n, res.ExitCode, res.Stdout)
			}
			return strings.TrimSpace(string(res.Stdout)) + "; listener accepted nothing"
		},
	},
	{
		name:   "reads secrets from its environment and /proc/*/environ",
		script: "secrets.py",
		env: func(t *testing.T, c *caseState) map[string]string {
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret-canary")
			t.Setenv("OPENAI_API_KEY", "sk-openai-secret-canary")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-canary")
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIA-canary")
			return map[string]string{"VISIBLE": "yes"}
		},
		check: func(t *testing.T, c *caseState, res Result) string {
			if contains(res.Stdout, "canary") {
				t.Errorf("a host secret leaked into the sandbox: %s", res.Stdout)
			}
			var found struct {
				Self map[string]string `json:"self"`
				Proc []string          `json:"proc"`
			}
			if err := json.Unmarshal(res.Stdout, &found); err != nil {
				t.Fatalf("output: %v: %q %q", err, res.Stdout, res.Stderr)
			}
			got := strings.Join(sortedKeys(found.Self), " ")
			if want := "HOME LANG PATH PWD VISIBLE"; got != want {
				t.Errorf("environment keys %q, want %q", got, want)
			}
			return fmt.Sprintf("saw only %s (and %d /proc environ files, none with a secret)", got, len(found.Proc))
		},
	},
	{
		name:   "writes outside the workspace: host /tmp, host $HOME, workspace parent, /etc, the mounted test",
		script: "escape.py",
		env: func(t *testing.T, c *caseState) map[string]string {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join("/tmp", randomName(t))
			homeFile := filepath.Join(home, randomName(t))
			c.paths = []string{tmp, homeFile, "/etc/pwned"}
			t.Cleanup(func() { os.Remove(tmp); os.Remove(homeFile) })
			return map[string]string{"PWNED_TMP": tmp, "PWNED_HOME": homeFile}
		},
		check: func(t *testing.T, c *caseState, res Result) string {
			paths := append(c.paths, filepath.Join(filepath.Dir(res.Workspace), "pwned"))
			for _, p := range paths {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the candidate wrote %s on the host", p)
				}
			}
			if !contains(res.Stdout, "denied tests/test_sample.py") {
				t.Errorf("writing the mounted test was not refused: %s", res.Stdout)
			}
			if len(res.Tampered) != 0 {
				t.Errorf("Tampered = %q", res.Tampered)
			}
			var wrote []string
			for _, l := range strings.Split(string(res.Stdout), "\n") {
				if strings.HasPrefix(l, "WROTE ") {
					wrote = append(wrote, strings.TrimPrefix(l, "WROTE "))
				}
			}
			return fmt.Sprintf("nothing written on the host; mounted test read-only; inside-only writes: %v", wrote)
		},
	},
	{
		name:   "edits the mounted test, then renames its directory and writes a fake one",
		script: "tamper_edit.sh",
		check: func(t *testing.T, c *caseState, res Result) string {
			if !contains(res.Stdout, "in-place edit refused") || !hasTampered(res, "tests/test_sample.py: replaced") {
				t.Errorf("tampering not contained and reported: %s %q", res.Stdout, res.Tampered)
			}
			return "in-place edit refused (read-only); replacement reported: " + strings.Join(res.Tampered, "; ")
		},
	},
	{
		name:   "deletes the mounted test, then moves it away",
		script: "tamper_delete.sh",
		check: func(t *testing.T, c *caseState, res Result) string {
			if !hasTampered(res, "tests/test_sample.py: missing") {
				t.Errorf("deletion not reported: %s %q", res.Stdout, res.Tampered)
			}
			return "rm refused; move reported: " + strings.Join(res.Tampered, "; ")
		},
	},
	{
		name:   "drops a conftest.py that turns failures into passes, runs pytest, removes it (wrong solution)",
		script: "shadow_conftest.py",
		files:  map[string][]byte{"solution.py": []byte("def add(a, b):\n    return 0\n")},
		check: func(t *testing.T, c *caseState, res Result) string {
			if !hasTampered(res, "conftest.py: shadows") || !strings.Contains(strings.Join(res.Tampered, ""), "then removed") {
				t.Errorf("conftest.py not reported: %q", res.Tampered)
			}
			return fmt.Sprintf("pytest exit %d (the hook worked) but reported: %s", res.ExitCode, strings.Join(res.Tampered, "; "))
		},
	},
	{
		name:    "supplies a conftest.py that forces passes and deletes itself at session end (wrong solution)",
		command: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"},
		files: map[string][]byte{
			"solution.py": []byte("def add(a, b):\n    return 0\n"),
			"conftest.py": readTestdataInit("hostile/conftest_selfdelete.py"),
		},
		check: func(t *testing.T, c *caseState, res Result) string {
			_, err := os.Lstat(filepath.Join(res.Workspace, "conftest.py"))
			if !hasTampered(res, "conftest.py: shadows") || err == nil {
				t.Errorf("self-deleting conftest.py not reported (still there: %v): %q", err == nil, res.Tampered)
			}
			return fmt.Sprintf("pytest exit %d, conftest.py gone afterwards, but reported: %s", res.ExitCode, strings.Join(res.Tampered, "; "))
		},
	},
	{
		name:   "writes tests/__init__.py",
		script: "shadow_init.sh",
		check: func(t *testing.T, c *caseState, res Result) string {
			if !hasTampered(res, "tests/__init__.py: shadows") {
				t.Errorf("tests/__init__.py not reported: %q", res.Tampered)
			}
			return "reported: " + strings.Join(res.Tampered, "; ")
		},
	},
	{
		name:   "puts a fake pytest.py first on sys.path",
		script: "shadow_pytest.sh",
		check: func(t *testing.T, c *caseState, res Result) string {
			if !hasTampered(res, "pytest.py: shadows") {
				t.Errorf("pytest.py not reported: %q", res.Tampered)
			}
			return fmt.Sprintf("fake printed %q; reported: %s", strings.TrimSpace(string(res.Stdout)), strings.Join(res.Tampered, "; "))
		},
	},
	{
		name:   "plants bytecode for the test in tests/__pycache__",
		script: "shadow_pyc.py",
		check: func(t *testing.T, c *caseState, res Result) string {
			if !contains(res.Stdout, "refused") || len(res.Tampered) != 0 {
				t.Errorf("pyc planting not refused: %s %q", res.Stdout, res.Tampered)
			}
			return "refused: tests/__pycache__ is an empty read-only mount"
		},
	},
	{
		name:    "exits 0 before the tests run (os._exit(0) on import)",
		command: []string{"python3", "-m", "pytest", "-q", "tests"},
		files:   map[string][]byte{"solution.py": readTestdataInit("hostile/exit_early.py")},
		check: func(t *testing.T, c *caseState, res Result) string {
			if res.ExitCode != 0 || contains(res.Stdout, "passed") || res.TruncatedStdout {
				t.Errorf("unexpected: %+v", res)
			}
			return fmt.Sprintf("exit 0 with %d bytes of output and no summary line: the report parser must reject it", res.StdoutBytes)
		},
	},
	{
		name:   "kills its parent (kill -9 $PPID, os.kill(os.getppid()))",
		script: "kill_parent.sh",
		check: func(t *testing.T, c *caseState, res Result) string {
			if !contains(res.Stdout, "parent is") {
				t.Errorf("did not run: %+v", res)
			}
			return fmt.Sprintf("%s; exit %d", strings.ReplaceAll(strings.TrimSpace(string(res.Stdout)), "\n", ", "), res.ExitCode)
		},
	},
	{
		name:    "report is a link to /dev/zero (the host would read forever)",
		command: []string{"sh", "hostile.sh", "zero"},
		script:  "report_links.sh",
		report:  true,
		check:   reportRefused("symbolic link"),
	},
	{
		name:    "report is a link to /proc/self/fd/0 (the host's stdin would hang it)",
		command: []string{"sh", "hostile.sh", "stdin"},
		script:  "report_links.sh",
		report:  true,
		check:   reportRefused("symbolic link"),
	},
	{
		name:    "report is a link to a host file (/etc/shadow)",
		command: []string{"sh", "hostile.sh", "host"},
		script:  "report_links.sh",
		report:  true,
		check:   reportRefused("symbolic link"),
	},
	{
		name:    "report is a FIFO (opening it would block)",
		command: []string{"sh", "hostile.sh", "fifo"},
		script:  "report_links.sh",
		report:  true,
		check:   reportRefused("not a regular file"),
	},
	{
		name:    "report is a hard link to another file",
		command: []string{"sh", "hostile.sh", "hardlink"},
		script:  "report_links.sh",
		report:  true,
		check:   reportRefused("hard link"),
	},
	{
		name:    "report of 40 MB",
		command: []string{"sh", "hostile.sh", "huge"},
		script:  "report_links.sh",
		report:  true,
		limits:  Limits{FileSize: 64 << 20, Disk: 128 << 20},
		check:   reportRefused("larger than"),
	},
	{
		name:   "fills the disk: workspace and HOME (64 MiB limit)",
		script: "diskfill.sh",
		limits: Limits{Disk: 64 << 20, Wall: 20 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			if os.Geteuid() != 0 {
				return "not enforced without root"
			}
			var st syscall.Statfs_t
			syscall.Statfs(filepath.Dir(res.Workspace), &st)
			used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
			if !res.DiskFull || res.TimedOut || used > 64<<20 {
				t.Errorf("disk filler not stopped at the limit: DiskFull %v, %d bytes used: %+v", res.DiskFull, used, res)
			}
			return fmt.Sprintf("%s; writes failed at the limit (%d MiB used); DiskFull", firstLine(res.Stdout, "files"), used>>20)
		},
	},
	{
		name:   "fills a cache, shared by every run (32 MiB limit)",
		script: "cachefill.sh",
		cache:  true,
		limits: Limits{Disk: 32 << 20, Wall: 20 * time.Second},
		check: func(t *testing.T, c *caseState, res Result) string {
			var grown int64
			filepath.WalkDir(c.paths[0], func(p string, d fs.DirEntry, err error) error {
				if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
					grown += fi.Size()
				}
				return nil
			})
			// The writes go to the run's own layer: as root on its tmpfs,
			// where they fail at the limit; without root to a copy in the
			// run directory, which is polled and the tree killed past it.
			if !res.DiskFull || res.TimedOut || grown != 0 {
				t.Errorf("cache filler not stopped at the limit, or the shared cache changed: DiskFull %v, cache grew %d bytes: %+v", res.DiskFull, grown, res)
			}
			return fmt.Sprintf("%s; stopped at the limit (%s), the shared cache unchanged; DiskFull", firstLine(res.Stdout, "cache files"), res.Signal)
		},
	},
	{
		name:   "a .pth in the workspace's user site-packages and root",
		script: "pth.sh",
		files: map[string][]byte{
			".local/lib/python3.11/site-packages/ratchet-pwn.pth": []byte("import os; open('pth-ran', 'w').write('user site')\n"),
			"ratchet-pwn.pth": []byte("import os; open('pth-ran', 'w').write('workspace root')\n"),
		},
		check: func(t *testing.T, c *caseState, res Result) string {
			if !contains(res.Stdout, "no .pth ran") || contains(res.Stdout, res.Workspace) {
				t.Errorf("a .pth from the workspace ran, or the user site is in it: %s", res.Stdout)
			}
			return "no .pth ran; " + firstLine(res.Stdout, "user site")
		},
	},
	{
		name:   "writes 2 GB to stdout",
		script: "bigoutput.sh",
		env: func(t *testing.T, c *caseState) map[string]string {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			c.alloc = m.TotalAlloc
			return nil
		},
		check: func(t *testing.T, c *caseState, res Result) string {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			alloc := m.TotalAlloc - c.alloc
			if res.StdoutBytes != 2e9 || !res.TruncatedStdout || len(res.Stdout) > DefaultOutput+100 || alloc > 64<<20 {
				t.Errorf("output not capped: %d bytes read, %d kept, truncated %v, %d bytes allocated",
					res.StdoutBytes, len(res.Stdout), res.TruncatedStdout, alloc)
			}
			return fmt.Sprintf("%d bytes read, %d kept, %d MiB allocated meanwhile", res.StdoutBytes, len(res.Stdout), alloc>>20)
		},
	},
}

// reportRefused checks that the report was not read, for the reason why.
func reportRefused(why string) func(t *testing.T, c *caseState, res Result) string {
	return func(t *testing.T, c *caseState, res Result) string {
		if len(res.Report) != 0 || !strings.Contains(res.ReportProblem, why) || res.TimedOut {
			t.Errorf("report read or refused for the wrong reason: %d bytes, problem %q, %+v", len(res.Report), res.ReportProblem, res)
		}
		return strings.TrimSpace(string(res.Stdout)) + " → not read: " + res.ReportProblem
	}
}

// readTestdataInit reads a testdata file while the case table is built.
func readTestdataInit(name string) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return data
}

func firstLine(b []byte, substr string) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestHostile runs every hostile candidate under every isolating backend,
// checks that it was contained and reported, and logs a table of what
// happened and how long each took to stop:
//
//	go test ./sandbox -run TestHostile -v -count=1
func TestHostile(t *testing.T) {
	needPython(t)
	testSrc := readTestdata(t, "tests/test_sample.py")
	type row struct{ backend, name, what, took string }
	var rows []row
	for _, backend := range isolated {
		t.Run(backend, func(t *testing.T) {
			r := runnerFor(t, backend)
			for _, hc := range hostileCases {
				t.Run(hc.name, func(t *testing.T) {
					c := &caseState{}
					files := map[string][]byte{"solution.py": []byte(solution)}
					cmd := hc.command
					if hc.script != "" {
						name := "hostile" + filepath.Ext(hc.script)
						files[name] = readTestdata(t, "hostile/"+hc.script)
						if cmd == nil {
							cmd = []string{"sh", name}
							if strings.HasSuffix(name, ".py") {
								cmd = []string{"python3", name}
							}
						}
					}
					for k, v := range hc.files {
						files[k] = v
					}
					var env map[string]string
					if hc.env != nil {
						env = hc.env(t, c)
					}
					if hc.report {
						env = map[string]string{"REPORT": "${REPORT}"}
					}
					var caches []Cache
					if hc.cache {
						// Not in t.TempDir(), whose 0700 parent keeps the sandbox uid out.
						host := filepath.Join(os.TempDir(), randomName(t))
						t.Cleanup(func() { os.RemoveAll(host) })
						c.paths = []string{host}
						caches = []Cache{{Host: host, Target: ".cache"}}
						env = map[string]string{"CACHE": "${WORKSPACE}/.cache"}
					}
					res := run(t, r, Spec{
						Files:   files,
						Mounts:  []Mount{{Source: filepath.Join("testdata", "tests", "test_sample.py"), Target: "tests/test_sample.py"}},
						Command: cmd,
						Env:     env,
						Limits:  hc.limits,
						Keep:    true,
						Report:  hc.report,
						Caches:  caches,
					})
					defer Remove(res.Workspace)
					noSandboxProcs(t)
					if res.Isolation != backend {
						t.Errorf("Isolation = %q", res.Isolation)
					}
					what := hc.check(t, c, res)
					if src := readTestdata(t, "tests/test_sample.py"); string(src) != string(testSrc) {
						t.Errorf("the test file on the host changed")
					}
					if t.Failed() {
						what = "FAILED: " + what
						t.Logf("result: exit %d signal %q timedout %v tampered %q\nstdout %q\nstderr %q",
							res.ExitCode, res.Signal, res.TimedOut, res.Tampered, clip(res.Stdout), clip(res.Stderr))
					}
					rows = append(rows, row{backend, hc.name, what, ms(res.Duration)})
				})
			}
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| backend | hostile candidate | what happened | time to stop |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.backend, r.name, r.what, r.took)
	}
	t.Log(b.String())
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:1000]) + "..." + string(b[len(b)-1000:])
	}
	return string(b)
}
