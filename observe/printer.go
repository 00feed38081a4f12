package observe

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
)

// Printer shows a run as it goes: each step's thought and action, tool
// results, verdicts and interventions as plain lines, and on a terminal one
// live status line with budget use, rewritten in place. Every text it shows
// passes through Escape: the live line's own \r\033[K is the only escape
// sequence it writes, and only when Live.
type Printer struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool
	limits budget.Limits
	width  int
	used   budget.Usage
	step   int
	begin  time.Time
	status string // what the run waits for, on the live line
	shown  bool   // the live line is on screen
	// compacting: the model call in flight summarises the history; it is
	// not a step, and its reply is reported by the context note.
	compacting bool
	// streamed is set while a reply's text is being shown as it streams;
	// the reply's event then prints only what was not shown.
	streamed bool
	// lastSeen is when the last entry arrived, by the wall clock, and
	// waited how long the run has waited since (Tick): the live line's
	// clock runs on while a model or tool is working.
	lastSeen time.Time
	waited   time.Duration
	// partial is the start of a character split between two streamed
	// pieces, held back until it is whole.
	partial string
	// reissued: the commands that follow were in flight when the run's
	// process stopped (a resume) or its log was copied (a fork), issued
	// again: Resumed's usage already counts their model calls and steps.
	reissued bool
}

// PrinterConfig configures a Printer.
type PrinterConfig struct {
	// Live draws a status line rewritten in place; set it only on a terminal.
	Live bool
	// Limits are shown beside usage; zero fields show defaults.
	Limits budget.Limits
	// Width is the terminal's width in columns; the live line is cut to fit
	// so that it never wraps (a wrapped line cannot be cleared in place).
	// Zero means no limit.
	Width int
}

// NewPrinter returns a printer writing to w.
func NewPrinter(w io.Writer, cfg PrinterConfig) *Printer {
	return &Printer{w: w, live: cfg.Live, limits: cfg.Limits.WithDefaults(), width: cfg.Width}
}

// Resumed makes step numbers and usage go on from a resumed run's.
func (p *Printer) Resumed(_ string, used budget.Usage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used, p.step = used, used.Steps
}

// Observe prints e.
func (p *Printer) Observe(e Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
	p.lastSeen, p.waited = time.Now(), 0
	switch {
	case e.Command != nil:
		p.command(e.Command)
	case e.Event != nil:
		p.reissued = e.Event.Type == loop.EventResume || e.Event.Type == loop.EventFork
		p.event(e.Event)
	case e.Note != nil:
		p.note(e.Note)
	case e.Retry != nil:
		p.endStream() // a broken stream's text is shown again on the retry
		r := e.Retry
		p.printf("        ↻ %s: retry %d in %s", r.Reason, r.Attempt, r.Wait.Round(time.Millisecond).String())
	case e.Fallback != nil:
		p.endStream()
		f := e.Fallback
		p.printf("        ⇢ %s failed: %s; %s takes the call", f.From, OneLine(f.Reason, 160), f.To)
		p.status = "waiting for the model (" + f.To + ")"
	case e.Wait != nil:
		w := e.Wait
		// The line says why; the live line's clock shows how long it lasts.
		p.status = fmt.Sprintf("held by %s's shared limits: %s", w.Provider, w.Reason)
		if !p.live {
			p.printf("        ⏸ held by %s's shared limits: %s", w.Provider, w.Reason)
		}
	}
	p.drawLive()
}

// Tick redraws the live line with the time waited since the last entry,
// so that its clock runs while the run waits for a model or a tool; the
// CLI calls it every half second on a terminal. Without a live line it
// does nothing.
func (p *Printer) Tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live || !p.shown || p.streamed || p.lastSeen.IsZero() {
		return
	}
	p.clearLive()
	p.waited = now.Sub(p.lastSeen)
	p.drawLive()
}

// Above returns a writer for lines that must not land on the live line
// (a model's notice, a warning): each write clears the live line, goes to
// w, and redraws the line below it.
func (p *Printer) Above(w io.Writer) io.Writer { return aboveLive{p, w} }

type aboveLive struct {
	p *Printer
	w io.Writer
}

func (a aboveLive) Write(b []byte) (int, error) {
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	a.p.clearLive()
	defer a.p.drawLive()
	return a.w.Write(b)
}

