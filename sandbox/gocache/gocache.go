// Package gocache is the Go build cache of sandboxed go commands (format
// go exec checks and the agent's run_command): one host directory per
// user, shared by their runs as a sandbox.Cache. Every run sees it
// read-only, its own writes going to a private layer discarded with it
// (see sandbox.Spec.Caches), so nothing a candidate compiles or plants
// there reaches another verdict. Only Warm writes it: a trusted run that
// compiles the standard library and a generated test package, and runs
// no candidate code.
package gocache

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
)

// Target is where the cache appears in a sandbox's workspace; GOCACHE
// names it as ${WORKSPACE}/.gocache.
const Target = ".gocache"

// DefaultDir is the cache directory of this user: in the temp dir, where
// the sandbox can make it its own (see sandbox.Cache.Host).
func DefaultDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("ratchet-go-cache-%d", os.Getuid()))
}

// Cache is the sandbox.Cache of the cache directory dir.
func Cache(dir string) sandbox.Cache { return sandbox.Cache{Host: dir, Target: Target} }

// minWarmWall bounds a warm-up step: compiling the standard library takes
// about half a minute of two cores, and the step runs no candidate code,
// so the wall limit only guards against a hang.
const minWarmWall = 5 * time.Minute

// warmth is the warm-up state of one runner (its uid has a layer of its
// own), cache, go command and environment.
type warmth struct {
	mu   sync.Mutex
	done bool
}

var warmed sync.Map // warmKey → *warmth

type warmKey struct {
	r sandbox.Runner
	s string // the cache, the go command and the environment
}

// Warm fills the cache directory dir, once per process for each runner, go
// command and environment (the same the checks use, so that the entries
// are the ones they look up): `go build std`, then `go test` of a
// generated package that only imports testing. It runs in r with the
// limits lim (its wall limit at least five minutes), and a step that does
// not succeed is an error naming the step and what stopped it, such as a
// limit that killed the compiler: an infrastructure problem, never a
// candidate's. Concurrent calls wait for one warm-up; after an error the
// next call tries again.
func Warm(ctx context.Context, r sandbox.Runner, dir, goCmd string, env map[string]string, lim sandbox.Limits) error {
	return warm(ctx, r, dir, goCmd, env, lim, nil, []step{
		{args: []string{"build", "std"}},
		{fixed: map[string][]byte{
			"go.mod":       []byte("module ratchetwarm\n"),
			"warm.go":      []byte("package ratchetwarm\n"),
			"warm_test.go": []byte("package ratchetwarm\n\nimport \"testing\"\n\nfunc TestWarm(t *testing.T) {}\n"),
		}, args: []string{"test", "."}},
	})
}

// WarmVendor adds to dir, once per process for each runner, go command,
// environment and module, what a check's `go test` needs of its vendor
// directory: the compiled packages and the vet facts go test's vet reads
// of them and of the standard packages they import. It runs with module,
// the check's go.mod, go.sum and vendor mounts (trusted, like its tests;
// no candidate file), at the targets the check mounts them at: `go list
// ./vendor/...`, then `go test` of a generated package of the module that
// imports each one a test can import. The workspace is at the same path in
// every run (sandbox.View), so the check's go test finds them in the cache
// instead of compiling and vetting its vendored modules again for every
// candidate. Errors are Warm's.
func WarmVendor(ctx context.Context, r sandbox.Runner, dir, goCmd string, env map[string]string, lim sandbox.Limits, module []sandbox.Mount) error {
	return warm(ctx, r, dir, goCmd, env, lim, module, []step{
		{args: []string{"list", "-f", `{{if ne .Name "main"}}{{.ImportPath}}{{end}}`, "./vendor/..."}},
		{files: vendorImporter, args: []string{"test", "-run", "^$", "./" + vendorWarm}},
	})
}

// vendorWarm is the directory of the package importing the vendored ones.
const vendorWarm = "ratchetwarmvendor"

// vendorImporter is the test file of a package importing each package
// that go list printed, but for internal ones, which only their own
// module may import (they are built as what the others import).
func vendorImporter(listed []byte) map[string][]byte {
	src := "package " + vendorWarm + "\n\nimport (\n\t\"testing\"\n"
	for _, p := range strings.Fields(string(listed)) {
		if !strings.Contains("/"+p+"/", "/internal/") {
			src += "\t_ " + strconv.Quote(p) + "\n"
		}
	}
	src += ")\n\nfunc TestWarm(t *testing.T) {}\n"
	return map[string][]byte{vendorWarm + "/warm_test.go": []byte(src)}
}

// step is one command of a warm-up, in a workspace holding files, or
// those that files makes of the previous step's output.
type step struct {
	fixed map[string][]byte
	files func(prev []byte) map[string][]byte
	args  []string
}

func warm(ctx context.Context, r sandbox.Runner, dir, goCmd string, env map[string]string, lim sandbox.Limits, mounts []sandbox.Mount, steps []step) error {
	k := key(dir, goCmd, env)
	for _, m := range mounts {
		k += "\x00" + m.Source + "\x00" + m.Target
	}
	for _, s := range steps {
		k += "\x00" + strings.Join(s.args, " ")
	}
	v, _ := warmed.LoadOrStore(warmKey{r, k}, &warmth{})
	w := v.(*warmth)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	lim.Wall = max(lim.Wall, minWarmWall)
	// The sandbox's defaults, spelled out for the error messages.
	lim.CPU = cmp.Or(lim.CPU, sandbox.DefaultCPU)
	lim.Memory = cmp.Or(lim.Memory, sandbox.DefaultMemory)
	lim.Procs = cmp.Or(lim.Procs, sandbox.DefaultProcs)
	lim.Disk = cmp.Or(lim.Disk, sandbox.DefaultDisk)
	lim.Output = max(lim.Output, 4<<20) // go list's, read by the next step
	var prev []byte
	for _, s := range steps {
		cache := Cache(dir)
		cache.Fill = true
		files := s.fixed
		if s.files != nil {
			files = s.files(prev)
		}
		res, err := r.Run(ctx, sandbox.Spec{
			Files: files, Mounts: mounts, Command: append([]string{goCmd}, s.args...), Env: env, Limits: lim,
			Caches: []sandbox.Cache{cache},
		})
		step := "`go " + strings.Join(s.args, " ") + "`"
		if err != nil {
			return fmt.Errorf("warming the Go build cache %s: %s: %w", dir, step, err)
		}
		if res.TruncatedStdout {
			return fmt.Errorf("warming the Go build cache %s: %s wrote more than %d MiB", dir, step, lim.Output>>20)
		}
		if why := failed(res, lim); why != "" {
			return fmt.Errorf("warming the Go build cache %s: %s %s", dir, step, why)
		}
		prev = res.Stdout
	}
	w.done = true
	return nil
}

// failed says why a warm-up step did not succeed, or is empty.
func failed(res sandbox.Result, lim sandbox.Limits) string {
	switch {
	case res.TimedOut:
		return fmt.Sprintf("did not finish within %s", lim.Wall)
	case res.CPUExceeded:
		return fmt.Sprintf("was killed at the CPU limit (%s per process): raise Limits.CPU", lim.CPU)
	case res.DiskFull:
		return fmt.Sprintf("filled the disk limit (%d MiB): raise Limits.Disk", lim.Disk>>20)
	case res.ExitCode == 0 && res.Signal == "":
		return ""
	}
	how := fmt.Sprintf("exited with status %d", res.ExitCode)
	if res.Signal != "" {
		how = "was killed by " + res.Signal
	}
	// A compiler that cannot get memory or threads dies this way too.
	return fmt.Sprintf("%s (the address-space limit is %d MiB, the process limit %d): %s", how, lim.Memory>>20, lim.Procs, lastLines(res.Stderr))
}

// lastLines is the end of a step's error output, where go says what failed.
func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

func key(dir, goCmd string, env map[string]string) string {
	k := []string{dir, goCmd}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		k = append(k, name+"="+env[name])
	}
	return strings.Join(k, "\x00")
}
