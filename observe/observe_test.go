package observe_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

var t0 = time.Date(2026, 11, 29, 23, 11, 9, 0, time.UTC)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

var (
	readSpec   = model.ToolSpec{Name: "read_file", Description: "Read a file.", InputSchema: raw(`{"type":"object"}`)}
	finishSpec = model.ToolSpec{Name: "finish", Description: "Submit your answer.", InputSchema: raw(`{"type":"object"}`)}
)

// goal is a marker: it must never reach the log through a call_model command.
const goal = "invoice.txt lists line items. Report the total."

// run returns a realistic run: two turns, an unknown tool, a tool error, an
// intervention, a rejected attempt and a final Result.
func run() []observe.Entry {
	history := []model.Message{
		{Role: model.User, Content: []model.Block{model.TextBlock(goal)}},
		{Role: model.Assistant, Content: []model.Block{model.TextBlock("Let me look."), {Type: model.ToolUse, ID: "c0", Name: "read_file", Input: raw(`{"path":"."}`)}}},
		{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "c0", Text: "invoice.txt", IsError: false}}},
	}
	req1 := &model.Request{System: "You are an agent.", Messages: history, Tools: []model.ToolSpec{readSpec, finishSpec}, MaxOutputTokens: 4096, Purpose: model.PurposeStep}
	req2 := &model.Request{System: "You are an agent.", Messages: append(slices.Clip(history), history[1], history[2]), Tools: []model.ToolSpec{readSpec, finishSpec}, MaxOutputTokens: 4096, Purpose: model.PurposeStep}
	deadline := t0.Add(10 * time.Minute)
	verdicts := []verify.Verdict{
		{Check: "regex", OK: true, Confidence: 1, Detail: "answer matches /^TOTAL: \\d+\\.\\d{2}$/", Provenance: verify.Validation},
		{Check: "equals", OK: false, Confidence: 1, Detail: `expected "TOTAL: 142.55", got "TOTAL: 142.50"`, Where: "line 1", Provenance: verify.Validation, Cost: 250},
	}
	attempt := loop.Attempt{N: 1, Step: 2, Answer: "TOTAL: 142.50", Confidence: 0.9, Verdicts: verdicts, Summary: "attempt 1: TOTAL: 142.50 — failed equals"}
	result := &loop.Result{
		Status:   loop.Exhausted(budget.Steps),
		Reason:   "the step budget (2) is spent without an accepted answer",
		Best:     &attempt,
		Attempts: []loop.Attempt{attempt},
		Usage:    budget.Usage{Steps: 2, ModelCalls: 2, ToolCalls: 2, InputTokens: 2700, OutputTokens: 75, Cost: 5400, Time: 2600 * time.Millisecond},
		Limits:   budget.Limits{Steps: 2}.WithDefaults(),
	}
	es := []observe.Entry{
		{At: t0, Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventStart, At: t0}},
		{At: t0, Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m1", Deadline: deadline, Request: req1}},
		{At: t0.Add(1200 * time.Millisecond), Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelReply, At: t0.Add(1200 * time.Millisecond), Call: "m1", Reply: &model.Response{
			Content: []model.Block{
				model.TextBlock("I'll read the invoice."),
				{Type: model.ToolUse, ID: "c1", Name: "read_file", Input: raw(`{"path":"invoice.txt"}`)},
				{Type: model.ToolUse, ID: "c2", Name: "grep", Input: raw(`{"q":"total"}`)},
				{Type: model.ToolUse, ID: "c3", Name: "read_file", Input: raw(`{"path":"missing.txt"}`)},
			},
			StopReason: "tool_use",
			Usage:      model.Usage{InputTokens: 1200, OutputTokens: 45, Cost: 3150, CostKnown: true},
			Model:      "test-model-1",
		}}},
		{At: t0.Add(1200 * time.Millisecond), Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteObservation, Step: 1, Problem: "unknown_tool", Text: `unknown tool "grep"; available tools: read_file, finish`}},
		{At: t0.Add(1200 * time.Millisecond), Kind: observe.KindCommand, Command: &loop.Command{Type: loop.RunTools, ID: "t1", Deadline: deadline, Calls: []loop.ToolCall{
			{ID: "c1", Name: "read_file", Args: raw(`{"path":"invoice.txt"}`)},
			{ID: "c3", Name: "read_file", Args: raw(`{"path":"missing.txt"}`)},
		}}},
		{At: t0.Add(1300 * time.Millisecond), Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventToolResult, At: t0.Add(1300 * time.Millisecond), Call: "c1", Tool: &loop.ToolOutcome{Output: "Cake    19.50\nTotal   142.50\n", Outcome: "ok"}}},
		{At: t0.Add(1300 * time.Millisecond), Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventToolResult, At: t0.Add(1300 * time.Millisecond), Call: "c3", Tool: &loop.ToolOutcome{Output: "open missing.txt: no such file", IsError: true, Outcome: "tool_error"}}},
		{At: t0.Add(1300 * time.Millisecond), Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteIntervention, Step: 1, Pattern: progress.Repeating, Rung: progress.Reflect, Text: "You read the same file twice.\nStep back: what else could you try?"}},
		{At: t0.Add(1300 * time.Millisecond), Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m2", Deadline: deadline, Request: req2}},
		{At: t0.Add(2500 * time.Millisecond), Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelReply, At: t0.Add(2500 * time.Millisecond), Call: "m2", Reply: &model.Response{
			Content: []model.Block{
				model.TextBlock("The total is 142.50."),
				{Type: model.ToolUse, ID: "c4", Name: "finish", Input: raw(`{"answer":"TOTAL: 142.50","confidence":0.9}`)},
			},
			StopReason: "tool_use",
			Usage:      model.Usage{InputTokens: 1500, OutputTokens: 30, Cost: 2000, CostKnown: true},
			Model:      "test-model-1",
		}}},
		{At: t0.Add(2500 * time.Millisecond), Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteAttempt, Step: 2, Attempt: 1, Text: "TOTAL: 142.50"}},
		{At: t0.Add(2500 * time.Millisecond), Kind: observe.KindCommand, Command: &loop.Command{Type: loop.Verify, ID: "v1", Deadline: deadline, Candidate: &verify.Candidate{Answer: "TOTAL: 142.50", Confidence: 0.9, Attempt: 1}, Checks: []string{"regex", "equals"}}},
		{At: t0.Add(2600 * time.Millisecond), Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventVerdict, At: t0.Add(2600 * time.Millisecond), Call: "v1", Verdict: &verdicts[0]}},
		{At: t0.Add(2600 * time.Millisecond), Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventVerdict, At: t0.Add(2600 * time.Millisecond), Call: "v1", Verdict: &verdicts[1]}},
		{At: t0.Add(2600 * time.Millisecond), Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteRejected, Step: 2, Attempt: 1, Text: "check equals failed at line 1"}},
		{At: t0.Add(2600 * time.Millisecond), Kind: observe.KindCommand, Command: &loop.Command{Type: loop.Finish, ID: "f1", Result: result}},
	}
	for i := range es {
		es[i].Seq, es[i].Run = int64(i+1), "run-20261129-231109.000000"
	}
	return es
}

