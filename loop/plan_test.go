package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/verify"
)

// A plan is accepted, its steps are done at once (check none) or once
// their check passes, and a failed check asks for a replan that keeps the
// steps done.
func TestPlanSteps(t *testing.T) {
	var p plan
	checks := []string{"tests"}
	if !p.planning() || !strings.HasPrefix(p.focus(checks), "[Plan] Before acting") {
		t.Fatalf("a new plan must be asked for: %q", p.focus(checks))
	}
	out, notes := p.tool(StepDoneTool, json.RawMessage(`{"result":"x"}`), checks, 1)
	if !out.IsError || len(notes) != 1 || notes[0].Problem != "plan_protocol" {
		t.Fatalf("step_done before a plan: %+v %+v", out, notes)
	}
	out, notes = p.tool(SubmitPlanTool, json.RawMessage(`{"steps":[{"do":"read","check":"none"},{"do":"fix","check":"tests"},{"do":"ship","check":"none"}]}`), checks, 1)
	if out.IsError || len(notes) != 1 || notes[0].Type != NotePlan || p.planning() {
		t.Fatalf("submit_plan: %+v %+v", out, notes)
	}
	out, notes = p.tool(StepDoneTool, json.RawMessage(`{"result":"read it"}`), checks, 2)
	if out.Output != "step 1 done. Now step 2: fix" || len(notes) != 1 || p.Current != 1 {
		t.Fatalf("step 1 (check none): %q %+v", out.Output, notes)
	}
	out, _ = p.tool(StepDoneTool, json.RawMessage(`{"result":"patched"}`), checks, 3)
	if out.IsError || !p.Due {
		t.Fatalf("step 2 must wait for its check: %+v", out)
	}
	p.startCheck()
	cmd := p.command(time.Time{})
	if cmd.ID != "p1" || cmd.Candidate.Answer != "patched" || len(cmd.Checks) != 1 || cmd.Checks[0] != "tests" {
		t.Fatalf("check command %+v", cmd)
	}
	text, note := p.verdict(verify.Verdict{Check: "tests", Detail: "1 failed", Where: "test_x"}, 100, 4)
	if !p.Replan || p.Due || note.Problem != "step_failed" || !strings.Contains(text, "at test_x: 1 failed") || !strings.Contains(text, "the steps done so far (1) stay done") {
		t.Fatalf("failed check: %q %+v", text, note)
	}
	if _, _ = p.tool(SubmitPlanTool, json.RawMessage(`{"steps":[{"do":"fix again","check":"tests"}]}`), checks, 5); len(p.Steps) != 2 || p.Steps[0].Do != "read" || p.Replans != 1 {
		t.Fatalf("replan must keep the step done: %+v", p)
	}
	p.Due = true
	p.startCheck()
	if text, _ := p.verdict(verify.Verdict{Check: "tests", OK: true}, 100, 6); !strings.Contains(text, "Every step of the plan is done") || p.Current != 2 {
		t.Fatalf("passed check: %q, current %d", text, p.Current)
	}
}
