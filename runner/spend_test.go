package runner_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/fallback"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// ledger is the fake provider's bill: what every attempt of every model
// that shares it was charged, whatever ratchet counted.
type ledger struct{ billed atomic.Int64 }

// fault is what the fake provider does with one attempt.
type fault int

const (
	answer   fault = iota // a reply, billed at the price
	cut                   // the stream is cut after output: billed, then an error
	overload              // refused before any output (a 529): not billed
)

// fake is a fault-injecting provider: its nth attempt (from 0) does
// faults(n), billing the ledger price for each attempt that produced
// output, as a real provider does. It reports a cut attempt's usage
// through model.Hooks.OnBilled, the way a streaming provider that saw the
// usage before the cut would. It never finishes on its own: it calls the
// tools it is given (spawning sub-agents when it may), calls wide of them
// in parallel, so that the run's cost cap is what ends it.
type fake struct {
	name   string
	l      *ledger
	price  budget.Micros
	faults func(n int) fault
	wide   int // tool calls per reply
	n      atomic.Int64
}

func (f *fake) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	n := int(f.n.Add(1) - 1)
	usage := model.Usage{InputTokens: 100, OutputTokens: 20, Cost: f.price, CostKnown: true}
	switch f.faults(n) {
	case overload:
		return model.Response{}, &model.APIError{Provider: f.name, Status: 529, Kind: model.ErrOverloaded, Message: "overloaded"}
	case cut:
		f.l.billed.Add(int64(f.price))
		if h := model.HooksFrom(ctx); h.OnBilled != nil {
			h.OnBilled(usage)
		}
		return model.Response{}, &model.APIError{Provider: f.name, Kind: model.ErrTransport, Message: "stream cut after output"}
	}
	f.l.billed.Add(int64(f.price))
	if req.Purpose == model.PurposeClosing {
		in, _ := json.Marshal(map[string]any{"answer": "nothing", "confidence": 0.1})
		return model.Response{Content: []model.Block{{Type: model.ToolUse, ID: "fin", Name: "finish", Input: in}}, StopReason: "tool_use", Usage: usage}, nil
	}
	name := "noop"
	for _, t := range req.Tools {
		if t.Name == loop.SpawnTool {
			name = loop.SpawnTool
		}
	}
	var calls []model.Block
	for i := range f.wide {
		in, _ := json.Marshal(map[string]int{"N": n*100 + i})
		if name == loop.SpawnTool {
			in, _ = json.Marshal(map[string]any{"goal": fmt.Sprintf("work %d at %d", i, n), "tools": []string{"noop"}})
		}
		calls = append(calls, model.Block{Type: model.ToolUse, ID: fmt.Sprintf("t%d_%d", n, i), Name: name, Input: in})
	}
	return model.Response{Content: calls, StopReason: "tool_use", Usage: usage}, nil
}

func always(f fault) func(int) fault { return func(int) fault { return f } }

// chain is a fallback chain of the fakes.
func chain(t *testing.T, ms ...*fake) model.Model {
	t.Helper()
	var members []fallback.Member
	for _, m := range ms {
		members = append(members, fallback.Member{Name: m.name, Model: m})
	}
	c, err := fallback.New(members...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSpendBound is issue 32's per-run bound: whatever fails on the way
// (cut streams a fallback recovers from, refused attempts, a cut that ends
// the run, sub-agents in parallel, parallel tool calls), what the provider
// billed never exceeds the run's cost cap by more than one call's cost
// (every attempt of one loop call, each billed at the price), and ratchet
// counts exactly what was billed.
func TestSpendBound(t *testing.T) {
	const price, limit = budget.Micros(7_000), budget.Micros(100_000)
	// Each call differs, so that the run is not stopped as stalled first.
	noop := tool.Func("noop", "Count.", func(_ context.Context, in struct{ N int }) (string, error) { return fmt.Sprint("counted ", in.N), nil }, tool.Idempotent())
	never, err := check.Regex(`^never matches$`)
	if err != nil {
		t.Fatal(err)
	}
	cases := spendCases(t, price)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := cmp.Or(tc.limit, limit)
			l := new(ledger)
			task := runner.Task{
				Goal:   "Keep working.",
				Tools:  []tool.Tool{noop},
				Checks: verify.Tiers{Cheap: []verify.Verifier{never}},
				Budget: budget.Limits{Steps: 500, ModelCalls: 1000, ToolCalls: 5000, Cost: limit, Time: time.Minute},
			}
			cfg := runner.Config{Model: tc.model(l), RunID: "p"}
			made := 0 // children started
			if tc.subagents {
				task.Subagents = &runner.Subagents{Checks: verify.Tiers{Cheap: []verify.Verifier{never}}, Budget: budget.Limits{Steps: 20}, MaxChildren: 30}
				var mu sync.Mutex
				cfg.ChildModel = func(string, loop.Child) (model.Model, error) {
					mu.Lock()
					defer mu.Unlock()
					made++
					return tc.model(l), nil
				}
			}
			res, err := runner.Run(context.Background(), task, cfg)
			if err != nil && res.Status != loop.Failed { // a failed model call is the run's error too
				t.Fatal(err)
			}
			billed := budget.Micros(l.billed.Load())
			t.Logf("%s: billed %d of a cap of %d (bound %d), counted %d, %d steps, %d sub-agents: %s", res.Status, billed, limit, limit+tc.perCall, res.Usage.Cost, res.Usage.Steps, made, res.Reason)
			if tc.children && made == 0 {
				t.Error("no sub-agent started")
			}
			if res.Status != tc.status {
				t.Errorf("status %s (%s), want %s", res.Status, res.Reason, tc.status)
			}
			if billed > limit+tc.perCall {
				t.Errorf("billed %d: over the cap %d by more than one call (%d)", billed, limit, tc.perCall)
			}
			if res.Usage.Cost != billed || res.Usage.CostUnknown {
				t.Errorf("ratchet counted %d (unknown: %v), the provider billed %d", res.Usage.Cost, res.Usage.CostUnknown, billed)
			}
		})
	}
}

