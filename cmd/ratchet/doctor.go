package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/store"
)

// A finding is one line of ratchet doctor's report.
type finding struct {
	mark, what, detail, fix string
}

const (
	markOK   = "ok"
	markFail = "FAIL" // something a run here would need does not work
	markNote = "--"   // not set up, and not needed unless you want it
)

// doctorCommand is 'ratchet doctor'.
type doctorCommand struct{ *Main }

// run checks what runs on this machine need and says how to fix
// what is missing. Provider keys are reported as set or not, never shown.
func (m doctorCommand) run(ctx context.Context, args []string) int {
	var db, modelSpec string
	fs := flag.NewFlagSet("ratchet doctor", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.StringVar(&modelSpec, "model", "", "also send this model one tiny request (e.g. anthropic:claude-sonnet-4-5)")
	setUsage(fs, "Usage: ratchet doctor [--model MODEL] [flags]\n\nChecks the sandbox, the test runners, the run database and the provider keys\n(set or not; never their values), each with a fix. Exit 1 if a check fails.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return exitUsage
	}
	var found []finding
	found = append(found, checkSandbox())
	// Checks run in the sandbox with a system PATH, so the python3 that
	// matters is /usr/bin's when there is one, not a PATH's pyenv.
	python := "python3"
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		python = "/usr/bin/python3"
	}
	found = append(found, checkCommand("python3", python, []string{"--version"}, "apt-get install python3 (pytest checks need it)"))
	found = append(found, checkCommand("pytest", python, []string{"-c", "import pytest; print('pytest', pytest.__version__)"}, "apt-get install python3-pytest"))
	found = append(found, checkCommand("go", "go", []string{"version"}, "install Go (go test checks need it): https://go.dev/doc/install"))
	found = append(found, checkCommand("node", "node", []string{"--version"}, "apt-get install nodejs (node --test checks need it)"))
	found = append(found, m.checkDB(ctx, db))
	found = append(found, m.checkPrices())
	for _, key := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		provider := strings.ToLower(strings.TrimSuffix(key, "_API_KEY"))
		if m.Getenv(key) != "" {
			found = append(found, finding{markOK, key, "set", ""})
		} else {
			found = append(found, finding{markNote, key, "not set", fmt.Sprintf("export %s=... to use %s:MODEL", key, provider)})
		}
	}
	if modelSpec != "" {
		found = append(found, m.checkModel(ctx, modelSpec))
	}
	// Whatever a check printed, no secret of this process goes out.
	r := redact.New(redact.FromEnviron(os.Environ())...)
	for _, key := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		r.Add(m.Getenv(key))
	}
	exit := exitDone
	for _, f := range found {
		line := fmt.Sprintf("%-4s  %s: %s", f.mark, f.what, f.detail)
		if f.fix != "" {
			line += " (fix: " + f.fix + ")"
		}
		fmt.Fprintln(m.Stdout, r.String(line))
		if f.mark == markFail {
			exit = exitNotDone
		}
	}
	return exit
}

// checkPrices loads the price table with the override file, if any (Run
// leaves doctor to, so that a broken file is a finding, not the end).
func (m doctorCommand) checkPrices() finding {
	t, err := price.LoadOverride(m.Getenv)
	if err != nil {
		return finding{markFail, "prices", err.Error(), "fix the file (docs/prices.md), or move it away"}
	}
	detail := "embedded table, from " + price.EmbeddedSource().String()
	if path := t.Overrides(); path != "" {
		detail += "; override file " + path
	}
	return finding{markOK, "prices", detail, ""}
}

// checkSandbox reports which isolating backends work here.
func checkSandbox() finding {
	var works, why []string
	for _, b := range []string{sandbox.IsolationBwrap, sandbox.IsolationNamespaces} {
		if _, err := sandbox.New(sandbox.Config{Backend: b}); err != nil {
			why = append(why, b+": "+oneLine(err.Error(), 120))
			continue
		}
		works = append(works, b)
	}
	if len(works) == 0 {
		return finding{markFail, "sandbox", "no isolating backend works (" + strings.Join(why, "; ") + ")",
			"apt-get install bubblewrap, or run as root for the namespaces backend"}
	}
	return finding{markOK, "sandbox", strings.Join(works, " and ") + " work; exec checks run isolated", ""}
}

// checkCommand runs a program's version command.
func checkCommand(what, name string, args []string, fix string) finding {
	path, err := exec.LookPath(name)
	if err != nil {
		return finding{markFail, what, name + " is not on PATH", fix}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return finding{markFail, what, oneLine(fmt.Sprintf("%s: %v: %s", path, err, lastLine(string(out))), 160), fix}
	}
	return finding{markOK, what, oneLine(string(out), 80), ""}
}

// lastLine is the last non-empty line of a program's output: for a
// Python traceback, the exception.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// checkDB opens the run database and counts its runs.
func (m doctorCommand) checkDB(ctx context.Context, db string) finding {
	where := m.shownDB(db)
	s, err := m.openStore(ctx, db)
	if err != nil {
		return finding{markFail, "run database", oneLine(err.Error(), 200), "set --db or RATCHET_DB to a writable file or a postgres:// DSN"}
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, store.Filter{})
	if err != nil {
		return finding{markFail, "run database", where + ": " + oneLine(err.Error(), 160), "check the database's permissions and disk"}
	}
	return finding{markOK, "run database", fmt.Sprintf("%s (%s)", where, words.Count(len(runs), "run")), ""}
}

// checkModel sends one tiny request.
func (m doctorCommand) checkModel(ctx context.Context, spec string) finding {
	what := "model " + spec
	mdl, err := m.openModel(spec, "")
	if err != nil {
		return finding{markFail, what, oneLine(err.Error(), 200), "see 'ratchet run -h' for model strings and the keys they need"}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := mdl.Generate(ctx, model.Request{
		Messages:        []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("Reply with the word OK.")}}},
		MaxOutputTokens: 16,
	})
	if err != nil {
		return finding{markFail, what, oneLine(err.Error(), 240), "check the key, the model name and the network"}
	}
	return finding{markOK, what, fmt.Sprintf("replied in %s (%d input, %d output tokens)",
		time.Since(start).Round(time.Millisecond), resp.Usage.InputTokens, resp.Usage.OutputTokens), ""}
}
