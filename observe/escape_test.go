package observe_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/verify"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain → text\twith\nlines", "plain → text\twith\nlines"},
		{"clear \x1b[2J\x1b[H screen", `clear \x1b[2J\x1b[H screen`},
		{"title \x1b]0;pwned\x07", `title \x1b]0;pwned\x07`},
		{"over\rwrite\b", `over\x0dwrite\x08`},
		{"del \x7f c1 \u009b31m", `del \x7f c1 \u009b31m`},
		{"raw \x9b byte \xff", `raw \x9b byte \xff`},
	} {
		if got := observe.Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// printAll feeds every kind of entry the printer shows, each carrying text
// from outside, through a printer, streaming the reply's text in two
// pieces cut at split.
func printAll(w *bytes.Buffer, live bool, text string, split int) {
	p := observe.NewPrinter(w, observe.PrinterConfig{Live: live, Limits: budget.Limits{Steps: 3}, Width: 80})
	at := time.Unix(1700000000, 0)
	args, _ := json.Marshal(map[string]string{"s": text})
	call := loop.ToolCall{ID: "c1", Name: "echo", Args: args}
	split = min(max(split, 0), len(text))
	entries := []observe.Entry{
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventStart, At: at}},
		{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{Purpose: model.PurposeStep}}},
	}
	for _, e := range entries {
		p.Observe(e)
	}
	p.ObserveText("r", "m1", text[:split])
	p.ObserveText("r", "m1", text[split:])
	reply := &model.Response{Content: []model.Block{model.TextBlock(text), {Type: model.ToolUse, ID: "f", Name: loop.FinishTool, Input: args}}}
	verdict := &verify.Verdict{Check: "c", Detail: text, Where: text}
	for _, e := range []observe.Entry{
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventModelReply, At: at, Reply: reply}},
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventModelReply, At: at, Reply: &model.Response{Content: []model.Block{model.TextBlock(text)}}}},
		{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.RunTools, ID: "t1", Calls: []loop.ToolCall{call}}},
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventToolResult, At: at, Call: "c1", Tool: &loop.ToolOutcome{Output: text, IsError: true}}},
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventVerdict, At: at, Verdict: verdict}},
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventModelError, At: at, Error: &loop.Failure{Kind: text, Message: text}}},
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventHumanReply, At: at, Text: text}},
		{Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteObservation, Problem: text, Text: text}},
		{Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteIntervention, Text: text}},
		{Kind: observe.KindRetry, Retry: &observe.Retry{Call: "m1", Retry: model.Retry{Attempt: 2, Reason: text}}},
		{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.Verify, ID: "v1", Checks: []string{text}}},
		{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.AskHuman, ID: "h1", Question: text}},
		{Kind: observe.KindEvent, At: at, Event: &loop.Event{Type: loop.EventCancel, At: at, Text: text}},
		{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.Finish, Result: &loop.Result{
			Status: loop.Escalated, Reason: text, Question: text, Best: &loop.Attempt{Answer: text},
		}}},
	} {
		p.Observe(e)
	}
}

// controlByte returns the first control character (C0 but newline and tab,
// DEL, C1) or invalid UTF-8 in out, after removing the printer's own live
// line sequence when live.
func controlByte(out string, live bool) (string, bool) {
	if live {
		out = strings.ReplaceAll(out, "\r\x1b[K", "")
	}
	for i, r := range out {
		if r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD") ||
			r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return out[max(0, i-20):min(len(out), i+20)], true
		}
	}
	return "", false
}

func TestPrinterEscapesOutsideText(t *testing.T) {
	for _, live := range []bool{false, true} {
		var buf bytes.Buffer
		printAll(&buf, live, "bell\x07 \x1b]0;pwned\x07 \x1b[2J\r\u009b \xe2\x86", 9)
		if at, found := controlByte(buf.String(), live); found {
			t.Errorf("live=%v: a control character from the text reached the terminal near %q", live, at)
		}
		if !strings.Contains(buf.String(), `\x1b[2J`) {
			t.Errorf("live=%v: the escape sequence is not shown escaped:\n%s", live, buf.String())
		}
		if !live && strings.Contains(buf.String(), "\x1b") {
			t.Errorf("not a terminal, yet the printer wrote an escape sequence:\n%q", buf.String())
		}
	}
}

func FuzzPrinter(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "\x9b2J", "\xc2\x9b2J", "\r\b\x7f", "→ ok \xe2\x86\x92", "\xf0\x9f"} {
		f.Add(s, 3, false)
		f.Add(s, 1, true)
	}
	f.Fuzz(func(t *testing.T, text string, split int, live bool) {
		var buf bytes.Buffer
		printAll(&buf, live, text, split)
		if at, found := controlByte(buf.String(), live); found {
			t.Fatalf("a control character or invalid UTF-8 from %q reached the output near %q", text, at)
		}
	})
}

// A character split between two streamed pieces is shown whole, not as
// two escaped halves.
func TestPrinterStreamSplitCharacter(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{})
	p.ObserveText("r", "m1", "a\xe2\x86")
	p.ObserveText("r", "m1", "\x92b \x1b[2J")
	if got := buf.String(); got != `step 0  a→b \x1b[2J` {
		t.Errorf("streamed %q", got)
	}
}
