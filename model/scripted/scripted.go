package scripted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/model"
)

// DefaultName is the name of a script that does not give one.
const DefaultName = "scripted"

// ErrExhausted is wrapped by the error Generate returns when every turn of
// the script has been played.
var ErrExhausted = errors.New("scripted: script exhausted")

// ErrExpect is wrapped by the error Generate returns when the request does
// not meet a turn's expect.
var ErrExpect = errors.New("scripted: expectation not met")

// Script is the parsed form of a script; see the package documentation for
// the YAML it comes from. The zero value is an empty script.
type Script struct {
	// Name is reported by Name and in Response.Model; "" means DefaultName.
	Name string
	// File is where the script was read from, used in messages and in the
	// notice; "" for a script built in Go (the notice then says "inline").
	File  string
	Turns []Turn

	prep *prepared // shared precomputed replies; see Prepare
}

// Turn is one recorded reply. See the package documentation for what each
// field does.
type Turn struct {
	// Thinking is the model's reasoning, as a model.Thinking block before
	// everything else; "" for none.
	Thinking string
	Text     string     // the model's prose; "" for none
	Tools    []ToolCall // tool calls, in order
	Finish   *Finish    // a finish tool call after the tools; nil for none
	// Expect lists strings the request's latest user message must contain.
	Expect []string
	// Error, if not "", makes Generate fail with a *TurnError carrying
	// exactly this message. A turn with Error has no reply.
	Error string
	Delay time.Duration // how long Generate waits first
	Usage *Usage        // reported instead of the estimate when not nil
	// Line is where the turn starts in the script's File; 0 if unknown.
	Line int
}

// ToolCall is one tool call in a turn.
type ToolCall struct {
	Name string
	// Args is marshalled with encoding/json (without HTML escaping) once,
	// when the script is prepared; nil means {}. Parse stores a
	// json.RawMessage here.
	Args any
	// RawArgs, if not nil, is the tool input verbatim, valid JSON or not.
	// At most one of Args and RawArgs may be set.
	RawArgs *string
}

// Finish is the shorthand for a tool call named "finish".
type Finish struct {
	Answer string
	// Confidence is left out of the call's input when nil. It is not
	// range-checked.
	Confidence *float64
}

// Usage is what a turn reports instead of the estimate.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
}

// TurnError is the error Generate returns for a turn with Error set. Its
// message is exactly the script's, so tests can match it.
type TurnError struct {
	Turn int    // 1-based
	Pos  string // file:line of the turn, or "" when unknown
	Msg  string
}

func (e *TurnError) Error() string { return e.Msg }

// Config configures a Model.
type Config struct {
	// Notice is where the one-line notice that a scripted model is in use
	// goes; nil means os.Stderr. Writes of notices are serialized across all
	// Models, so one writer may be shared by concurrent Models.
	Notice io.Writer
	// Quiet suppresses the notice, for benchmarks.
	Quiet bool
}

// Model plays a Script. It is safe for concurrent use.
type Model struct {
	p      *program
	notice io.Writer
	quiet  bool
	once   sync.Once

	mu    sync.Mutex
	next  int // index of the next turn to play
	calls int // Generate calls that got past the context check
}

var (
	_ model.Model = (*Model)(nil)
	_ model.Named = (*Model)(nil)
)

// Load reads and parses the script at path and returns a Model playing it.
func Load(path string, cfg Config) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	s, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return New(s, cfg)
}

// New returns a Model that plays s from its first turn. It fails with a
// *ScriptError if s is not valid. New is cheap for a Script that is already
// prepared (see Prepare); a Script literal is prepared anew by each call.
func New(s Script, cfg Config) (*Model, error) {
	p, err := s.program()
	if err != nil {
		return nil, err
	}
	return &Model{p: p, notice: cfg.Notice, quiet: cfg.Quiet}, nil
}

