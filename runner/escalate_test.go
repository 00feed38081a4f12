package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// TestEscalateRaisesBudget: with escalate, a run about to end
// exhausted:steps asks a person instead and waits (awaiting_input); the
// answer, given through Resume, raises the steps and the run ends done.
// Its log, the raise included, replays identically.
func TestEscalateRaisesBudget(t *testing.T) {
	st := memory.New()
	add23 := scripted.Turn{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": 2, "b": 3}}}}
	script := scripted.Script{Turns: []scripted.Turn{
		add23, add23,
		{Finish: &scripted.Finish{Answer: "6", Confidence: conf(0.5)}}, // the closing turn, rejected
		{Expect: []string{"raised steps from 3 to 6"}, Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}},
	}}
	task := addTask()
	task.Budget.Steps = 3
	task.Policy.Escalate = true
	cfg := runner.Config{Model: newScripted(t, script), Store: st, RunID: "e", Human: runner.Later}
	_, err := runner.Run(context.Background(), task, cfg)
	var aw *runner.AwaitingError
	if !errors.As(err, &aw) || !strings.Contains(aw.Question, "Raise steps from 3 to 6, or stop?") {
		t.Fatalf("want an AwaitingError asking to raise steps, got %v", err)
	}
	if row, _ := st.Run(context.Background(), "e"); row.Status != store.StatusAwaitingInput {
		t.Fatalf("row status %q, want awaiting_input", row.Status)
	}

	cfg.Model = newScripted(t, script)
	for _, answer := range []string{"more please", "raise steps to 6"} {
		res, err := runner.Resume(context.Background(), task, cfg, runner.ResumeOptions{Answer: &answer})
		if answer == "more please" {
			// Not understood: asked again, saying why.
			if !errors.As(err, &aw) || !strings.HasPrefix(aw.Question, "Your answer was not understood") {
				t.Fatalf("answer %q: want the question again, got %v %s", answer, err, res.Status)
			}
			cfg.Model = newScripted(t, script)
			continue
		}
		if err != nil || res.Status != loop.Done || res.Limits.Steps != 6 || res.Usage.Steps != 4 || res.Asked != 1 || res.Answered != 1 {
			t.Fatalf("answer %q: %v %s (%s), steps %d/%d, asked %d answered %d; want done within 6 steps, asked and answered once",
				answer, err, res.Status, res.Reason, res.Usage.Steps, res.Limits.Steps, res.Asked, res.Answered)
		}
	}
	recs, err := runner.LoadLog(context.Background(), st, "e")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("the log does not replay: %v", err)
	}
}

// downOnce is a check whose infrastructure is down the first time.
type downOnce struct {
	verify.Verifier
	calls int
}

func (d *downOnce) Check(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
	if d.calls++; d.calls == 1 {
		return verify.Verdict{}, errors.New("sandbox unavailable: bwrap not found")
	}
	return d.Verifier.Check(ctx, c)
}

// answers is a person who gives these answers in turn.
type answers []string

func (a *answers) Ask(context.Context, string) (string, error) {
	next := (*a)[0]
	*a = (*a)[1:]
	return next, nil
}

// TestEscalateCheckDown: with escalate, a check that cannot run asks a
// person instead of ending the run failed; after "retry" the model is
// told its answer was not judged, submits it again, and the run is done.
func TestEscalateCheckDown(t *testing.T) {
	five := scripted.Turn{Finish: &scripted.Finish{Answer: "5", Confidence: conf(0.9)}}
	again := five
	again.Expect = []string{"Not judged: a check could not run", "answered retry"}
	task := addTask()
	task.Checks = verify.Tiers{Expensive: []verify.Verifier{&downOnce{Verifier: check.Equals("5")}}}
	task.Policy.Escalate = true
	person := &answers{"retry"}
	res, err := runner.Run(context.Background(), task, runner.Config{Model: newScripted(t, scripted.Script{Turns: []scripted.Turn{five, again}}), RunID: "d", Human: person})
	if err != nil || res.Status != loop.Done || res.Asked != 1 || res.Answered != 1 || len(*person) != 0 {
		t.Fatalf("%v %s (%s), asked %d answered %d; want done after one question answered retry", err, res.Status, res.Reason, res.Asked, res.Answered)
	}
}
