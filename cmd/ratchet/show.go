package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/verify"
)

// showCommand is 'ratchet show'.
type showCommand struct{ *Main }

// run prints one run: its Result, attempts, verdicts and usage.
func (m showCommand) run(ctx context.Context, args []string) int {
	var (
		db                                    string
		events, asJSON, showPatch, transcript bool
	)
	fs := flag.NewFlagSet("ratchet show", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&db, "db", "", "the run database (default $RATCHET_DB, else "+defaultDBHint+")")
	fs.BoolVar(&events, "events", false, "print the run's event log (JSONL, docs/events.md) instead")
	fs.BoolVar(&transcript, "transcript", false, "print the run step by step instead, as ratchet run showed it: the model's text and thinking, tool calls and results, verdicts")
	fs.BoolVar(&asJSON, "json", false, "print the Result as JSON")
	fs.BoolVar(&showPatch, "patch", false, "print the run's patch instead: the unified diff of its workspace copy against the start, for git apply or patch -p1 (ratchet apply RUN applies it)")
	setUsage(fs, "Usage: ratchet show RUN [flags]\n\nPrints a run's Result, attempts, verdicts and usage.\n\nFlags:\n")
	pos, code, done := parseCommand(fs, args)
	if done {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	s, row, code := m.openRun(ctx, "show", db, pos[0])
	if s == nil {
		return code
	}
	defer s.Close()
	if showPatch {
		return m.printPatch(row)
	}
	if transcript {
		return m.printTranscript(ctx, s, row)
	}
	if events {
		return m.printEvents(ctx, s, row)
	}
	var res *loop.Result
	if row.Result != nil {
		res = new(loop.Result)
		if err := json.Unmarshal(row.Result, res); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet show: run %s: stored result: %v\n", row.ID, err)
			return exitInfra
		}
	}
	if asJSON {
		return m.printJSON("ratchet show", struct {
			ID       string       `json:"id"`
			Status   string       `json:"status"`
			Goal     string       `json:"goal"`
			Model    string       `json:"model,omitempty"`
			Labels   []string     `json:"labels,omitempty"`
			Question string       `json:"question,omitempty"`
			Created  time.Time    `json:"created"`
			ForkOf   string       `json:"fork_of,omitempty"`
			ForkSeq  int64        `json:"fork_seq,omitempty"`
			Result   *loop.Result `json:"result,omitempty"`
		}{row.ID, row.Status, row.Goal, m.secrets.String(runModel(row.Task)), row.Labels, row.Question, row.Created, row.ForkOf, row.ForkSeq, res})
	}
	return m.printRun(row, res)
}

// printTranscript prints the run step by step, as ratchet run showed it.
func (m showCommand) printTranscript(ctx context.Context, s store.Store, row store.Run) int {
	recs, err := runner.LoadLog(ctx, s, row.ID)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet show: %v\n", err)
		return exitInfra
	}
	var limits budget.Limits
	if len(recs) > 0 && recs[0].Spec != nil {
		limits = recs[0].Spec.Budget
	}
	// The text is a model's and its tools': shown escaped (observe.Escape).
	p := observe.NewPrinter(escaper{m.Stdout}, observe.PrinterConfig{Limits: limits})
	for _, r := range recs {
		e, err := r.Entry()
		if err != nil {
			fmt.Fprintf(m.Stderr, "ratchet show: run %s: %v\n", row.ID, err)
			return exitInfra
		}
		p.Observe(e)
	}
	return exitDone
}

// printEvents prints the run's event log, one JSON entry a line.
func (m showCommand) printEvents(ctx context.Context, s store.Store, row store.Run) int {
	entries, err := s.Entries(ctx, row.ID, 0)
	if err != nil {
		fmt.Fprintf(m.Stderr, "ratchet show: %v\n", err)
		return exitInfra
	}
	for _, e := range entries {
		m.Stdout.Write(e.Data)
		io.WriteString(m.Stdout, "\n")
	}
	return exitDone
}

// printRun prints the run for a person: its row, and its Result if it has one.
func (m showCommand) printRun(row store.Run, res *loop.Result) int {
	// The text is a model's and its tools': shown escaped (observe.Escape).
	w := escaper{m.Stdout}
	fmt.Fprintf(w, "run:     %s\nstatus:  %s\ngoal:    %s\nstarted: %s\n", row.ID, shownStatus(row, time.Now()), oneLine(row.Goal, 200), row.Created.Local().Format(time.RFC3339))
	if mdl := runModel(row.Task); mdl != "" {
		fmt.Fprintf(w, "model:   %s\n", m.secrets.String(mdl))
	}
	if len(row.Labels) > 0 {
		fmt.Fprintf(w, "labels:  %s\n", strings.Join(row.Labels, ", "))
	}
	if row.ForkOf != "" {
		fmt.Fprintf(w, "forked:  from %s after entry %d (ratchet show --events %[1]s)\n", row.ForkOf, row.ForkSeq)
	}
	if row.Status == store.StatusAwaitingInput {
		fmt.Fprintf(w, "waiting: %s\n", row.Question)
	}
	if res == nil {
		if interrupted(row, time.Now()) {
			_, holder := runner.LeaseState(row, time.Now())
			fmt.Fprintf(w, "steps:   %d so far; interrupted: %s is gone ('ratchet resume %s' carries it on)\n", row.Steps, holder, row.ID)
		} else {
			fmt.Fprintf(w, "steps:   %d so far (no Result yet)\n", row.Steps)
		}
		return exitDone
	}
	fmt.Fprintf(w, "reason:  %s\n", res.Reason)
	if res.Question != "" {
		fmt.Fprintf(w, "question: %s\n", res.Question)
	}
	if res.Best != nil {
		fmt.Fprintf(w, "best:    attempt %d (accepted=%v, confidence %.2f)\n%s\n", res.Best.N, res.Best.Accepted, res.Best.Confidence, indent(res.Best.Answer))
	}
	fmt.Fprintf(w, "attempts:\n")
	for _, a := range res.Attempts {
		fmt.Fprintf(w, "  %s\n", a.Summary)
		for i, v := range append(append([]verify.Verdict(nil), a.Verdicts...), a.Holdout...) {
			mark := "FAIL"
			if v.OK {
				mark = "ok"
			}
			holdout := ""
			if i >= len(a.Verdicts) {
				holdout = "holdout, "
			}
			fmt.Fprintf(w, "    %-4s %s (%s%s)%s\n", mark, v.Check, holdout, v.Provenance, detail(v.Detail))
		}
	}
	if p := res.Patch; p != nil {
		fmt.Fprintf(w, "patch:   %s\n", patchLine(row.ID, p))
	}
	fmt.Fprintf(w, "usage:\n")
	for _, d := range budget.Dimensions {
		fmt.Fprintf(w, "  %-14s %s\n", d, budget.Format(d, res.Usage.Get(d))+limitText(d, res.Limits))
	}
	return exitDone
}

func limitText(d budget.Dimension, l budget.Limits) string {
	if v := l.Limit(d); v != budget.Unlimited {
		return " of " + budget.Format(d, v)
	}
	return ""
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func detail(s string) string {
	if s = oneLine(s, 100); s != "" {
		return ": " + s
	}
	return ""
}

// dsnPassword is the password in a PostgreSQL DSN, as a URL
