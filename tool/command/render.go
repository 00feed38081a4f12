package command

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify/testreport"
)

// testRunner is a recognised test runner on a command line: how to ask it
// for a machine-readable report and how to read that report.
type testRunner struct {
	name string
	// env is added to the command's environment; report asks the sandbox
	// for a report file (${REPORT}).
	env    map[string]string
	report bool
	// fromStdout says the report is the command's stdout, not the file.
	fromStdout bool
	parse      func([]byte) (testreport.Report, error)
}

var (
	pytestWord = regexp.MustCompile(`(^|[\s/;&|(])(py\.test|pytest)([\s;&|)]|$)`)
	goTest     = regexp.MustCompile(`(^|[\s/;&|(])go\s+test\s`)
	jsonFlag   = regexp.MustCompile(`\s-{1,2}json(\s|$|[;&|)])`)
	nodeTest   = regexp.MustCompile(`(^|[\s/;&|(])node\s+([^;&|]*\s)?--test(\s|$|[;&|)=])`)
)

// recognise finds the test runner line runs, if any. pytest is asked for
// JUnit XML through PYTEST_ADDOPTS (the command line is never rewritten);
// `go test` is read only with -json (its plain output is not a format), and
// `node --test` prints TAP when its stdout is not a terminal.
func recognise(line string) testRunner {
	switch {
	case pytestWord.MatchString(line):
		return testRunner{
			name: "pytest", report: true,
			// No .pytest_cache lands in the workspace either.
			env:   map[string]string{"PYTEST_ADDOPTS": "--junitxml=${REPORT} -p no:cacheprovider"},
			parse: func(b []byte) (testreport.Report, error) { return testreport.ParseJUnitXML(bytes.NewReader(b)) },
		}
	case goTest.MatchString(line+" ") && jsonFlag.MatchString(line):
		return testRunner{name: "go test", fromStdout: true,
			parse: func(b []byte) (testreport.Report, error) { return testreport.ParseGoTestJSON(bytes.NewReader(b)) }}
	case nodeTest.MatchString(line):
		return testRunner{name: "node --test", fromStdout: true,
			parse: func(b []byte) (testreport.Report, error) { return testreport.ParseTAP(bytes.NewReader(b)) }}
	}
	return testRunner{}
}

// junitLine is pytest's note of the report the tool asked for.
var junitLine = regexp.MustCompile(`(?m)^-* ?generated xml file: \S*/report-[A-Z0-9]+/report ?-*\r?\n`)

// render is what the model sees of a call: the outcome, the failing tests
// when a test runner ran, the output, and what changed in the workspace.
func (r *runCommand) render(line string, lim limit, res sandbox.Result, tr testRunner, ch changes, cerr error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", oneLine(r.clean(line), 300))
	took := res.Duration.Round(time.Millisecond)
	switch {
	case res.TimedOut:
		why := ""
		if lim.byBudget {
			why = ", what was left of the run's time budget"
		}
		fmt.Fprintf(&b, "timed out after %s (its limit%s) and was killed, with every process it started\n", lim.d.Round(time.Millisecond), why)
	case res.CPUExceeded:
		fmt.Fprintf(&b, "killed after %s: it used up its CPU time limit (%s)\n", took, res.Signal)
	case res.DiskFull:
		fmt.Fprintf(&b, "killed after %s: it filled the sandbox's disk limit\n", took)
	case res.Signal != "":
		fmt.Fprintf(&b, "exit status %d (%s) after %s\n", res.ExitCode, res.Signal, took)
	default:
		fmt.Fprintf(&b, "exit status %d after %s\n", res.ExitCode, took)
	}
	stdoutSummarised := false
	if tr.parse != nil {
		src := res.Report
		if tr.fromStdout {
			src = res.Stdout
		}
		if rep, err := tr.parse(src); err == nil && !rep.NoTestsRan() {
			fmt.Fprintf(&b, "%s: %s\n", tr.name, totals(rep))
			if fb := rep.Feedback(maxFeedback); fb != "" {
				b.WriteString(r.clean(fb))
				if !strings.HasSuffix(fb, "\n") {
					b.WriteByte('\n')
				}
			}
			// go test -json's events are summarised above; the raw stream
			// would only crowd out stderr.
			stdoutSummarised = tr.name == "go test"
		}
	}
	stdout := res.Stdout
	if tr.name == "pytest" {
		// The report was asked for by the tool, not the command.
		stdout = junitLine.ReplaceAll(stdout, nil)
	}
	if stdoutSummarised {
		fmt.Fprintf(&b, "stdout: %d bytes of go test -json events, summarised above\n", res.StdoutBytes)
	} else {
		r.stream(&b, "stdout", stdout, res.StdoutBytes, res.TruncatedStdout)
	}
	r.stream(&b, "stderr", res.Stderr, res.StderrBytes, res.TruncatedStderr)
	if len(ch.written) > 0 {
		fmt.Fprintf(&b, "workspace: wrote %s\n", oneLine(r.clean(names(ch.written)), 2000))
	}
	if len(ch.removed) > 0 {
		fmt.Fprintf(&b, "workspace: removed %s\n", oneLine(r.clean(names(ch.removed)), 2000))
	}
	if len(ch.left) > 0 {
		fmt.Fprintf(&b, "workspace: not carried back (only regular files and directories are): %s\n", oneLine(r.clean(names(ch.left)), 2000))
	}
	if cerr != nil {
		fmt.Fprintf(&b, "workspace: some changes could not be carried back: %s\n", oneLine(r.clean(cerr.Error()), 1000))
	}
	if len(res.Tampered) > 0 {
		fmt.Fprintf(&b, "warning: the exec checks would judge this workspace as tampering with the tests: %s\n", oneLine(r.clean(strings.Join(res.Tampered, "; ")), 1000))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// stream shows one output stream, cleaned and trimmed to its head and
// tail.
func (r *runCommand) stream(b *strings.Builder, name string, data []byte, total int64, truncated bool) {
	if len(data) == 0 {
		return
	}
	s := r.clean(string(data))
	if truncated {
		fmt.Fprintf(b, "%s (%d bytes, head and tail shown):\n", name, total)
	} else {
		fmt.Fprintf(b, "%s:\n", name)
	}
	s = tool.Trim(s, maxStreamBytes, maxStreamLines)
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// clean makes command output safe to show: no secret the run knows, valid
// UTF-8, no terminal escapes or control characters; a carriage return that
// redraws a line (a progress bar) starts a new one.
func (r *runCommand) clean(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = testreport.Sanitize(s)
	if r.cfg.Secrets != nil {
		s = r.cfg.Secrets.String(s)
	}
	return s
}

func totals(rep testreport.Report) string {
	parts := []string{fmt.Sprintf("%d passed", rep.Passed)}
	if rep.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", rep.Failed))
	}
	if rep.Errored > 0 {
		parts = append(parts, fmt.Sprintf("%d errored", rep.Errored))
	}
	if rep.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", rep.Skipped))
	}
	s := strings.Join(parts, ", ")
	if !rep.Complete {
		s += " (the run was cut off)"
	}
	return s
}

// names lists paths, at most 20 of them.
func names(paths []string) string {
	const most = 20
	if len(paths) <= most {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:most], ", "), len(paths)-most)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	for max > 0 && s[max]&0xC0 == 0x80 {
		max--
	}
	return s[:max] + "…"
}