// Prepare checks s and computes every turn's reply once, returning a copy of
// s that carries the result, so that New on the copy (or on copies of it) is
// cheap. Scripts from Parse, Load and Repeat need not be prepared.
func Prepare(s Script) (Script, error) {
	if s.prep == nil || !s.prep.matches(&s) {
		s.prep = newPrepared(s)
	}
	if _, err := s.program(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// Repeat returns a script of n copies of turn followed by final: n+1 turns,
// for building long runs in benchmarks. Its Name is DefaultName. Problems in
// turn or final are reported by New.
func Repeat(n int, turn Turn, final Turn) Script {
	n = max(n, 0)
	turns := make([]Turn, n+1)
	for i := range n {
		turns[i] = turn
	}
	turns[n] = final
	s := Script{Turns: turns}
	s.prep = newPrepared(s)
	return s
}

// Name returns the script's name.
func (m *Model) Name() string { return m.p.name }

// Turns returns how many turns the script has.
func (m *Model) Turns() int { return len(m.p.steps) }

// Played returns how many turns have been played (taken by a Generate call).
func (m *Model) Played() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Seek makes the next call play turn calls+1, as if calls calls had been
// made: a resumed run (see runner.Resume) carries on the script where the
// process that died left it.
func (m *Model) Seek(calls int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next, m.calls = max(calls, 0), max(calls, 0)
}

// noticeMu serializes notices, which may share a writer.
var noticeMu sync.Mutex

func (m *Model) announce() {
	w := m.notice
	if w == nil {
		w = os.Stderr
	}
	noticeMu.Lock()
	defer noticeMu.Unlock()
	_, _ = io.WriteString(w, m.p.notice)
}

// Generate plays the next turn. See the package documentation.
//
// The reply's Content (its blocks and their Input bytes) is computed once
// per Script and shared by every Model playing it, so callers must treat it
// as read-only, as the loop treats Request.Messages. Appending to Content or
// to a block's Input is safe: both are full to capacity, so append copies.
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if !m.quiet {
		m.once.Do(m.announce)
	}
	if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}
	m.mu.Lock()
	m.calls++
	i, call := m.next, m.calls
	if i >= len(m.p.steps) {
		m.mu.Unlock()
		return model.Response{}, m.exhausted(call)
	}
	m.next++
	m.mu.Unlock()

	st := &m.p.steps[i]
	if len(st.expect) > 0 {
		if err := st.check(req); err != nil {
			return model.Response{}, err
		}
	}
	if st.delay > 0 {
		if err := sleep(ctx, st.delay); err != nil {
			return model.Response{}, err
		}
	}
	if st.err != nil {
		return model.Response{}, st.err
	}
	// Content is shared by every Model playing this Script: see Generate.
	resp := model.Response{Content: st.content, StopReason: st.stop, Model: m.p.name, Usage: st.usage}
	if !st.fixedUsage {
		resp.Usage.InputTokens = estimateInput(&req)
	}
	if limit := int64(req.MaxOutputTokens); limit > 0 && resp.Usage.OutputTokens > limit {
		// A provider stops at the request's cap and never reports more
		// output than it: a longer reply is charged the cap.
		resp.Usage.OutputTokens = limit
		resp.StopReason = "max_tokens"
	}
	return resp, nil
}

// timers are reused across calls: a latency-bound benchmark of thousands
// of loops would otherwise allocate a timer and its channel per call.
var timers sync.Pool

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t, _ := timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(d)
	} else {
		t.Reset(d)
	}
	defer timers.Put(t)
	select {
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (m *Model) exhausted(call int) error {
	n := len(m.p.steps)
	turns := "turns"
	if n == 1 {
		turns = "turn"
	}
	return fmt.Errorf("%w: call %d to scripted model %q (%s), whose script has %d %s",
		ErrExhausted, call, m.p.name, m.p.source, n, turns)
}

// tokens is ceil(n/4).
func tokens(n int) int64 { return int64(n+3) / 4 }

func estimateInput(req *model.Request) int64 {
	n := len(req.System)
	for i := range req.Messages {
		for j := range req.Messages[i].Content {
			b := &req.Messages[i].Content[j]
			n += len(b.Text) + len(b.Input)
		}
	}
	return tokens(n)
}

// program is a script compiled for playing; it is shared by Models and never
// written after compile.
type program struct {
	name, source string
	notice       string
	steps        []step
}

type step struct {
	where      string // "turn 3 (demo.yaml:7)"
	expect     []string
	delay      time.Duration
	err        error
	content    []model.Block // never nil; len == cap
	stop       string
	usage      model.Usage // output tokens estimated, or all of it fixed
	fixedUsage bool
}

const excerptLen = 200

func (st *step) check(req model.Request) error {
	var text string
	found := false
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := &req.Messages[i]
		if msg.Role != model.User {
			continue
		}
		found = true
		var b strings.Builder
		for _, blk := range msg.Content {
			if blk.Text == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blk.Text)
		}
		text = b.String()
		break
	}
	var missing []string
	for _, e := range st.expect {
		if !found || !strings.Contains(text, e) {
			missing = append(missing, fmt.Sprintf("%q", e))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !found {
		return fmt.Errorf("%w: %s: the request has no user message; want one containing %s",
			ErrExpect, st.where, strings.Join(missing, ", "))
	}
	return fmt.Errorf("%w: %s: the latest user message does not contain %s; it was %s",
		ErrExpect, st.where, strings.Join(missing, ", "), excerpt(text))
}

// excerpt quotes the start of s, at most excerptLen bytes of it.
func excerpt(s string) string {
	if len(s) <= excerptLen {
		return fmt.Sprintf("%q", s)
	}
	cut := excerptLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// prepared holds a Script's compiled program, computed at most once, and
// what the Script looked like when it was attached, to notice a Script
// whose turns were replaced since.
type prepared struct {
	name, file string
	first      *Turn
	n          int

	once sync.Once
	prog *program
	err  error
}

func newPrepared(s Script) *prepared {
	p := &prepared{name: s.Name, file: s.File, n: len(s.Turns)}
	if len(s.Turns) > 0 {
		p.first = &s.Turns[0]
	}
	return p
}

func (p *prepared) matches(s *Script) bool {
	if p.name != s.Name || p.file != s.File || p.n != len(s.Turns) {
		return false
	}
	return p.n == 0 || p.first == &s.Turns[0]
}

func (s Script) program() (*program, error) {
	if p := s.prep; p != nil && p.matches(&s) {
		p.once.Do(func() { p.prog, p.err = compile(s) })
		return p.prog, p.err
	}
	return compile(s)
}
