package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
)

// Correct is the one answer the simulated checks judge correct. A wrong answer
// is "wrong-<i>", i the call's index, so no two wrong answers of a generator
// are equal and progress detection never sees a repeated one.
const Correct = "ok"

// Calibration says how much a generator's stated confidence tells about
// whether its answer is correct.
//
// Each call draws z from N(0, 1) and states the confidence σ(c + Spread·z),
// σ the logistic function, with its centre c in log-odds:
//
//	correct answer: logit(Mid) + Sharpness·(logit(High) − logit(Mid))
//	wrong answer:   logit(Mid) + Sharpness·(logit(Low) − logit(Mid))
//
// where Mid = (High+Low)/2. Sharpness 0 centres both on Mid: the confidence is
// noise that says nothing about correctness (uninformative). Sharpness 1
// centres correct answers on High and wrong ones on Low; above 1 pulls them
// further apart. How well the confidence tells right from wrong is its AUC,
// the chance that a random correct answer states more than a random wrong
// one: Φ(d′/√2) with d′ = Sharpness·(logit(High) − logit(Low))/Spread. With
// the defaults (High 0.9, Low 0.5, Spread 1) Sharpness 1 gives an AUC of
// 0.94, and a correct answer states less than 0.8 about 21% of the time, a
// wrong one about 92% of the time.
//
// This models discrimination, not calibration in the strict sense
// (P(correct | confidence) = confidence): what a confidence-gated policy
// needs is that the stated confidence separates right from wrong.
type Calibration struct {
	Sharpness float64 `json:"sharpness"`
	// High and Low are the centres at Sharpness 1 (default 0.9 and 0.5);
	// 0 < Low < High < 1.
	High float64 `json:"high,omitempty"`
	Low  float64 `json:"low,omitempty"`
	// Spread is the standard deviation of the log-odds noise (default 1).
	Spread float64 `json:"spread,omitempty"`
}

// WithDefaults fills the zero fields other than Sharpness, whose zero is
// meaningful (uninformative).
func (c Calibration) WithDefaults() Calibration {
	if c.High == 0 {
		c.High = 0.9
	}
	if c.Low == 0 {
		c.Low = 0.5
	}
	if c.Spread == 0 {
		c.Spread = 1
	}
	return c
}

// Validate reports a calibration that cannot be drawn from (defaults applied
// first). The bounds keep every stated confidence strictly inside (0, 1).
func (c Calibration) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if !(c.Sharpness >= 0 && c.Sharpness <= 10) {
		errs = append(errs, fmt.Errorf("calibration: sharpness %v is not between 0 and 10", c.Sharpness))
	}
	if !(c.Low > 0 && c.Low < c.High && c.High < 1) {
		errs = append(errs, fmt.Errorf("calibration: want 0 < low < high < 1, got low %v, high %v", c.Low, c.High))
	}
	if !(c.Spread > 0 && c.Spread <= 3) {
		errs = append(errs, fmt.Errorf("calibration: spread %v is not in (0, 3]", c.Spread))
	}
	return errors.Join(errs...)
}

// confidence maps a correctness and a standard normal draw to a stated
// confidence. c must have defaults applied.
func (c Calibration) confidence(correct bool, z float64) float64 {
	mid := logit((c.High + c.Low) / 2)
	target := logit(c.Low)
	if correct {
		target = logit(c.High)
	}
	return sigmoid(mid + c.Sharpness*(target-mid) + c.Spread*z)
}

// AUC is the probability that a correct answer states a higher confidence
// than a wrong one (0.5: uninformative).
func (c Calibration) AUC() float64 {
	c = c.WithDefaults()
	d := c.Sharpness * (logit(c.High) - logit(c.Low)) / c.Spread
	return 0.5 * math.Erfc(-d/2) // Φ(d/√2)
}

func logit(p float64) float64   { return math.Log(p / (1 - p)) }
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Generator is a simulated model. Every call, whatever the request, answers
// with a single finish tool call whose answer is Correct with probability P
// (each call independently: feedback does not make the simulated generator
// better, a conservative assumption) and whose confidence follows
// Calibration. Every call reports the same usage: InputTokens, OutputTokens
// (capped by the request's MaxOutputTokens) and Cost, with CostKnown true.
//
// Determinism: the n-th call (n from 1, in the order calls reach the
// generator) answers Outcome(n), a pure function of Seed and n. Calls made
// one after another are therefore reproducible. Calls made in parallel (the
// alternatives the engine samples for an unsure candidate) get the same set of
// outcomes whatever the goroutine order, but which request gets which
// outcome is up to the scheduler; see package doc for why a run's result
// does not depend on it.
//
// A Generator is safe for concurrent use. Use a new one (or a new seed) per
// run: the call counter is what makes successive answers differ.
type Generator struct {
	P           float64
	Calibration Calibration
	Seed        uint64
	// Usage per call.
	InputTokens, OutputTokens int64
	Cost                      budget.Micros

	calls atomic.Int64
}

var (
	_ model.Model = (*Generator)(nil)
	_ model.Named = (*Generator)(nil)
)

// Name says the generator is simulated.
func (g *Generator) Name() string { return "sim" }

// Calls reports how many calls the generator has answered.
func (g *Generator) Calls() int { return int(g.calls.Load()) }

// Outcome returns the answer and stated confidence of call n (from 1).
func (g *Generator) Outcome(n int) (answer string, confidence float64) {
	r := rand.New(rand.NewPCG(g.Seed, uint64(n)))
	correct := r.Float64() < g.P
	confidence = g.Calibration.WithDefaults().confidence(correct, r.NormFloat64())
	if correct {
		return Correct, confidence
	}
	return "wrong-" + strconv.Itoa(n), confidence
}

// Generate answers with the next outcome.
func (g *Generator) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}
	n := g.calls.Add(1)
	answer, conf := g.Outcome(int(n))
	// {"answer":"…","confidence":…}: answers are plain ASCII, and 'g' with
	// precision -1 is the shortest form that reads back as the same float64.
	input := make([]byte, 0, 64)
	input = append(input, `{"answer":`...)
	input = strconv.AppendQuote(input, answer)
	input = append(input, `,"confidence":`...)
	input = strconv.AppendFloat(input, conf, 'g', -1, 64)
	input = append(input, '}')
	out := g.OutputTokens
	if req.MaxOutputTokens > 0 {
		out = min(out, int64(req.MaxOutputTokens))
	}
	return model.Response{
		Content: []model.Block{{
			Type:  model.ToolUse,
			ID:    "sim_" + strconv.FormatInt(n, 10),
			Name:  loop.FinishTool,
			Input: input,
		}},
		StopReason: "tool_use",
		Usage:      model.Usage{InputTokens: g.InputTokens, OutputTokens: out, Cost: g.Cost, CostKnown: true},
		Model:      g.Name(),
	}, nil
}
