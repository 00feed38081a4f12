package scripted

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/model"
)

// A Recorder passes requests to a model and keeps each reply as a Turn, so
// that a run against a real model can be written out (WriteScript) and
// played offline as a script: a run that worked once becomes a test. It is
// safe for concurrent use; turns are kept in the order replies arrive.
type Recorder struct {
	inner model.Model
	mu    sync.Mutex
	turns []Turn
}

// Record returns a Recorder around m.
func Record(m model.Model) *Recorder { return &Recorder{inner: m} }

// Generate implements model.Model. A failed call is kept as an error turn
// with the error's text, so the script fails the same call.
func (r *Recorder) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := r.inner.Generate(ctx, req)
	t := Turn{}
	if err != nil {
		if ctx.Err() != nil {
			return resp, err // cancelled: no reply to record
		}
		t.Error = err.Error()
	} else {
		t = turnOf(resp)
	}
	r.keep(t)
	return resp, err
}

// Replied keeps a reply the model gave in another process (one read from
// a run's log: a Temporal run's workers made the calls), as Generate keeps
// the replies it passes on.
func (r *Recorder) Replied(resp model.Response) { r.keep(turnOf(resp)) }

// Failed keeps a call that failed in another process with the error msg.
func (r *Recorder) Failed(msg string) { r.keep(Turn{Error: msg}) }

func (r *Recorder) keep(t Turn) {
	r.mu.Lock()
	r.turns = append(r.turns, t)
	r.mu.Unlock()
}

// Name reports the wrapped model's name, so that what the run records
// (and grader independence) is unchanged by recording.
func (r *Recorder) Name() string {
	if n, ok := r.inner.(model.Named); ok {
		return n.Name()
	}
	return ""
}

// turnOf is a reply as a turn. Tool calls keep their input verbatim
// (raw_args), so the script replays exactly what the model sent, valid
// JSON or not; a finish call stays a tool call named finish.
func turnOf(resp model.Response) Turn {
	var t Turn
	var text, thinking strings.Builder
	for _, b := range resp.Content {
		switch b.Type {
		case model.Thinking:
			thinking.WriteString(b.Text)
		case model.Text:
			text.WriteString(b.Text)
		case model.ToolUse:
			raw := string(b.Input)
			t.Tools = append(t.Tools, ToolCall{Name: b.Name, RawArgs: &raw})
		}
	}
	t.Text, t.Thinking = text.String(), thinking.String()
	u := resp.Usage
	t.Usage = &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	return t
}

// Script returns the turns recorded so far as a script named name.
func (r *Recorder) Script(name string) Script {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Script{Name: name, Turns: append([]Turn(nil), r.turns...)}
}

// WriteScript writes s in the format Parse reads. Delays, expectations and
// line numbers are not written: a recording has none.
func WriteScript(w io.Writer, s Script) error {
	type tool struct {
		Name    string `yaml:"name"`
		RawArgs string `yaml:"raw_args"`
	}
	type usage struct {
		InputTokens      int64 `yaml:"input_tokens"`
		OutputTokens     int64 `yaml:"output_tokens"`
		CacheReadTokens  int64 `yaml:"cache_read_tokens,omitempty"`
		CacheWriteTokens int64 `yaml:"cache_write_tokens,omitempty"`
	}
	type turn struct {
		Thinking string `yaml:"thinking,omitempty"`
		Text     string `yaml:"text,omitempty"`
		Tools    []tool `yaml:"tools,omitempty"`
		Error    string `yaml:"error,omitempty"`
		Usage    *usage `yaml:"usage,omitempty"`
	}
	out := struct {
		Name  string `yaml:"name,omitempty"`
		Turns []turn `yaml:"turns"`
	}{Name: s.Name, Turns: []turn{}}
	for i, t := range s.Turns {
		if t.Finish != nil || len(t.Expect) > 0 || t.Delay != 0 {
			return fmt.Errorf("scripted: turn %d: only recorded turns (thinking, text, tools with raw_args, error, usage) can be written", i+1)
		}
		o := turn{Thinking: t.Thinking, Text: t.Text, Error: t.Error}
		for _, c := range t.Tools {
			if c.RawArgs == nil {
				return fmt.Errorf("scripted: turn %d: tool %s has no raw_args", i+1, c.Name)
			}
			o.Tools = append(o.Tools, tool{Name: c.Name, RawArgs: *c.RawArgs})
		}
		if u := t.Usage; u != nil && t.Error == "" {
			o.Usage = &usage{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens}
		}
		out.Turns = append(out.Turns, o)
	}
	fmt.Fprintln(w, "# Recorded by 'ratchet run --record': each turn is a reply the model gave, in order.")
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("scripted: %w", err)
	}
	return enc.Close()
}
