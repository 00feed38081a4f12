package eval

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Stability is how reliably each case succeeds across its repeats: a case
// that passes 2 runs of 3 is flaky, and a suite of such cases scores a
// pass@1 far above its pass^k (τ-bench's reliability measure).
type Stability struct {
	// K is the number of runs pass^K asks to all succeed: the fewest runs
	// any case had, when that is at least 2 (0 otherwise, and PassHatK is
	// then not defined).
	K int `json:"k"`
	// PassAt1 is the mean over cases of each case's share of successful
	// runs: the chance that one run of a case drawn at random succeeds.
	PassAt1 float64 `json:"pass_at_1"`
	// PassHatK is the mean over cases of C(c, K) / C(n, K), for a case
	// with c successes in n runs: the chance that K runs of a case drawn
	// at random all succeed, estimated without bias from its n runs.
	PassHatK float64 `json:"pass_hat_k"`
	// StablePass, Flaky and StableFail count the cases whose runs all
	// succeeded, some did, or none did.
	StablePass int `json:"stable_pass"`
	Flaky      int `json:"flaky"`
	StableFail int `json:"stable_fail"`
	// Cases is each case, in name order.
	Cases []CaseStability `json:"cases"`
}

// CaseStability is one case's runs. A case is one task under one model.
type CaseStability struct {
	Case  string `json:"case"`
	Model string `json:"model,omitempty"`
	Rate  Rate   `json:"rate"`
	Class string `json:"class"` // StablePass, Flaky or StableFail
}

// The classes of CaseStability.
const (
	StablePass = "stable-pass"
	Flaky      = "flaky"
	StableFail = "stable-fail"
)

// classify names the class of k successes in n runs.
func classify(k, n int) string {
	switch k {
	case n:
		return StablePass
	case 0:
		return StableFail
	}
	return Flaky
}

type caseKey struct{ model, name string }

// perCase counts each case's successes and runs.
func perCase(records []Record) map[caseKey][2]int {
	out := map[caseKey][2]int{}
	for _, r := range records {
		k := caseKey{r.Model, r.Case}
		c := out[k]
		if r.Success() {
			c[0]++
		}
		c[1]++
		out[k] = c
	}
	return out
}

func newStability(records []Record) Stability {
	counts := perCase(records)
	s := Stability{Cases: []CaseStability{}}
	if len(counts) == 0 {
		return s
	}
	keys := sortedCases(counts)
	s.K = math.MaxInt
	for _, k := range keys {
		s.K = min(s.K, counts[k][1])
	}
	if s.K < 2 {
		s.K = 0
	}
	for _, key := range keys {
		c := counts[key]
		cs := CaseStability{Case: key.name, Model: key.model, Rate: NewRate(c[0], c[1]), Class: classify(c[0], c[1])}
		s.Cases = append(s.Cases, cs)
		switch cs.Class {
		case StablePass:
			s.StablePass++
		case Flaky:
			s.Flaky++
		case StableFail:
			s.StableFail++
		}
		s.PassAt1 += cs.Rate.P
		if s.K > 0 {
			s.PassHatK += choose(c[0], s.K) / choose(c[1], s.K)
		}
	}
	s.PassAt1 /= float64(len(keys))
	s.PassHatK /= float64(len(keys))
	return s
}

func sortedCases(m map[caseKey][2]int) []caseKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b caseKey) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.model, b.model))
	})
}

// choose is the binomial coefficient C(n, k), 0 when k > n.
func choose(n, k int) float64 {
	if k > n {
		return 0
	}
	return math.Round(math.Exp(lfact(n) - lfact(k) - lfact(n-k)))
}

// CaseChange is one case whose runs went worse from the baseline to the
// candidate, with the test that decides whether that is a regression.
type CaseChange struct {
	Case  string `json:"case"`
	Model string `json:"model,omitempty"`
	Base  Rate   `json:"base"`
	Cand  Rate   `json:"cand"`
	// BaseClass and CandClass are the case's stability on each side.
	BaseClass string `json:"base_class"`
	CandClass string `json:"cand_class"`
	// P is Fisher's exact test of the two rates; PAdj is P adjusted over
	// the cases (Holm) when the comparison adjusts.
	P    float64 `json:"p"`
	PAdj float64 `json:"p_adjusted"`
	// Regression: its rate dropped significantly. Note says why a worse
	// case is not one (a flaky baseline, or too few runs to tell).
	Regression bool   `json:"regression"`
	Note       string `json:"note"`
}

// caseChanges are the cases in both base and cand whose success rate
// dropped, each tested on its own runs.
func caseChanges(base, cand []Record, alpha float64, adjust bool) []CaseChange {
	b, c := perCase(base), perCase(cand)
	var out []CaseChange
	var rows []Row // for Holm, one per change
	for _, key := range sortedCases(b) {
		cc, ok := c[key]
		if !ok {
			continue
		}
		bc := b[key]
		br, cr := NewRate(bc[0], bc[1]), NewRate(cc[0], cc[1])
		if cr.P >= br.P {
			continue
		}
		p := FisherExact(bc[0], bc[1]-bc[0], cc[0], cc[1]-cc[0])
		out = append(out, CaseChange{Case: key.name, Model: key.model, Base: br, Cand: cr,
			BaseClass: classify(bc[0], bc[1]), CandClass: classify(cc[0], cc[1]), P: p, PAdj: p})
		rows = append(rows, Row{Test: "fisher", P: p, PAdj: p})
	}
	if adjust {
		holm(rows)
	}
	for i := range out {
		ch := &out[i]
		ch.PAdj = rows[i].PAdj
		ch.Regression = ch.PAdj < alpha
		switch {
		case ch.Regression:
			ch.Note = fmt.Sprintf("%s → %s: its success rate dropped significantly (%s)", ch.BaseClass, ch.CandClass, pText(ch.PAdj))
		case ch.BaseClass == Flaky:
			ch.Note = fmt.Sprintf("flaky in the baseline (%d of %d passed): not a regression, its rate did not move significantly (%s)", ch.Base.K, ch.Base.N, pText(ch.PAdj))
		default:
			ch.Note = fmt.Sprintf("%s → %s: not significant at %d and %d runs (%s); more repeats would tell", ch.BaseClass, ch.CandClass, ch.Base.N, ch.Cand.N, pText(ch.PAdj))
		}
	}
	return out
}

func pText(p float64) string {
	if p < 0.0001 {
		return "p<0.0001"
	}
	return fmt.Sprintf("p=%.4f", p)
}
