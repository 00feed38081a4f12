// Package execcheck is the execution-grounded check: it runs a command
// against the candidate in the sandbox and judges by what actually happened,
// not by anyone's opinion of the code.
//
// The candidate is written into a fresh sandbox workspace (as the artifact
// file in generate mode, or as a copy of the agent's workspace; on a run's
// layer the agent's workspace is a scratch layer over it instead, which
// copies nothing), the tests
// are mounted read-only from outside it and hashed before and after, and
// the command's outcome is read according to Format:
//
//   - "pytest": pytest writes JUnit XML (--junitxml is added, naming a file
//     outside the workspace that only this run knows);
//   - "go": the command must be `go test -json ...`, read from stdout;
//   - "node": `node --test` TAP output, read from stdout;
//   - "exit": exit status 0 passes;
//   - "io": each of Cases runs the command with its input, and ratchet
//     compares the output outside the sandbox (io.go).
//
// For the three test formats a verdict passes only when every test passed,
// every test defined in the read-only test files appears in the report, the
// run ended cleanly and a sentinel agrees. The sentinel is a test that must
// fail, named with a fresh nonce and mounted beside the tests (for Go, in
// each package holding a mounted test file): a report in which it passed,
// or which lacks it, or an exit status 0 beside its failure, is the verdict
// Tampered, as is a changed, removed or shadowed test file, and a report
// that is a link or not a regular file. Python starts with -E -s, without
// PYTHON* variables, without plugin autoloading and without pytest's
// cache; HOME is an empty directory outside the workspace, fresh for each
// run. The Go build cache, the one thing runs share, is read-only to each
// (package sandbox/gocache). A pytest check of `python -m pytest` runs each
// candidate in a run started ahead of it, pytest already imported
// (warm.go): a sandbox of its own all the same, serving that candidate
// alone.
//
// In judge isolation (Config.Isolation, the default for pytest checks of a
// generate-mode module) the candidate runs in a sandbox of its own and the
// tests call it through a stand-in (package verify/judge): no code of the
// candidate runs in the test runner's process. In-process, a candidate that
// reads the sentinel there and forges a report with it failing still wins;
// holdout checks measure that (docs/verification.md).
package execcheck

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/layer"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/sandbox/gocache"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/judge"
	"github.com/ratchetloop/ratchet/verify/testreport"
)

// Config configures the check. Runner and Command are required.
type Config struct {
	// Name is the check's name in verdicts (default "exec").
	Name   string
	Runner sandbox.Runner
	// Command runs in the workspace, e.g. [python3, -m, pytest, -q].
	Command []string
	// Format is pytest, go, node, io or exit (default exit).
	Format string
	// Tests are mounted read-only; Target is relative to the workspace.
	Tests []sandbox.Mount
	// Artifact is the file the candidate answer is written to (generate
	// mode). Empty means the answer is not written.
	Artifact string
	// Workspace is a host directory copied into the sandbox (agent mode:
	// the whole workspace the agent edited); Copy limits it to these
	// relative paths. Its files at or below a test's Target are left out:
	// the test mounted there is the one that runs.
	Workspace string
	Copy      []string
	// Layer, when set, is the run's layer, whose view is Workspace. With
	// no Copy, each run of the check gets a scratch layer over that view
	// (layer.Scratch) instead of a copy: nothing is copied, the workspace
	// may be of any size, links and .git are as the agent left them, and
	// what the check writes is removed with the scratch. Needs a Runner
	// that can run on a layer (sandbox.LayerIDs).
	Layer *layer.Layer
	// Env adds variables to the sandbox's scrubbed environment.
	Env map[string]string
	// Limits bound the run; zero fields take the sandbox defaults.
	Limits sandbox.Limits
	// Cases and Checker are format io's: see Case.
	Cases   []Case
	Checker []string
	// MaxFeedback caps the detail sent back to the model (default 1500).
	MaxFeedback int
	// Isolation is where the candidate runs: Judge (its own sandbox,
	// answering the tests' calls) or InProcess (in the test runner's
	// process). Empty chooses Judge wherever it can serve (see
	// JudgeServes) and InProcess elsewhere.
	Isolation string
	// CallTimeout bounds each call the tests make into the candidate in
	// judge isolation (default 10s).
	CallTimeout time.Duration
	// GoCache is the host directory of the Go build cache of format go
	// checks (default: gocache.DefaultDir()). Without it every check would
	// rebuild the standard library. It is warmed before the first check
	// (gocache.Warm) and read-only to every check: what one writes is
	// discarded with its run (see sandbox.Spec.Caches).
	GoCache string
}

