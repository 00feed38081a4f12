package scripted_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
)

var respOpts = cmp.Transformer("json", func(r json.RawMessage) string { return string(r) })

func mustNew(t testing.TB, s scripted.Script) *scripted.Model {
	t.Helper()
	m, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func mustParse(t testing.TB, src string) scripted.Script {
	t.Helper()
	s, err := scripted.Parse([]byte(src), "t.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func userText(s string) model.Message {
	return model.Message{Role: model.User, Content: []model.Block{model.TextBlock(s)}}
}

// usage is an estimated usage: free and known.
func usage(in, out int64) model.Usage {
	return model.Usage{InputTokens: in, OutputTokens: out, CostKnown: true}
}

// TestGenerateDemo plays every turn of testdata/demo.yaml, one of each kind.
func TestGenerateDemo(t *testing.T) {
	m, err := scripted.Load(demoPath, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	// 3 + 5 + 7 + 2 = 17 bytes: 5 tokens.
	req := model.Request{
		System: "sys",
		Messages: []model.Message{
			userText("hello"),
			{Role: model.Assistant, Content: []model.Block{{Type: model.ToolUse, ID: "x", Name: "add", Input: json.RawMessage(`{"x":1}`)}}},
			{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "x", Text: "ok"}}},
		},
	}
	ctx := context.Background()

	type result struct {
		resp model.Response
		err  string
	}
	play := func() result {
		resp, err := m.Generate(ctx, req)
		r := result{resp: resp}
		if err != nil {
			r.err = err.Error()
		}
		return r
	}
	var got []result
	got = append(got, play(), play())
	// Turn 3 expects `expected "5"`.
	req.Messages = append(req.Messages, userText(`wrong: expected "5", got "6"`))
	got = append(got, play(), play(), play())
	start := time.Now()
	got = append(got, play())
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("turn 6 took %v, want at least its 50ms delay", elapsed)
	}
	got = append(got, play())

	want := []result{
		{resp: model.Response{
			Content: []model.Block{
				model.TextBlock("I'll add the numbers first."),
				{Type: model.ToolUse, ID: "call_1_1", Name: "add", Input: json.RawMessage(`{"a":2,"b":3}`)},
				{Type: model.ToolUse, ID: "call_1_2", Name: "add", Input: json.RawMessage(`{"a": 2,`)},
			},
			StopReason: "tool_use",
			Usage:      usage(5, 12), // 27 + 13 + 8 = 48 bytes
			Model:      "demo",
		}},
		{resp: model.Response{
			Content: []model.Block{
				{Type: model.ToolUse, ID: "call_2_1", Name: "finish", Input: json.RawMessage(`{"answer":"6","confidence":0.9}`)},
			},
			StopReason: "tool_use",
			Usage:      usage(5, 8), // 31 bytes
			Model:      "demo",
		}},
		{resp: model.Response{
			Content: []model.Block{
				{Type: model.ToolUse, ID: "call_3_1", Name: "finish", Input: json.RawMessage(`{"answer":"5","confidence":0.95}`)},
			},
			StopReason: "tool_use",
			Usage:      usage(12, 8), // 17 + 28 bytes in, 32 out
			Model:      "demo",
		}},
		{resp: model.Response{Content: []model.Block{}, StopReason: "end_turn", Usage: usage(12, 0), Model: "demo"}},
		{err: "overloaded"},
		{resp: model.Response{
			Content:    []model.Block{model.TextBlock("slow")},
			StopReason: "end_turn",
			Usage:      usage(100, 20),
			Model:      "demo",
		}},
		{err: `scripted: script exhausted: call 7 to scripted model "demo" (testdata/demo.yaml), whose script has 6 turns`},
	}
	if diff := cmp.Diff(want, got, respOpts, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("responses mismatch (-want +got):\n%s", diff)
	}
	if got, want := m.Played(), 6; got != want {
		t.Errorf("Played() = %d, want %d", got, want)
	}
}