// wantLog is the JSONL form of run(), one object per line.
var wantLog = []string{
	`{"seq":1,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:09Z","kind":"event","event":{"type":"start","at":"2026-11-29T23:11:09Z"}}`,
	`{"seq":2,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:09Z","kind":"command","command":{"type":"call_model","id":"m1","deadline":"2026-11-29T23:21:09Z",
	  "request":{"purpose":"step","messages":3,"tools":["read_file","finish"],"max_output_tokens":4096}}}`,
	`{"seq":3,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.2Z","kind":"event","event":{"type":"model_reply","at":"2026-11-29T23:11:10.2Z","call":"m1","reply":{
	  "content":[{"type":"text","text":"I'll read the invoice."},
	             {"type":"tool_use","id":"c1","name":"read_file","input":{"path":"invoice.txt"}},
	             {"type":"tool_use","id":"c2","name":"grep","input":{"q":"total"}},
	             {"type":"tool_use","id":"c3","name":"read_file","input":{"path":"missing.txt"}}],
	  "stop_reason":"tool_use","usage":{"input_tokens":1200,"output_tokens":45,"cost_micros":3150,"cost_known":true},"model":"test-model-1"}}}`,
	`{"seq":4,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.2Z","kind":"note","note":{"type":"observation","step":1,"problem":"unknown_tool","text":"unknown tool \"grep\"; available tools: read_file, finish"}}`,
	`{"seq":5,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.2Z","kind":"command","command":{"type":"run_tools","id":"t1","deadline":"2026-11-29T23:21:09Z",
	  "calls":[{"id":"c1","name":"read_file","args":{"path":"invoice.txt"}},{"id":"c3","name":"read_file","args":{"path":"missing.txt"}}]}}`,
	`{"seq":6,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.3Z","kind":"event","event":{"type":"tool_result","at":"2026-11-29T23:11:10.3Z","call":"c1","tool":{"output":"Cake    19.50\nTotal   142.50\n","outcome":"ok"}}}`,
	`{"seq":7,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.3Z","kind":"event","event":{"type":"tool_result","at":"2026-11-29T23:11:10.3Z","call":"c3","tool":{"output":"open missing.txt: no such file","is_error":true,"outcome":"tool_error"}}}`,
	`{"seq":8,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.3Z","kind":"note","note":{"type":"intervention","step":1,"pattern":"repeating","rung":"reflect","text":"You read the same file twice.\nStep back: what else could you try?"}}`,
	`{"seq":9,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:10.3Z","kind":"command","command":{"type":"call_model","id":"m2","deadline":"2026-11-29T23:21:09Z",
	  "request":{"purpose":"step","messages":5,"tools":["read_file","finish"],"max_output_tokens":4096}}}`,
	`{"seq":10,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.5Z","kind":"event","event":{"type":"model_reply","at":"2026-11-29T23:11:11.5Z","call":"m2","reply":{
	  "content":[{"type":"text","text":"The total is 142.50."},{"type":"tool_use","id":"c4","name":"finish","input":{"answer":"TOTAL: 142.50","confidence":0.9}}],
	  "stop_reason":"tool_use","usage":{"input_tokens":1500,"output_tokens":30,"cost_micros":2000,"cost_known":true},"model":"test-model-1"}}}`,
	`{"seq":11,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.5Z","kind":"note","note":{"type":"attempt","step":2,"attempt":1,"text":"TOTAL: 142.50"}}`,
	`{"seq":12,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.5Z","kind":"command","command":{"type":"verify","id":"v1","deadline":"2026-11-29T23:21:09Z",
	  "candidate":{"answer":"TOTAL: 142.50","confidence":0.9,"attempt":1},"checks":["regex","equals"]}}`,
	`{"seq":13,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.6Z","kind":"event","event":{"type":"verdict","at":"2026-11-29T23:11:11.6Z","call":"v1",
	  "verdict":{"check":"regex","ok":true,"confidence":1,"detail":"answer matches /^TOTAL: \\d+\\.\\d{2}$/","provenance":"validation"}}}`,
	`{"seq":14,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.6Z","kind":"event","event":{"type":"verdict","at":"2026-11-29T23:11:11.6Z","call":"v1",
	  "verdict":{"check":"equals","ok":false,"confidence":1,"detail":"expected \"TOTAL: 142.55\", got \"TOTAL: 142.50\"","where":"line 1","provenance":"validation","cost_micros":250}}}`,
	`{"seq":15,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.6Z","kind":"note","note":{"type":"rejected","step":2,"attempt":1,"text":"check equals failed at line 1"}}`,
	`{"seq":16,"run":"run-20261129-231109.000000","at":"2026-11-29T23:11:11.6Z","kind":"command","command":{"type":"finish","id":"f1","result":{
	  "status":"exhausted:steps","reason":"the step budget (2) is spent without an accepted answer",
	  "best":{"n":1,"step":2,"answer":"TOTAL: 142.50","confidence":0.9,"accepted":false,"summary":"attempt 1: TOTAL: 142.50 — failed equals","verdicts":[
	    {"check":"regex","ok":true,"confidence":1,"detail":"answer matches /^TOTAL: \\d+\\.\\d{2}$/","provenance":"validation"},
	    {"check":"equals","ok":false,"confidence":1,"detail":"expected \"TOTAL: 142.55\", got \"TOTAL: 142.50\"","where":"line 1","provenance":"validation","cost_micros":250}]},
	  "attempts":[{"n":1,"step":2,"answer":"TOTAL: 142.50","confidence":0.9,"accepted":false,"summary":"attempt 1: TOTAL: 142.50 — failed equals","verdicts":[
	    {"check":"regex","ok":true,"confidence":1,"detail":"answer matches /^TOTAL: \\d+\\.\\d{2}$/","provenance":"validation"},
	    {"check":"equals","ok":false,"confidence":1,"detail":"expected \"TOTAL: 142.55\", got \"TOTAL: 142.50\"","where":"line 1","provenance":"validation","cost_micros":250}]}],
	  "usage":{"steps":2,"model_calls":2,"tool_calls":2,"input_tokens":2700,"output_tokens":75,"cost_micros":5400,"time_ns":2600000000},
	  "limits":{"steps":2,"model_calls":60,"tool_calls":200,"input_tokens":-1,"output_tokens":-1,"total_tokens":2000000,"cost_micros":2000000,"time_ns":600000000000}}}}`,
}