// Isolations, as Config.Isolation and Verdict.Isolation name them.
const (
	// Judge runs the candidate in a sandbox of its own that answers the
	// tests' calls with plain data: no code of the candidate runs where the
	// tests run and the verdict is made (package verify/judge).
	Judge = verify.JudgeIsolation
	// InProcess runs the candidate inside the test runner's process, which
	// it can reach into; the sentinel and report checks raise the bar but
	// cannot close it (docs/verification.md).
	InProcess = verify.InProcessIsolation
)

// JudgeServes says why judge isolation cannot serve a check of format
// whose candidate is written to artifact ("" in agent mode), or returns
// nil: it serves pytest tests of a Python module the answer is written to,
// and format io always.
func JudgeServes(format, artifact string) error {
	switch {
	case format == "io":
		return nil // it compares outputs outside every sandbox
	case format == "go" && artifact != "":
		if !strings.HasSuffix(artifact, ".go") || strings.HasSuffix(artifact, "_test.go") {
			return fmt.Errorf("judge isolation of Go needs the artifact to be a .go file of the tested package, not %q", artifact)
		}
		return nil
	case format != "pytest" && format != "go":
		return fmt.Errorf("judge isolation serves pytest, go and io checks, not format %s", format)
	case artifact == "":
		return errors.New("judge isolation needs the candidate as one module (generate mode's artifact); an agent's workspace runs in-process")
	case !judgeModule.MatchString(artifact):
		return fmt.Errorf("judge isolation needs the artifact to be a Python module at the top of the workspace (name.py), not %q", artifact)
	}
	return nil
}

var judgeModule = regexp.MustCompile(`^[\p{L}_][\p{L}\p{Nd}_]*\.py$`)

type checker struct {
	cfg Config
	// inProcess says why the check runs in-process, when it does.
	inProcess string
	// pool holds the runs started ahead of the candidates (warm.go), nil
	// when the check's runs start with their candidate.
	pool *warmPool
}

