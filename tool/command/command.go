// Package command provides run_command, the agent tool that runs a shell
// command line in the sandbox against the run's workspace, so that the
// agent gets the same grounded signal while it works (a test failing, a
// build error) that the exec checks give once it submits.
//
// Each call runs `bash -c COMMAND` in a fresh sandbox (see package sandbox):
// no network, a scrubbed environment, the sandbox's limits, the task's test
// files mounted read-only and a wall-clock timeout bounded by what is left
// of the run's time budget.
//
// On a run's layer (Config.Layer, package layer; as root) the command
// works on the layer's view itself, bound at the workspace's path: nothing
// is copied in or out per call, links, modes and .git are as in the
// original, and what it writes lands in the layer's upper layer, never in
// the original.
//
// Otherwise (without root) the workspace's regular files, at most 32 MiB,
// are copied into the sandbox's own workspace on every call, and once every
// process of the command is dead the files it created, changed or removed
// are carried back into the run's workspace, read through an os.Root of the
// sandbox's workspace without following links: the host never opens a
// link, device or FIFO the command left, and nothing it writes lands
// outside the workspace. Links, .git, the mounted tests and the Go build
// cache are never copied nor carried back.
//
// When the command line runs a recognised test runner (pytest, `go test
// -json`, `node --test`), the result leads with the failing tests, shaped
// by verify/testreport exactly as an exec check's feedback is.
package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/sandbox/gocache"
	"github.com/ratchetloop/ratchet/tool"
)

// Name is the tool's name.
const Name = "run_command"

// Defaults for zero Config fields.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxTimeout = 10 * time.Minute
	// defaultMemory is the address space (RLIMIT_AS) of each process: the
	// Go runtime and V8 reserve gigabytes at start, far more than they use.
	defaultMemory = 8 << 30
	// defaultProcs leaves room for go test's compiler, linker and test
	// binary, each with threads.
	defaultProcs = 256
)

// Config configures run_command. Runner and Workspace are required.
type Config struct {
	// Runner is the sandbox the command runs in.
	Runner sandbox.Runner
	// Workspace is the run's workspace on the host, which the command's
	// changes are carried back to.
	Workspace string
	// Tests are mounted read-only into the sandbox, as the exec checks
	// mount them; a workspace file at a test's target is hidden by it.
	Tests []sandbox.Mount
	// Env adds variables to the sandbox's scrubbed environment.
	Env map[string]string
	// Limits bound each call; Limits.Wall is the timeout of a call that
	// asks for none (default DefaultTimeout). Zero CPU means the call's
	// timeout; zero Memory 8 GiB; zero Procs 256.
	Limits sandbox.Limits
	// MaxTimeout is the most a call may ask for (default DefaultMaxTimeout).
	MaxTimeout time.Duration
	// GoCache is the host directory of the Go build cache (default:
	// gocache.DefaultDir(), as exec checks use). It is warmed before the
	// first command that gets it (gocache.Warm) and read-only to every
	// command: what one writes there is discarded with its run.
	GoCache string
	// Secrets are replaced by [redacted] in what the command prints.
	Secrets *redact.Redactor
	// Layer, when set, is the run's layer (see package layer), whose view
	// is Workspace: each command runs on the view itself (sandbox.Spec's
	// Layer), so nothing is copied in or carried back, and links, modes
	// and .git are as in the original. Needs root, a Runner that runs as
	// the layer's UID, and Workspace == Layer.Merged(). Without it each
	// command gets a copy of the workspace's regular files (at most 32 MiB,
	// no links, no .git) and its changes are carried back.
	Layer *layer.Layer
}

// maxShown bounds each of stdout and stderr in a result, so that both fit
// within the executor's default output cap (16 KiB, 200 lines).
const (
	maxStreamBytes = 6 << 10
	maxStreamLines = 80
	maxFeedback    = 2500
)

type runCommand struct {
	cfg      Config
	shell    string
	reserved *reserved
}

