package modeltest_test

import (
	"io"
	"testing"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/scripted"
)

// The scripted model passes the cases that apply to a model without a
// transport; the retry, fail-fast and streaming cases are declared not
// applicable (NoTransport), not skipped silently.
func TestScripted(t *testing.T) {
	modeltest.Run(t, modeltest.Harness{
		NoTransport: true,
		New: func(t *testing.T, turns []modeltest.Turn, o modeltest.Options) (model.Model, *modeltest.Server) {
			var s scripted.Script
			for _, turn := range turns {
				st := scripted.Turn{Text: turn.Reply.Text}
				for _, c := range turn.Reply.Calls {
					args := c.Args
					st.Tools = append(st.Tools, scripted.ToolCall{Name: c.Name, RawArgs: &args})
				}
				u := turn.Reply.Usage
				st.Usage = &scripted.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
				s.Turns = append(s.Turns, st)
			}
			m, err := scripted.New(s, scripted.Config{Notice: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			return m, nil
		},
		Cost: func(model.Usage) (budget.Micros, bool) { return 0, true }, // scripted is free
	})
}
