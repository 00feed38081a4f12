// Package sandbox runs untrusted, possibly hostile candidate programs (most
// importantly: tests executed against generated code) so that they cannot
// harm the host, cannot lie about the tests they were given, and cannot run
// away with its resources.
//
// Every Run gets a fresh temporary workspace holding Spec.Files. Test files
// and fixtures (Spec.Mounts) are copied from outside the workspace into a
// root-owned staging area, hashed (sha256), and bind-mounted read-only into
// the workspace; after the run they are hashed again and the workspace is
// inspected for files that shadow them (see Result.Tampered). The command
// runs as an unprivileged uid (65534, nobody, by default), with a scrubbed
// environment, rlimits on CPU time, address space, processes and file size
// (set by util-linux prlimit(1) inside the sandbox, just before the command
// is executed), a wall-clock timeout that kills the whole process tree, and
// stdout/stderr capped while they are read.
//
// Backends, in the order "auto" tries them:
//
//   - "bwrap": bubblewrap (/usr/bin/bwrap, Debian package bubblewrap) with
//     new user, pid, net, ipc, uts and cgroup namespaces, a read-only view
//     of /usr and /etc, private /tmp, /dev and /proc, no network at all.
//     When the caller is root, bwrap itself is started as the sandbox uid,
//     so it holds no privilege on the host either.
//   - "namespaces": the same isolation built directly from Go, for hosts
//     without bubblewrap. Needs root (CAP_SYS_ADMIN): the mount namespace is
//     prepared on a locked OS thread (unshare, bind mounts, pivot_root) and
//     the command is cloned from that thread into new pid, net, ipc, uts and
//     user namespaces. There is no /proc inside this backend.
//   - "unsafe": no isolation, only a temporary directory, rlimits, the
//     scrubbed environment, the timeout and (as root) the unprivileged uid.
//     The candidate can read the host file system, reach the network and
//     leave orphans that called setsid. Only used when Config.AllowUnsafe is
//     set, and every Result says so in Result.Isolation.
//
// New returns ErrUnavailable when no isolating backend works and unsafe
// execution was not explicitly allowed.
//
// What the sandbox does not do: it cannot stop a candidate that the tests
// import in-process from subverting them from inside (monkeypatching the
// test framework, os._exit(0) before the tests run, ...). It reports what
// happened (exit status, the full-size counts and the head and tail of the
// output, a report file read safely); deciding whether the expected tests
// actually ran is the job of its caller (verify/execcheck).
//
// The host never follows a link or opens a non-regular file that the
// candidate could have placed: the report is opened with openat and
// O_NOFOLLOW below a directory opened with O_NOFOLLOW, checked with fstat
// and read up to a size limit; the workspace is inspected with lstat,
// O_NOFOLLOW|O_NONBLOCK and capped reads. Everything the run writes
// (workspace, HOME, report, its writes into Spec.Caches) is capped in
// total by Limits.Disk and removed with the run.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/layer"
)

// View is the workspace's path inside the sandbox under bwrap and
// namespaces, the same for every run: the go command keys its build
// cache on the package's directory, so a warm cache is hit only when
// every run builds from one path. Each run's mount namespace has its
// own workspace there. Under unsafe, with no mount namespace, the
// workspace is at its host path (Result.Workspace).
const View = "/workspace"

// Default limits, used for each zero field of Limits.
const (
	DefaultCPU      = 10 * time.Second
	DefaultMemory   = 512 << 20
	DefaultProcs    = 64
	DefaultFileSize = 16 << 20
	DefaultWall     = 30 * time.Second
	DefaultOutput   = 64 << 10
	DefaultDisk     = 1 << 30
)