// decodeLines checks that b is JSON Lines and returns each line decoded.
func decodeLines(t *testing.T, b []byte) []any {
	t.Helper()
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("log does not end with a newline: %q", b)
	}
	var out []any
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %d is not JSON (%v): %s", i+1, err, line)
		}
		if _, ok := v.(map[string]any); !ok {
			t.Fatalf("line %d is not a JSON object: %s", i+1, line)
		}
		out = append(out, v)
	}
	return out
}

func TestJSONL(t *testing.T) {
	entries := run()
	var buf bytes.Buffer
	j := observe.NewJSONL(&buf)
	for _, e := range entries {
		j.Observe(e)
	}
	if err := j.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	got := decodeLines(t, buf.Bytes())
	var want []any
	for i, s := range wantLog {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("wantLog[%d] is not JSON: %v", i, err)
		}
		want = append(want, v)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log mismatch (-want +got):\n%s", diff)
	}

	// The envelope of docs/events.md on every line: seq 1, 2, 3… without
	// gaps, the run, an RFC 3339 time, and exactly the field kind names.
	for i, v := range got {
		line := v.(map[string]any)
		if seq, _ := line["seq"].(float64); seq != float64(i+1) {
			t.Errorf("line %d: seq = %v, want %d", i+1, line["seq"], i+1)
		}
		if run, _ := line["run"].(string); run == "" {
			t.Errorf("line %d: no run", i+1)
		}
		if at, _ := line["at"].(string); at == "" {
			t.Errorf("line %d: no at", i+1)
		} else if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
			t.Errorf("line %d: at %q is not RFC 3339: %v", i+1, at, err)
		}
		kind, _ := line["kind"].(string)
		set := 0
		for _, k := range []string{"event", "command", "note"} {
			if obj, ok := line[k].(map[string]any); ok {
				set++
				if k != kind {
					t.Errorf("line %d: kind %q but %q is set", i+1, kind, k)
				}
				if typ, _ := obj["type"].(string); typ == "" {
					t.Errorf("line %d: %s has no type", i+1, k)
				}
			}
		}
		if set != 1 {
			t.Errorf("line %d: %d of event/command/note set, want 1", i+1, set)
		}
	}

	// call_model is logged as a summary, never the conversation.
	if bytes.Contains(buf.Bytes(), []byte("invoice.txt lists line items")) || bytes.Contains(buf.Bytes(), []byte("You are an agent")) {
		t.Error("the log holds the request's messages or system prompt; want only the summary")
	}
	// Logging must not touch the entries: the machine shares them.
	if diff := cmp.Diff(run(), entries); diff != "" {
		t.Errorf("JSONL modified the entries it logged (-before +after):\n%s", diff)
	}
}

func TestSummarize(t *testing.T) {
	if got := observe.Summarize(nil); got != nil {
		t.Errorf("Summarize(nil) = %+v, want nil", got)
	}
	tests := []struct {
		name string
		req  model.Request
		want observe.RequestSummary
	}{
		{
			"step",
			model.Request{System: "s", Messages: make([]model.Message, 7), Tools: []model.ToolSpec{readSpec, finishSpec}, MaxOutputTokens: 100, Purpose: model.PurposeStep},
			observe.RequestSummary{Purpose: model.PurposeStep, Messages: 7, Tools: []string{"read_file", "finish"}, MaxOutputTokens: 100},
		},
		{
			"closing with finish only",
			model.Request{Messages: make([]model.Message, 2), Tools: []model.ToolSpec{finishSpec}, MaxOutputTokens: 1, Purpose: model.PurposeClosing},
			observe.RequestSummary{Purpose: model.PurposeClosing, Messages: 2, Tools: []string{"finish"}, MaxOutputTokens: 1},
		},
		{
			"no tools is an empty list",
			model.Request{},
			observe.RequestSummary{Tools: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(&tt.want, observe.Summarize(&tt.req)); diff != "" {
				t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// "tools" is always a list in the log, never null.
	var buf bytes.Buffer
	j := observe.NewJSONL(&buf)
	j.Observe(observe.Entry{Seq: 1, Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{Purpose: model.PurposeClosing}}})
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `"request":{"purpose":"closing","messages":0,"tools":[]}`; !strings.Contains(buf.String(), want) {
		t.Errorf("log = %s, want it to contain %s", buf.String(), want)
	}
}

// A model may send tool arguments that are not JSON; the loop answers them
// with an observation. The log must keep going, and keep the bytes.
func TestJSONLInvalidToolInput(t *testing.T) {
	reply := &model.Response{Content: []model.Block{
		model.TextBlock("reading"),
		{Type: model.ToolUse, ID: "c1", Name: "read_file", Input: raw(`{"path": "a.txt",`)},
		{Type: model.ToolUse, ID: "c2", Name: "read_file", Input: raw(`{"path":"b.txt"}`)},
		{Type: model.ToolUse, ID: "c3", Name: "list_files", Input: raw(" ")},
	}, StopReason: "tool_use", Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}
	entries := []observe.Entry{
		{Seq: 1, Run: "r", At: t0, Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelReply, At: t0, Call: "m1", Reply: reply}},
		{Seq: 2, Run: "r", At: t0, Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteObservation, Step: 1, Problem: "invalid_json", Text: "not valid JSON"}},
	}
	var buf bytes.Buffer
	j := observe.NewJSONL(&buf)
	for _, e := range entries {
		j.Observe(e)
	}
	if err := j.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	got := decodeLines(t, buf.Bytes())
	if len(got) != 2 {
		t.Fatalf("log has %d lines, want 2:\n%s", len(got), buf.String())
	}
	var want any
	if err := json.Unmarshal([]byte(`{"seq":1,"run":"r","at":"2026-11-29T23:11:09Z","kind":"event","event":{"type":"model_reply","at":"2026-11-29T23:11:09Z","call":"m1","reply":{
		"content":[{"type":"text","text":"reading"},
		           {"type":"tool_use","id":"c1","name":"read_file","invalid_input":"{\"path\": \"a.txt\","},
		           {"type":"tool_use","id":"c2","name":"read_file","input":{"path":"b.txt"}},
		           {"type":"tool_use","id":"c3","name":"list_files","invalid_input":" "}],
		"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"cost_micros":0,"cost_known":false}}}}`), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("line 1 mismatch (-want +got):\n%s", diff)
	}
	if got := string(reply.Content[1].Input); got != `{"path": "a.txt",` {
		t.Errorf("logging changed the shared reply's input to %q", got)
	}
}

// failingWriter accepts limit bytes, then fails every write.
type failingWriter struct {
	limit, n int
	writes   int
}

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.n+len(p) > w.limit {
		k := max(w.limit-w.n, 0)
		w.n += k
		return k, errDiskFull
	}
	w.n += len(p)
	return len(p), nil
}