// New validates cfg and returns the check.
func New(cfg Config) (verify.Verifier, error) {
	var problems []string
	if cfg.Runner == nil {
		problems = append(problems, "no sandbox runner")
	}
	if len(cfg.Command) == 0 {
		problems = append(problems, "no command")
	}
	if cfg.Name == "" {
		cfg.Name = "exec"
	}
	if cfg.Format == "" {
		cfg.Format = "exit"
	}
	switch cfg.Format {
	case "io":
		if len(cfg.Cases) == 0 {
			problems = append(problems, "format io needs cases: the inputs and the output each must give")
		}
	case "pytest", "node", "exit":
	case "go":
		if !slices.Contains(cfg.Command, "-json") {
			problems = append(problems, "format go reads `go test -json` output: add -json to the command")
		}
	default:
		problems = append(problems, fmt.Sprintf("format %q is not pytest, go, node, io or exit", cfg.Format))
	}
	if cfg.Format != "io" && (len(cfg.Cases) > 0 || len(cfg.Checker) > 0) {
		problems = append(problems, "cases and checker belong to format io")
	}
	if cfg.Artifact == "" && cfg.Workspace == "" {
		problems = append(problems, "neither an artifact file nor a workspace: the candidate would not reach the sandbox")
	}
	if cfg.MaxFeedback == 0 {
		cfg.MaxFeedback = 1500
	}
	if len(cfg.Command) > 0 {
		cfg.Env = withCommandPath(cfg.Env, cfg.Command[0])
	}
	if cfg.Format == "pytest" {
		// No PYTHON* variable reaches a Python the tests start either,
		// and no plugin is loaded from an installed distribution's entry
		// points (a *.dist-info in the workspace is on sys.path).
		cfg.Env = maps.Clone(cfg.Env)
		maps.DeleteFunc(cfg.Env, func(k, _ string) bool {
			return strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "PYTEST_")
		})
		cfg.Env = withDefaults(cfg.Env, map[string]string{
			"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
		})
	}
	if cfg.Format == "go" {
		// No network in the sandbox: modules must be vendored or standard,
		// and the toolchain is the host's.
		cfg.Env = withDefaults(cfg.Env, map[string]string{
			"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "-buildvcs=false",
			"GOCACHE": "${WORKSPACE}/" + gocache.Target, "GOTELEMETRY": "off", "GOENV": "off",
		})
		if root := goroot(cfg.Command[0], cfg.Env["PATH"]); root != "" {
			// The go command finds its GOROOT through /proc/self/exe,
			// which the namespaces backend does not have.
			cfg.Env = withDefaults(cfg.Env, map[string]string{"GOROOT": root})
		}
		if cfg.GoCache == "" {
			cfg.GoCache = gocache.DefaultDir()
		}
		if cfg.Limits.Memory == 0 {
			// The memory limit is on address space (RLIMIT_AS), and the Go
			// runtime reserves far more than it uses: at the sandbox's
			// default it cannot even start.
			cfg.Limits.Memory = 8 << 30
		}
		if cfg.Limits.Procs == 0 {
			cfg.Limits.Procs = 256 // go test runs the compiler, linker and test binary, each with threads
		}
	}
	if cfg.Format == "node" && cfg.Limits.Memory == 0 {
		// V8 reserves gigabytes of address space at start (its code
		// range and heap cage), far more than it uses.
		cfg.Limits.Memory = 8 << 30
	}
	artifact := cfg.Artifact
	if cfg.Workspace != "" {
		artifact = ""
	}
	var inProcess string
	switch cfg.Isolation {
	case "":
		cfg.Isolation = Judge
		if err := JudgeServes(cfg.Format, artifact); err != nil {
			cfg.Isolation, inProcess = InProcess, err.Error()
		} else if cfg.Format == "go" {
			// Tests that call methods or read package variables need
			// the candidate in their process: Go's judge is asked for.
			cfg.Isolation, inProcess = InProcess, "judge isolation of Go is chosen with isolation: judge (its tests may call only the package's functions)"
		}
	case Judge:
		if err := JudgeServes(cfg.Format, artifact); err != nil {
			problems = append(problems, err.Error())
		}
	case InProcess:
		if cfg.Format == "io" {
			problems = append(problems, "format io always judges outside the candidate's process: isolation in-process does not apply")
		}
		inProcess = "the check asks for isolation: in-process"
	default:
		problems = append(problems, fmt.Sprintf("isolation %q is not %s or %s", cfg.Isolation, Judge, InProcess))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("exec check %s: %s", cfg.Name, strings.Join(problems, "; "))
	}
	c := &checker{cfg: cfg, inProcess: inProcess}
	if st, ok := cfg.Runner.(sandbox.Starter); ok && c.launches() && !c.onLayer() {
		c.pool = &warmPool{c: c, starter: st, ready: make(chan warmResult, warmAhead)}
	}
	return c, nil
}

// Isolation says where the check runs the candidate (Judge or InProcess)
// and, for InProcess, why.
func (c *checker) Isolation() (isolation, why string) { return c.cfg.Isolation, c.inProcess }

// Isolated is implemented by the exec check: see Isolation.
type Isolated interface {
	Isolation() (isolation, why string)
}

func (c *checker) Name() string                  { return c.cfg.Name }
func (c *checker) Provenance() verify.Provenance { return verify.Execution }