// Limits bounds the resources of one Run. A zero field means its default.
type Limits struct {
	// CPU is the CPU time of each process (RLIMIT_CPU, whole seconds,
	// rounded up); the process gets SIGXCPU at the limit and SIGKILL one
	// second later. Default 10s.
	CPU time.Duration
	// Memory is the address space of each process in bytes (RLIMIT_AS);
	// allocations beyond it fail. It also caps the size of the private
	// /tmp. Default 512 MiB. Address space is not memory: a Go program
	// reserves about 750 MiB of it at start and dies under the default
	// ("failed to reserve page summary memory"), so give Go 1 GiB or more.
	Memory int64
	// Procs is the number of processes and threads the sandbox uid may
	// have (RLIMIT_NPROC). With the bwrap backend it is counted per
	// sandbox (per user namespace); with the namespaces and unsafe
	// backends it counts every process of the uid on the host, so
	// concurrent runs share it unless their Runners use distinct
	// Config.UID. Default 64.
	Procs int
	// FileSize is the largest file a process may write (RLIMIT_FSIZE).
	// Default 16 MiB.
	FileSize int64
	// Wall is the wall-clock time after which the whole process tree is
	// killed and Result.TimedOut is set. Default 30s.
	Wall time.Duration
	// Output is how many bytes of stdout, and separately of stderr, are
	// kept. Output beyond that is read and discarded, never buffered; the
	// kept bytes are the first and the last Output/2 bytes. Default 64 KiB.
	Output int
	// Disk caps, in bytes, everything the run keeps outside memory limits:
	// the workspace, HOME, the report directory and the staged copies of
	// the mounts, what it writes into Spec.Caches. As root they all live
	// on a tmpfs of this size (writes beyond it fail with ENOSPC and
	// Result.DiskFull is set) and the host's disk is never written.
	// Without root, and for what a Cache.Fill run adds to a cache, the
	// usage is polled every 100ms, from the first poll on, and the tree
	// killed past the limit (Result.DiskFull), which a fast writer can
	// overshoot by what it writes in two polls' time. The private /tmp is
	// capped at Memory. Default 1 GiB.
	Disk int64
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.CPU <= 0 {
		l.CPU = DefaultCPU
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Procs <= 0 {
		l.Procs = DefaultProcs
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultFileSize
	}
	if l.Wall <= 0 {
		l.Wall = DefaultWall
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.Disk <= 0 {
		l.Disk = DefaultDisk
	}
	return l
}

// Mount is a host file or directory made visible, read-only, at Target
// inside the workspace. Target is relative to the workspace root, e.g.
// "tests/test_x.py". The sandbox copies Source into a root-owned staging
// area outside the workspace before the run (so Source need not be
// readable by the sandbox uid and the candidate never sees the host inode),
// hashes every file, and mounts the copy; it must not overlap Spec.Files or
// another Mount.
type Mount struct {
	Source string
	Target string
}

// Spec describes one run.
type Spec struct {
	// Files are written into a fresh workspace before the run, keyed by a
	// relative, slash-separated path. They belong to the sandbox uid; one
	// that starts with "#!" is executable, and so is one Executable names.
	Files      map[string][]byte
	Executable map[string]bool
	// Mounts are the read-only test files and fixtures.
	Mounts []Mount
	// Command is run with the workspace as its working directory;
	// Command[0] is looked up in PATH inside the sandbox. "${WORKSPACE}"
	// in it, as in Env values, is the workspace's path inside the sandbox.
	Command []string
	// Env is the only environment the command gets besides PATH
	// (/usr/local/bin:/usr/bin:/bin), HOME, LANG (C.UTF-8), which it may
	// override, and PWD (the workspace; bwrap always sets it). HOME is an
	// empty directory outside the workspace, fresh for every run, so that
	// nothing a candidate left in its workspace is read as a user's
	// configuration (Python's user site-packages and its .pth files, Go's
	// env file, npm's rc). The host environment is never inherited.
	Env map[string]string
	// Report asks for a report file written by the command, such as
	// pytest's --junitxml. "${REPORT}" in Command and in Env values is
	// replaced by its path: a file that does not exist when the command
	// starts, in a fresh directory outside the workspace with a random
	// name. After the run the host reads it into Result.Report, never
	// through a link and only from a regular file of at most MaxReport
	// bytes; Result.ReportProblem says why nothing was read.
	Report bool
	// Limits bounds the run; zero fields mean the defaults.
	Limits Limits
	// Keep leaves the workspace after Run (Result.Workspace), for the
	// caller to inspect and then delete with Remove (as root it is a tmpfs
	// mount, which os.RemoveAll cannot take away); otherwise it is removed
	// before Run returns.
	Keep bool
	// Caches are host directories shared by runs, such as a warm Go build
	// cache. A run sees each at its Target as a directory it may write,
	// but what it writes goes to a layer private to the run and discarded
	// with it: no run changes the host directory, so nothing a candidate
	// writes into a cache reaches a later run (a forged build output
	// filed under a real key, say). Only a run with Cache.Fill, which
	// runs no candidate code, writes the host directory itself.
	//   - As root, on every backend, the host mounts an overlayfs for the
	//     run: the cache's content is its read-only lower layer, its upper
	//     layer is on the run's tmpfs (so it counts in Limits.Disk) and
	//     both go with the run. Host is root's and 0700: no process of the
	//     sandbox uid reaches the content on the host (the unsafe backend
	//     sees the host's files).
	//   - Without root there is no overlayfs: the run gets a private copy
	//     of the content in its run directory, made before the command
	//     starts (about half a second for a Go cache of 200 MiB). The
	//     command runs as the caller's own uid, so under the unsafe
	//     backend it can write Host, as it can write anything else of the
	//     caller's.
	Caches []Cache
	// ExtraFiles are passed to the command as file descriptors 3, 4, ...
	// (on every backend), e.g. one end of a socket pair through which the
	// host talks to a process that must not share a sandbox with another.
	// The caller keeps and closes its own copies.
	ExtraFiles []*os.File
	// Stdin is the command's standard input; nil means /dev/null.
	Stdin []byte
	// Layer, when set, is the workspace instead of a fresh one holding
	// Files (which must be empty): the layer's view is bound at the
	// workspace's path, so the command sees the original's files, links,
	// modes and .git without a copy, and what it writes lands in the
	// layer's upper layer (see package layer). Needs root, whose Runner
	// runs as the layer's UID. The mount points of Mounts and Caches that
	// the view lacks are made in it for the run and removed after it;
	// Limits.Disk bounds what the upper layer grows by polling it, as
	// without root. Not with Keep.
	Layer *layer.Layer
}

// Cache is one shared directory; see Spec.Caches.
type Cache struct {
	// Host is the directory on the host; it is created if missing and
	// made 0700 (as root, root's). The content is kept in Host/layer-UID,
	// owned by the sandbox uid: each uid has its own, since the files a
	// run adds to the content's directories must be its own.
	Host string
	// Target is where it appears, relative to the workspace.
	Target string
	// Fill mounts the content itself, read-write, so that what this run
	// writes is kept for later runs. Only for a trusted command that runs
	// no candidate code and reads no candidate file (warming the cache,
	// as sandbox/gocache does); never together with candidate files.
	Fill bool
}

// Isolation levels, as reported in Result.Isolation.
const (
	IsolationBwrap      = "bwrap"
	IsolationNamespaces = "namespaces"
	// IsolationUnsafe means the command ran without namespaces: it could
	// read the host file system and use the network.
	IsolationUnsafe = "unsafe"
)

// Result is what a run did. Everything here describes the candidate; a
// candidate's failure is never a Run error.
type Result struct {
	// ExitCode is the command's exit status. A command killed by signal N
	// reports 128+N, the shell convention, and names it in Signal.
	ExitCode int
	// Stdout and Stderr are the kept output (see Limits.Output). When more
	// was written, Truncated* is set, the kept bytes are the head and the
	// tail, and a one-line marker separates them.
	Stdout, Stderr                   []byte
	TruncatedStdout, TruncatedStderr bool
	// StdoutBytes and StderrBytes count everything written, kept or not.
	StdoutBytes, StderrBytes int64
	// Duration is the wall time from start to the death of the last
	// process of the sandbox.
	Duration time.Duration
	// TimedOut is set when Limits.Wall expired and the tree was killed.
	TimedOut bool
	// Signal names the signal that ended the command ("SIGKILL",
	// "SIGXCPU", ...), or is empty. Under bwrap it is inferred from an exit
	// status of 128+N.
	Signal string
	// Tampered names each mounted test file that was changed, is missing
	// or no longer at its target, and each workspace file that shadows the
	// tests, as "path: reason", sorted. Shadowing is detected by file
	// placement, for pytest and Go tests:
	//   - any conftest.py that was not mounted (pytest runs it as a plugin);
	//   - an __init__.py in the workspace root or any directory on the way
	//     to a mounted file (it changes pytest's rootdir-relative module
	//     names and sys.path insertion, and runs code on import);
	//   - pytest configuration (pytest.ini, .pytest.ini, or a tox.ini,
	//     setup.cfg or pyproject.toml with a pytest section) in those
	//     directories: addopts, testpaths or plugins change what runs;
	//   - a Python module or package (name.py, name/__init__.py, name.pyc,
	//     name.*.so) in those directories, or in a PYTHONPATH directory of
	//     Spec.Env inside the workspace, named like a mounted module, like
	//     the module run by "-m name", or like pytest, _pytest, pluggy, py,
	//     iniconfig, sitecustomize or usercustomize, and, when Python runs
	//     (the command is python or pytest, or a mounted file is *.py),
	//     like a module of the standard library (sys.stdlib_module_names)
	//     or one that importing pytest loads, as the python3 on the
	//     default PATH names them: it would be imported instead of the
	//     real one, the working directory being first on sys.path;
	//   - a *_test.go that was not mounted and defines TestMain, in a
	//     directory holding a mounted *_test.go.
	// Candidate files given in Spec.Files are judged before the run, so a
	// conftest.py that deletes itself is still reported; names created
	// during the run in the directories these rules look at (the root,
	// the directories on the way to mounted files and PYTHONPATH) are
	// recorded with inotify and reported even when removed before the end
	// ("created during the run, then removed"). A file created and
	// removed again deeper down is not seen.
	//
	// Under the unsafe backend a process of the command's process group
	// still running when the command exited is tampering too
	// ("processes: ..."; it is killed at once): a daemon that outlives the
	// test runner could rewrite its report (one that called setsid leaves
	// the group and is not seen). Under bwrap and namespaces nothing
	// outlives the command: the init of its pid namespace (bwrap's, or the
	// command itself) exits with it, and the kernel kills the rest.
	Tampered []string
	// Workspace is the host path of the workspace; it no longer exists
	// after Run unless Spec.Keep was set. Inside the sandbox the workspace
	// is at View (under unsafe, at this path).
	Workspace string
	// Isolation is the backend that ran the command: IsolationBwrap,
	// IsolationNamespaces or IsolationUnsafe.
	Isolation string
	// CPUExceeded is set when the command was killed for using up
	// Limits.CPU: by SIGXCPU at the soft limit, or by SIGKILL at the hard
	// limit one second later (a command that ignores SIGXCPU, or one that
	// is pid 1 of its namespace, as under the namespaces backend). A
	// SIGKILL counts when the command's CPU time reached the limit; under
	// bwrap, which passes no CPU time on, when as much wall time passed.
	CPUExceeded bool
	// DiskFull is set when the run used up Limits.Disk (and, when that
	// was found by polling, was killed for it).
	DiskFull bool
	// Report is the report file's content (Spec.Report), and
	// ReportProblem why there is none: "not written", a link, not a
	// regular file, too large.
	Report        []byte
	ReportProblem string
}

// Runner runs specs. Implementations are safe for concurrent use.
type Runner interface {
	// Run executes s. The error reports infrastructure problems only
	// (invalid spec, the sandbox could not be built or started, ctx was
	// cancelled); whatever the candidate does is described by Result.
	Run(ctx context.Context, s Spec) (Result, error)
}

// Config selects a backend.
type Config struct {
	// Backend is "auto" (or empty), "bwrap", "namespaces" or "unsafe".
	// "auto" uses the first of bwrap and namespaces that works here, and
	// unsafe only if AllowUnsafe is set.
	Backend string
	// AllowUnsafe permits the unsafe backend, explicitly or as the last
	// resort of "auto".
	AllowUnsafe bool
	// UID and GID are the unprivileged ids the command runs as when the
	// caller is root; zero means 65534 (nobody, nogroup). A non-root caller
	// runs the command as itself (shown as 65534 inside bwrap).
	UID, GID int
}

// ErrUnavailable is returned by New when no isolating backend works on
// this host and unsafe execution was not allowed.
var ErrUnavailable = errors.New("sandbox: no isolation available: install bubblewrap (apt-get install bubblewrap; /usr/bin/bwrap with working user namespaces) or run as root for the namespaces backend, or explicitly allow running candidates without isolation (sandbox.Config{AllowUnsafe: true})")

// backend runs a prepared command; see bwrap.go, ns.go and unsafe.go.
type backend interface {
	name() string
	// run runs the job and returns when every process of it is dead.
	run(ctx context.Context, j *job) (exit, error)
}

// New returns a Runner for cfg, after checking that the backend actually
// works here by running /bin/true in it.
func New(cfg Config) (Runner, error) {
	id := ids{uid: cfg.UID, gid: cfg.GID}
	if id.uid == 0 {
		id.uid = 65534
	}
	if id.gid == 0 {
		id.gid = 65534
	}
	id.root = os.Geteuid() == 0
	if !id.root {
		id.uid, id.gid = os.Getuid(), os.Getgid()
	}
	prlimit, err := findPrlimit()
	if err != nil {
		return nil, err
	}
	var candidates []backend
	switch cfg.Backend {
	case "", "auto":
		candidates = []backend{&bwrapBackend{}, &nsBackend{}}
		if cfg.AllowUnsafe {
			candidates = append(candidates, &unsafeBackend{})
		}
	case IsolationBwrap:
		candidates = []backend{&bwrapBackend{}}
	case IsolationNamespaces:
		candidates = []backend{&nsBackend{}}
	case IsolationUnsafe:
		if !cfg.AllowUnsafe {
			return nil, fmt.Errorf("%w (backend %q requested without AllowUnsafe)", ErrUnavailable, cfg.Backend)
		}
		candidates = []backend{&unsafeBackend{}}
	default:
		return nil, fmt.Errorf("sandbox: unknown backend %q (want auto, bwrap, namespaces or unsafe)", cfg.Backend)
	}
	var why []string
	for _, b := range candidates {
		r := &runner{b: b, ids: id, prlimit: prlimit}
		if err := r.probe(); err != nil {
			why = append(why, b.name()+": "+err.Error())
			continue
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w; tried %s", ErrUnavailable, strings.Join(why, "; "))
}

// ids are the credentials of the sandboxed command.
type ids struct {
	uid, gid int
	// root is set when the caller is root and so can chown the workspace
	// and drop to uid.
	root bool
}

type runner struct {
	b       backend
	ids     ids
	prlimit string
}

// probe runs /bin/true through the whole machinery.
func (r *runner) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.Run(ctx, Spec{Command: []string{"true"}, Limits: Limits{Wall: 15 * time.Second}})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("/bin/true exited %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// Run implements Runner.
func (r *runner) Run(ctx context.Context, s Spec) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	rn, err := r.prepareRun(ctx, s, false)
	if err != nil {
		return Result{}, err
	}
	defer rn.cleanup()
	rn.begin(ctx, rn.lim.Wall)
	rn.launch()
	return rn.finish(ctx)
}

// pending is one run on its way: prepared, its command started, finished.
type pending struct {
	r   *runner
	s   Spec // its Files are those written so far
	lim Limits
	ws  *workspace
	j   *job
	// base is the context the command lives under; life is cancelled to
	// kill the tree: by the wall timer, the caller giving up, the disk
	// watch, or Started.Close.
	base   context.Context
	life   context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the backend returned ex and err
	ex     exit
	err    error
	// gate is the write end of a Started run's gate (see Start), gateR
	// the host's copy of its read end.
	gate, gateR *os.File

	// Set by begin.
	rules     *shadowRules
	pre       []string
	watch     *watcher
	disk      *diskWatch
	wallTimer *time.Timer
	stopCtx   func() bool
	start     time.Time
	cleaned   sync.Once
}

// prepareRun builds the workspace and the job of s; the command lives
// under base. gated adds the read end of a pipe as the descriptor after
// s.ExtraFiles.
func (r *runner) prepareRun(base context.Context, s Spec, gated bool) (_ *pending, err error) {
	if len(s.Command) == 0 || s.Command[0] == "" {
		return nil, errors.New("sandbox: empty command")
	}
	rn := &pending{r: r, s: s, lim: s.Limits.withDefaults(), base: base, done: make(chan struct{})}
	rn.life, rn.cancel = context.WithCancel(base)
	if rn.ws, err = prepare(s, r.ids, r.b.name() == IsolationUnsafe, rn.lim.Disk); err != nil {
		rn.cancel()
		return nil, err
	}
	defer func() {
		if err != nil {
			rn.cleanup()
		}
	}()
	env, err := buildEnv(s.Env, rn.ws)
	if err != nil {
		return nil, err
	}
	argv := slices.Clone(s.Command)
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], "${WORKSPACE}", rn.ws.view)
		if s.Report {
			argv[i] = strings.ReplaceAll(argv[i], "${REPORT}", rn.ws.reportPath)
		}
	}
	caches, err := rn.ws.bindCaches(s.Caches)
	if err != nil {
		return nil, err
	}
	extra := s.ExtraFiles
	if gated {
		if rn.gateR, rn.gate, err = os.Pipe(); err != nil {
			return nil, err
		}
		extra = append(slices.Clone(extra), rn.gateR)
	}
	rn.j = &job{
		ws:      rn.ws,
		argv:    append(prlimitArgs(r.prlimit, rn.lim), argv...),
		env:     env,
		limits:  rn.lim,
		ids:     r.ids,
		stdout:  newCapture(rn.lim.Output),
		stderr:  newCapture(rn.lim.Output),
		caches:  caches,
		extra:   extra,
		stdin:   s.Stdin,
		wallCtx: rn.life,
	}
	if gated {
		rn.j.forked = make(chan struct{})
	}
	return rn, nil
}

// launch starts the command; finish waits for it.
func (rn *pending) launch() {
	go func() {
		defer close(rn.done)
		rn.ex, rn.err = rn.r.b.run(rn.life, rn.j)
	}()
}

// begin starts what watches the candidate: shadowing by the candidate's
// own files, before it can remove them, and by files it creates while it
// runs, even if it removes them; the wall clock, whose limit is wall;
// the caller's ctx; the disk.
func (rn *pending) begin(ctx context.Context, wall time.Duration) {
	rn.rules = rn.ws.shadowRules(rn.s)
	rn.pre = rn.ws.shadows(rn.rules, nil)
	rn.watch = rn.ws.watch(rn.rules.watchDirs())
	rn.wallTimer = time.AfterFunc(wall, rn.cancel)
	rn.stopCtx = context.AfterFunc(ctx, rn.cancel)
	var unbounded []string // what no tmpfs bounds
	for _, c := range rn.s.Caches {
		if c.Fill {
			unbounded = append(unbounded, c.Host)
		}
	}
	if !rn.ws.tmpfs {
		unbounded = append(unbounded, rn.ws.run)
	}
	if rn.s.Layer != nil {
		unbounded = append(unbounded, rn.s.Layer.Upper())
	}
	rn.disk = watchDisk(rn.life, rn.cancel, unbounded, rn.lim.Disk)
	rn.start = time.Now()
}

// finish waits for the command begun under ctx and reads what it did.
func (rn *pending) finish(ctx context.Context) (Result, error) {
	ws, s := rn.ws, rn.s
	res := Result{Workspace: ws.dir, Isolation: rn.r.b.name()}
	<-rn.done
	res.Duration = time.Since(rn.start)
	rn.cancel()
	rn.wallTimer.Stop()
	rn.stopCtx()
	diskKilled := rn.disk.stop()
	created, lost := ws.stopWatch(rn.watch)
	if rn.err != nil {
		return res, rn.err
	}
	ex := rn.ex
	res.Stdout, res.TruncatedStdout, res.StdoutBytes = rn.j.stdout.result()
	res.Stderr, res.TruncatedStderr, res.StderrBytes = rn.j.stderr.result()
	res.ExitCode, res.Signal = ex.code, ex.signal
	if ex.killed && ctx.Err() == nil && rn.base.Err() == nil && !diskKilled {
		res.TimedOut = true
	}
	res.CPUExceeded = !ex.killed && cpuKilled(ex, rn.lim.CPU, res.Duration)
	res.DiskFull = diskKilled || ws.full()
	if s.Report {
		res.Report, res.ReportProblem = ws.readReport()
	}
	res.Tampered = ws.check(rn.rules, created)
	if lost {
		res.Tampered = append(res.Tampered, "workspace: too many files created to watch them all; files created and removed again may have been missed")
	}
	res.Tampered = append(res.Tampered, rn.pre...)
	if ex.survivors {
		res.Tampered = append(res.Tampered, "processes: still running when the command exited, and killed: one that outlives the test runner can rewrite what it reported")
	}
	sort.Strings(res.Tampered)
	res.Tampered = slices.Compact(res.Tampered)
	if err := cmp.Or(ctx.Err(), rn.base.Err()); err != nil {
		return res, err
	}
	return res, nil
}

// cleanup removes the run's files, once.
func (rn *pending) cleanup() {
	rn.cleaned.Do(func() {
		rn.cancel()
		if rn.gate != nil {
			rn.gate.Close()
			rn.gateR.Close()
		}
		rn.ws.unscaffold()
		if !rn.s.Keep {
			rn.ws.remove()
		} else {
			rn.ws.removeStaging()
		}
	})
}

// job is one prepared run handed to a backend.
type job struct {
	ws     *workspace
	argv   []string // prlimit ... -- command...
	env    []string
	limits Limits
	ids    ids
	stdout *capture
	stderr *capture
	caches []boundCache
	extra  []*os.File // fds 3, 4, ... of the command
	stdin  []byte     // nil: /dev/null
	// wallCtx is done when the wall timeout expires or the caller gives
	// up; the backend then kills the whole tree.
	wallCtx context.Context
	// forked, when set, is closed once the command's process exists and
	// holds its descriptors (Starter.Start returns then).
	forked chan struct{}
}

// started tells whoever waits on j.forked that the command was started.
func (j *job) started() {
	if j.forked != nil {
		close(j.forked)
	}
}

// exit is how the command ended.
type exit struct {
	code   int
	signal string
	// killed is set when the backend killed the tree because wallCtx was
	// done.
	killed bool
	// cpu is the CPU time of the process waited for and of the
	// descendants it waited for; noCPU says that this does not include
	// the command (bwrap exits without waiting for its init).
	cpu   time.Duration
	noCPU bool
	// survivors is set when processes of the sandbox were still running
	// when the command exited (the backend then killed them).
	survivors bool
}

// defaultPath is the command's PATH unless Spec.Env sets one.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// buildEnv returns the command's whole environment.
func buildEnv(extra map[string]string, ws *workspace) ([]string, error) {
	env := map[string]string{
		"PATH": defaultPath,
		"HOME": ws.home,
		"LANG": "C.UTF-8",
	}
	for k, v := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("sandbox: invalid environment variable %q", k)
		}
		// ${WORKSPACE} lets a variable name a path inside the workspace
		// (e.g. GOCACHE on a Cache) on every backend.
		v = strings.ReplaceAll(v, "${WORKSPACE}", ws.view)
		if ws.reportPath != "" {
			v = strings.ReplaceAll(v, "${REPORT}", ws.reportPath)
		}
		env[k] = v
	}
	env["PWD"] = ws.view
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}
