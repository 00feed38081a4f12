package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
)

// flaky is a model whose transport "retries" twice and streams its text
// before replying with a finish call.
type flaky struct{ priced bool }

func (f flaky) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	h := model.HooksFrom(ctx)
	if h.OnRetry != nil {
		h.OnRetry(model.Retry{Attempt: 2, Status: 529, Wait: 500 * time.Millisecond, Reason: "529 overloaded"})
		h.OnRetry(model.Retry{Attempt: 3, Reason: "connection reset", Wait: time.Second})
	}
	if h.OnText != nil {
		h.OnText("Five, ")
		h.OnText("finishing.")
	}
	return model.Response{
		Content: []model.Block{
			model.TextBlock("Five, finishing."),
			{Type: model.ToolUse, ID: "c1", Name: "finish", Input: json.RawMessage(`{"answer":"5","confidence":0.99}`)},
		},
		StopReason: "tool_use",
		Usage:      model.Usage{InputTokens: 10, OutputTokens: 5, CostKnown: f.priced},
	}, nil
}

func (f flaky) PriceKnown() bool { return f.priced }
func (flaky) Name() string       { return "flaky" }

// Each transport retry is a retry entry between the call_model command and
// its reply; the log still replays, since retries are not loop events.
func TestRetriesAreRecorded(t *testing.T) {
	var mem observe.Memory
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	res, err := runner.Run(context.Background(), addTask(), runner.Config{Model: flaky{priced: true}, Observers: []observe.Observer{&mem, jl}})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	var kinds []string
	var call string
	for _, e := range mem.Entries() {
		switch {
		case e.Kind == observe.KindCommand && e.Command.Type == loop.CallModel:
			kinds, call = append(kinds, "call_model"), e.Command.ID
		case e.Kind == observe.KindRetry:
			kinds = append(kinds, "retry")
			if e.Retry.Call != call {
				t.Errorf("retry for call %q, want %q", e.Retry.Call, call)
			}
		case e.Kind == observe.KindEvent && e.Event.Type == loop.EventModelReply:
			kinds = append(kinds, "model_reply")
		}
	}
	if got := strings.Join(kinds, " "); got != "call_model retry retry model_reply" {
		t.Errorf("entries: %s", got)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `"kind":"retry","retry":{"call":"`) || !strings.Contains(log.String(), `"status":529,"wait_ns":500000000,"reason":"529 overloaded"`) {
		t.Errorf("log lacks the retry entries:\n%s", log.String())
	}
	recs, err := observe.ReadJSONL(&log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("a log with retries does not replay: %v", err)
	}
}

// Streamed text reaches the printer once, as it arrives.
func TestStreamedTextIsPrinted(t *testing.T) {
	var out bytes.Buffer
	p := observe.NewPrinter(&out, observe.PrinterConfig{})
	if _, err := runner.Run(context.Background(), addTask(), runner.Config{Model: flaky{priced: true}, Observers: []observe.Observer{p}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "Five, finishing."); n != 1 {
		t.Errorf("the text appears %d times:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "step 1  Five, finishing.\n") || !strings.Contains(out.String(), "↻ 529 overloaded: retry 2 in 500ms") {
		t.Errorf("output:\n%s", out.String())
	}
}

// A cost budget needs a model with a known price; without one, only an
// explicit cost limit is refused.
func TestCostBudgetNeedsAPrice(t *testing.T) {
	for _, tc := range []struct {
		cost   budget.Micros
		priced bool
		refuse bool
	}{
		{budget.USD(1), false, true},
		{budget.USD(1), true, false},
		{budget.Unlimited, false, false},
		{0, false, false}, // the default limit: cost is reported as unknown
	} {
		task := addTask()
		task.Budget.Cost = tc.cost
		_, err := runner.Run(context.Background(), task, runner.Config{Model: flaky{priced: tc.priced}})
		if refused := err != nil && strings.Contains(err.Error(), "known price"); refused != tc.refuse {
			t.Errorf("cost %v priced %v: err %v, want refused %v", tc.cost, tc.priced, err, tc.refuse)
		}
	}
}