// Check runs the command. A Go error means the sandbox could not run it.
func (c *checker) Check(ctx context.Context, cand verify.Candidate) (verify.Verdict, error) {
	files := map[string][]byte{}
	if c.cfg.Workspace != "" && !c.onLayer() {
		if err := copyTree(c.cfg.Workspace, c.cfg.Copy, files); err != nil {
			return verify.Verdict{}, fmt.Errorf("exec check %s: reading the workspace: %w", c.cfg.Name, err)
		}
		// The tests are mounted from outside the workspace: the agent's
		// own copy of them, edited or not, is not what runs.
		maps.DeleteFunc(files, func(name string, _ []byte) bool {
			return slices.ContainsFunc(c.cfg.Tests, func(m sandbox.Mount) bool {
				return name == m.Target || strings.HasPrefix(name, m.Target+"/")
			})
		})
	}
	if c.cfg.Artifact != "" {
		files[c.cfg.Artifact] = []byte(cand.Answer)
	}
	if err := c.warm(ctx); err != nil {
		return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
	}
	limits := c.cfg.Limits
	if d, ok := ctx.Deadline(); ok {
		if left := time.Until(d); limits.Wall == 0 || left < limits.Wall {
			limits.Wall = max(left, time.Millisecond) // the run's time budget bounds the check too
		}
	}
	if c.cfg.Format == "io" {
		return c.checkCases(ctx, files, limits)
	}
	if c.pool != nil {
		return c.checkWarm(ctx, cand, files, limits)
	}
	var extra []*os.File
	if c.cfg.Isolation == Judge {
		jc := judge.Config{Runner: c.cfg.Runner, CallTimeout: c.cfg.CallTimeout}
		switch c.cfg.Format {
		case "pytest":
			module := strings.TrimSuffix(c.cfg.Artifact, ".py")
			files[c.cfg.Artifact] = judge.Proxy(module)
			jc.Spec = judge.PythonSpec(module, []byte(cand.Answer), c.python(), c.cfg.Env, limits)
		case "go":
			stub, spec, refused, err := c.goJudge(cand.Answer, limits)
			if err != nil {
				return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
			}
			if refused != "" {
				return verify.Verdict{Check: c.cfg.Name, Provenance: verify.Execution, Confidence: 1, Isolation: Judge, Where: "build failed", Detail: refused}, nil
			}
			files[c.cfg.Artifact] = stub
			jc.Spec, jc.Go, jc.StartTimeout = *spec, true, limits.Wall
		}
		s, err := judge.Start(ctx, jc)
		if err != nil {
			return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
		}
		defer s.Close()
		extra = []*os.File{s.TestEnd()}
	}
	p, err := c.newPlan(false)
	if err != nil {
		return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
	}
	if p.dir != "" {
		defer os.RemoveAll(p.dir)
	}
	var stream *outcomeStream
	if p.launcher != "" {
		if stream, err = newOutcomeStream(); err != nil {
			return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
		}
		defer stream.close()
		extra = append(extra, stream.w)
	}
	res, err := c.run(ctx, sandbox.Spec{
		Files: files, Mounts: append(slices.Clone(c.cfg.Tests), p.mounts...), Command: c.command(p, len(extra), false), Env: c.cfg.Env, Limits: limits,
		Report: c.cfg.Format == "pytest", Caches: c.caches(), ExtraFiles: extra,
	})
	if err != nil {
		return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
	}
	return c.verdict(res, p, stream)
}

// onLayer says the check judges the agent's workspace on a scratch layer
// over the run's view (Config.Layer), not on a copy.
func (c *checker) onLayer() bool { return c.cfg.Layer != nil && len(c.cfg.Copy) == 0 }

// run runs spec in the sandbox, on a scratch layer over the run's view
// when onLayer (spec has no Files then: an agent's check writes none).
func (c *checker) run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if !c.onLayer() {
		return c.cfg.Runner.Run(ctx, spec)
	}
	dir, err := os.MkdirTemp("", "ratchet-check-")
	if err != nil {
		return sandbox.Result{}, err
	}
	defer os.RemoveAll(dir)
	s, err := c.cfg.Layer.Scratch(filepath.Join(dir, "layer"))
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("a scratch layer over the workspace: %w", err)
	}
	defer s.Remove()
	spec.Files, spec.Layer = nil, s
	return c.cfg.Runner.Run(ctx, spec)
}

// command is the command of a run of plan p whose ExtraFiles are extra
// descriptors, the outcome stream last when p has the launcher; gated
// says the run is started ahead (sandbox.Starter), its gate the next
// descriptor.
func (c *checker) command(p *plan, extra int, gated bool) []string {
	cmd := isolate(c.cfg.Command)
	if p.launcher != "" {
		// python -E -s -m pytest ARGS → python -E -s -P LAUNCHER OUT GATE ARGS,
		// reporting each outcome on descriptor OUT.
		gate := "-"
		if gated {
			gate = strconv.Itoa(3 + extra)
		}
		cmd = slices.Concat(cmd[:3], []string{"-P", p.launcher, strconv.Itoa(3 + extra - 1), gate}, cmd[5:])
	}
	if c.cfg.Format == "pytest" {
		// The report goes where only the sandbox knows, outside the
		// workspace; a collection error must not keep the sentinel from
		// running; .pytest_cache, which an agent's workspace may carry,
		// is neither read nor written.
		cmd = append(cmd, "--junitxml=${REPORT}", "--continue-on-collection-errors", "-p", "no:cacheprovider")
	}
	return append(cmd, p.args...)
}

// verdict judges the run of plan p, whose outcomes the launcher streamed
// to stream (nil without the launcher).
func (c *checker) verdict(res sandbox.Result, p *plan, stream *outcomeStream) (verify.Verdict, error) {
	if why := cmp.Or(c.buildKilled(res), c.testsMissModule(res)); why != "" {
		return verify.Verdict{}, fmt.Errorf("exec check %s could not run: %s", c.cfg.Name, why)
	}
	v := c.judge(res, p)
	if stream != nil && v.Where != Tampered {
		if why := stream.contradicts(res, p.sentinel); why != "" {
			v = verify.Verdict{Check: c.cfg.Name, Provenance: verify.Execution, Confidence: v.Confidence, Isolation: c.cfg.Isolation,
				Where: Tampered, Detail: "tampered: " + why + "; the tests prove nothing"}
		}
	}
	return v, nil
}

