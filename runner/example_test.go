package runner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// Example is the README's Go snippet, run against a scripted model that
// adds, answers 6 (rejected), then 5 (accepted).
func Example() {
	ctx := context.Background()
	sure := 0.9
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Text: "Adding.", Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"A": 2, "B": 3}}}},
		{Finish: &scripted.Finish{Answer: "6", Confidence: &sure}},
		{Finish: &scripted.Finish{Answer: "5", Confidence: &sure}},
	}}, scripted.Config{Quiet: true})
	if err != nil {
		panic(err)
	}

	add := tool.Func("add", "Add two integers.", func(ctx context.Context, in struct{ A, B int }) (int, error) {
		return in.A + in.B, nil
	})
	res, err := runner.Run(ctx, runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 10, Cost: budget.USD(0.25), Time: 2 * time.Minute},
	}, runner.Config{Model: m})
	if err != nil { // infrastructure only
		panic(err)
	}
	fmt.Println(res.Status, res.Best.Answer, res.Usage.Steps, len(res.Attempts))
	// Output: done 5 3 2
}