// ObserveText shows streamed text as it arrives, after the step's label.
func (p *Printer) ObserveText(run, call, delta string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.streamed {
		p.clearLive()
		fmt.Fprintf(p.w, "step %-3d", p.step)
		p.streamed = true
		delta = strings.TrimLeft(delta, " \n")
	}
	delta = p.partial + delta
	p.partial = ""
	// Hold back a character cut in two, so that its halves are not each
	// escaped as bytes that are not UTF-8.
	for i := 1; i <= utf8.UTFMax-1 && i <= len(delta); i++ {
		if tail := delta[len(delta)-i:]; utf8.RuneStart(tail[0]) {
			if !utf8.FullRuneInString(tail) {
				delta, p.partial = delta[:len(delta)-i], tail
			}
			break
		}
	}
	fmt.Fprint(p.w, Escape(delta))
}

// endStream ends the line of streamed text, if one is being shown.
func (p *Printer) endStream() {
	if !p.streamed {
		return
	}
	fmt.Fprintln(p.w, Escape(p.partial))
	p.streamed, p.partial = false, ""
}

// printf prints a line; every string argument is escaped (Escape).
func (p *Printer) printf(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", escapeArgs(args)...)
}

func (p *Printer) command(c *loop.Command) {
	switch c.Type {
	case loop.CallModel:
		if !p.reissued {
			p.used.ModelCalls++
		}
		p.compacting = c.Request.Purpose == model.PurposeCompact
		if p.compacting {
			p.status = "compacting the history"
			break
		}
		if !p.reissued {
			p.step++
			p.used.Steps++
		}
		p.status = "waiting for the model"
		if c.Request.Purpose == model.PurposeClosing {
			p.status = "closing turn: waiting for the model"
		}
	case loop.RunTools:
		p.used.ToolCalls += len(c.Calls)
		for _, call := range c.Calls {
			p.printf("        → %s %s", call.Name, OneLine(string(call.Args), 120))
		}
		p.status = fmt.Sprintf("running %d tool call(s)", len(c.Calls))
	case loop.Verify:
		p.status = "verifying: " + strings.Join(c.Checks, ", ")
	case loop.AskHuman:
		p.printf("        ? %s", c.Question)
		p.status = "waiting for a person"
	case loop.Finish:
		p.status = ""
		p.finish(c.Result)
	}
}

func (p *Printer) event(ev *loop.Event) {
	if ev.Type != loop.EventModelReply { // a stream cut off
		p.endStream()
	}
	if !ev.At.IsZero() {
		p.used.Time = max(p.used.Time, ev.At.Sub(p.startOr(ev.At)))
	}
	switch ev.Type {
	case loop.EventModelReply:
		u := ev.Reply.Usage
		p.used.InputTokens += u.InputTokens
		p.used.OutputTokens += u.OutputTokens
		p.used.Cost += u.Cost
		p.used.CostUnknown = p.used.CostUnknown || !u.CostKnown
		if p.compacting {
			break
		}
		// The step label goes on the first line printed; blocks that print
		// nothing (blank text, tool calls shown by run_tools) must not use it up.
		first, acts, streamed := true, false, p.streamed
		if streamed { // the text is on screen already, after the label
			p.endStream()
			first = false
		}
		label := fmt.Sprintf("step %-3d", p.step)
		if ev.Reply.Cached { // no call was made: the response cache answered
			label += "(cached) "
		}
		line := func(text string) {
			prefix := "        "
			if first {
				prefix, first = label, false
			}
			p.printf("%s%s", prefix, text)
		}
		for _, b := range ev.Reply.Content {
			switch b.Type {
			case model.Thinking:
				if t := strings.TrimSpace(b.Text); t != "" {
					line("thinking: " + OneLine(t, 160))
				}
			case model.RedactedThinking:
				line("thinking: (encrypted by the provider)")
			case model.Text:
				if t := strings.TrimSpace(b.Text); t != "" && !streamed {
					line(summarizeText(t))
				}
			case model.ToolUse:
				acts = true
				if b.Name == loop.FinishTool {
					line("finish " + OneLine(string(b.Input), 160))
				}
			}
		}
		switch {
		case streamed:
		case first && acts: // only tool calls, listed when they run
			p.printf("%s", strings.TrimSpace(label))
		case first:
			p.printf("%s(empty reply)", label)
		}
	case loop.EventToolResult:
		mark := "←"
		if ev.Tool.IsError {
			mark = "✗"
		}
		p.printf("        %s %s", mark, OneLine(ev.Tool.Output, 160))
	case loop.EventVerdict:
		v := ev.Verdict
		p.used.Cost += v.Cost
		if v.OK {
			p.printf("        ✓ %s", v.Check)
		} else {
			where := ""
			if v.Where != "" {
				where = " at " + v.Where
			}
			p.printf("        ✗ %s%s: %s", v.Check, where, OneLine(v.Detail, 160))
		}
	case loop.EventModelError, loop.EventCheckError:
		p.printf("        ! %s: %s", ev.Error.Kind, ev.Error.Message)
	case loop.EventHumanReply:
		switch {
		case ev.Approved != nil && *ev.Approved:
			p.printf("        person: approved")
		case ev.Approved != nil && ev.Text != "":
			p.printf("        person: denied: %s", OneLine(ev.Text, 160))
		case ev.Approved != nil:
			p.printf("        person: denied")
		default:
			p.printf("        person: %s", OneLine(ev.Text, 160))
		}
	case loop.EventUserMessage:
		p.printf("        person says (for the next turn): %s", OneLine(ev.Text, 160))
	case loop.EventFork:
		p.printf("        forked here%s", forkLine(ev))
	}
	// A cancel is not printed here: the run's end follows it at once, and
	// its line ("cancelled: why") says so, once.
}