func TestJSONLFlushReportsWriteErrors(t *testing.T) {
	big := observe.Entry{Seq: 1, Run: "r", At: t0, Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteObservation, Text: strings.Repeat("x", 10_000)}}
	small := observe.Entry{Seq: 2, Run: "r", At: t0, Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventStart, At: t0}}
	tests := []struct {
		name    string
		limit   int
		entries []observe.Entry
		wantErr error
	}{
		{"all fits", 1 << 20, run(), nil},
		{"buffered: the error shows at Flush", 0, run()[:3], errDiskFull},
		{"the error shows while observing", 100, []observe.Entry{big, small, small}, errDiskFull},
		{"the writer fails part way", 2000, run(), errDiskFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &failingWriter{limit: tt.limit}
			j := observe.NewJSONL(w)
			for _, e := range tt.entries {
				j.Observe(e)
			}
			err := j.Flush()
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Flush() = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				return
			}
			// The first error sticks: later entries are dropped, later
			// flushes report it again.
			writes := w.writes
			j.Observe(small)
			if err := j.Flush(); !errors.Is(err, errDiskFull) {
				t.Errorf("second Flush() = %v, want %v", err, errDiskFull)
			}
			if w.writes > writes+1 {
				t.Errorf("JSONL kept writing after an error: %d more writes", w.writes-writes)
			}
		})
	}
}

// An entry that cannot be encoded stops the log, and Flush says so rather
// than reporting a log with a silent hole.
func TestJSONLEncodeErrorIsKept(t *testing.T) {
	var buf bytes.Buffer
	j := observe.NewJSONL(&buf)
	bad := verify.Verdict{Check: "grader", Confidence: math.NaN(), Provenance: verify.Grader}
	j.Observe(observe.Entry{Seq: 1, Run: "r", At: t0, Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventStart, At: t0}})
	j.Observe(observe.Entry{Seq: 2, Run: "r", At: t0, Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventVerdict, At: t0, Call: "v1", Verdict: &bad}})
	j.Observe(observe.Entry{Seq: 3, Run: "r", At: t0, Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventCancel, At: t0, Text: "bye"}})
	err := j.Flush()
	var uv *json.UnsupportedValueError
	if !errors.As(err, &uv) {
		t.Fatalf("Flush() = %v, want the *json.UnsupportedValueError of entry 2", err)
	}
	if got := decodeLines(t, buf.Bytes()); len(got) != 1 {
		t.Errorf("log has %d lines, want only the one before the bad entry:\n%s", len(got), buf.String())
	}
}

func TestJSONLConcurrent(t *testing.T) {
	var buf bytes.Buffer
	j := observe.NewJSONL(&buf)
	entries := run()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				e := entries[i%len(entries)]
				e.Seq = int64(g*100 + i)
				j.Observe(e)
			}
		})
	}
	wg.Wait()
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := decodeLines(t, buf.Bytes())
	seen := map[float64]bool{}
	for _, l := range lines {
		seen[l.(map[string]any)["seq"].(float64)] = true
	}
	if len(lines) != 200 || len(seen) != 200 {
		t.Errorf("got %d lines with %d distinct seqs, want 200 of each", len(lines), len(seen))
	}
}

// wantPrinted is the plain printer output for run().
var wantPrinted = []string{
	`step 1  I'll read the invoice.`,
	`        ! unknown_tool: unknown tool "grep"; available tools: read_file, finish`,
	`        → read_file {"path":"invoice.txt"}`,
	`        → read_file {"path":"missing.txt"}`,
	`        ← Cake 19.50 Total 142.50`,
	`        ✗ open missing.txt: no such file`,
	`        ⟳ reflect (repeating): You read the same file twice. Step back: what else could you try?`,
	`step 2  The total is 142.50.`,
	`        finish {"answer":"TOTAL: 142.50","confidence":0.9}`,
	`        ✓ regex`,
	`        ✗ equals at line 1: expected "TOTAL: 142.55", got "TOTAL: 142.50"`,
	`exhausted:steps: the step budget (2) is spent without an accepted answer`,
	`best (rejected): TOTAL: 142.50`,
	`usage: steps=2/2 model_calls=2/60 tool_calls=2/200 input_tokens=2700 output_tokens=75 total_tokens=2775/2000000 cost=$0.005400/$2.000000 time=2.6s/10m0s`,
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		return append(strings.Split(s, "\n"), "<no final newline>")
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestPrinterPlain(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{Limits: budget.Limits{Steps: 2}})
	for _, e := range run() {
		p.Observe(e)
	}
	if diff := cmp.Diff(wantPrinted, lines(buf.String())); diff != "" {
		t.Errorf("printed output mismatch (-want +got):\n%s", diff)
	}
	if strings.ContainsAny(buf.String(), "\r\033") {
		t.Errorf("plain output has terminal controls: %q", buf.String())
	}
}

