package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/redact"
)

// Admit makes an event from outside the core (a model's reply, a tool's
// output, a verdict, an error, a person's answer) fit to be kept and shown,
// before the core, the log or the store sees it: every secret red knows
// is replaced, and bytes that are not UTF-8 are replaced by U+FFFD, which
// the returned note says, to be recorded as a repair entry before the
// event so that nothing changes silently (nil when nothing was repaired);
// tool arguments lose the whitespace between their tokens, as the log
// would drop it. The core and the log then hold the same text, so a replay
// of the log decides exactly as the run did. A driver other than this
// runner (Temporal's activities) admits what its workers produce with it.
func Admit(ev *loop.Event, red *redact.Redactor) (repair *loop.Note) {
	a := admitter{red: red}
	if a.red.Len() == 0 {
		a.red = nil
	}
	if ev.Reply != nil {
		// A model may share its replies' content between calls (the
		// scripted model does): a block that changes is changed in a copy.
		content, copied := ev.Reply.Content, false
		for i := range content {
			b := content[i]
			changed := a.text(&b.Text)
			changed = a.text(&b.ID) || changed
			changed = a.text(&b.Name) || changed
			if in, ok := compacted(b.Input); ok {
				b.Input, changed = in, true
			}
			if len(b.Input) > 0 && (a.red != nil || !utf8.Valid(b.Input)) {
				in := string(b.Input)
				if a.text(&in) {
					b.Input, changed = []byte(in), true
				}
			}
			if changed {
				if !copied {
					content, copied = slices.Clone(content), true
				}
				content[i] = b
			}
		}
		ev.Reply.Content = content
		a.text(&ev.Reply.StopReason)
		a.text(&ev.Reply.Model)
	}
	if ev.Tool != nil {
		a.text(&ev.Tool.Output)
	}
	a.text(&ev.Text)
	if ev.Error != nil {
		a.text(&ev.Error.Message)
	}
	if v := ev.Verdict; v != nil {
		a.text(&v.Detail)
		a.text(&v.Where)
	}
	if g := ev.Guardrail; g != nil {
		a.text(&g.Reason)
	}
	if c := ev.Child; c != nil {
		a.text(&c.Reason)
		a.text(&c.Question)
	}
	if a.invalid == 0 {
		return nil
	}
	return &loop.Note{
		Type: loop.NoteObservation, Problem: "invalid_utf8",
		Text: fmt.Sprintf("the %s%s held %d byte sequence(s) that are not UTF-8, each replaced by U+FFFD", ev.Type, callOf(ev), a.invalid),
	}
}

// compacted returns tool arguments that are valid JSON without the
// whitespace between tokens, and whether that changed them: the log keeps
// them compact (encoding/json compacts them), so the core must see them
// so too, or a replay would size the history differently.
func compacted(in json.RawMessage) (json.RawMessage, bool) {
	if !bytes.ContainsAny(in, " \t\r\n") || !json.Valid(in) {
		return in, false
	}
	var b bytes.Buffer
	if json.Compact(&b, in) != nil || b.Len() == len(in) {
		return in, false
	}
	return b.Bytes(), true
}

func callOf(ev *loop.Event) string {
	if ev.Call == "" {
		return ""
	}
	return " of " + ev.Call
}

// admitter cleans one event's strings, counting the invalid UTF-8 it
// replaced.
type admitter struct {
	red     *redact.Redactor // nil when there is no secret to replace
	invalid int
}

// text cleans *s in place and reports whether it changed.
func (a *admitter) text(s *string) bool {
	out := *s
	if !utf8.ValidString(out) {
		a.invalid += invalidRuns(out)
		out = strings.ToValidUTF8(out, "\uFFFD")
	}
	if a.red != nil {
		out = a.red.String(out)
	}
	if out == *s {
		return false
	}
	*s = out
	return true
}

// invalidRuns counts the runs of invalid bytes in s, as ToValidUTF8
// replaces each run by one U+FFFD.
func invalidRuns(s string) int {
	n, inRun := 0, false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && size == 1
		if bad && !inRun {
			n++
		}
		inRun = bad
		i += size
	}
	return n
}

// RedactSpec replaces secrets in the spec's texts: the goal and
// instructions, and the tool descriptions, which an MCP server wrote. The
// model sees the spec so redacted, as the log records it.
func RedactSpec(red *redact.Redactor, spec *loop.Spec) {
	if red.Len() == 0 {
		return
	}
	spec.Goal = red.String(spec.Goal)
	spec.Instructions = red.String(spec.Instructions)
	for i := range spec.Tools {
		spec.Tools[i].Description = red.String(spec.Tools[i].Description)
	}
}
