package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/verify"
)

// A transcript is a run's log read for people: steps of items, and the
// spans of a waterfall. It is built from the stored entries (docs/events.md)
// of a range of steps, so a page decodes only the steps it shows.

// step is one model turn and everything that answered it. Step 0 holds what
// came before the first turn (the start).
type step struct {
	N                 int
	FirstSeq, LastSeq int64
	Start, End        time.Time
	Items             []*item
	// Highlight says the step holds an intervention or feedback.
	Highlight bool
	// Usage is what this step's model calls used.
	InputTokens, OutputTokens int64
	// ForkAt is the entry a fork from this step starts after (its step
	// model call: runner.ForkPoints); 0 for none (the closing turn).
	ForkAt int64
}

// ID is the step's element id, which live updates replace.
func (s *step) ID() string { return fmt.Sprintf("step-%d", s.N) }

// Duration is from the step's first entry to its last.
func (s *step) Duration() time.Duration { return s.End.Sub(s.Start) }

// item is one thing in a step, by Kind: "thinking", "thought", "tool", "finish", "note",
// "ask", "reply", "child", "error", "model", "result", "cancel", "resume".
type item struct {
	Kind string
	Seq  int64
	At   time.Time
	Text string
	// Class refines Kind for notes (the note type) and errors.
	Class string

	// tool: the call, its arguments and its result.
	Tool    string
	CallID  string
	Args    string
	Output  *string
	IsError bool
	Outcome string
	Done    time.Time

	// finish: the candidate and the verdicts that judged it.
	Attempt    int
	Confidence float64
	Verdicts   []verdict

	// ask: the approval asked for; reply: the answer.
	Approval *loop.ToolCall
	Approved *bool

	// child: the sub-agent's run and how it ended.
	Child  string
	Status string
}

// Dur is the time from the item to its answer, 0 when unanswered.
func (it *item) Dur() time.Duration {
	if it.Done.IsZero() {
		return 0
	}
	return it.Done.Sub(it.At)
}

type verdict struct {
	verify.Verdict
	Tier string
}

// span is one bar of the waterfall.
type span struct {
	Kind  string // model, tool, check, child, human
	Label string
	Start time.Time
	End   time.Time // zero while in flight
	Step  int
}

// loggedCommand is a command as the log keeps it: a call_model carries a
// summary of its request.
type loggedCommand struct {
	Type    loop.CommandType `json:"type"`
	ID      string           `json:"id"`
	Request *struct {
		Purpose  model.Purpose `json:"purpose"`
		Messages int           `json:"messages"`
	} `json:"request"`
	Calls     []loop.ToolCall   `json:"calls"`
	Candidate *verify.Candidate `json:"candidate"`
	Checks    []string          `json:"checks"`
	Question  string            `json:"question"`
	Approval  *loop.ToolCall    `json:"approval"`
	Result    *loop.Result      `json:"result"`
	Child     *loop.Child       `json:"child"`
}

// startsStep reports whether a stored entry is a call_model command that
// begins a model turn (purpose step or closing), without decoding it. The
// envelope's fields come before the command's (observe encodes a struct),
// so the first "command" key is the command's own.
func startsStep(e store.Entry) bool {
	if e.Kind != string(observe.KindCommand) {
		return false
	}
	i := bytes.Index(e.Data, []byte(`"command":{"type":"`))
	if i < 0 || !bytes.HasPrefix(e.Data[i+len(`"command":{"type":"`):], []byte(`call_model"`)) {
		return false
	}
	return bytes.Contains(e.Data, []byte(`"purpose":"step"`)) || bytes.Contains(e.Data, []byte(`"purpose":"closing"`))
}

// stepIndex returns the index in entries of each step's first entry: index
// 0 is step 0 (what precedes the first turn), index n step n.
func stepIndex(entries []store.Entry) []int {
	idx := []int{0}
	for i, e := range entries {
		if startsStep(e) {
			if i == 0 {
				idx[0] = -1 // no step 0: the log starts with a turn
			}
			idx = append(idx, i)
		}
	}
	if idx[0] == -1 {
		idx[0] = 0
	}
	return idx
}

// transcript folds entries, the first of which begins step first, into
// steps and spans. redact is applied to every text.
type transcript struct {
	Steps []*step
	Spans []*span

	redact func(string) string
	runID  string
	cur    *step
	n      int
	// Open items and spans by the ID that answers them.
	tools    map[string]*item
	toolSpan map[string]*span
	calls    map[string]*span
	checks   map[string]*span
	finishes map[int]*item // by attempt
	children map[string]*item
}