// isolate starts a Python interpreter isolated from its environment and
// from the user's site-packages (-E -s): PYTHON* variables, a user site and
// its .pth files cannot run code before the tests. (-I would also drop the
// working directory from sys.path, which the tests need to import the
// candidate.)
func isolate(cmd []string) []string {
	cmd = slices.Clone(cmd)
	if pythonName.MatchString(filepath.Base(cmd[0])) {
		cmd = slices.Insert(cmd, 1, "-E", "-s")
	}
	return cmd
}

var pythonName = regexp.MustCompile(`^python[0-9.]*$`)

// goJudge plans judge isolation of a Go candidate: the stub the tests
// compile against, and the candidate's sandbox, which builds and runs the
// server; refused says why a candidate cannot be served (its fault).
func (c *checker) goJudge(answer string, limits sandbox.Limits) (stub []byte, spec *sandbox.Spec, refused string, err error) {
	mounts := c.module()
	var goMod []byte
	for _, m := range mounts {
		if m.Target == "go.mod" {
			if goMod, err = os.ReadFile(m.Source); err != nil {
				return nil, nil, "", err
			}
		}
	}
	if goMod == nil {
		return nil, nil, "", errors.New("judge isolation of Go needs the module's go.mod among the tests")
	}
	plan, err := judge.PlanGo(goMod, c.cfg.Artifact, []byte(answer))
	if err != nil {
		return nil, nil, err.Error(), nil
	}
	pkgDir := path.Dir(c.cfg.Artifact)
	build := fmt.Sprintf(`%s build -o "$HOME/ratchet-judge" ./%s && exec "$HOME/ratchet-judge"`, shellQuote(c.cfg.Command[0]), plan.MainDir)
	return plan.Stub, &sandbox.Spec{
		Files: map[string][]byte{
			c.cfg.Artifact: []byte(answer),
			path.Join(pkgDir, "ratchet_judge_server.go"): plan.Server,
			path.Join(plan.MainDir, "main.go"):           plan.Main,
		},
		Mounts: mounts, Command: []string{"sh", "-c", build}, Env: c.cfg.Env, Limits: limits, Caches: c.caches(),
	}, "", nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// python is the interpreter the command runs, for the candidate's side of
// judge isolation.
func (c *checker) python() string {
	if pythonName.MatchString(filepath.Base(c.cfg.Command[0])) {
		return c.cfg.Command[0]
	}
	return "python3"
}

func (c *checker) caches() []sandbox.Cache {
	if c.cfg.Format != "go" {
		return nil
	}
	return []sandbox.Cache{gocache.Cache(c.cfg.GoCache)}
}

// warm fills the Go build cache of a format go check, with the check's
// go command and environment, before its first run.
func (c *checker) warm(ctx context.Context) error {
	if c.cfg.Format != "go" {
		return nil
	}
	goCmd := c.cfg.Command[0]
	if filepath.Base(goCmd) != "go" {
		goCmd = "go" // a shell or script that runs go
	}
	if err := gocache.Warm(ctx, c.cfg.Runner, c.cfg.GoCache, goCmd, c.cfg.Env, c.cfg.Limits); err != nil {
		return err
	}
	module := c.module()
	if !slices.ContainsFunc(module, func(m sandbox.Mount) bool { return isVendor(m.Target) }) {
		return nil
	}
	return gocache.WarmVendor(ctx, c.cfg.Runner, c.cfg.GoCache, goCmd, c.cfg.Env, c.cfg.Limits, module)
}

// module is what of the tests the build needs and no test: go.mod, go.sum
// and the vendor directory.
func (c *checker) module() []sandbox.Mount {
	var out []sandbox.Mount
	for _, m := range c.cfg.Tests {
		if m.Target == "go.mod" || m.Target == "go.sum" || isVendor(m.Target) {
			out = append(out, m)
		}
	}
	return out
}

func isVendor(target string) bool { return target == "vendor" || strings.HasPrefix(target, "vendor/") }

// buildKilled says why a format go run is an infrastructure failure, not
// the candidate's, or is empty: the toolchain could not finish compiling,
// so no test ran and the candidate was not judged. That is so when
//   - the go command was killed at the wall-clock or CPU limit before
//     test2json reported any package's "start" (emitted once a package's
//     build is done, just before its test binary runs or its build
//     failure is told), i.e. while it was still compiling; or
//   - it exited of its own accord (no signal: a test binary that killed
//     it could have written events in its name) after a compiler, linker
//     or other tool of the toolchain was killed by a signal (the CPU
//     limit, a memory limit), and no package got past its build.
//
// A candidate whose init or tests loop forever has started and is judged
// as its timeout; one that does not compile is judged as a build failure.
func (c *checker) buildKilled(res sandbox.Result) string {
	if c.cfg.Format != "go" {
		return ""
	}
	ev := goEvents(res.Stdout)
	limit := fmt.Sprintf("the CPU limit (%s per process)", cmp.Or(c.cfg.Limits.CPU, sandbox.DefaultCPU))
	switch {
	case (res.TimedOut || res.CPUExceeded) && !ev.started:
		if res.TimedOut {
			limit = fmt.Sprintf("the wall-clock limit (%s)", res.Duration.Round(time.Millisecond))
		}
		return fmt.Sprintf("the go command was killed at %s while compiling, before any test ran: the toolchain or build cache was cold, or the limit is too low for the build", limit)
	case res.Signal == "" && ev.toolKilled != "" && !ev.binaryRan:
		return fmt.Sprintf("a tool of the Go toolchain was killed while compiling, before any test ran (%s): the toolchain or build cache was cold, or a limit is too low for the build (%s, address space %d MiB)",
			ev.toolKilled, limit, cmp.Or(c.cfg.Limits.Memory, sandbox.DefaultMemory)>>20)
	}
	return ""
}

// testsMissModule says why a format go run could not judge the candidate
// because a test file (one the check mounts, not the candidate's) imports
// a package of a module the sandbox cannot reach, or is empty. The sandbox
// has no network, so such a module must be vendored with the tests; a
// candidate that imports an unreachable module is judged as its build
// failure. Only a run in which no test binary ran counts: build output is
// the go command's until then, so the candidate cannot have written it.
func (c *checker) testsMissModule(res sandbox.Result) string {
	if c.cfg.Format != "go" {
		return ""
	}
	ev := goEvents(res.Stdout)
	if ev.missing == nil || ev.binaryRan || res.Signal != "" {
		return ""
	}
	m := ev.missing
	file := strings.TrimPrefix(path.Clean(m[1]), "./")
	if !slices.ContainsFunc(c.cfg.Tests, func(t sandbox.Mount) bool {
		return file == t.Target || strings.HasPrefix(file, strings.TrimSuffix(t.Target, "/")+"/")
	}) {
		return ""
	}
	var fix string
	switch {
	case strings.HasPrefix(m[3], "missing go.sum entry"):
		fix = "list the module's go.sum in the check's tests:, and vendor its modules"
	case strings.HasPrefix(m[3], "no required module"):
		fix = "require the module in the check's go.mod and vendor it"
	default:
		fix = "vendor the check's modules"
	}
	return fmt.Sprintf("the test file %s:%s imports %s, which the sandbox cannot reach (%s); the sandbox has no network: %s (go mod vendor beside the check's go.mod, then list vendor in its tests:)",
		file, m[2], cmp.Or(m[4], ev.missingPkg), m[3], fix)
}

// moduleMiss is the go command's build output for an import it found no
// module for: the importing file, its line, the go command's words and,
// when they name it, the package.
var moduleMiss = regexp.MustCompile(`^(\S+\.go):(\d+):\d+: (module lookup disabled by GOPROXY=off|missing go\.sum entry for module providing package (\S+)|no required module provides package (\S+?));?`)

// goRun is what `go test -json` output says about the build.
type goRun struct {
	started    bool     // some package reported "start"
	binaryRan  bool     // some package ended without FailedBuild: its test binary ran
	toolKilled string   // the build output line of a toolchain process killed by a signal
	missing    []string // the first moduleMiss match, its package in [4]
	missingPkg string   // the import path of missing's build-output event
}

// toolSignal is the line the go command prints when a tool it ran died of
// a signal: "PKG: GOROOT/pkg/tool/GOOS_GOARCH/compile: signal: killed".
// It starts with the import path, where a compile error (which can quote
// the candidate's constants) starts with a file's relative path.
var toolSignal = regexp.MustCompile(`^[^:]+: /\S*/pkg/tool/[^/\s]+/[^/\s]+: signal: `)

func goEvents(stdout []byte) goRun {
	var r goRun
	for line := range bytes.Lines(stdout) {
		var ev struct{ Action, Test, Output, FailedBuild, ImportPath string }
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case ev.Action == "start":
			r.started = true
		case ev.Action == "build-output" && toolSignal.MatchString(ev.Output) && r.toolKilled == "":
			r.toolKilled = strings.TrimSpace(ev.Output)
		case ev.Action == "build-output" && r.missing == nil:
			if m := moduleMiss.FindStringSubmatch(ev.Output); m != nil {
				r.missing, r.missingPkg = m, ev.ImportPath
				r.missing[4] = cmp.Or(m[4], m[5])
			}
		case (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") && ev.Test == "" && ev.FailedBuild == "":
			r.binaryRan = true
		}
	}
	return r
}

// Tampered is the Where of a verdict whose evidence was tampered with: the
// tests were changed or shadowed, the report was not the runner's, the
// sentinel passed or is missing, or the exit status contradicts the report.
const Tampered = "tampered"

// judge turns a sandbox result into a verdict.
func (c *checker) judge(res sandbox.Result, p *plan) verify.Verdict {
	v := verify.Verdict{Check: c.cfg.Name, Provenance: verify.Execution, Confidence: 1, Isolation: c.cfg.Isolation}
	if res.Isolation == sandbox.IsolationUnsafe {
		v.Confidence = 0.9 // the candidate could have reached outside the sandbox
	}
	tampered := func(why string) verify.Verdict {
		v.Detail = "tampered: " + why + "; the tests prove nothing"
		v.Where = Tampered
		return v
	}
	switch {
	case len(res.Tampered) > 0:
		return tampered("the candidate changed, removed or shadowed the tests: " + strings.Join(res.Tampered, "; "))
	case res.TimedOut:
		v.Detail = fmt.Sprintf("timed out after %s and was killed (an infinite loop, or far too slow)", res.Duration.Round(time.Millisecond))
		v.Where = "timeout"
		return v
	case res.CPUExceeded:
		v.Detail = fmt.Sprintf("used up its CPU time limit and was killed (%s; an infinite loop, or far too slow)", res.Signal)
		v.Where = "cpu limit"
		return v
	case res.DiskFull:
		v.Detail = "filled the sandbox's disk limit; a candidate must not write that much"
		v.Where = "disk limit"
		return v
	}
	var rep testreport.Report
	var perr error
	switch c.cfg.Format {
	case "exit":
		v.OK = res.ExitCode == 0
		if !v.OK {
			v.Detail = fmt.Sprintf("%s exited with status %d%s:\n%s", c.cfg.Command[0], res.ExitCode, signal(res), tail(res, c.cfg.MaxFeedback))
		}
		return v
	case "pytest":
		if res.ReportProblem != "" && res.ReportProblem != "not written" {
			return tampered("pytest's report is " + res.ReportProblem + "; only pytest writes it")
		}
		rep, perr = testreport.ParseJUnitXML(bytes.NewReader(res.Report))
	case "go":
		rep, perr = testreport.ParseGoTestJSON(bytes.NewReader(res.Stdout))
	case "node":
		rep, perr = testreport.ParseTAP(bytes.NewReader(res.Stdout))
	}
	if perr != nil || rep.NoTestsRan() {
		why := "no test ran"
		switch {
		case perr != nil && c.cfg.Format == "pytest" && res.ReportProblem != "":
			why = "no test ran (pytest wrote no report)"
		case perr != nil:
			why = "no test ran that could be read (" + perr.Error() + ")"
		}
		v.Detail = fmt.Sprintf("%s exited with status %d%s but %s; a candidate must not stop the tests from running:\n%s", c.cfg.Command[0], res.ExitCode, signal(res), why, tail(res, c.cfg.MaxFeedback))
		v.Where = "no tests"
		return v
	}
	sentinel, rep := withoutSentinel(rep, p.sentinel)
	fails := rep.Failures()
	if p.sentinel != "" {
		switch {
		case sentinel.Has(testreport.Passed) || sentinel.Has(testreport.Skipped):
			return tampered("the report shows the sentinel test " + p.sentinel + ", which must fail, as passed or skipped: the results were forged (a plugin or patch that passes every test, or a report written by the candidate)")
		case sentinel == 0 && len(fails) == 0:
			return tampered("the sentinel test " + p.sentinel + ", run alongside the tests, is missing from a report that shows no failure: the report was not written by the test run")
		case sentinel != 0 && res.ExitCode == 0:
			return tampered(fmt.Sprintf("%s exited with status 0 although the sentinel test failed: the exit status was forged", c.cfg.Command[0]))
		}
	}
	missing := p.missing(rep, c.cfg.Format)
	// With the sentinel failing, an honest run exits 1: tests failed.
	cleanExit := 0
	if sentinel != 0 {
		cleanExit = 1
	}
	switch {
	case len(fails) > 0:
		v.Detail = rep.Feedback(c.cfg.MaxFeedback)
		v.Where = fails[0].Name
	case len(missing) > 0:
		v.Detail = clip(fmt.Sprintf("%d tests of the read-only test files did not run (every one must): %s", len(missing), strings.Join(missing, ", ")), c.cfg.MaxFeedback)
		v.Where = "missing tests"
	case res.ExitCode != cleanExit || res.Signal != "" || !rep.Complete:
		// Every reported test passed but the run did not end cleanly: a
		// crash after the tests, or output cut short.
		v.Detail = fmt.Sprintf("the tests that ran passed, but %s exited with status %d%s before finishing:\n%s", c.cfg.Command[0], res.ExitCode, signal(res), tail(res, c.cfg.MaxFeedback))
		v.Where = "incomplete run"
	default:
		v.OK = true
		v.Detail = fmt.Sprintf("%d tests passed", rep.Passed)
	}
	return v
}

// withoutSentinel returns the sentinel's outcomes and the report without
// it, so that its failure is neither feedback nor counted.
func withoutSentinel(rep testreport.Report, name string) (testreport.Outcomes, testreport.Report) {
	if name == "" {
		return 0, rep
	}
	o := rep.Ran[name]
	cases := make([]testreport.Case, 0, len(rep.Cases))
	for _, c := range rep.Cases {
		if c.Name != name {
			cases = append(cases, c)
			continue
		}
		switch c.Status {
		case testreport.Passed:
			rep.Passed--
		case testreport.Failed:
			rep.Failed--
		case testreport.Errored:
			rep.Errored--
		case testreport.Skipped:
			rep.Skipped--
		}
	}
	rep.Cases = cases
	return o, rep
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func signal(res sandbox.Result) string {
	if res.Signal == "" {
		return ""
	}
	return " (" + res.Signal + ")"
}

// tail is the end of the command's output, where the error usually is.
func tail(res sandbox.Result, max int) string {
	out := strings.TrimSpace(string(res.Stderr))
	if o := strings.TrimSpace(string(res.Stdout)); o != "" {
		out = strings.TrimSpace(o + "\n" + out)
	}
	if len(out) <= max {
		return out
	}
	cut := len(out) - max
	for cut < len(out) && out[cut]&0xC0 == 0x80 {
		cut++
	}
	return "…" + out[cut:]
}

// sandboxPath is the sandbox's default PATH.
const sandboxPath = "/usr/local/bin:/usr/bin:/bin"

// withCommandPath adds the host directory of name to the sandbox's PATH
// when name is found on the host only elsewhere (Go in /usr/local/go/bin,
// say): the sandbox sees the host's file system read-only.
func withCommandPath(env map[string]string, name string) map[string]string {
	if env["PATH"] != "" || strings.Contains(name, "/") {
		return env
	}
	found, err := exec.LookPath(name)
	if err != nil {
		return env
	}
	dir := filepath.Dir(found)
	if slices.Contains(filepath.SplitList(sandboxPath), dir) {
		return env
	}
	return withDefaults(env, map[string]string{"PATH": sandboxPath + ":" + dir})
}

// goroot returns the GOROOT of the go command name (looked up in path, or
// the host's PATH), when it sits in GOROOT/bin.
func goroot(name, path string) string {
	found := cmp.Or(inPath(name, path+":"+os.Getenv("PATH")), name)
	found, err := filepath.EvalSymlinks(found)
	if err != nil {
		return ""
	}
	root := filepath.Dir(filepath.Dir(found))
	if !isFile(filepath.Join(root, "src", "runtime", "runtime.go")) {
		return ""
	}
	return root
}

// inPath is the file name names: name itself when it holds a slash, else
// the first regular file of that name in the directories of path; "" when
// there is none.
func inPath(name, path string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, name); dir != "" && isFile(p) {
			return p
		}
	}
	return ""
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func withDefaults(env, defaults map[string]string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range defaults {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}
