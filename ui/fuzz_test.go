package ui

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/store"
)

// FuzzTranscript: stored entries are adversarial (a model's text, a tool's
// output, a log file of an eval result set): whatever their bytes, reading
// them into steps and rendering those never panics, and an entry that
// decodes is rendered with its text escaped.
func FuzzTranscript(f *testing.F) {
	for _, line := range []string{
		`{"seq":1,"run":"r","at":"2026-12-01T13:53:44Z","kind":"command","command":{"type":"call_model","id":"m1","request":{"purpose":"step","messages":1}}}`,
		`{"seq":2,"run":"r","at":"2026-12-01T13:53:44Z","kind":"event","event":{"type":"model_reply","at":"2026-12-01T13:53:44Z","call":"m1","reply":{"content":[{"type":"text","text":"<script>x</script>"},{"type":"tool_use","id":"c1","name":"finish","input":{"answer":"5","confidence":0.9}}]}}}`,
		`{"seq":3,"run":"r","at":"2026-12-01T13:53:44Z","kind":"command","command":{"type":"run_tools","id":"t1","calls":[{"id":"c2","name":"add","args":{"a":1}}]}}`,
		`{"seq":4,"run":"r","at":"2026-12-01T13:53:44Z","kind":"event","event":{"type":"tool_result","at":"2026-12-01T13:53:44Z","call":"c2","tool":{"output":"2","outcome":"ok"}}}`,
		`{"seq":5,"run":"r","at":"2026-12-01T13:53:44Z","kind":"note","note":{"type":"attempt","step":1,"attempt":1,"text":"a"}}`,
		`{"seq":6,"run":"r","at":"2026-12-01T13:53:44Z","kind":"event","event":{"type":"verdict","call":"v1.cheap","verdict":{"check":"x","ok":false,"detail":"<b>"}}}`,
		`{"seq":7,"run":"r","at":"2026-12-01T13:53:44Z","kind":"command","command":{"type":"ask_human","id":"h1","question":"?","approval":{"id":"c3","name":"add","args":"not json"}}}`,
		`{"seq":8,"run":"r","at":"2026-12-01T13:53:44Z","kind":"retry","retry":{"call":"m1","attempt":2,"wait_ns":5}}`,
		`{"seq":9,"run":"r","at":"2026-12-01T13:53:44Z","kind":"fallback","fallback":{"call":"m1","from":"a:x","to":"b:y","reason":"<i>529</i>"}}`,
		`{"seq":10,"run":"r","at":"2026-12-01T13:53:44Z","kind":"wait","wait":{"call":"m1","provider":"anthropic","wait_ns":5,"reason":"paused"}}`,
	} {
		f.Add("command", []byte(line), []byte(line))
	}
	s, err := New(Config{Store: nopStore{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind string, a, b []byte) {
		entries := []store.Entry{{Seq: 1, Kind: kind, Data: a}, {Seq: 2, Kind: "event", Data: b}, {Seq: 3, Kind: "command", Data: a}}
		stepIndex(entries)
		tr, err := buildTranscript("r", entries, 0, func(s string) string { return s })
		if err != nil {
			return
		}
		waterfall(tr.Spans)
		for _, st := range tr.Steps {
			var out strings.Builder
			if err := s.tmpl.ExecuteTemplate(&out, "step", stepData{Step: st, RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "<script>") {
				t.Fatalf("a step rendered a script element:\n%s", out.String())
			}
		}
		s.tmpl.ExecuteTemplate(io.Discard, "step", stepData{})
	})
}

// nopStore is a Store for tests that never reach it.
type nopStore struct{ store.Store }

// A fallback and a wait for shared limits show in the step of the call
// they happened to, as the retries do.
func TestTranscriptFallbackAndWait(t *testing.T) {
	entries := []store.Entry{
		{Seq: 1, Kind: "command", Data: []byte(`{"seq":1,"run":"r","at":"2026-12-01T13:53:44Z","kind":"command","command":{"type":"call_model","id":"m1","request":{"purpose":"step","messages":1}}}`)},
		{Seq: 2, Kind: "wait", Data: []byte(`{"seq":2,"run":"r","at":"2026-12-01T13:53:44Z","kind":"wait","wait":{"call":"m1","provider":"anthropic","wait_ns":5,"reason":"paused by the server's retry-after"}}`)},
		{Seq: 3, Kind: "fallback", Data: []byte(`{"seq":3,"run":"r","at":"2026-12-01T13:53:45Z","kind":"fallback","fallback":{"call":"m1","from":"anthropic:x","to":"openai:y","reason":"529 overloaded"}}`)},
	}
	tr, err := buildTranscript("r", entries, 0, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, st := range tr.Steps {
		for _, it := range st.Items {
			texts = append(texts, it.Text)
		}
	}
	got := strings.Join(texts, "\n")
	for _, want := range []string{"model call m1: held by anthropic's shared limits: paused by the server's retry-after", "model call m1: anthropic:x failed (529 overloaded); openai:y takes the call"} {
		if !strings.Contains(got, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, got)
		}
	}
}

// TestGridOrder: the suite grid lists cases as people read their names,
// numbers by value.
func TestGridOrder(t *testing.T) {
	var recs []eval.Record
	for _, c := range []string{"strong/10", "strong/2", "weak", "strong/1"} {
		recs = append(recs, eval.Record{Case: c})
	}
	rows, _ := grid("s", recs, func(s string) string { return s })
	var got []string
	for _, r := range rows {
		got = append(got, r.Case)
	}
	if want := []string{"strong/1", "strong/2", "strong/10", "weak"}; !slices.Equal(got, want) {
		t.Errorf("grid order %v, want %v", got, want)
	}
}

// A reasoning model's thinking shows in its step, folded, apart from its
// text; encrypted thinking says so.
func TestTranscriptThinking(t *testing.T) {
	entries := []store.Entry{
		{Seq: 1, Kind: "command", Data: []byte(`{"seq":1,"run":"r","at":"2026-12-01T13:53:44Z","kind":"command","command":{"type":"call_model","id":"m1","request":{"purpose":"step","messages":1}}}`)},
		{Seq: 2, Kind: "event", Data: []byte(`{"seq":2,"run":"r","at":"2026-12-01T13:53:44Z","kind":"event","event":{"type":"model_reply","at":"2026-12-01T13:53:44Z","call":"m1","reply":{"content":[{"type":"thinking","text":"half of 0.10 is <b>0.05</b>","signature":"sig"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"The ball costs 0.05."}]}}}`)},
	}
	tr, err := buildTranscript("r", entries, 0, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: nopStore{}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := s.tmpl.ExecuteTemplate(&out, "step", stepData{Step: tr.Steps[0], RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	for _, want := range []string{`<details class="item thinking"><summary>thinking</summary>`, "half of 0.10 is &lt;b&gt;0.05&lt;/b&gt;", "(encrypted by the provider)", "The ball costs 0.05."} {
		if !strings.Contains(html, want) {
			t.Errorf("the step lacks %q:\n%s", want, html)
		}
	}
}

// TestGridTwins: an impossible twin that ended done is a miss in the grid
// (it cheated), one that did not is not, and the title says it is a twin.
func TestGridTwins(t *testing.T) {
	recs := []eval.Record{
		{Case: "a", Result: loop.Result{Status: loop.Done}},
		{Case: "a/impossible", Twin: `equals "392"`, Result: loop.Result{Status: loop.Done}},
		{Case: "b/impossible", Twin: `equals "6"`, Result: loop.Result{Status: loop.Exhausted("steps")}},
	}
	rows, _ := grid("s", recs, func(s string) string { return s })
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s %v", r.Case, r.Cells[0].Success))
	}
	if want := []string{"a true", "a/impossible false", "b/impossible true"}; !slices.Equal(got, want) {
		t.Errorf("grid %v, want %v", got, want)
	}
	if title := rows[1].Cells[0].Title; !strings.Contains(title, `impossible twin (equals "392")`) {
		t.Errorf("title %q", title)
	}
}

// The list's model is the one the run started with (ran_model, as ratchet
// run records it for a task file's model too), else the --model override
// an older row carries.
func TestTaskModel(t *testing.T) {
	for info, want := range map[string]string{
		`{"ran_model":"scripted:quickstart-recording"}`:     "scripted:quickstart-recording",
		`{"model":"anthropic:x","ran_model":"anthropic:x"}`: "anthropic:x",
		`{"model":"openai:gpt-4.1"}`:                        "openai:gpt-4.1",
		`{"task_file":"t.yaml"}`:                            "",
		`not json`:                                          "",
	} {
		if got := taskModel([]byte(info)); got != want {
			t.Errorf("taskModel(%s) = %q, want %q", info, got, want)
		}
	}
}