// spendCase is one shape of TestSpendBound.
type spendCase struct {
	name string
	// perCall is the most one loop call is billed: its attempts times
	// the price.
	perCall budget.Micros
	// model gives the parent's model and, for sub-agents, each child's
	// (its own fakes, on the same ledger).
	model     func(l *ledger) model.Model
	subagents bool
	status    loop.Status
	limit     budget.Micros // 0: the default
	children  bool          // sub-agents must have started
}

// spendCases are TestSpendBound's shapes, at price per attempt.
func spendCases(t *testing.T, price budget.Micros) []spendCase {
	return []spendCase{
		{name: "plain, parallel tool calls", perCall: price, status: loop.Exhausted(budget.Cost),
			model: func(l *ledger) model.Model {
				return &fake{name: "a", l: l, price: price, faults: always(answer), wide: 3}
			}},
		{name: "fallback after a billed cut (the member then rests)", perCall: 2 * price, status: loop.Exhausted(budget.Cost),
			model: func(l *ledger) model.Model {
				return chain(t, &fake{name: "a", l: l, price: price, faults: always(cut)}, &fake{name: "b", l: l, price: price, faults: always(answer), wide: 2})
			}},
		{name: "fallback after a billed cut, every third call", perCall: 2 * price, status: loop.Exhausted(budget.Cost),
			model: func(l *ledger) model.Model {
				// A chain rests a member that failed, so the first member
				// would get one call; a fresh chain per call over the same
				// fakes has it cut every third call it is given.
				a := &fake{name: "a", l: l, price: price, faults: func(n int) fault { return map[bool]fault{true: cut, false: answer}[n%3 == 2] }, wide: 2}
				b := &fake{name: "b", l: l, price: price, faults: always(answer), wide: 2}
				return fresh(func() model.Model { return chain(t, a, b) })
			}},
		{name: "refused attempts are free", perCall: price, status: loop.Exhausted(budget.Cost),
			model: func(l *ledger) model.Model {
				return chain(t, &fake{name: "a", l: l, price: price, faults: always(overload)}, &fake{name: "b", l: l, price: price, faults: always(answer), wide: 1})
			}},
		{name: "a cut that ends the run", perCall: price, status: loop.Failed,
			model: func(l *ledger) model.Model {
				return &fake{name: "a", l: l, price: price, faults: func(n int) fault { return map[bool]fault{true: cut, false: answer}[n == 4] }, wide: 1}
			}},
		{name: "sub-agents in parallel, billed cuts", perCall: 2 * price, subagents: true, children: true, status: loop.Exhausted(budget.Cost),
			model: func(l *ledger) model.Model {
				return chain(t, &fake{name: "a", l: l, price: price, faults: always(cut)}, &fake{name: "b", l: l, price: price, faults: always(answer), wide: 3})
			}},
		{name: "eight sub-agents sharing less than a call each", perCall: price, subagents: true, limit: 30_000, status: loop.Exhausted(budget.Cost),
			model: func(l *ledger) model.Model {
				return &fake{name: "a", l: l, price: price, faults: always(answer), wide: 8}
			}},
	}
}

// fresh is a model that asks a new one of its own for each call.
type fresh func() model.Model

func (f fresh) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	return f().Generate(ctx, req)
}

// A billed attempt adds to a call's usage; a provider's negative counts
// cannot lower it, and an attempt of unknown price makes the sum unknown.
