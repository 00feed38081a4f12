package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratchetloop/ratchet/model"
)

// Problem is one thing wrong with a script.
type Problem struct {
	File string // the script's file; "" for a script built in Go
	Line int    // 1-based; 0 when unknown
	Msg  string
}

func (p Problem) String() string {
	switch {
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", fileOrInline(p.File), p.Line, p.Msg)
	case p.File != "":
		return p.File + ": " + p.Msg
	default:
		return p.Msg
	}
}

// ScriptError lists every problem found in a script, one per line.
type ScriptError struct {
	Problems []Problem
}

func (e *ScriptError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func fileOrInline(file string) string {
	if file == "" {
		return "inline"
	}
	return file
}

// where describes a turn for messages: "turn 3 (demo.yaml:7)".
func where(turn int, file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("turn %d (%s:%d)", turn, fileOrInline(file), line)
	}
	return fmt.Sprintf("turn %d", turn)
}

// compile checks s and computes every turn's reply.
func compile(s Script) (*program, error) {
	name := s.Name
	if name == "" {
		name = DefaultName
	}
	source := fileOrInline(s.File)
	p := &program{
		name:   name,
		source: source,
		notice: fmt.Sprintf("ratchet: scripted model %q (%s) is playing recorded turns; it is a test double, not a real model\n", name, source),
		steps:  make([]step, len(s.Turns)),
	}
	var probs []Problem
	for i := range s.Turns {
		t := &s.Turns[i]
		num := i + 1
		bad := func(format string, args ...any) {
			probs = append(probs, Problem{File: s.File, Line: t.Line,
				Msg: fmt.Sprintf("turn %d: ", num) + fmt.Sprintf(format, args...)})
		}
		st := &p.steps[i]
		st.where = where(num, s.File, t.Line)
		st.delay = t.Delay
		if t.Delay < 0 {
			bad("negative delay %v", t.Delay)
		}
		for _, e := range t.Expect {
			if e == "" {
				bad("an empty expect string matches anything")
			}
		}
		if len(t.Expect) > 0 {
			st.expect = t.Expect
		}
		if t.Error != "" {
			if t.Thinking != "" || t.Text != "" || len(t.Tools) > 0 || t.Finish != nil || t.Usage != nil {
				bad("error cannot be combined with thinking, text, tools, finish or usage: an error turn has no reply")
			}
			pos := ""
			if t.Line > 0 {
				pos = fmt.Sprintf("%s:%d", fileOrInline(s.File), t.Line)
			}
			st.err = &TurnError{Turn: num, Pos: pos, Msg: t.Error}
			continue
		}

		n := len(t.Tools)
		if t.Thinking != "" {
			n++
		}
		if t.Text != "" {
			n++
		}
		if t.Finish != nil {
			n++
		}
		blocks := make([]model.Block, 0, n)
		if t.Thinking != "" {
			blocks = append(blocks, model.Block{Type: model.Thinking, Text: t.Thinking})
		}
		if t.Text != "" {
			blocks = append(blocks, model.TextBlock(t.Text))
		}
		for j, tc := range t.Tools {
			if tc.Name == "" {
				bad("tool %d: missing name", j+1)
			}
			in, err := tc.input()
			if err != nil {
				bad("tool %d: %v", j+1, err)
			}
			blocks = append(blocks, model.Block{Type: model.ToolUse, ID: callID(num, j+1), Name: tc.Name, Input: in[:len(in):len(in)]})
		}
		if f := t.Finish; f != nil {
			in, err := marshal(struct {
				Answer     string   `json:"answer"`
				Confidence *float64 `json:"confidence,omitempty"`
			}{f.Answer, f.Confidence})
			if err != nil {
				bad("finish: %v", err)
			}
			blocks = append(blocks, model.Block{Type: model.ToolUse, ID: callID(num, len(t.Tools)+1), Name: "finish", Input: in[:len(in):len(in)]})
		}
		st.content = blocks[:len(blocks):len(blocks)]
		st.stop = "end_turn"
		out := 0
		for _, b := range blocks {
			out += len(b.Text) + len(b.Input)
			if b.Type == model.ToolUse {
				st.stop = "tool_use"
			}
		}
		st.usage = model.Usage{OutputTokens: tokens(out), CostKnown: true}
		if u := t.Usage; u != nil {
			if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
				bad("negative token count in usage")
			}
			st.fixedUsage = true
			st.usage = model.Usage{
				InputTokens:      u.InputTokens,
				OutputTokens:     u.OutputTokens,
				CacheReadTokens:  u.CacheReadTokens,
				CacheWriteTokens: u.CacheWriteTokens,
				CostKnown:        true,
			}
		}
	}
	if len(probs) > 0 {
		return nil, &ScriptError{Problems: probs}
	}
	return p, nil
}

func callID(turn, index int) string {
	return "call_" + strconv.Itoa(turn) + "_" + strconv.Itoa(index)
}

// input returns the tool call's input.
func (tc ToolCall) input() (json.RawMessage, error) {
	switch {
	case tc.RawArgs != nil && tc.Args != nil:
		return nil, fmt.Errorf("args and raw_args are both set; use one")
	case tc.RawArgs != nil:
		return json.RawMessage(*tc.RawArgs), nil
	case tc.Args == nil:
		return json.RawMessage("{}"), nil
	}
	in, err := marshal(tc.Args)
	if err != nil {
		return nil, fmt.Errorf("args: %v", err)
	}
	return in, nil
}

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
