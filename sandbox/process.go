package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// findPrlimit returns util-linux prlimit(1), which sets the rlimits inside
// the sandbox right before it executes the command. Setting them there
// (rather than on bwrap) matters for RLIMIT_NPROC: inside a user namespace
// it counts only the sandbox's own processes.
func findPrlimit() (string, error) {
	for _, p := range []string{"/usr/bin/prlimit", "/bin/prlimit"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: prlimit(1) not found in /usr/bin or /bin (install util-linux)", ErrUnavailable)
}

// prlimitArgs returns the argv prefix that applies l and then executes the
// rest of the argv. A single value sets both the soft and the hard limit, so
// the candidate cannot raise them again; CPU gets one second of grace
// between SIGXCPU and SIGKILL.
func prlimitArgs(prlimit string, l Limits) []string {
	cpu := int64((l.CPU + time.Second - 1) / time.Second)
	return []string{
		prlimit,
		fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1),
		fmt.Sprintf("--as=%d", l.Memory),
		fmt.Sprintf("--nproc=%d", l.Procs),
		fmt.Sprintf("--fsize=%d", l.FileSize),
		"--core=0",
		"--",
	}
}

// systemDirs returns the host paths exposed read-only to isolated
// sandboxes: /usr and /etc bound, and /bin, /sbin, /lib* bound or, on a
// merged-/usr system, recreated as the same symlinks.
func systemDirs() (binds []string, symlinks [][2]string) {
	binds = []string{"/usr", "/etc"}
	for _, p := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(p); err == nil {
				symlinks = append(symlinks, [2]string{t, p})
			}
		case fi.IsDir():
			binds = append(binds, p)
		}
	}
	return binds, symlinks
}

// decode turns a wait status into an exit. Under bwrap a signal of the
// command arrives as exit status 128+N (inferSignal).
func decode(ps *os.ProcessState, inferSignal bool) exit {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return exit{code: ps.ExitCode()}
	}
	cpu := ps.UserTime() + ps.SystemTime()
	if ws.Signaled() {
		return exit{code: 128 + int(ws.Signal()), signal: signalName(ws.Signal()), cpu: cpu}
	}
	e := exit{code: ws.ExitStatus(), cpu: cpu}
	if inferSignal && e.code > 128 && e.code < 128+65 {
		e.signal = signalName(syscall.Signal(e.code - 128))
	}
	return e
}

// cpuKilled reports whether ex, after took of wall time, is a death by
// RLIMIT_CPU: SIGXCPU at the soft limit, or SIGKILL at the hard one (what
// the kernel sends to a process that ignores SIGXCPU, or that is pid 1 of
// its namespace). A SIGKILL counts when the command used at least the soft
// limit of CPU time; under bwrap, whose exit carries no CPU time of the
// command, when at least that much wall time passed, as a single-threaded
// command needs.
func cpuKilled(ex exit, limit, took time.Duration) bool {
	soft := limit.Truncate(time.Second)
	switch ex.signal {
	case "SIGXCPU":
		return true
	case "SIGKILL":
		return ex.cpu >= soft || (ex.noCPU && took >= soft)
	}
	return false
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGSTKFLT: "SIGSTKFLT", syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT",
	syscall.SIGSTOP: "SIGSTOP", syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN",
	syscall.SIGTTOU: "SIGTTOU", syscall.SIGURG: "SIGURG", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGVTALRM: "SIGVTALRM", syscall.SIGPROF: "SIGPROF",
	syscall.SIGWINCH: "SIGWINCH", syscall.SIGIO: "SIGIO", syscall.SIGPWR: "SIGPWR",
	syscall.SIGSYS: "SIGSYS",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// newCmd returns the command for argv with the job's environment, working
// directory, output capture and standard input.
func newCmd(argv []string, j *job) *exec.Cmd {
	cmd := &exec.Cmd{
		Path:   argv[0],
		Args:   argv,
		Env:    j.env,
		Dir:    j.ws.dir,
		Stdout: j.stdout,
		Stderr: j.stderr,
		// Everything in the sandbox is dead when the command is; this only
		// bounds Wait if a pipe was passed on to something that is not.
		WaitDelay:  2 * time.Second,
		ExtraFiles: j.extra,
	}
	if j.stdin != nil {
		cmd.Stdin = bytes.NewReader(j.stdin)
	}
	return cmd
}

// credential returns the credential that drops root to the sandbox ids, or
// nil when we are not root.
func credential(id ids) *syscall.Credential {
	if !id.root {
		return nil
	}
	return &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: []uint32{}}
}

// lookBinary finds name on the fixed system PATH.
func lookBinary(name string) (string, error) {
	for _, d := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// proc identifies a process across pid reuse by its start time.
type proc struct {
	pid   int
	start string
}

// procStat returns the state and start time of pid from /proc.
func procStat(pid int) (state, start string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", false
	}
	// pid (comm) state ppid ... with starttime the 22nd field; comm may
	// hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return "", "", false
	}
	return f[0], f[19], true
}

func findProc(pid int) (proc, bool) {
	_, start, ok := procStat(pid)
	return proc{pid, start}, ok
}

// alive reports whether p still runs (a zombie is dead).
func (p proc) alive() bool {
	state, start, ok := procStat(p.pid)
	return ok && start == p.start && state != "Z" && state != "X"
}

func (p proc) kill() {
	if p.alive() {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// waitGone waits up to d for p to die.
func (p proc) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for sleep := 100 * time.Microsecond; p.alive(); sleep = min(2*sleep, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(sleep)
	}
	return true
}
