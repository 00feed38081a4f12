package scripted_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/verify"
)

// TestUsageCappedAtMaxOutputTokens: like a real provider, the scripted
// model never reports more output than the request allowed, whether the
// usage is estimated or given by the turn.
func TestUsageCappedAtMaxOutputTokens(t *testing.T) {
	long := strings.Repeat("x", 4000) // 1000 tokens estimated
	s := scripted.Script{Turns: []scripted.Turn{
		{Text: long}, {Text: long}, {Text: long},
		{Text: "hi", Usage: &scripted.Usage{InputTokens: 7, OutputTokens: 5000}},
	}}
	m, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		maxOut int
		out    int64
		stop   string
	}{{100, 100, "max_tokens"}, {0, 1000, "end_turn"}, {1000, 1000, "end_turn"}, {4096, 4096, "max_tokens"}} {
		resp, err := m.Generate(context.Background(), model.Request{MaxOutputTokens: tc.maxOut, Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("go")}}}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.OutputTokens != tc.out || resp.StopReason != tc.stop {
			t.Errorf("turn %d, max_out %d: output tokens %d, stop %q; want %d, %q", i+1, tc.maxOut, resp.Usage.OutputTokens, resp.StopReason, tc.out, tc.stop)
		}
	}
}

// TestOversizedReplyKeepsClosingTurn plays an oversized reply from a
// script against the loop: it is discarded and charged at most max_out, so
// the run still gets its closing turn. Charged its full estimate (10000
// output tokens against a budget of 8000) it would end without one.
func TestOversizedReplyKeepsClosingTurn(t *testing.T) {
	s := scripted.Script{Turns: []scripted.Turn{
		{Text: strings.Repeat("x", 40000)},
		{Finish: &scripted.Finish{Answer: "5", Confidence: new(0.9)}},
	}}
	sm, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := loop.New(loop.Spec{
		Goal:   "What is 2+3?",
		Checks: []loop.Check{{Name: "equals", Tier: verify.Cheap}},
		Budget: budget.Limits{TotalTokens: 8000},
		Policy: loop.Policy{MaxReplyBytes: 1000, Samples: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(0, 0)
	ev := loop.Event{Type: loop.EventStart, At: at}
	var purposes []model.Purpose
	for range 4 {
		if err := m.Step(ev); err != nil {
			t.Fatal(err)
		}
		rd := m.Ready()
		m.Advance()
		if len(rd.Commands) != 1 || rd.Commands[0].Type != loop.CallModel {
			break
		}
		c := rd.Commands[0]
		purposes = append(purposes, c.Request.Purpose)
		resp, err := sm.Generate(context.Background(), *c.Request)
		if err != nil {
			t.Fatal(err)
		}
		ev = loop.Event{Type: loop.EventModelReply, At: at, Call: c.ID, Reply: &resp}
	}
	if len(purposes) != 2 || purposes[1] != model.PurposeClosing {
		res, _ := m.Result()
		t.Fatalf("model calls %v, want a step then the closing turn; usage %+v; result %s %s", purposes, m.Usage(), res.Status, res.Reason)
	}
}
