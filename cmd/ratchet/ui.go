package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/ui"
)

// uiCommand is 'ratchet ui'.
type uiCommand struct{ *Main }

// run serves the local web UI over the run database and eval results.
func (m uiCommand) run(ctx context.Context, args []string) int {
	var db, addr, token, evalDir string
	var readOnly bool
	fs := flag.NewFlagSet("ratchet ui", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.StringVar(&addr, "addr", "127.0.0.1:7777", "address to listen on; one that is not loopback needs --token")
	fs.StringVar(&token, "token", m.Getenv("RATCHET_UI_TOKEN"), "a secret every request must carry (open the printed URL once: it sets a cookie); default $RATCHET_UI_TOKEN, which other users cannot read in ps")
	fs.StringVar(&evalDir, "eval-dir", "", "eval result sets to show (default .ratchet/eval, or $RATCHET_EVAL_DIR)")
	fs.BoolVar(&readOnly, "read-only", false, "show runs but do not answer waiting ones")
	setUsage(fs, "Usage: ratchet ui [flags]\n\nServes a web UI: every run and its transcript, live runs as they go, the\nanswer form of a run waiting for a person, eval suites and comparisons.\nSee docs/ui.md.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return exitUsage
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ui: --addr %q: %v\n", addr, err)
		return exitUsage
	}
	loopback := ui.IsLoopback(addr)
	if !loopback && token == "" {
		fmt.Fprintf(m.Stderr, "ratchet ui: --addr %s is not a loopback address: anyone who can reach it could read your runs and answer them; give --token SECRET (or bind to 127.0.0.1)\n", addr)
		return exitUsage
	}
	if evalDir == "" {
		evalDir = evalRoot(m.Getenv)
	}
	s, err := m.openStore(ctx, db)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ui: %v\n", err)
		return exitInfra
	}
	defer s.Close()
	cfg := ui.Config{Store: s, EvalDir: evalDir, Token: token, Redactor: redact.New(redact.FromEnviron(os.Environ())...)}
	if !loopback {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			cfg.AnyHost = true
		} else {
			cfg.Hosts = []string{host}
		}
	}
	// The runs the UI carries on (answered, forked) make spans and metrics
	// as they would from the CLI, when the OTEL_* variables ask for them.
	tel, err := m.startTelemetry(context.Background())
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ui: telemetry: %v\n", err)
		return exitUsage
	}
	defer tel.shutdown()
	if tel != nil {
		m.secrets.Add(tel.Secrets...)
	}
	if !readOnly {
		cfg.Resume = m.resume(s, tel)
	}
	if cfg.Resume != nil { // not read-only: a step's "fork from here" forks the run
		cfg.Fork = m.fork(s, tel)
	}
	handler, err := ui.New(cfg)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ui: %v\n", err)
		return exitUsage
	}
	return m.serve(ctx, handler, addr, token)
}

// serve serves handler at addr until ctx ends, then closes it and its
// connections.
func (m uiCommand) serve(ctx context.Context, handler *ui.Server, addr, token string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet ui: %v\n", err)
		return exitInfra
	}
	url := "http://" + ln.Addr().String() + "/"
	if token != "" {
		url += "?token=" + token
	}
	fmt.Fprintf(m.Stdout, "ratchet ui: serving %s (Ctrl-C stops)\n", url)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		handler.Close()
		fmt.Fprintf(m.Stderr, "ratchet ui: %v\n", err)
		return exitInfra
	case <-ctx.Done():
	}
	// Live streams and runs being carried on end first (a run so stopped
	// ends cancelled and can be resumed), then the connections.
	handler.Close()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	return exitDone
}

// resume carries on a waiting run of s as ratchet answer, approve and
// deny do: a Temporal run by its workflow's Update.
func (m uiCommand) resume(s store.Store, tel *telemetry) func(context.Context, string, runner.ResumeOptions) error {
	return func(ctx context.Context, id string, opts runner.ResumeOptions) error {
		if row, err := s.Run(ctx, id); err != nil {
			return err
		} else if info, ok := temporalInfo(row); ok {
			// Its workflow carries it on, as for ratchet answer.
			c, err := dialTemporal(ctx, info.Temporal, info.Namespace, m.Stderr)
			if err != nil {
				return err
			}
			defer c.Close()
			if tel == nil {
				return sendAnswer(ctx, c, id, opts)
			}
			return m.traced(ctx, s, tel, id, func() error { return sendAnswer(ctx, c, id, opts) })
		}
		sr, err := m.storedRun(ctx, s, id, runFlags{quiet: true})
		if err != nil {
			return err
		}
		defer sr.cleanup()
		rc := sr.cfg
		tel.configure(&rc)
		rc.Human = runner.Later // a new question waits again, for the page to show
		_, err = runner.Resume(ctx, sr.task, rc, opts)
		if _, waiting := errors.AsType[*runner.AwaitingError](err); waiting {
			return nil
		}
		return err
	}
}

// fork forks a run of s from a step, as ratchet fork does.
func (m uiCommand) fork(s store.Store, tel *telemetry) func(context.Context, string, runner.ForkOptions) error {
	return func(ctx context.Context, child string, opts runner.ForkOptions) error {
		row, err := s.Run(ctx, opts.From)
		if err != nil {
			return err
		}
		built, rc, _, err := forkCommand(m).forkRun(ctx, s, row, runFlags{quiet: true}, &opts, false)
		if err != nil {
			return err
		}
		defer built.Close()
		rc.RunID, rc.Human = child, runner.Later
		tel.configure(&rc)
		_, err = runner.Fork(ctx, built.Task, rc, opts)
		if _, waiting := errors.AsType[*runner.AwaitingError](err); waiting {
			return nil
		}
		return err
	}
}

// traced sends a Temporal run its answer and makes the spans and metrics
// of what its workers then do, from its log (runner.Tail, as ratchet
// answer does), until it ends or waits again, as a local run the UI
// carries on makes them until it does.
func (m uiCommand) traced(ctx context.Context, s store.Store, tel *telemetry, id string, send func() error) error {
	cfg := runner.Config{Store: s, RunID: id, Redactor: m.secrets}
	tel.configure(&cfg)
	tail, err := runner.NewTail(ctx, cfg, true)
	if err != nil {
		return err
	}
	before, err := s.LastSeq(ctx, id)
	if err != nil {
		return err
	}
	if err := send(); err != nil {
		return err
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done(): // the UI stops
			tail.Stop(time.Now())
			return nil
		case <-t.C:
		}
		row, err := s.Run(ctx, id)
		if err != nil {
			continue
		}
		if err := tail.Poll(ctx); err != nil {
			return err
		}
		// Waiting again once the workers took the answer (the log grew).
		last, err := s.LastSeq(ctx, id)
		switch {
		case err != nil || row.Status == store.StatusRunning:
		case row.Status == store.StatusAwaitingInput:
			if last > before {
				tail.Stop(time.Now())
				return nil
			}
		default:
			return nil
		}
	}
}
