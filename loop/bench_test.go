package loop_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// BenchmarkMachineStep drives the pure core alone through N tool steps and a
// finish: the core's share of the per-step overhead.
//
//	go test ./loop -run '^$' -bench BenchmarkMachineStep -count 10
func BenchmarkMachineStep(b *testing.B) {
	for _, n := range []int{50, 800} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			spec := loop.Spec{
				Goal:   "add",
				Tools:  []model.ToolSpec{{Name: "add", Description: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}},
				Checks: []loop.Check{{Name: "equals", Tier: verify.Cheap}},
				Budget: loop.Spec{}.Budget,
			}
			spec.Budget.Steps, spec.Budget.ModelCalls, spec.Budget.ToolCalls = n+2, n+2, n+1
			replies := make([]model.Response, n+1)
			for i := range n {
				replies[i] = model.Response{Content: []model.Block{{Type: model.ToolUse, ID: "c" + strconv.Itoa(i), Name: "add", Input: json.RawMessage(`{"a":` + strconv.Itoa(i) + `,"b":1}`)}}}
			}
			replies[n] = model.Response{Content: []model.Block{{Type: model.ToolUse, ID: "f", Name: "finish", Input: json.RawMessage(`{"answer":"5","confidence":0.9}`)}}}
			t0 := time.Unix(0, 0)
			b.ReportAllocs()
			for b.Loop() {
				m, err := loop.New(spec)
				if err != nil {
					b.Fatal(err)
				}
				must := driver(b, m)
				rd := must(loop.Event{Type: loop.EventStart, At: t0})
				for i := 0; ; i++ {
					call := rd.Commands[0]
					rd = must(loop.Event{Type: loop.EventModelReply, At: t0, Call: call.ID, Reply: &replies[i]})
					c := rd.Commands[0]
					if c.Type == loop.Verify {
						rd = must(loop.Event{Type: loop.EventVerdict, At: t0, Call: c.ID, Verdict: &verify.Verdict{Check: "equals", OK: true}})
						if rd.Commands[0].Type != loop.Finish {
							b.Fatalf("got %s", rd.Commands[0].Type)
						}
						break
					}
					rd = must(loop.Event{Type: loop.EventToolResult, At: t0, Call: c.Calls[0].ID, Tool: &loop.ToolOutcome{Output: strconv.Itoa(i + 1)}})
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/step")
		})
	}
}