func buildTranscript(runID string, entries []store.Entry, first int, redact func(string) string) (*transcript, error) {
	t := &transcript{
		redact: redact, runID: runID, n: first - 1,
		tools: map[string]*item{}, toolSpan: map[string]*span{}, calls: map[string]*span{},
		checks: map[string]*span{}, finishes: map[int]*item{}, children: map[string]*item{},
	}
	if first == 0 {
		t.n = 0
		t.cur = &step{N: 0}
		t.Steps = append(t.Steps, t.cur)
	}
	for _, e := range entries {
		if err := t.add(e); err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Seq, err)
		}
	}
	if len(t.Steps) > 0 && len(t.Steps[0].Items) == 0 && t.Steps[0].N == 0 {
		t.Steps = t.Steps[1:] // step 0 held only the start
	}
	return t, nil
}

func (t *transcript) newStep(e store.Entry) {
	t.n++
	t.cur = &step{N: t.n, FirstSeq: e.Seq, Start: e.At}
	if bytes.Contains(e.Data, []byte(`"purpose":"step"`)) {
		t.cur.ForkAt = e.Seq
	}
	t.Steps = append(t.Steps, t.cur)
}

func (t *transcript) push(it *item) *item {
	t.cur.Items = append(t.cur.Items, it)
	return it
}

func (t *transcript) add(e store.Entry) error {
	if startsStep(e) || t.cur == nil {
		t.newStep(e)
	}
	s := t.cur
	if s.FirstSeq == 0 {
		s.FirstSeq, s.Start = e.Seq, e.At
	}
	s.LastSeq, s.End = e.Seq, e.At
	switch observe.Kind(e.Kind) {
	case observe.KindCommand:
		var c loggedCommand
		if err := json.Unmarshal(commandJSON(e.Data), &c); err != nil {
			return err
		}
		t.command(e, &c)
	case observe.KindEvent, observe.KindNote, observe.KindRetry, observe.KindFallback, observe.KindWait:
		rec, err := observe.Decode(e.Data)
		if err != nil {
			return err
		}
		switch {
		case rec.Event != nil:
			t.event(e, rec.Event)
		case rec.Note != nil:
			var n loop.Note
			if err := json.Unmarshal(rec.Note, &n); err != nil {
				return err
			}
			t.note(e, &n)
		case rec.Retry != nil:
			t.push(&item{Kind: "error", Class: "retry", Seq: e.Seq, At: e.At, Text: t.redact(fmt.Sprintf("model call %s: retry %d after %s (%s)", rec.Retry.Call, rec.Retry.Attempt, rec.Retry.Wait.Round(time.Millisecond), rec.Retry.Reason))})
		case rec.Fallback != nil:
			f := rec.Fallback
			t.push(&item{Kind: "error", Class: "retry", Seq: e.Seq, At: e.At, Text: t.redact(fmt.Sprintf("model call %s: %s failed (%s); %s takes the call", f.Call, f.From, f.Reason, f.To))})
		case rec.Wait != nil:
			w := rec.Wait
			t.push(&item{Kind: "error", Class: "retry", Seq: e.Seq, At: e.At, Text: t.redact(fmt.Sprintf("model call %s: held by %s's shared limits: %s", w.Call, w.Provider, w.Reason))})
		}
	}
	return nil
}

// commandJSON returns the "command" object of an entry.
func commandJSON(data []byte) []byte {
	var env struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(data, &env) != nil {
		return []byte("null")
	}
	return env.Command
}