func TestGenerateGoScript(t *testing.T) {
	s := scripted.Script{
		Name: "go",
		Turns: []scripted.Turn{
			{
				Text: "all at once",
				Tools: []scripted.ToolCall{
					{Name: "search", Args: map[string]any{"q": "<b>&"}},
					{Name: "noargs"},
				},
				Finish: &scripted.Finish{Answer: "a"},
			},
			{Finish: &scripted.Finish{Answer: "b", Confidence: new(1.5)}},
			{Text: "just talk"},
			{Tools: []scripted.ToolCall{{Name: "finish", RawArgs: new(`{"answer": 3}`)}}},
		},
	}
	m := mustNew(t, s)
	var got []model.Response
	for range 4 {
		resp, err := m.Generate(context.Background(), model.Request{})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		got = append(got, resp)
	}
	want := []model.Response{
		{
			Content: []model.Block{
				model.TextBlock("all at once"),
				{Type: model.ToolUse, ID: "call_1_1", Name: "search", Input: json.RawMessage(`{"q":"<b>&"}`)},
				{Type: model.ToolUse, ID: "call_1_2", Name: "noargs", Input: json.RawMessage(`{}`)},
				{Type: model.ToolUse, ID: "call_1_3", Name: "finish", Input: json.RawMessage(`{"answer":"a"}`)},
			},
			StopReason: "tool_use",
			Usage:      usage(0, 10), // 11 + 12 + 2 + 14 = 39 bytes
			Model:      "go",
		},
		{
			Content:    []model.Block{{Type: model.ToolUse, ID: "call_2_1", Name: "finish", Input: json.RawMessage(`{"answer":"b","confidence":1.5}`)}},
			StopReason: "tool_use",
			Usage:      usage(0, 8),
			Model:      "go",
		},
		{Content: []model.Block{model.TextBlock("just talk")}, StopReason: "end_turn", Usage: usage(0, 3), Model: "go"},
		{
			Content:    []model.Block{{Type: model.ToolUse, ID: "call_4_1", Name: "finish", Input: json.RawMessage(`{"answer": 3}`)}},
			StopReason: "tool_use",
			Usage:      usage(0, 4),
			Model:      "go",
		},
	}
	if diff := cmp.Diff(want, got, respOpts); diff != "" {
		t.Errorf("responses mismatch (-want +got):\n%s", diff)
	}
}

