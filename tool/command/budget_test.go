package command_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/command"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// TestRunsTimeBudgetBoundsTheCommand: in a run, a command that asks for a
// minute is stopped before the run's time budget ends, and the model is
// told why.
func TestRunsTimeBudgetBoundsTheCommand(t *testing.T) {
	tl := newTool(t, command.Config{Workspace: workspace(t, nil)})
	conf := 0.9
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: command.Name, Args: map[string]any{"command": "sleep 60", "timeout_seconds": 60}}}},
		{Expect: []string{"what was left of the run's time budget"}, Finish: &scripted.Finish{Answer: "ok", Confidence: &conf}},
	}}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := runner.Run(context.Background(), runner.Task{
		Goal:   "Run a slow command.",
		Tools:  []tool.Tool{tl},
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("ok")}},
		Budget: budget.Limits{Steps: 4, Time: 8 * time.Second},
	}, runner.Config{Model: m})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %v, %s", err, res.Status)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the run took %v, past its 8s budget", took)
	}
}
