// Command ratchet runs AI agent loops that are reliable by construction:
// every run has a checked definition of done, budgets on every dimension and
// exactly one named exit.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ratchetloop/ratchet/model/cache"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/price"
	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/verify/execcheck"
)

// Exit codes.
const (
	exitDone    = 0 // the run ended done
	exitNotDone = 1 // the run ended, not done
	exitUsage   = 2 // bad usage or config
	exitInfra   = 3 // infrastructure failed
	// exitWaiting (4, runs.go): the run waits for a person.
)

func main() {
	// The first SIGINT, SIGTERM or SIGHUP (the terminal closed) cancels
	// the run, which then ends cancelled with its log flushed (and can be
	// resumed); a second one kills the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	m := &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	code := m.Run(ctx, os.Args[1:])
	execcheck.StopWarm() // the pytest runs started ahead that no candidate took
	os.Exit(code)
}

// Main is the CLI with its environment, so tests can run it in-process.
type Main struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Environ lists the environment as NAME=value; nil means os.Environ.
	// The values of variables whose names look secret are redacted.
	Environ func() []string

	// secrets knows every secret this process holds: set up by Run, and
	// taught more as the task file's ${VAR}s and MCP headers are expanded.
	// Everything printed goes through it.
	secrets *redact.Redactor

	// noModelRetry opens models without transport retries (a Temporal
	// worker's activities retry instead).
	noModelRetry bool

	// cache, when set (--cache), answers the models opened while it is
	// open (cache.go).
	cache *cache.Cache

	// notices, when set, is where notices printed during a run go (a
	// model's), so that they land above the live status line, not on it.
	notices io.Writer

	// limits are the provider limits every model this process opens
	// shares (--provider-limit, a suite's and a task file's
	// provider_limits:).
	limits *limit.Registry
}

// noticeWriter writes to Main's notices, else its Stderr, at the time of
// each write: models are opened before the run's printer exists.
type noticeWriter struct{ m *Main }

func (n noticeWriter) Write(b []byte) (int, error) {
	if n.m.notices != nil {
		return n.m.notices.Write(b)
	}
	return n.m.Stderr.Write(b)
}

const usage = `ratchet runs AI agent loops with a checked definition of done.

Usage:
  ratchet run TASK.yaml [flags]   run a task file; see 'ratchet run -h'
  ratchet ls [flags]              list runs: status, goal, steps, cost, age (--since 1h)
  ratchet show RUN [--events]     a run's Result, attempts, verdicts and usage (or its log)
  ratchet show RUN --patch        an agent run's patch: its workspace copy's diff from the start
  ratchet apply RUN               apply that patch to the original workspace, if it is unchanged
  ratchet rm RUN...               delete runs and their logs (never a running one)
  ratchet gc --older-than 30d     delete finished runs not updated for that long
  ratchet resume RUN              carry on a run whose process stopped (crash, Ctrl-C)
  ratchet answer RUN TEXT         answer the question a waiting run asks, and carry it on
  ratchet approve RUN             approve the tool call a waiting run asks about
  ratchet deny RUN [WHY]          refuse it
  ratchet say RUN MESSAGE         send a running run a message its next model turn sees
  ratchet fork RUN --at SEQ       start a new run from a step of RUN (another --model, budget, --message)
  ratchet verify TASK.yaml FILE…  run a task's checks on candidate files, no model
  ratchet verify --strength TASK.yaml  measure the checks on mutants of a reference solution
  ratchet replay RUN|LOG.jsonl    re-drive the core over a recorded run; exit 1 if it diverges
  ratchet sim [flags]             simulate checked and unchecked chains of steps on the engine
  ratchet eval run|compare|report|add  run eval suites, compare results, gate on regressions
  ratchet ui [flags]              browse runs and evals, follow live runs, answer waiting ones
  ratchet worker --temporal H:P --task-queue Q  carry out runs started with run --temporal
  ratchet doctor [--model MODEL]  check the sandbox, test runners, database and keys, with fixes
  ratchet prices MODEL...         what a model costs per million tokens, and where the figures came from
  ratchet completion bash|zsh|fish  print a shell completion script
  ratchet version                 print the version

RUN is a run ID, a unique prefix of one, or "last" (the newest run).

Runs are kept in a database: --db or $RATCHET_DB (a SQLite file or a
postgres:// DSN), default $XDG_STATE_HOME/ratchet/ratchet.db.

Exit codes: 0 done, 1 ended not done, 2 usage or config error, 3 infrastructure
failure, 4 waiting for a person.
`

// Run dispatches to a subcommand and returns the exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	m.guard()
	if m.limits == nil {
		m.limits = limit.NewRegistry(limit.Config{})
	}
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help", "version", "--version", "completion", "__runs", "prices", "doctor":
		// print no prices, or (prices, doctor) load them themselves
	default:
		// The models this command opens price their calls by the user's
		// override file too; a broken one is said before anything runs.
		if _, err := price.LoadOverride(m.Getenv); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet: %v\n", err)
			return exitUsage
		}
	}
	switch args[0] {
	case "run":
		return runCommand{m}.run(ctx, args[1:])
	case "verify":
		return verifyCommand{m}.run(ctx, args[1:])
	case "replay":
		return replayCommand{m}.run(ctx, args[1:])
	case "ls":
		return lsCommand{m}.run(ctx, args[1:])
	case "show":
		return showCommand{m}.run(ctx, args[1:])
	case "apply":
		return applyCommand{m}.run(ctx, args[1:])
	case "resume", "answer", "approve", "deny":
		return resumeCommand{m}.run(ctx, args[0], args[1:])
	case "fork":
		return forkCommand{m}.run(ctx, args[1:])
	case "say":
		return sayCommand{m}.run(ctx, args[1:])
	case "rm":
		return rmCommand{m}.rm(ctx, args[1:])
	case "gc":
		return rmCommand{m}.gc(ctx, args[1:])
	case "doctor":
		return doctorCommand{m}.run(ctx, args[1:])
	case "prices":
		return pricesCommand{m}.run(args[1:])
	case "completion":
		return completionCommand{m}.run(args[1:])
	case "__runs": // for the completion scripts; not in the usage
		return completionCommand{m}.runsForCompletion(ctx)
	case "sim":
		return simCommand{m}.run(ctx, args[1:])
	case "eval":
		return evalCommand{m}.run(ctx, args[1:])
	case "ui":
		return uiCommand{m}.run(ctx, args[1:])
	case "worker":
		return workerCommand{m}.run(ctx, args[1:])
	case "version", "--version":
		fmt.Fprintln(m.Stdout, "ratchet", version())
		return exitDone
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, usage)
		return exitDone
	}
	fmt.Fprintf(m.Stderr, "ratchet: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// guard sets up m.secrets from the environment and makes everything m
// prints go through it.
func (m *Main) guard() {
	if m.secrets != nil {
		return
	}
	environ := m.Environ
	if environ == nil {
		environ = os.Environ
	}
	m.secrets = redact.New(redact.FromEnviron(environ())...)
	for _, name := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		m.secrets.Add(m.Getenv(name)) // read through Getenv, which tests replace
	}
	m.Stdout, m.Stderr = redact.NewWriter(m.secrets, m.Stdout), redact.NewWriter(m.secrets, m.Stderr)
}
