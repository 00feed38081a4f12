package sim

import (
	"context"
	"hash/fnv"
	"math"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/verify"
)

// Verifier is a simulated check of known quality. It judges Correct to be the
// right answer and anything else wrong; then it errs on purpose: it passes a
// wrong answer with probability 1−Recall (a false pass, the miss the article
// warns compounds) and fails a correct one with probability FalseFail. Each
// verdict costs Cost and has Provenance execution.
//
// Determinism: the verdict is a pure function of Seed, the answer and the
// stated confidence, not of call order or the attempt number. The same
// candidate therefore always gets the same verdict (as from a deterministic
// test suite), and the engine's order of checking cannot change a result.
// The simulated generator never states the same confidence twice (the odds
// of equal float64 draws are about 1e-16), so its candidates get independent
// draws.
//
// Verifier{} (recall 0, false-fail 0, free) passes everything: it is how the
// unchecked chain runs through the same engine.
type Verifier struct {
	// CheckName names the check (default "sim").
	CheckName string
	Recall    float64
	FalseFail float64
	Cost      budget.Micros
	Seed      uint64
}

var _ verify.Verifier = Verifier{}

func (v Verifier) Name() string {
	if v.CheckName == "" {
		return "sim"
	}
	return v.CheckName
}

func (v Verifier) Provenance() verify.Provenance { return verify.Execution }

// Check judges c.
func (v Verifier) Check(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return verify.Verdict{}, err
	}
	h := fnv.New64a()
	h.Write([]byte(c.Answer))
	u := unit(mix(mix(v.Seed, h.Sum64()), math.Float64bits(c.Confidence)))
	out := verify.Verdict{Check: v.Name(), Confidence: 1, Provenance: verify.Execution, Cost: v.Cost}
	switch correct := c.Answer == Correct; {
	case correct && u < v.FalseFail:
		out.Detail, out.Where = "the check failed a correct answer (a simulated false failure)", "sim"
	case correct:
		out.OK, out.Detail = true, "correct"
	case u < v.Recall:
		out.Detail, out.Where = "wrong answer", "sim"
	default:
		out.OK, out.Detail = true, "passed (a simulated false pass: the answer is wrong)"
	}
	return out, nil
}

// splitmix64 is the SplitMix64 finaliser: a bijective mix of 64 bits.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// mix combines a seed with one more value.
func mix(seed, v uint64) uint64 { return splitmix64(seed ^ splitmix64(v)) }

// unit maps 64 random bits to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }
