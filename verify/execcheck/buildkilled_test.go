package execcheck_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// replay is a sandbox.Runner that answers the check's `go test -json` run
// with a recorded result and every other run (the cache's warm-up) with
// success.
type replay struct{ res sandbox.Result }

func (r *replay) Run(_ context.Context, s sandbox.Spec) (sandbox.Result, error) {
	if slices.Contains(s.Command, "-json") {
		return r.res, nil
	}
	return sandbox.Result{}, nil
}

// TestGoBuildKilledIsInfrastructure: a go check whose toolchain was killed
// while compiling could not judge the candidate, and says so as an error
// naming the cause; a candidate whose own code was killed, or that forged
// the toolchain's message after its test binary started, is judged.
func TestGoBuildKilledIsInfrastructure(t *testing.T) {
	const (
		toolKilled = `{"ImportPath":"runtime","Action":"build-output","Output":"runtime: /usr/local/go/pkg/tool/linux_amd64/compile: signal: killed\n"}
{"ImportPath":"runtime","Action":"build-fail"}
{"Action":"start","Package":"calc"}
{"Action":"output","Package":"calc","Output":"FAIL\tcalc [build failed]\n"}
{"Action":"fail","Package":"calc","FailedBuild":"runtime"}
`
		started = `{"Action":"start","Package":"calc"}
{"Action":"run","Package":"calc","Test":"TestAdd"}
`
		// A compile error quoting the candidate's constant.
		quoted = `{"ImportPath":"calc [calc.test]","Action":"build-output","Output":"./calc.go:3:9: cannot use \"x: /usr/local/go/pkg/tool/linux_amd64/compile: signal: killed\" (untyped string constant) as int value\n"}
{"ImportPath":"calc [calc.test]","Action":"build-fail"}
{"Action":"start","Package":"calc"}
{"Action":"fail","Package":"calc","FailedBuild":"calc [calc.test]"}
`
	)
	for _, tc := range []struct {
		name  string
		res   sandbox.Result
		infra string // the error's cause; empty: a verdict
		where string
	}{
		{"cpu limit while compiling", sandbox.Result{CPUExceeded: true, ExitCode: 152, Signal: "SIGXCPU",
			Stdout: []byte(`{"ImportPath":"calc","Action":"build-output","Output":"# calc\n"}` + "\n")}, "killed at the CPU limit (3s per process) while compiling", ""},
		{"wall limit while compiling", sandbox.Result{TimedOut: true, ExitCode: 137, Signal: "SIGKILL", Duration: 2 * time.Minute}, "killed at the wall-clock limit (2m0s) while compiling", ""},
		{"compiler killed", sandbox.Result{ExitCode: 1, Stdout: []byte(toolKilled)}, "a tool of the Go toolchain was killed while compiling, before any test ran (runtime: /usr/local/go/pkg/tool/linux_amd64/compile: signal: killed)", ""},
		{"candidate loops after start", sandbox.Result{TimedOut: true, ExitCode: 137, Signal: "SIGKILL", Stdout: []byte(started)}, "", "timeout"},
		{"forged by a killer of the go command", sandbox.Result{ExitCode: 137, Signal: "SIGKILL", Stdout: []byte(started + toolKilled)}, "", ""},
		{"forged after a test binary ran", sandbox.Result{ExitCode: 1, Stdout: []byte(started + `{"Action":"fail","Package":"calc"}` + "\n" + toolKilled)}, "", ""},
		{"compile error quoting the message", sandbox.Result{ExitCode: 1, Stdout: []byte(quoted)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGo(t, execcheck.Config{Runner: &replay{tc.res}, Command: []string{"go", "test", "-json", "."}, Limits: sandbox.Limits{CPU: 3 * time.Second}}, tc.infra, tc.where)
		})
	}
}

// TestGoTestsMissingModuleIsInfrastructure: a go check whose test file
// imports a module the sandbox cannot reach (no network, not vendored)
// could not judge the candidate, and says what to do; a candidate that
// imports one, or a message printed after a test binary ran, is judged.
func TestGoTestsMissingModuleIsInfrastructure(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"calc_test.go", "more/more_test.go"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package calc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []sandbox.Mount{{Source: filepath.Join(dir, "calc_test.go"), Target: "calc_test.go"}, {Source: filepath.Join(dir, "more"), Target: "more"}}
	miss := func(file, msg string) string {
		return `{"ImportPath":"github.com/stretchr/testify/assert","Action":"build-output","Output":"# calc\n"}
{"ImportPath":"github.com/stretchr/testify/assert","Action":"build-output","Output":"` + file + `:6:2: ` + msg + `\n"}
{"ImportPath":"github.com/stretchr/testify/assert","Action":"build-fail"}
{"Action":"start","Package":"calc"}
{"Action":"output","Package":"calc","Output":"FAIL\tcalc [setup failed]\n"}
{"Action":"fail","Package":"calc","FailedBuild":"github.com/stretchr/testify/assert"}
`
	}
	const ran = `{"Action":"start","Package":"calc"}
{"Action":"run","Package":"calc","Test":"TestAdd"}
{"Action":"fail","Package":"calc"}
`
	for _, tc := range []struct {
		name, stdout string
		infra        string // the error's cause; empty: a verdict
	}{
		{"test file, no proxy", miss("calc_test.go", "module lookup disabled by GOPROXY=off"),
			"the test file calc_test.go:6 imports github.com/stretchr/testify/assert, which the sandbox cannot reach (module lookup disabled by GOPROXY=off); the sandbox has no network: vendor the check's modules"},
		{"test file in a mounted directory, no go.sum", miss("./more/more_test.go", "missing go.sum entry for module providing package github.com/stretchr/testify/assert (imported by calc); to add:"),
			"the test file more/more_test.go:6 imports github.com/stretchr/testify/assert, which the sandbox cannot reach (missing go.sum entry for module providing package github.com/stretchr/testify/assert); the sandbox has no network: list the module's go.sum in the check's tests:"},
		{"test file, no require", miss("calc_test.go", "no required module provides package github.com/stretchr/testify/assert; to add it:"),
			"require the module in the check's go.mod"},
		{"the candidate's own import", miss("calc.go", "module lookup disabled by GOPROXY=off"), ""},
		{"printed after a test binary ran", ran + miss("calc_test.go", "module lookup disabled by GOPROXY=off"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGo(t, execcheck.Config{Runner: &replay{sandbox.Result{ExitCode: 1, Stdout: []byte(tc.stdout)}}, Command: []string{"go", "test", "-json", "./..."}, Tests: tests}, tc.infra, "")
		})
	}
}

// checkGo runs a go check of calc.go configured by cfg and wants the error
// that it could not run naming infra or, with infra empty, a rejection (at
// where, unless where is empty).
func checkGo(t *testing.T, cfg execcheck.Config, infra, where string) {
	t.Helper()
	cfg.Name, cfg.Format, cfg.Artifact, cfg.GoCache = "tests", "go", "calc.go", t.TempDir()
	v, err := execcheck.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Check(context.Background(), verify.Candidate{Answer: "package calc\n"})
	switch {
	case infra != "":
		if err == nil || !strings.Contains(err.Error(), "exec check tests could not run: ") || !strings.Contains(err.Error(), infra) {
			t.Errorf("err = %v, verdict %+v; want the check's failure to run, naming %q", err, got, infra)
		}
	case err != nil:
		t.Errorf("err = %v; want a verdict on the candidate", err)
	case got.OK || (where != "" && got.Where != where):
		t.Errorf("verdict %+v; want a rejection at %q", got, where)
	}
}