func (t *transcript) command(e store.Entry, c *loggedCommand) {
	switch c.Type {
	case loop.CallModel:
		purpose := model.PurposeStep
		if c.Request != nil {
			purpose = c.Request.Purpose
		}
		sp := &span{Kind: "model", Label: fmt.Sprintf("%s %s", c.ID, purpose), Start: e.At, Step: t.cur.N}
		t.calls[c.ID] = sp
		t.Spans = append(t.Spans, sp)
		if purpose == model.PurposeSample || purpose == model.PurposeCompact {
			t.push(&item{Kind: "model", Seq: e.Seq, At: e.At, Text: string(purpose), CallID: c.ID})
		}
	case loop.RunTools:
		for _, call := range c.Calls {
			it, ok := t.tools[call.ID]
			if !ok {
				it = t.push(&item{Kind: "tool", Tool: call.Name, CallID: call.ID})
				t.tools[call.ID] = it
			}
			it.Seq, it.At, it.Args = e.Seq, e.At, t.redact(prettyJSON(call.Args))
			sp := &span{Kind: "tool", Label: call.Name, Start: e.At, Step: t.cur.N}
			t.toolSpan[call.ID] = sp
			t.Spans = append(t.Spans, sp)
		}
	case loop.Verify:
		sp := &span{Kind: "check", Label: c.ID + " " + strings.Join(c.Checks, ", "), Start: e.At, Step: t.cur.N}
		t.checks[c.ID] = sp
		t.Spans = append(t.Spans, sp)
		if c.Candidate != nil {
			if _, ok := t.finishes[c.Candidate.Attempt]; !ok {
				// A candidate without a finish call in view: a sampled
				// alternative, or its step is on another page.
				t.finishes[c.Candidate.Attempt] = t.push(&item{Kind: "finish", Seq: e.Seq, At: e.At, Attempt: c.Candidate.Attempt, Text: t.redact(c.Candidate.Answer), Confidence: c.Candidate.Confidence})
			}
		}
	case loop.AskHuman:
		t.push(&item{Kind: "ask", Seq: e.Seq, At: e.At, Text: t.redact(c.Question), Approval: redactCall(c.Approval, t.redact)})
		t.cur.Highlight = true
		t.Spans = append(t.Spans, &span{Kind: "human", Label: "ask a person", Start: e.At, Step: t.cur.N})
	case loop.RunChild:
		it := t.push(&item{Kind: "child", Seq: e.Seq, At: e.At, Child: t.runID + "/" + c.ID})
		if c.Child != nil {
			it.Text = t.redact(c.Child.Goal)
		}
		t.children[c.ID] = it
		t.Spans = append(t.Spans, &span{Kind: "child", Label: c.ID, Start: e.At, Step: t.cur.N})
	case loop.Finish:
		it := &item{Kind: "result", Seq: e.Seq, At: e.At}
		if c.Result != nil {
			it.Status, it.Text = string(c.Result.Status), t.redact(c.Result.Reason)
		}
		t.push(it)
	}
}

func redactCall(c *loop.ToolCall, redact func(string) string) *loop.ToolCall {
	if c == nil {
		return nil
	}
	return &loop.ToolCall{ID: c.ID, Name: c.Name, Args: json.RawMessage(redact(prettyJSON(c.Args)))}
}

// closeSpan ends the span of id in m at at.
func closeSpan(m map[string]*span, id string, at time.Time) {
	if sp, ok := m[id]; ok && sp.End.IsZero() {
		sp.End = at
	}
}

