package sim_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/sim"
	"github.com/ratchetloop/ratchet/verify"
)

// within fails the test unless got is within tol of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

// sd is the standard deviation of the mean of n Bernoulli(p) draws.
func sd(p float64, n int) float64 { return math.Sqrt(p * (1 - p) / float64(n)) }

func TestGeneratorAnswersWithAFinishCall(t *testing.T) {
	g := &sim.Generator{P: 0.5, Seed: 7, InputTokens: 100, OutputTokens: 50, Cost: 1234}
	resp, err := g.Generate(context.Background(), model.Request{MaxOutputTokens: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 1 || resp.Content[0].Type != model.ToolUse || resp.Content[0].Name != loop.FinishTool {
		t.Fatalf("content %+v: want one finish tool_use", resp.Content)
	}
	var in struct {
		Answer     string  `json:"answer"`
		Confidence float64 `json:"confidence"`
	}
	if err := json.Unmarshal(resp.Content[0].Input, &in); err != nil {
		t.Fatalf("input %s: %v", resp.Content[0].Input, err)
	}
	answer, conf := g.Outcome(1)
	if in.Answer != answer || in.Confidence != conf {
		t.Errorf("call 1 said %+v, Outcome(1) = %q %v", in, answer, conf)
	}
	want := model.Usage{InputTokens: 100, OutputTokens: 40, Cost: 1234, CostKnown: true}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got), output capped at MaxOutputTokens:\n%s", diff)
	}
	if g.Calls() != 1 {
		t.Errorf("Calls() = %d, want 1", g.Calls())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Generate(ctx, model.Request{}); err == nil {
		t.Error("a cancelled call returned no error")
	}
}

// TestGeneratorOutcomes checks the draws: P of them correct, wrong answers
// never repeated, and the stated confidence as Calibration documents it.
func TestGeneratorOutcomes(t *testing.T) {
	const n = 20000
	type split struct{ below, total int }
	draw := func(c sim.Calibration) (correct int, ok, wrong split, wrongs map[string]bool) {
		g := &sim.Generator{P: 0.9, Seed: 3, Calibration: c}
		wrongs = map[string]bool{}
		for i := 1; i <= n; i++ {
			a, conf := g.Outcome(i)
			if !(conf > 0 && conf < 1) {
				t.Fatalf("call %d: confidence %v outside (0, 1)", i, conf)
			}
			s := &wrong
			if a == sim.Correct {
				correct++
				s = &ok
			} else {
				if wrongs[a] || !strings.HasPrefix(a, "wrong-") {
					t.Fatalf("call %d: wrong answer %q repeated or misnamed", i, a)
				}
				wrongs[a] = true
			}
			s.total++
			if conf < 0.8 {
				s.below++
			}
		}
		return correct, ok, wrong, wrongs
	}
	correct, ok, wrong, _ := draw(sim.Calibration{Sharpness: 1})
	within(t, "share correct", float64(correct)/n, 0.9, 4*sd(0.9, n))
	// The documented figures for the defaults at sharpness 1.
	within(t, "P(conf < 0.8 | correct)", float64(ok.below)/float64(ok.total), 0.209, 4*sd(0.209, ok.total))
	within(t, "P(conf < 0.8 | wrong)", float64(wrong.below)/float64(wrong.total), 0.917, 4*sd(0.917, wrong.total))
	// Sharpness 0: the confidence says nothing about correctness.
	_, ok, wrong, _ = draw(sim.Calibration{})
	pOK, pWrong := float64(ok.below)/float64(ok.total), float64(wrong.below)/float64(wrong.total)
	within(t, "uninformative: P(conf<0.8|wrong) − P(conf<0.8|correct)", pWrong-pOK, 0, 4*sd(0.5, wrong.total))

	within(t, "AUC at sharpness 0", sim.Calibration{}.AUC(), 0.5, 1e-12)
	within(t, "AUC at sharpness 1", sim.Calibration{Sharpness: 1}.AUC(), 0.9399, 1e-4)

	for _, p := range []float64{0, 1} {
		g := &sim.Generator{P: p, Seed: 5}
		for i := 1; i <= 1000; i++ {
			if a, _ := g.Outcome(i); (a == sim.Correct) != (p == 1) {
				t.Fatalf("P=%v: call %d answered %q", p, i, a)
			}
		}
	}
}

// TestGeneratorConcurrent: calls made in parallel get exactly the outcomes
// of calls 1..N, each once, whatever the goroutine order.
func TestGeneratorConcurrent(t *testing.T) {
	const workers, each = 8, 200
	g := &sim.Generator{P: 0.5, Seed: 11}
	got := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				resp, err := g.Generate(context.Background(), model.Request{})
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], string(resp.Content[0].Input))
			}
		})
	}
	wg.Wait()
	var all, want []string
	for _, g := range got {
		all = append(all, g...)
	}
	ref := &sim.Generator{P: 0.5, Seed: 11}
	for range workers * each {
		resp, _ := ref.Generate(context.Background(), model.Request{})
		want = append(want, string(resp.Content[0].Input))
	}
	slices.Sort(all)
	slices.Sort(want)
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("parallel outcomes differ from sequential ones (-want +got):\n%s", diff)
	}
}