func TestEmptyReply(t *testing.T) {
	m := mustNew(t, scripted.Script{Turns: []scripted.Turn{{}}})
	resp, err := m.Generate(context.Background(), model.Request{System: "12345"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content == nil || len(resp.Content) != 0 {
		t.Errorf("Content = %#v, want an empty, non-nil slice", resp.Content)
	}
	want := model.Response{Content: []model.Block{}, StopReason: "end_turn", Usage: usage(2, 0), Model: "scripted"}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
}

func TestUsageEstimate(t *testing.T) {
	tests := []struct {
		name string
		req  model.Request
		want int64
	}{
		{"empty", model.Request{}, 0},
		{"one byte", model.Request{System: "x"}, 1},
		{"four bytes", model.Request{System: "abcd"}, 1},
		{"five bytes", model.Request{System: "abcde"}, 2},
		{
			// Tools, names and IDs are not counted; text and input are.
			"blocks", model.Request{
				Tools: []model.ToolSpec{{Name: "long tool name", Description: "not counted"}},
				Messages: []model.Message{
					userText("abcd"),
					{Role: model.Assistant, Content: []model.Block{
						model.TextBlock("ef"),
						{Type: model.ToolUse, ID: "id", Name: "name", Input: json.RawMessage(`{}`)},
					}},
					{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "id", Text: "g", IsError: true}}},
				},
			}, 3, // 4 + 2 + 2 + 1 = 9 bytes
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustNew(t, scripted.Script{Turns: []scripted.Turn{{}}})
			resp, err := m.Generate(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(usage(tt.want, 0), resp.Usage); diff != "" {
				t.Errorf("usage mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageOverride(t *testing.T) {
	m := mustNew(t, scripted.Script{Turns: []scripted.Turn{{
		Text:  "a long reply that would be estimated",
		Usage: &scripted.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4},
	}}})
	resp, err := m.Generate(context.Background(), model.Request{System: strings.Repeat("x", 1000)})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostKnown: true}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage mismatch (-want +got):\n%s", diff)
	}
}

func TestTurnError(t *testing.T) {
	s := mustParse(t, "turns:\n  - error: '529 overloaded'\n  - text: after\n")
	m := mustNew(t, s)
	_, err := m.Generate(context.Background(), model.Request{})
	var te *scripted.TurnError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v (%T), want a *scripted.TurnError", err, err)
	}
	if diff := cmp.Diff(&scripted.TurnError{Turn: 1, Pos: "t.yaml:2", Msg: "529 overloaded"}, te); diff != "" {
		t.Errorf("TurnError mismatch (-want +got):\n%s", diff)
	}
	if got, want := err.Error(), "529 overloaded"; got != want {
		t.Errorf("err.Error() = %q, want %q", got, want)
	}
	// The failed turn is spent: the next call plays turn 2.
	resp, err := m.Generate(context.Background(), model.Request{})
	if err != nil || len(resp.Content) != 1 || resp.Content[0].Text != "after" {
		t.Errorf("after the error turn: %+v, %v; want the text \"after\"", resp, err)
	}
}

func TestExhausted(t *testing.T) {
	tests := []struct {
		turns int
		want  string
	}{
		{0, `scripted: script exhausted: call 1 to scripted model "scripted" (inline), whose script has 0 turns`},
		{1, `scripted: script exhausted: call 2 to scripted model "scripted" (inline), whose script has 1 turn`},
		{3, `scripted: script exhausted: call 4 to scripted model "scripted" (inline), whose script has 3 turns`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.turns), func(t *testing.T) {
			m := mustNew(t, scripted.Script{Turns: make([]scripted.Turn, tt.turns)})
			for i := range tt.turns {
				if _, err := m.Generate(context.Background(), model.Request{}); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
			for range 2 { // and it stays exhausted
				_, err := m.Generate(context.Background(), model.Request{})
				if !errors.Is(err, scripted.ErrExhausted) {
					t.Fatalf("past the end: err = %v, want ErrExhausted", err)
				}
				if got := m.Played(); got != tt.turns {
					t.Errorf("Played() = %d, want %d", got, tt.turns)
				}
			}
			m = mustNew(t, scripted.Script{Turns: make([]scripted.Turn, tt.turns)})
			for range tt.turns {
				_, _ = m.Generate(context.Background(), model.Request{})
			}
			_, err := m.Generate(context.Background(), model.Request{})
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestExpect(t *testing.T) {
	s := mustParse(t, "turns:\n  - expect: [alpha, beta]\n    text: ok\n")
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct {
		name string
		msgs []model.Message
		want string // "" for success
	}{
		{
			name: "both in one block",
			msgs: []model.Message{userText("alpha and beta")},
		},
		{
			name: "across blocks and tool results",
			msgs: []model.Message{{Role: model.User, Content: []model.Block{
				{Type: model.ToolResult, ID: "a", Text: "alpha"},
				{Type: model.ToolResult, ID: "b", Text: "beta", IsError: true},
			}}},
		},
		{
			name: "the latest user message counts, not an assistant one after it",
			msgs: []model.Message{
				userText("alpha beta"),
				{Role: model.Assistant, Content: []model.Block{model.TextBlock("nothing")}},
			},
		},
		{
			name: "an earlier user message does not count",
			msgs: []model.Message{userText("alpha beta"), userText("alpha")},
			want: `scripted: expectation not met: turn 1 (t.yaml:2): the latest user message does not contain "beta"; it was "alpha"`,
		},
		{
			name: "both missing",
			msgs: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("one"), model.TextBlock("two")}}},
			want: `scripted: expectation not met: turn 1 (t.yaml:2): the latest user message does not contain "alpha", "beta"; it was "one\ntwo"`,
		},
		{
			name: "no user message",
			msgs: nil,
			want: `scripted: expectation not met: turn 1 (t.yaml:2): the request has no user message; want one containing "alpha", "beta"`,
		},
		{
			name: "long messages are cut on a rune boundary",
			msgs: []model.Message{userText("alpha " + long)},
			want: `scripted: expectation not met: turn 1 (t.yaml:2): the latest user message does not contain "beta"; it was "alpha ` +
				strings.Repeat("é", 97) + `"… (306 bytes)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustNew(t, s)
			resp, err := m.Generate(context.Background(), model.Request{Messages: tt.msgs})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if len(resp.Content) != 1 || resp.Content[0].Text != "ok" {
					t.Errorf("Content = %+v, want the text \"ok\"", resp.Content)
				}
				return
			}
			if !errors.Is(err, scripted.ErrExpect) {
				t.Fatalf("err = %v, want ErrExpect", err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error is not valid UTF-8: %q", err.Error())
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if got := m.Played(); got != 1 {
				t.Errorf("Played() = %d after an unmet expectation, want 1 (the turn is spent)", got)
			}
		})
	}
}

func TestExpectWithoutPosition(t *testing.T) {
	m := mustNew(t, scripted.Script{Turns: []scripted.Turn{{}, {Expect: []string{"x"}}}})
	_, _ = m.Generate(context.Background(), model.Request{})
	_, err := m.Generate(context.Background(), model.Request{Messages: []model.Message{userText("y")}})
	want := `scripted: expectation not met: turn 2: the latest user message does not contain "x"; it was "y"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestDelay(t *testing.T) {
	s := scripted.Script{Turns: []scripted.Turn{
		{Delay: time.Hour, Text: "never"},
		{Delay: 20 * time.Millisecond, Text: "slow"},
		{Delay: time.Hour, Error: "never either"},
	}}
	m := mustNew(t, s)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := m.Generate(ctx, model.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during delay: err = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("cancellation took %v to be noticed", elapsed)
	}
	if got := m.Played(); got != 1 {
		t.Errorf("Played() = %d, want 1: a turn cancelled during its delay is spent", got)
	}

	start = time.Now()
	resp, err := m.Generate(context.Background(), model.Request{})
	if err != nil || len(resp.Content) != 1 || resp.Content[0].Text != "slow" {
		t.Errorf("turn 2 = %+v, %v; want the text \"slow\"", resp, err)
	}
	if elapsed := time.Since(start); elapsed < 20*time.Millisecond {
		t.Errorf("turn 2 took %v, want at least its 20ms delay", elapsed)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = m.Generate(ctx, model.Request{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline during delay: err = %v, want context.DeadlineExceeded", err)
	}
}

func TestCancelledBeforeCall(t *testing.T) {
	var notice bytes.Buffer
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "a"}}}, scripted.Config{Notice: &notice})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Generate(ctx, model.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if got := m.Played(); got != 0 {
		t.Errorf("Played() = %d, want 0: a call cancelled on entry does not take a turn", got)
	}
	if notice.Len() == 0 {
		t.Error("no notice: the first Generate announces the scripted model even if it fails")
	}
	resp, err := m.Generate(context.Background(), model.Request{})
	if err != nil || resp.Content[0].Text != "a" {
		t.Errorf("next call = %+v, %v; want turn 1", resp, err)
	}
}

func TestNotice(t *testing.T) {
	const want = `ratchet: scripted model "demo" (testdata/demo.yaml) is playing recorded turns; it is a test double, not a real model` + "\n"
	s, err := scripted.Parse(must(os.ReadFile(demoPath)), demoPath)
	if err != nil {
		t.Fatal(err)
	}
	s.Turns = slices.Repeat([]scripted.Turn{{Text: "x"}}, 100)
	var notice bytes.Buffer // shared by two Models; notices are serialized
	m1, err := scripted.New(s, scripted.Config{Notice: &notice})
	if err != nil {
		t.Fatal(err)
	}
	if notice.Len() != 0 {
		t.Fatalf("New wrote %q; the notice belongs to the first Generate", notice.String())
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 5 {
				if _, err := m1.Generate(context.Background(), model.Request{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := notice.String(); got != want {
		t.Errorf("after 100 calls, notice = %q, want exactly one line %q", got, want)
	}

	m2, err := scripted.New(s, scripted.Config{Notice: &notice})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m2.Generate(context.Background(), model.Request{})
	_, _ = m2.Generate(context.Background(), model.Request{})
	if got := notice.String(); got != want+want {
		t.Errorf("a second Model: notice = %q, want one more line", got)
	}

	inline := mustParse(t, "name: x\nturns: [{}]\n")
	inline.File = ""
	notice.Reset()
	m3, err := scripted.New(inline, scripted.Config{Notice: &notice})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m3.Generate(context.Background(), model.Request{})
	if got, want := notice.String(), `ratchet: scripted model "x" (inline) is playing recorded turns; it is a test double, not a real model`+"\n"; got != want {
		t.Errorf("inline notice = %q, want %q", got, want)
	}
}

func TestNoticeQuiet(t *testing.T) {
	var notice bytes.Buffer
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{{}, {}}}, scripted.Config{Notice: &notice, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, _ = m.Generate(context.Background(), model.Request{})
	}
	if notice.Len() != 0 {
		t.Errorf("Quiet: notice = %q, want nothing", notice.String())
	}
}

// TestNoticeDefault checks that the notice goes to standard error by default.
// It swaps os.Stderr, so it must not run in parallel.
func TestNoticeDefault(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{{}}}, scripted.Config{})
	if err == nil {
		_, _ = m.Generate(context.Background(), model.Request{})
	}
	os.Stderr = old
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `ratchet: scripted model "scripted" (inline) is playing recorded turns; it is a test double, not a real model` + "\n"; string(got) != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

// TestConcurrentTurns plays one Model from many goroutines: every turn is
// played exactly once.
func TestConcurrentTurns(t *testing.T) {
	const n = 200
	m := mustNew(t, scripted.Repeat(n-1, scripted.Turn{Tools: []scripted.ToolCall{{Name: "t"}}}, scripted.Turn{Finish: &scripted.Finish{Answer: "done"}}))
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for range 20 {
		wg.Go(func() {
			for range n / 20 {
				resp, err := m.Generate(context.Background(), model.Request{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[resp.Content[0].ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := 1; i <= n; i++ {
		if id := fmt.Sprintf("call_%d_1", i); seen[id] != 1 {
			t.Errorf("%s seen %d times, want once", id, seen[id])
		}
	}
	if len(seen) != n || m.Played() != n {
		t.Errorf("%d distinct replies, Played() = %d; want %d of each", len(seen), m.Played(), n)
	}
	if _, err := m.Generate(context.Background(), model.Request{}); !errors.Is(err, scripted.ErrExhausted) {
		t.Errorf("after %d turns: err = %v, want ErrExhausted", n, err)
	}
}

// TestSharedScript plays one parsed script on many Models at once, and
// checks that a caller appending to its reply does not affect the others.
func TestSharedScript(t *testing.T) {
	s := mustParse(t, "turns:\n  - {text: hi, tools: [{name: t, args: {a: 1}}]}\n  - finish: {answer: x}\n")
	want := []model.Response{
		{
			Content: []model.Block{
				model.TextBlock("hi"),
				{Type: model.ToolUse, ID: "call_1_1", Name: "t", Input: json.RawMessage(`{"a":1}`)},
			},
			StopReason: "tool_use", Usage: usage(0, 3), Model: "scripted",
		},
		{
			Content:    []model.Block{{Type: model.ToolUse, ID: "call_2_1", Name: "finish", Input: json.RawMessage(`{"answer":"x"}`)}},
			StopReason: "tool_use", Usage: usage(0, 4), Model: "scripted",
		},
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			m, err := scripted.New(s, scripted.Config{Quiet: true})
			if err != nil {
				t.Error(err)
				return
			}
			for i := range want {
				resp, err := m.Generate(context.Background(), model.Request{})
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want[i], resp, respOpts); diff != "" {
					t.Errorf("turn %d mismatch (-want +got):\n%s", i+1, diff)
				}
				// Content is read-only, but appending is allowed.
				last := len(resp.Content) - 1
				resp.Content = append(resp.Content, model.TextBlock("appended"))
				resp.Content[last].Input = append(resp.Content[last].Input, " more"...)
			}
		})
	}
	wg.Wait()
}

func TestNewErrors(t *testing.T) {
	s := scripted.Script{File: "f.yaml", Turns: []scripted.Turn{
		{Tools: []scripted.ToolCall{{Args: map[string]any{"a": 1}, RawArgs: new("x")}}, Line: 3},
		{Error: "x", Text: "y"},
		{Delay: -time.Second, Expect: []string{""}},
		{Finish: &scripted.Finish{Answer: "a", Confidence: new(math.NaN())}},
		{Tools: []scripted.ToolCall{{Name: "t", Args: func() {}}}},
		{Usage: &scripted.Usage{InputTokens: -1}},
	}}
	want := "f.yaml:3: turn 1: tool 1: missing name\n" +
		"f.yaml:3: turn 1: tool 1: args and raw_args are both set; use one\n" +
		"f.yaml: turn 2: error cannot be combined with thinking, text, tools, finish or usage: an error turn has no reply\n" +
		"f.yaml: turn 3: negative delay -1s\n" +
		"f.yaml: turn 3: an empty expect string matches anything\n" +
		"f.yaml: turn 4: finish: json: unsupported value: NaN\n" +
		"f.yaml: turn 5: tool 1: args: json: unsupported type: func()\n" +
		"f.yaml: turn 6: negative token count in usage"
	for _, prepare := range []bool{false, true} {
		var err error
		if prepare {
			_, err = scripted.Prepare(s)
		} else {
			_, err = scripted.New(s, scripted.Config{})
		}
		var se *scripted.ScriptError
		if !errors.As(err, &se) {
			t.Fatalf("prepare=%v: err = %v (%T), want a *ScriptError", prepare, err, err)
		}
		if diff := cmp.Diff(want, err.Error()); diff != "" {
			t.Errorf("prepare=%v: error mismatch (-want +got):\n%s", prepare, diff)
		}
	}
	s.File = ""
	s.Turns = s.Turns[1:2]
	if _, err := scripted.New(s, scripted.Config{}); err == nil || !strings.HasPrefix(err.Error(), "turn 1: error cannot") {
		t.Errorf("without a file: err = %v, want it to start with \"turn 1: error cannot\"", err)
	}
}

func TestRepeat(t *testing.T) {
	step := scripted.Turn{Text: "step", Tools: []scripted.ToolCall{{Name: "t", Args: map[string]int{"n": 1}}}}
	final := scripted.Turn{Finish: &scripted.Finish{Answer: "done", Confidence: new(1.0)}}
	s := scripted.Repeat(3, step, final)
	m := mustNew(t, s)
	if got, want := m.Turns(), 4; got != want {
		t.Errorf("Turns() = %d, want %d", got, want)
	}
	var got []string
	for {
		resp, err := m.Generate(context.Background(), model.Request{})
		if errors.Is(err, scripted.ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range resp.Content {
			got = append(got, fmt.Sprintf("%s %s %s %s", b.Type, b.ID, b.Name, b.Input))
		}
	}
	want := []string{
		"text   ", `tool_use call_1_1 t {"n":1}`,
		"text   ", `tool_use call_2_1 t {"n":1}`,
		"text   ", `tool_use call_3_1 t {"n":1}`,
		`tool_use call_4_1 finish {"answer":"done","confidence":1}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("played mismatch (-want +got):\n%s", diff)
	}

	if got := mustNew(t, scripted.Repeat(-5, step, final)).Turns(); got != 1 {
		t.Errorf("Repeat(-5) has %d turns, want 1", got)
	}
	bad := scripted.Repeat(2, scripted.Turn{Tools: []scripted.ToolCall{{}}}, final)
	for range 2 { // the problem is reported by every New
		if _, err := scripted.New(bad, scripted.Config{}); err == nil || !strings.Contains(err.Error(), "turn 1: tool 1: missing name") {
			t.Errorf("Repeat of a bad turn: New err = %v, want missing name", err)
		}
	}
}

// TestNewIsCheap checks that Models share their Script's precomputed replies:
// New on a prepared Script allocates only the Model, and a reply allocates
// nothing.
func TestNewIsCheap(t *testing.T) {
	lit := scripted.Script{Turns: []scripted.Turn{{Text: "a", Tools: []scripted.ToolCall{{Name: "t", Args: map[string]any{"k": "v"}}}}}}
	prepared, err := scripted.Prepare(lit)
	if err != nil {
		t.Fatal(err)
	}
	parsed := mustParse(t, "turns: [{text: a, tools: [{name: t, args: {k: v}}]}]")
	for _, tt := range []struct {
		name string
		s    scripted.Script
		max  float64
	}{
		{"prepared", prepared, 1},
		{"parsed", parsed, 1},
		{"repeat", scripted.Repeat(100, lit.Turns[0], lit.Turns[0]), 1},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := scripted.New(tt.s, scripted.Config{Quiet: true}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > tt.max {
			t.Errorf("%s: New made %v allocations, want at most %v", tt.name, allocs, tt.max)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = scripted.New(lit, scripted.Config{Quiet: true}) }); allocs <= 1 {
		t.Errorf("literal: New made %v allocations; this test cannot tell prepared from unprepared", allocs)
	}

	req := model.Request{Messages: []model.Message{userText("hello")}}
	m := mustNew(t, scripted.Repeat(1000, lit.Turns[0], scripted.Turn{}))
	if allocs := testing.AllocsPerRun(100, func() { _, _ = m.Generate(context.Background(), req) }); allocs > 0 {
		t.Errorf("Generate made %v allocations, want none", allocs)
	}
}

// TestChangedScript checks that replacing a prepared Script's turns or name
// is noticed by New.
func TestChangedScript(t *testing.T) {
	s := mustParse(t, "turns: [{text: one}]")
	s.Turns = append(s.Turns, scripted.Turn{Text: "two"})
	s.Name = "renamed"
	m := mustNew(t, s)
	if m.Turns() != 2 || m.Name() != "renamed" {
		t.Fatalf("Turns() = %d, Name() = %q; want 2 and \"renamed\"", m.Turns(), m.Name())
	}
	var got []string
	for range 2 {
		resp, err := m.Generate(context.Background(), model.Request{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Content[0].Text)
	}
	if diff := cmp.Diff([]string{"one", "two"}, got); diff != "" {
		t.Errorf("played mismatch (-want +got):\n%s", diff)
	}

	// Same name, file and length: only the turns differ.
	s = mustParse(t, "turns: [{text: one}]")
	s.Turns = []scripted.Turn{{Text: "other"}}
	resp, err := mustNew(t, s).Generate(context.Background(), model.Request{})
	if err != nil || resp.Content[0].Text != "other" {
		t.Errorf("after replacing Turns: %+v, %v; want the text \"other\"", resp.Content, err)
	}
}

func TestNamed(t *testing.T) {
	var m model.Model = mustNew(t, scripted.Script{Name: "n1", Turns: []scripted.Turn{{}}})
	named, ok := m.(model.Named)
	if !ok {
		t.Fatal("*Model does not implement model.Named")
	}
	if got := named.Name(); got != "n1" {
		t.Errorf("Name() = %q, want %q", got, "n1")
	}
	if got := mustNew(t, scripted.Script{}).Name(); got != scripted.DefaultName {
		t.Errorf("default Name() = %q, want %q", got, scripted.DefaultName)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