// New validates cfg and returns the run_command tool.
func New(cfg Config) (tool.Tool, error) {
	var problems []string
	if cfg.Runner == nil {
		problems = append(problems, "no sandbox runner")
	}
	if cfg.Workspace == "" {
		problems = append(problems, "no workspace")
	} else if fi, err := os.Stat(cfg.Workspace); err != nil || !fi.IsDir() {
		problems = append(problems, fmt.Sprintf("workspace %s is not a directory", cfg.Workspace))
	}
	if cfg.Layer != nil && filepath.Clean(cfg.Workspace) != cfg.Layer.Merged() {
		problems = append(problems, fmt.Sprintf("workspace %s is not the layer's view %s", cfg.Workspace, cfg.Layer.Merged()))
	}
	for _, m := range cfg.Tests {
		if !localPath(m.Target) {
			problems = append(problems, fmt.Sprintf("test mount target %q is not a clean relative path", m.Target))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", Name, strings.Join(problems, "; "))
	}
	if cfg.Limits.Wall <= 0 {
		cfg.Limits.Wall = DefaultTimeout
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	cfg.MaxTimeout = max(cfg.MaxTimeout, cfg.Limits.Wall)
	if cfg.Limits.Memory == 0 {
		cfg.Limits.Memory = defaultMemory
	}
	if cfg.Limits.Procs == 0 {
		cfg.Limits.Procs = defaultProcs
	}
	if cfg.GoCache == "" {
		cfg.GoCache = gocache.DefaultDir()
	}
	cfg.Env = environment(cfg.Env)
	cfg.Tests = slices.Clone(cfg.Tests)
	shell := "sh"
	if _, err := os.Stat("/bin/bash"); err == nil {
		shell = "bash"
	}
	targets := make([]string, len(cfg.Tests))
	for i, m := range cfg.Tests {
		targets[i] = m.Target
	}
	r := &runCommand{cfg: cfg, shell: shell, reserved: newReserved(targets)}
	// Not idempotent: a command may append, delete or move files, and what
	// it did before a crash is unknown. The executor's timeout is only a
	// backstop: the command's own is the sandbox's wall limit, after which
	// its changes are still copied back.
	return tool.Func(Name, description, r.call,
		tool.Timeout(cfg.MaxTimeout+30*time.Second),
		tool.MaxOutput(16<<10, 2*maxStreamLines+40),
		tool.MoreHint("run the command again with its output filtered (| grep, | tail -n 50) or redirected to a file you then read")), nil
}

type args struct {
	Command        string `json:"command" jsonschema:"the shell command line to run in the workspace, such as \"python3 -m pytest -q\" or \"go test -json ./...\""`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"stop the command after this many seconds (default 60, at most 600, and never past the run's time budget)"`
}

const description = `Run a shell command line (bash -c) in a sandbox on the workspace, and see its exit status, wall time, stdout and stderr. Use it to run the tests, build, inspect the project or run git. The sandbox has no network and a clean environment; the task's test files are mounted read-only. Files the command creates, changes or removes in the workspace stay changed once it ends (where the workspace is copied into the sandbox, symbolic links and .git are not, and are not carried back). When the command runs pytest, "go test -json" or "node --test", the result starts with the failing tests and their assertions. Long output keeps its head and tail. Calls are not repeated: a command that was running when the run stopped is not run again.`

func (r *runCommand) call(ctx context.Context, in args) (string, error) {
	if strings.TrimSpace(in.Command) == "" {
		return "", fmt.Errorf("%w: command is empty; give a shell command line, such as \"ls -la\"", tool.ErrInvalidArgs)
	}
	if strings.ContainsRune(in.Command, 0) {
		return "", fmt.Errorf("%w: command contains a NUL byte", tool.ErrInvalidArgs)
	}
	timeout, err := r.timeout(ctx, in.TimeoutSeconds)
	if err != nil {
		return "", err
	}
	return r.run(ctx, in.Command, timeout)
}

// timeout is the call's wall-clock limit: what it asks for (or the
// default), at most MaxTimeout and what is left before ctx's deadline, the
// end of the run's time budget.
func (r *runCommand) timeout(ctx context.Context, secs int) (limit, error) {
	l := limit{d: r.cfg.Limits.Wall}
	switch {
	case secs < 0:
		return l, fmt.Errorf("%w: timeout_seconds must be positive, not %d", tool.ErrInvalidArgs, secs)
	case secs > 0:
		l.d = min(time.Duration(secs)*time.Second, r.cfg.MaxTimeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return l, errors.New("the run's time budget is used up: no command can run")
		}
		// The command is killed a little before the deadline, so that its
		// changes are carried back and its output reaches the model.
		left -= min(2*time.Second, left/5)
		if left < l.d {
			l = limit{d: left, byBudget: true}
		}
	}
	return l, nil
}

// limit is a call's wall-clock limit, and whether the run's time budget
// set it.
type limit struct {
	d        time.Duration
	byBudget bool
}

// run runs line in a sandbox on the layer, or on a copy of the workspace
// whose changes it carries back.
func (r *runCommand) run(ctx context.Context, line string, timeout limit) (string, error) {
	root, err := os.OpenRoot(r.cfg.Workspace)
	if err != nil {
		return "", fmt.Errorf("the workspace cannot be opened: %w", err)
	}
	defer root.Close()
	res := r.reserved
	before := &state{}
	if r.cfg.Layer == nil {
		if before, err = snapshot(root, res, maxWorkspace); err != nil {
			return "", fmt.Errorf("copying the workspace into the sandbox: %w", err)
		}
	}
	runner := recognise(line)
	lim := r.cfg.Limits
	lim.Wall = timeout.d
	if lim.CPU == 0 {
		lim.CPU = timeout.d
	}
	env := r.cfg.Env
	if len(runner.env) > 0 {
		env = withDefaults(runner.env, env)
	}
	caches := r.caches(line, root)
	if caches != nil {
		if err := gocache.Warm(ctx, r.cfg.Runner, r.cfg.GoCache, "go", env, lim); err != nil {
			return "", fmt.Errorf("the sandbox could not run the command: %w", err)
		}
	}
	out, err := r.cfg.Runner.Run(ctx, sandbox.Spec{
		Files:      before.files,
		Executable: before.executable(),
		Layer:      r.cfg.Layer,
		Mounts:     r.cfg.Tests,
		Command:    []string{r.shell, "-c", line},
		Env:        env,
		Limits:     lim,
		Keep:       r.cfg.Layer == nil,
		Report:     runner.report,
		Caches:     caches,
	})
	if out.Workspace != "" {
		defer sandbox.Remove(out.Workspace)
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("the command was stopped: %v", context.Cause(ctx))
		}
		return "", fmt.Errorf("the sandbox could not run the command: %w", err)
	}
	if r.cfg.Layer != nil {
		// What it wrote is in the layer already.
		return r.render(line, timeout, out, runner, changes{}, nil), nil
	}
	// Every process of the command is dead: what it left is settled.
	changes, cerr := carryBack(root, out.Workspace, before, res)
	return r.render(line, timeout, out, runner, changes, cerr), nil
}

// goWord finds the go command on a command line.
var goWord = regexp.MustCompile(`(^|[\s/;&|(` + "`" + `])go(\s|$)`)

// caches mounts the Go build cache for a Go project (a go.mod or go.work
// at the workspace root: its scripts and makefiles run go too) and for a
// command line that runs go. Elsewhere it is left out: its first use
// warms it, and each use costs a mount (without root, a copy of it).
func (r *runCommand) caches(line string, ws *os.Root) []sandbox.Cache {
	_, modErr := ws.Lstat("go.mod")
	_, workErr := ws.Lstat("go.work")
	if modErr != nil && workErr != nil && !goWord.MatchString(line) {
		return nil
	}
	return []sandbox.Cache{gocache.Cache(r.cfg.GoCache)}
}

// environment adds to env what commands need in a sandbox without network
// or a user's configuration: the host's Go, Node and Python on PATH, Go's
// build cache and offline settings, and Python without bytecode files (they
// would land in the workspace).
func environment(env map[string]string) map[string]string {
	out := withDefaults(env, map[string]string{
		"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false",
		"GOCACHE": "${WORKSPACE}/" + gocache.Target, "GOTELEMETRY": "off", "GOENV": "off",
		"PYTHONDONTWRITEBYTECODE": "1",
	})
	if out["PATH"] == "" {
		path := []string{"/usr/local/bin", "/usr/bin", "/bin"}
		for _, name := range []string{"go", "node", "python3"} {
			found, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			// The sandbox sees /usr read-only, so only tools below it run.
			if dir := filepath.Dir(found); strings.HasPrefix(dir, "/usr/") && !slices.Contains(path, dir) {
				path = append(path, dir)
			}
			if name == "go" && out["GOROOT"] == "" {
				if root := goroot(found); root != "" {
					// The go command finds GOROOT through /proc/self/exe,
					// which the namespaces backend does not have.
					out["GOROOT"] = root
				}
			}
		}
		out["PATH"] = strings.Join(path, ":")
	}
	return out
}

func goroot(goCmd string) string {
	found, err := filepath.EvalSymlinks(goCmd)
	if err != nil {
		return ""
	}
	root := filepath.Dir(filepath.Dir(found))
	if fi, err := os.Stat(filepath.Join(root, "src", "runtime", "runtime.go")); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return root
}

func withDefaults(env, defaults map[string]string) map[string]string {
	out := make(map[string]string, len(env)+len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}