func reply(blocks ...model.Block) observe.Entry {
	return observe.Entry{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelReply, At: t0, Call: "m1", Reply: &model.Response{Content: blocks}}}
}

func cachedReply(blocks ...model.Block) observe.Entry {
	e := reply(blocks...)
	e.Event.Reply.Cached = true
	return e
}

func callModel(p model.Purpose) observe.Entry {
	return observe.Entry{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{Purpose: p}}}
}

func TestPrinterEntries(t *testing.T) {
	toolUse := func(id, name, input string) model.Block {
		return model.Block{Type: model.ToolUse, ID: id, Name: name, Input: raw(input)}
	}
	long := strings.Repeat("é", 200) // 400 bytes
	tests := []struct {
		name    string
		entries []observe.Entry
		want    []string
	}{
		{
			"tool calls without text still label the step",
			[]observe.Entry{callModel(model.PurposeStep), reply(toolUse("c1", "read_file", `{"path":"a"}`)),
				{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.RunTools, ID: "t1", Calls: []loop.ToolCall{{ID: "c1", Name: "read_file", Args: raw(`{"path":"a"}`)}}}}},
			[]string{`step 1`, `        → read_file {"path":"a"}`},
		},
		{
			"blank text does not use up the step label",
			[]observe.Entry{callModel(model.PurposeStep), reply(model.TextBlock("  \n "), model.TextBlock("thinking"))},
			[]string{`step 1  thinking`},
		},
		{
			"finish without text",
			[]observe.Entry{callModel(model.PurposeStep), callModel(model.PurposeStep), reply(toolUse("c1", "finish", `{"answer":"5"}`))},
			[]string{`step 2  finish {"answer":"5"}`},
		},
		{
			"empty reply",
			[]observe.Entry{callModel(model.PurposeStep), reply()},
			[]string{`step 1  (empty reply)`},
		},
		{
			"blank-only reply is empty",
			[]observe.Entry{callModel(model.PurposeStep), reply(model.TextBlock("   "))},
			[]string{`step 1  (empty reply)`},
		},
		{
			"step numbers from 10 keep the column",
			append(slices.Repeat([]observe.Entry{callModel(model.PurposeStep)}, 10), reply(model.TextBlock("ten"))),
			[]string{`step 10 ten`},
		},
		{
			"a reply from the response cache says so",
			[]observe.Entry{callModel(model.PurposeStep), cachedReply(model.TextBlock("from before")), callModel(model.PurposeStep),
				cachedReply(model.Block{Type: model.ToolUse, ID: "t1", Name: "add", Input: []byte(`{}`)})},
			[]string{`step 1  (cached) from before`, `step 2  (cached)`},
		},
		{
			"long text is clipped to 160 characters, not bytes",
			[]observe.Entry{callModel(model.PurposeStep), reply(model.TextBlock("a" + long))},
			[]string{`step 1  a` + strings.Repeat("é", 158) + `…`},
		},
		{
			"errors, people, questions, closing, guardrails and hooks, cancel",
			[]observe.Entry{
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelError, Call: "m1", Error: &loop.Failure{Kind: "deadline", Message: "time budget spent"}}},
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventCheckError, Call: "v1", Error: &loop.Failure{Kind: "check", Message: "grader down"}}},
				{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.AskHuman, ID: "h1", Question: "Which invoice?"}},
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventHumanReply, Text: "the  March\none"}},
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventHumanReply, Approved: ptr(true)}},
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventHumanReply, Approved: ptr(false), Text: "not that file"}},
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventHumanUnavailable, Text: "nobody"}},
				{Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteClosing, Step: 3, Problem: "steps", Text: "finish now"}},
				{Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteGuardrail, Step: 3, Problem: "pii", Text: "guardrail pii tripped on the model's input: an email"}},
				{Kind: observe.KindHook, Note: &loop.Note{Type: loop.NoteObservation, Problem: "before_tool:deny", Text: "c1: off limits"}},
				{Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteAttempt, Step: 3, Attempt: 2, Text: "x"}},
				{Kind: observe.KindNote, Note: &loop.Note{Type: loop.NoteRejected, Step: 3, Attempt: 2, Text: "x"}},
				{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventCancel, Text: "interrupt"}},
				{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.Finish, ID: "f1", Result: &loop.Result{
					Status: loop.Escalated, Reason: "a person is needed", Question: "Which invoice?",
					Limits: budget.Defaults, Usage: budget.Usage{Steps: 3, ModelCalls: 4, CostUnknown: true},
				}}},
			},
			[]string{
				`        ! deadline: time budget spent`,
				`        ! check: grader down`,
				`        ? Which invoice?`,
				`        person: the March one`,
				`        person: approved`,
				`        person: denied: not that file`,
				`        ⏹ steps budget spent: closing turn`,
				`        ⛔ guardrail pii tripped on the model's input: an email`,
				`        ! before_tool:deny: c1: off limits`,
				`escalated: a person is needed`,
				`question: Which invoice?`,
				`usage: steps=3/30 model_calls=4/60 tool_calls=0/200 input_tokens=0 output_tokens=0 total_tokens=0/2000000 cost=$0.000000/$2.000000 time=0s/10m0s (cost incomplete: some prices unknown)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := observe.NewPrinter(&buf, observe.PrinterConfig{})
			for _, e := range tt.entries {
				p.Observe(e)
			}
			if diff := cmp.Diff(tt.want, lines(buf.String())); diff != "" {
				t.Errorf("printed output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

const clearLine = "\r\033[K"

// screen replays terminal output: lines scrolled off, and the line the
// cursor is on. It understands only "\n" and clearLine.
type screen struct {
	done []string
	cur  string
}

func (s *screen) write(t *testing.T, out string) {
	t.Helper()
	for out != "" {
		switch {
		case strings.HasPrefix(out, clearLine):
			if s.cur == "" {
				t.Errorf("cleared an empty line: the status was not on screen")
			}
			s.cur, out = "", out[len(clearLine):]
		case out[0] == '\n':
			s.done, s.cur, out = append(s.done, s.cur), "", out[1:]
		case out[0] == '\r' || out[0] == '\033':
			t.Fatalf("unexpected control sequence in %q", out)
		default:
			i := strings.IndexAny(out, "\r\n\033")
			if i < 0 {
				i = len(out)
			}
			if strings.HasPrefix(out[:i], "[step ") && s.cur != "" {
				t.Errorf("status line drawn after %q on the same line", s.cur)
			}
			s.cur += out[:i]
			out = out[i:]
		}
	}
}

func TestPrinterLive(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{Live: true, Limits: budget.Limits{Steps: 2}})
	var sc screen
	// The status line after each entry of run(); "" means none.
	wantStatus := []string{
		"",
		"[step 1/2 · tools 0/200 · tokens 0 · $0.000000 · 0s] waiting for the model",
		"[step 1/2 · tools 0/200 · tokens 1245 · $0.003150 · 1.2s] waiting for the model",
		"[step 1/2 · tools 0/200 · tokens 1245 · $0.003150 · 1.2s] waiting for the model",
		"[step 1/2 · tools 2/200 · tokens 1245 · $0.003150 · 1.2s] running 2 tool call(s)",
		"[step 1/2 · tools 2/200 · tokens 1245 · $0.003150 · 1.3s] running 2 tool call(s)",
		"[step 1/2 · tools 2/200 · tokens 1245 · $0.003150 · 1.3s] running 2 tool call(s)",
		"[step 1/2 · tools 2/200 · tokens 1245 · $0.003150 · 1.3s] running 2 tool call(s)",
		"[step 2/2 · tools 2/200 · tokens 1245 · $0.003150 · 1.3s] waiting for the model",
		"[step 2/2 · tools 2/200 · tokens 2775 · $0.005150 · 2.5s] waiting for the model",
		"[step 2/2 · tools 2/200 · tokens 2775 · $0.005150 · 2.5s] waiting for the model",
		"[step 2/2 · tools 2/200 · tokens 2775 · $0.005150 · 2.5s] verifying: regex, equals",
		"[step 2/2 · tools 2/200 · tokens 2775 · $0.005150 · 2.6s] verifying: regex, equals",
		"[step 2/2 · tools 2/200 · tokens 2775 · $0.005400 · 2.6s] verifying: regex, equals",
		"[step 2/2 · tools 2/200 · tokens 2775 · $0.005400 · 2.6s] verifying: regex, equals",
		"",
	}
	entries := run()
	if len(wantStatus) != len(entries) {
		t.Fatalf("wantStatus has %d lines for %d entries", len(wantStatus), len(entries))
	}
	for i, e := range entries {
		buf.Reset()
		p.Observe(e)
		out := buf.String()
		sc.write(t, out)
		if sc.cur != wantStatus[i] {
			t.Errorf("after entry %d (%s): status line\n  %q\nwant\n  %q", i+1, e.Kind, sc.cur, wantStatus[i])
		}
		if n := strings.Count(out, "[step "); n > 1 {
			t.Errorf("entry %d drew %d status lines: %q", i+1, n, out)
		}
		if strings.Contains(out, "[step ") && !strings.HasSuffix(out, wantStatus[i]) {
			t.Errorf("entry %d: the status line is not last: %q", i+1, out)
		}
	}
	for _, l := range sc.done {
		if strings.Contains(l, "[step ") {
			t.Errorf("a status line was left in the scrollback: %q", l)
		}
	}
	// What stays on screen is exactly the plain output.
	if diff := cmp.Diff(wantPrinted, sc.done); diff != "" {
		t.Errorf("screen mismatch (-want +got):\n%s", diff)
	}
}

func TestPrinterLiveUnlimited(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{Live: true, Limits: budget.Limits{Steps: budget.Unlimited, ToolCalls: budget.Unlimited}})
	p.Observe(callModel(model.PurposeClosing))
	if want := "[step 1/unlimited · tools 0/unlimited · tokens 0 · $0.000000 · 0s] closing turn: waiting for the model"; buf.String() != want {
		t.Errorf("status line\n  %q\nwant\n  %q", buf.String(), want)
	}
	buf.Reset()
	p.Observe(observe.Entry{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.AskHuman, ID: "h1", Question: "Which?"}})
	want := clearLine + "        ? Which?\n[step 1/unlimited · tools 0/unlimited · tokens 0 · $0.000000 · 0s] waiting for a person"
	if buf.String() != want {
		t.Errorf("output\n  %q\nwant\n  %q", buf.String(), want)
	}
}

func TestMemoryAndFunc(t *testing.T) {
	entries := run()
	var m observe.Memory
	var seqs []int64
	var obs []observe.Observer = []observe.Observer{&m, observe.Func(func(e observe.Entry) { seqs = append(seqs, e.Seq) })}
	for _, e := range entries {
		for _, o := range obs {
			o.Observe(e)
		}
	}
	if diff := cmp.Diff(entries, m.Entries()); diff != "" {
		t.Errorf("Memory entries mismatch (-want +got):\n%s", diff)
	}
	if m.Len() != len(entries) {
		t.Errorf("Len() = %d, want %d", m.Len(), len(entries))
	}
	var want []int64
	for i := range entries {
		want = append(want, int64(i+1))
	}
	if diff := cmp.Diff(want, seqs); diff != "" {
		t.Errorf("Func saw seqs (-want +got):\n%s", diff)
	}
}

// TestMemoryKeepsOddEntries: Memory stores an entry of the usual shape (its
// Kind's one pointer) compactly; any other entry must come back unchanged.
func TestMemoryKeepsOddEntries(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC)
	ev, cmd := &loop.Event{Type: loop.EventStart, At: at}, &loop.Command{Type: loop.CallModel, ID: "m1"}
	entries := []observe.Entry{
		{Seq: 1, Run: "r", At: at, Kind: observe.KindEvent, Event: ev},
		{Seq: 2, Run: "r", At: at, Kind: observe.KindRetry, Retry: &observe.Retry{Call: "m1"}},
		{Seq: 3, Run: "r", At: at, Kind: observe.KindCommand, Event: ev},                // kind and pointer disagree
		{Seq: 4, Run: "r", At: at, Kind: observe.KindEvent, Event: ev, Command: cmd},    // two pointers
		{Seq: 5, Run: "r", At: at, Kind: observe.KindNote},                              // none
		{Seq: 6, Run: "child", At: at, Kind: "custom", Note: &loop.Note{Text: "hello"}}, // a kind ratchet does not write
		{Seq: 7, Run: "r", At: at, Kind: observe.KindRun, Spec: &loop.Spec{Goal: "g"}},
		{Seq: 8, Run: "r/child", At: at, Kind: observe.KindEvent, Event: ev},                          // another run
		{Seq: 9, Run: "r", At: time.Now(), Kind: observe.KindEvent, Event: ev},                        // a monotonic reading
		{Seq: 10, Run: "r", At: at.In(time.FixedZone("X", 3600)), Kind: observe.KindEvent, Event: ev}, // another location
		{Seq: 11, Run: "r", Kind: observe.KindEvent, Event: ev},                                       // no time
		{Seq: 12, Run: "r", At: at.Add(time.Nanosecond), Kind: observe.KindEvent, Event: ev},
		{Seq: 3, Run: "r/child", At: at, Kind: observe.KindEvent, Event: ev}, // a child's entries between the run's
		{Seq: 13, Run: "r", At: at, Kind: observe.KindCommand, Command: cmd},
		{Seq: 20, Run: "r", At: at, Kind: observe.KindEvent, Event: ev}, // a gap in the run's sequence
		{Seq: 21, Run: "r", At: at, Kind: observe.KindEvent, Event: ev},
		{Seq: 22, Run: "r", At: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), Kind: observe.KindEvent, Event: ev}, // out of UnixNano's range
		{Seq: 23, Run: "r", At: at, Kind: observe.KindEvent, Event: ev},
	}
	var m observe.Memory
	for _, e := range entries {
		m.Observe(e)
	}
	got := m.Entries()
	if diff := cmp.Diff(entries, got); diff != "" {
		t.Errorf("Entries() (-want +got):\n%s", diff)
	}
	for i := range entries { // cmp compares times with Equal; the log keeps them exactly
		if got[i].At != entries[i].At {
			t.Errorf("entry %d: At = %#v, want %#v", i, got[i].At, entries[i].At)
		}
	}
}

func TestMemoryOrder(t *testing.T) {
	for _, n := range []int{0, 1, 16, 17, 48, 49, 1500, 5000} {
		var m observe.Memory
		for i := range n {
			m.Observe(observe.Entry{Seq: int64(i + 1)})
		}
		got := m.Entries()
		if m.Len() != n || len(got) != n {
			t.Fatalf("after %d entries: Len() = %d, len(Entries()) = %d", n, m.Len(), len(got))
		}
		for i, e := range got {
			if e.Seq != int64(i+1) {
				t.Fatalf("after %d entries: Entries()[%d].Seq = %d, want %d", n, i, e.Seq, i+1)
			}
		}
		if n > 0 {
			got[0].Seq = -1 // a new slice: the Memory is unchanged
			if again := m.Entries(); again[0].Seq != 1 {
				t.Errorf("writing to Entries()'s result changed the Memory")
			}
		}
	}
}

// TestDocsListEveryType keeps docs/events.md in step with the loop
// package (event.go, and the sub-protocols that declare their own, such as
// guardrail.go): every EventType, CommandType and NoteType constant has a
// row in its table, and every row names a constant.
func TestDocsListEveryType(t *testing.T) {
	files, err := filepath.Glob("../loop/*.go")
	if err != nil {
		t.Fatal(err)
	}
	code := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for typ, vals := range constsByType(t, f) {
			code[typ] = append(code[typ], vals...)
		}
	}
	doc, err := os.ReadFile("../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := tableKeys(t, string(doc))
	for _, c := range []struct{ typ, section string }{
		{"EventType", "Events (`kind: event`)"},
		{"CommandType", "Commands (`kind: command`)"},
		{"NoteType", "Notes (`kind: note`)"},
	} {
		if len(code[c.typ]) == 0 {
			t.Errorf("no %s constants found in loop/event.go", c.typ)
		}
		if len(docs[c.section]) == 0 {
			t.Errorf("no table rows found under %q in docs/events.md", c.section)
		}
		got, want := slices.Sorted(slices.Values(docs[c.section])), slices.Sorted(slices.Values(code[c.typ]))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("docs/events.md %q vs the loop package's %s constants (-code +docs):\n%s", c.section, c.typ, diff)
		}
	}
}

// constsByType returns the string values of the constants of the types
// the log documents (EventType, CommandType, NoteType) in a file.
func constsByType(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok || !slices.Contains([]string{"EventType", "CommandType", "NoteType"}, id.Name) {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a %s constant is not a string literal", path, id.Name)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[id.Name] = append(out[id.Name], s)
			}
		}
	}
	return out
}

// tableKeys returns, for each "## " section of a Markdown document, the
// backquoted first cells of its table rows (after the header separator).
func tableKeys(t *testing.T, doc string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section, inTable := "", false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			section, inTable = strings.TrimPrefix(line, "## "), false
		case strings.HasPrefix(line, "| ---"):
			inTable = true
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable:
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			cell = strings.TrimSpace(cell)
			if len(cell) < 2 || cell[0] != '`' || cell[len(cell)-1] != '`' {
				t.Errorf("docs/events.md, %s: first cell %q is not `code`", section, cell)
				continue
			}
			out[section] = append(out[section], cell[1:len(cell)-1])
		}
	}
	return out
}

// TestLiveLineFitsTheTerminal: a status line wider than the terminal would
// wrap and could not be cleared in place, so it is cut to the width.
func TestLiveLineFitsTheTerminal(t *testing.T) {
	var b strings.Builder
	p := observe.NewPrinter(&b, observe.PrinterConfig{Live: true, Width: 30})
	p.Observe(observe.Entry{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{Purpose: model.PurposeStep}}})
	line := b.String()
	if n := utf8.RuneCountInString(line); n >= 30 || !strings.HasSuffix(line, "…") {
		t.Errorf("live line %q has %d runes; want fewer than 30, ending in …", line, n)
	}
}

// TestPrinterSummarizesCode: a generate-mode reply shows as its language
// and size, not as its code squashed onto one line.
func TestPrinterSummarizesCode(t *testing.T) {
	var b strings.Builder
	p := observe.NewPrinter(&b, observe.PrinterConfig{})
	p.Observe(observe.Entry{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.CallModel, ID: "m1", Request: &model.Request{Purpose: model.PurposeStep}}})
	p.Observe(observe.Entry{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventModelReply, Reply: &model.Response{
		Content: []model.Block{model.TextBlock("Here:\n```go\npackage p\n\nfunc F() {}\n```\nCONFIDENCE: 0.9")},
	}}})
	if got, want := b.String(), "step 1  Here: [go code, 3 lines] CONFIDENCE: 0.9\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPrinterResumed: a resumed run's step numbers and usage go on from
// where the run was, not from 1.
func TestPrinterResumed(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{Limits: budget.Limits{Steps: 10}})
	var _ observe.ResumeObserver = p
	p.Resumed("r", budget.Usage{Steps: 3, ModelCalls: 4, ToolCalls: 2})
	p.Observe(callModel(model.PurposeStep))
	p.Observe(reply(model.TextBlock("carrying on")))
	if !strings.Contains(buf.String(), "step 4") || strings.Contains(buf.String(), "step 1 ") {
		t.Errorf("after a resume at step 3 the next step is not 4:\n%s", buf.String())
	}
}

// TestPrinterReissued: the model call a resume or a fork issues again
// was in flight, so Resumed's usage counts it: it is the same step, not
// the next.
func TestPrinterReissued(t *testing.T) {
	for _, typ := range []loop.EventType{loop.EventResume, loop.EventFork} {
		var buf bytes.Buffer
		p := observe.NewPrinter(&buf, observe.PrinterConfig{Limits: budget.Limits{Steps: 10}})
		p.Resumed("r", budget.Usage{Steps: 3, ModelCalls: 3})
		p.Observe(observe.Entry{Kind: observe.KindEvent, Event: &loop.Event{Type: typ}})
		p.Observe(callModel(model.PurposeStep))
		p.Observe(reply(model.TextBlock("again")))
		p.Observe(callModel(model.PurposeStep))
		p.Observe(reply(model.TextBlock("next")))
		if out := buf.String(); !strings.Contains(out, "step 3  again") || !strings.Contains(out, "step 4  next") {
			t.Errorf("after a %s at step 3, the call issued again is not step 3 and the next step 4:\n%s", typ, out)
		}
	}
}

// TestPrinterTicks: while the run waits, Tick moves the live line's clock;
// without a live line it prints nothing.
func TestPrinterTicks(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{Live: true})
	p.Observe(callModel(model.PurposeStep))
	p.Tick(time.Now().Add(3 * time.Second))
	if got := buf.String(); !strings.Contains(got, " · 3s] waiting for the model") {
		t.Errorf("after 3s of waiting the live line is %q", got)
	}
	var plain bytes.Buffer
	q := observe.NewPrinter(&plain, observe.PrinterConfig{})
	q.Observe(callModel(model.PurposeStep))
	before := plain.Len()
	q.Tick(time.Now().Add(time.Second))
	if plain.Len() != before {
		t.Errorf("Tick without a live line printed %q", plain.String()[before:])
	}
}

// TestPrinterAbove: a notice written through Above clears the live line,
// and the line is drawn again after it, never run into the notice.
func TestPrinterAbove(t *testing.T) {
	var screen bytes.Buffer
	p := observe.NewPrinter(&screen, observe.PrinterConfig{Live: true})
	p.Observe(callModel(model.PurposeStep))
	io.WriteString(p.Above(&screen), "ratchet: a notice\n")
	got := screen.String()
	i := strings.Index(got, "ratchet: a notice\n")
	if i < 0 || !strings.HasSuffix(got[:i], "\r\033[K") || !strings.Contains(got[i:], "waiting for the model") {
		t.Errorf("the notice ran into the live line: %q", got)
	}
}

// TestPrinterCancelOnce: a cancelled run's summary is printed once, by the
// run's end, not also by the cancel event before it.
func TestPrinterCancelOnce(t *testing.T) {
	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{})
	p.Observe(observe.Entry{Kind: observe.KindEvent, Event: &loop.Event{Type: loop.EventCancel, At: t0, Text: "interrupt signal received"}})
	p.Observe(observe.Entry{Kind: observe.KindCommand, Command: &loop.Command{Type: loop.Finish, Result: &loop.Result{Status: loop.Cancelled, Reason: "interrupt signal received"}}})
	if n := strings.Count(buf.String(), "interrupt signal received"); n != 1 {
		t.Errorf("the cancel's reason is printed %d times, want once:\n%s", n, buf.String())
	}
}

// A call held by its provider's shared limits says so on the live line,
// whose clock runs on while it waits; without a live line the wait is a
// line of its own. A fallback is a line either way, and the live line
// names the model now asked.
func TestPrinterWaitAndFallback(t *testing.T) {
	wait := observe.Entry{Kind: observe.KindWait, Wait: &observe.Wait{Call: "m1", Wait: model.Wait{Provider: "anthropic", For: time.Second, Reason: "50 requests per minute reached (requests_per_minute)"}}}
	fb := observe.Entry{Kind: observe.KindFallback, Fallback: &observe.Fallback{Call: "m1", Fallback: model.Fallback{From: "anthropic:claude-sonnet-4-5", To: "openai:gpt-4.1", Reason: "anthropic:claude-sonnet-4-5: anthropic: 529 overloaded"}}}

	var buf bytes.Buffer
	p := observe.NewPrinter(&buf, observe.PrinterConfig{Live: true})
	p.Observe(callModel(model.PurposeStep))
	p.Observe(wait)
	p.Tick(time.Now().Add(4 * time.Second))
	if got := buf.String(); !strings.HasSuffix(got, " · 4s] held by anthropic's shared limits: 50 requests per minute reached (requests_per_minute)") {
		t.Errorf("the live line while held: %q", got[strings.LastIndex(got, "\r"):])
	}
	buf.Reset()
	p.Observe(fb)
	if got := buf.String(); !strings.Contains(got, "        ⇢ anthropic:claude-sonnet-4-5 failed: anthropic:claude-sonnet-4-5: anthropic: 529 overloaded; openai:gpt-4.1 takes the call\n") ||
		!strings.HasSuffix(got, "] waiting for the model (openai:gpt-4.1)") {
		t.Errorf("after the fallback: %q", got)
	}

	var plain bytes.Buffer
	q := observe.NewPrinter(&plain, observe.PrinterConfig{})
	q.Observe(callModel(model.PurposeStep))
	q.Observe(wait)
	if !strings.Contains(plain.String(), "        ⏸ held by anthropic's shared limits: 50 requests per minute reached (requests_per_minute)\n") {
		t.Errorf("plain output: %q", plain.String())
	}
}

func ptr[T any](v T) *T { return &v }