func TestVerifier(t *testing.T) {
	ctx := context.Background()
	v := sim.Verifier{Recall: 0.7, FalseFail: 0.2, Cost: 500, Seed: 9}
	if v.Name() != "sim" || v.Provenance() != verify.Execution {
		t.Errorf("name %q provenance %q", v.Name(), v.Provenance())
	}
	const n = 20000
	caught, failedOK := 0, 0
	for i := range n {
		conf := float64(i) / n
		w, err := v.Check(ctx, verify.Candidate{Answer: "wrong-1", Confidence: conf, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		if w.Cost != 500 || w.Provenance != verify.Execution {
			t.Fatalf("verdict %+v: want cost 500, provenance execution", w)
		}
		if !w.OK {
			caught++
		}
		c, _ := v.Check(ctx, verify.Candidate{Answer: sim.Correct, Confidence: conf})
		if !c.OK {
			failedOK++
		}
		// The same candidate gets the same verdict, whatever its attempt
		// number or when it is checked.
		again, _ := v.Check(ctx, verify.Candidate{Answer: "wrong-1", Confidence: conf, Attempt: 5})
		if again.OK != w.OK {
			t.Fatalf("candidate %v: verdicts %v then %v", conf, w.OK, again.OK)
		}
	}
	within(t, "recall", float64(caught)/n, 0.7, 4*sd(0.7, n))
	within(t, "false-fail rate", float64(failedOK)/n, 0.2, 4*sd(0.2, n))

	for i := range 1000 {
		for _, a := range []string{sim.Correct, "wrong-3"} {
			if got, _ := (sim.Verifier{}).Check(ctx, verify.Candidate{Answer: a, Confidence: float64(i) / 1000}); !got.OK {
				t.Fatalf("Verifier{} failed %q: it must pass everything", a)
			}
		}
		perfect := sim.Verifier{Recall: 1, Seed: uint64(i)}
		if got, _ := perfect.Check(ctx, verify.Candidate{Answer: "wrong-3", Confidence: 0.5}); got.OK {
			t.Fatal("recall 1 passed a wrong answer")
		}
		if got, _ := perfect.Check(ctx, verify.Candidate{Answer: sim.Correct, Confidence: 0.5}); !got.OK {
			t.Fatal("false-fail 0 failed a correct answer")
		}
	}
}

// TestStepThroughEngine runs one step through runner.Run by hand: with a
// perfect verifier and retries, the accepted answer is the first correct
// one, and every wrong one before it was rejected.
func TestStepThroughEngine(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.P, cfg.Recall, cfg.Retries = 0.3, 1, 10
	for trial := range 30 {
		task, gen := sim.StepTask(cfg, sim.FixedRetries, trial, 1)
		res, err := runner.Run(context.Background(), task, runner.Config{Model: gen})
		if err != nil {
			t.Fatal(err)
		}
		first := 0
		for i := 1; i <= 11; i++ {
			if a, _ := gen.Outcome(i); a == sim.Correct {
				first = i
				break
			}
		}
		if first == 0 {
			if res.Status != loop.Exhausted(budget.Steps) || len(res.Attempts) != 11 {
				t.Errorf("trial %d: no correct answer in 11 calls, got %s after %d attempts", trial, res.Status, len(res.Attempts))
			}
			continue
		}
		if res.Status != loop.Done || res.Best.Answer != sim.Correct || len(res.Attempts) != first || res.Usage.ModelCalls != first {
			t.Errorf("trial %d: first correct call %d; got %s, best %+v, %d attempts, %d calls",
				trial, first, res.Status, res.Best, len(res.Attempts), res.Usage.ModelCalls)
		}
		if want := budget.Micros(first) * (cfg.CallCost + cfg.CheckCost); res.Usage.Cost != want {
			t.Errorf("trial %d: cost %v, want %v", trial, res.Usage.Cost, want)
		}
	}
}