func (t *transcript) event(e store.Entry, ev *loop.Event) {
	switch ev.Type {
	case loop.EventModelReply:
		closeSpan(t.calls, ev.Call, ev.At)
		if ev.Reply == nil {
			return
		}
		t.cur.InputTokens += ev.Reply.Usage.InputTokens
		t.cur.OutputTokens += ev.Reply.Usage.OutputTokens
		for _, b := range ev.Reply.Content {
			switch b.Type {
			case model.Thinking:
				if strings.TrimSpace(b.Text) != "" {
					t.push(&item{Kind: "thinking", Seq: e.Seq, At: ev.At, Text: t.redact(b.Text)})
				}
			case model.RedactedThinking:
				t.push(&item{Kind: "thinking", Seq: e.Seq, At: ev.At, Text: "(encrypted by the provider)"})
			case model.Text:
				if strings.TrimSpace(b.Text) != "" {
					t.push(&item{Kind: "thought", Seq: e.Seq, At: ev.At, Text: t.redact(b.Text)})
				}
			case model.ToolUse:
				if b.Name == loop.FinishTool {
					t.finishCall(e, ev, b)
					continue
				}
				it, ok := t.tools[b.ID]
				if !ok {
					it = t.push(&item{Kind: "tool", Tool: b.Name, CallID: b.ID, Seq: e.Seq, At: ev.At})
					t.tools[b.ID] = it
				}
				it.Args = t.redact(prettyJSON(b.Input))
			}
		}
	case loop.EventModelError:
		closeSpan(t.calls, ev.Call, ev.At)
		t.push(&item{Kind: "error", Class: "model", Seq: e.Seq, At: ev.At, Text: t.redact(failure(ev.Error))})
	case loop.EventToolResult:
		closeSpan(t.toolSpan, ev.Call, ev.At)
		it, ok := t.tools[ev.Call]
		if !ok {
			it = t.push(&item{Kind: "tool", CallID: ev.Call, Seq: e.Seq, At: ev.At})
			t.tools[ev.Call] = it
		}
		it.Done = ev.At
		if ev.Tool != nil {
			out := t.redact(ev.Tool.Output)
			it.Output, it.IsError, it.Outcome = &out, ev.Tool.IsError, ev.Tool.Outcome
		}
	case loop.EventVerdict:
		closeSpan(t.checks, ev.Call, ev.At)
		if ev.Verdict == nil {
			return
		}
		attempt, tier := verifyID(ev.Call)
		v := *ev.Verdict
		v.Detail, v.Where = t.redact(v.Detail), t.redact(v.Where)
		if it, ok := t.finishes[attempt]; ok {
			it.Verdicts = append(it.Verdicts, verdict{Verdict: v, Tier: tier})
			it.Done = ev.At
		} else {
			t.push(&item{Kind: "finish", Seq: e.Seq, At: ev.At, Attempt: attempt, Verdicts: []verdict{{Verdict: v, Tier: tier}}})
		}
	case loop.EventCheckError:
		closeSpan(t.checks, ev.Call, ev.At)
		t.push(&item{Kind: "error", Class: "check", Seq: e.Seq, At: ev.At, Text: t.redact(ev.Call + ": " + failure(ev.Error))})
	case loop.EventHumanReply:
		for _, sp := range t.Spans {
			if sp.Kind == "human" && sp.End.IsZero() {
				sp.End = ev.At
			}
		}
		t.push(&item{Kind: "reply", Seq: e.Seq, At: ev.At, Text: t.redact(ev.Text), Approved: ev.Approved})
		t.cur.Highlight = true
	case loop.EventHumanUnavailable:
		t.push(&item{Kind: "reply", Class: "unavailable", Seq: e.Seq, At: ev.At, Text: t.redact(ev.Text)})
	case loop.EventCancel:
		t.push(&item{Kind: "cancel", Seq: e.Seq, At: ev.At, Text: t.redact(ev.Text)})
	case loop.EventResume:
		t.push(&item{Kind: "resume", Seq: e.Seq, At: ev.At})
	case loop.EventChildResult:
		for _, sp := range t.Spans {
			if sp.Kind == "child" && sp.Label == ev.Call && sp.End.IsZero() {
				sp.End = ev.At
			}
		}
		it, ok := t.children[ev.Call]
		if !ok {
			it = t.push(&item{Kind: "child", Seq: e.Seq, At: ev.At, Child: t.runID + "/" + ev.Call})
		}
		it.Done = ev.At
		if ev.Child != nil {
			it.Status = string(ev.Child.Status)
			it.Class = t.redact(ev.Child.Reason)
		}
	}
}

func (t *transcript) finishCall(e store.Entry, ev *loop.Event, b model.Block) {
	var args struct {
		Answer     string  `json:"answer"`
		Confidence float64 `json:"confidence"`
	}
	json.Unmarshal(b.Input, &args)
	it := t.push(&item{Kind: "finish", Seq: e.Seq, At: ev.At, Text: t.redact(args.Answer), Confidence: args.Confidence, CallID: b.ID})
	// The attempt note that follows numbers it; until then it is attempt 0.
	t.finishes[-1] = it
}

func (t *transcript) note(e store.Entry, n *loop.Note) {
	switch n.Type {
	case loop.NoteAttempt:
		if it, ok := t.finishes[-1]; ok {
			delete(t.finishes, -1)
			it.Attempt = n.Attempt
			t.finishes[n.Attempt] = it
			return
		}
	case loop.NoteIntervention, loop.NoteRejected, loop.NoteObservation, loop.NoteClosing:
		t.cur.Highlight = true
	}
	t.push(&item{Kind: "note", Class: string(n.Type), Seq: e.Seq, At: e.At, Text: t.redact(n.Text), Attempt: n.Attempt, Status: string(n.Pattern) + " " + string(n.Rung)})
}

// verifyID reads a verify command's ID, v<attempt>.<tier>; plan checks
// (p<n>) have attempt 0.
func verifyID(id string) (attempt int, tier string) {
	rest, ok := strings.CutPrefix(id, "v")
	if !ok {
		return 0, ""
	}
	n, tier, _ := strings.Cut(rest, ".")
	fmt.Sscan(n, &attempt)
	return attempt, tier
}

func failure(f *loop.Failure) string {
	if f == nil {
		return "failed"
	}
	return f.Kind + ": " + f.Message
}

// prettyJSON indents JSON for reading; anything else comes back as it is.
func prettyJSON(raw []byte) string {
	var b bytes.Buffer
	if len(raw) == 0 {
		return "{}"
	}
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