// startOr remembers the first timestamp seen as the run's start.
func (p *Printer) startOr(t time.Time) time.Time {
	if p.begin.IsZero() {
		p.begin = t
	}
	return p.begin
}

func (p *Printer) note(n *loop.Note) {
	switch n.Type {
	case loop.NoteObservation:
		p.printf("        ! %s: %s", n.Problem, OneLine(n.Text, 160))
	case loop.NoteIntervention:
		p.printf("        ⟳ %s (%s): %s", n.Rung, n.Pattern, OneLine(n.Text, 200))
	case loop.NoteClosing:
		p.printf("        ⏹ %s budget spent: closing turn", n.Problem)
	case loop.NoteContext:
		p.printf("        ⇣ %s", OneLine(n.Text, 200))
	case loop.NotePlan:
		p.printf("        ☰ %s", OneLine(n.Text, 200))
	case loop.NoteGuardrail:
		p.printf("        ⛔ %s", OneLine(n.Text, 200))
	}
}

func (p *Printer) finish(r *loop.Result) {
	p.printf("%s: %s", r.Status, r.Reason)
	if r.Best != nil {
		label := "best"
		if !r.Best.Accepted {
			label = "best (rejected)" // the closest attempt, not an answer
		}
		p.printf("%s: %s", label, OneLine(r.Best.Answer, 200))
	}
	if r.Question != "" {
		p.printf("question: %s", r.Question)
	}
	p.printf("usage: %s", budget.Report(r.Limits, r.Usage))
}

func (p *Printer) clearLive() {
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func (p *Printer) drawLive() {
	if !p.live || p.status == "" {
		return
	}
	u, l := p.used, p.limits
	line := fmt.Sprintf("[step %d/%s · tools %d/%s · tokens %d · %s · %s] %s",
		u.Steps, budget.Format(budget.Steps, int64(l.Steps)), u.ToolCalls, budget.Format(budget.ToolCalls, int64(l.ToolCalls)),
		u.TotalTokens(), u.Cost, (u.Time + p.waited).Round(100*time.Millisecond), p.status)
	if p.width > 1 {
		if r := []rune(line); len(r) >= p.width {
			line = string(r[:p.width-2]) + "…"
		}
	}
	fmt.Fprint(p.w, Escape(line))
	p.shown = true
}

// summarizeText shows prose on one line and a fenced code block (a
// generate-mode artifact) as its language and size, not as a squashed line.
func summarizeText(t string) string {
	before, rest, found := strings.Cut(t, "```")
	if !found {
		return OneLine(t, 160)
	}
	info, body, _ := strings.Cut(rest, "\n")
	body, after, _ := strings.Cut(body, "```")
	lines := strings.Count(strings.TrimRight(body, "\n"), "\n") + 1
	code := fmt.Sprintf("[%s code, %d lines]", cmp.Or(strings.TrimSpace(info), "a block of"), lines)
	return OneLine(strings.TrimSpace(before+" "+code+" "+after), 160)
}

// forkLine says what a fork event changes.
func forkLine(ev *loop.Event) string {
	var parts []string
	if ev.Limits != nil {
		parts = append(parts, "a budget of its own")
	}
	if ev.Text != "" {
		parts = append(parts, "message: "+OneLine(ev.Text, 160))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}
