package eval

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ratchetloop/ratchet/sim"
)

// Wilson returns the 95% Wilson score interval for k successes in n trials;
// [0, 1] when n is 0. It is sim.Wilson: one formula in the code base.
func Wilson(k, n int) (lo, hi float64) { return sim.Wilson(k, n) }

// Newcombe returns the 95% interval of the difference of two proportions,
// k1/n1 − k0/n0, by Newcombe's hybrid score method (his method 10), built
// from the two Wilson intervals. It stays inside [−1, 1] and behaves at 0
// and 1, where the Wald interval collapses.
func Newcombe(k0, n0, k1, n1 int) (lo, hi float64) {
	l0, u0 := Wilson(k0, n0)
	l1, u1 := Wilson(k1, n1)
	p0, p1 := frac(k0, n0), frac(k1, n1)
	d := p1 - p0
	lo = d - math.Sqrt((p1-l1)*(p1-l1)+(u0-p0)*(u0-p0))
	hi = d + math.Sqrt((u1-p1)*(u1-p1)+(p0-l0)*(p0-l0))
	return max(-1, lo), min(1, hi)
}

func frac(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// lfact is log(n!).
func lfact(n int) float64 {
	v, _ := math.Lgamma(float64(n) + 1)
	return v
}

// FisherExact returns the two-sided p-value of Fisher's exact test on the
// 2×2 table [[a, b], [c, d]] (rows: the two groups; columns: success,
// failure). With the margins fixed, the count in the top-left cell is
// hypergeometric; the p-value sums the probabilities of every table at
// least as unlikely as the one observed (probabilities within a relative
// 1e-7 of it count as equal, so floating-point noise does not drop ties).
// Probabilities are computed exactly in log space from log-factorials.
func FisherExact(a, b, c, d int) float64 {
	r1, c1, n := a+b, a+c, a+b+c+d
	if n == 0 {
		return 1
	}
	logP := func(x int) float64 { // P(top-left = x)
		return lfact(r1) + lfact(n-r1) + lfact(c1) + lfact(n-c1) -
			lfact(n) - lfact(x) - lfact(r1-x) - lfact(c1-x) - lfact(n-r1-c1+x)
	}
	obs := logP(a)
	p := 0.0
	for x := max(0, r1+c1-n); x <= min(r1, c1); x++ {
		if lp := logP(x); lp <= obs+1e-7 {
			p += math.Exp(lp)
		}
	}
	return min(1, p)
}

// MannWhitney returns the two-sided p-value of the Mann–Whitney U test that
// xs and ys come from the same distribution, by the normal approximation
// with a tie correction and a continuity correction. It returns 1 when
// either sample is empty or every value is tied.
func MannWhitney(xs, ys []float64) float64 {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, x := range xs {
		all = append(all, obs{x, true})
	}
	for _, y := range ys {
		all = append(all, obs{y, false})
	}
	slices.SortFunc(all, func(a, b obs) int { return cmpFloat(a.v, b.v) })
	n := float64(n1 + n2)
	r1, ties := 0.0, 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mid-rank of positions i..j-1, 1-based
		for k := i; k < j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u := r1 - float64(n1)*float64(n1+1)/2
	mean := float64(n1) * float64(n2) / 2
	variance := float64(n1) * float64(n2) / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 1
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	if z < 0 {
		z = 0
	}
	return min(1, math.Erfc(z/math.Sqrt2))
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// BootstrapSeed is the seed of every bootstrap, so that a comparison is
// reproducible.
const BootstrapSeed = 20261130

// BootstrapRounds is how many resamples a bootstrap draws.
const BootstrapRounds = 2000

// bootstrapDiff resamples n0 base and n1 candidate units with replacement,
// computes stat on each side (stat gets the resampled indices and returns
// false when the statistic is undefined for that resample, e.g. no
// successes) and returns the 95% percentile interval of stat(cand) −
// stat(base) and a two-sided p-value: twice the smaller share of resampled
// differences on either side of 0, between 1/resamples and 1. ok is false when fewer than
// half the resamples were defined.
func bootstrapDiff(n0, n1 int, stat0, stat1 func(idx []int) (float64, bool)) (lo, hi, p float64, ok bool) {
	if n0 == 0 || n1 == 0 {
		return 0, 0, 1, false
	}
	r := rand.New(rand.NewPCG(BootstrapSeed, uint64(n0)<<32|uint64(n1)))
	idx0, idx1 := make([]int, n0), make([]int, n1)
	diffs := make([]float64, 0, BootstrapRounds)
	for range BootstrapRounds {
		for i := range idx0 {
			idx0[i] = r.IntN(n0)
		}
		for i := range idx1 {
			idx1[i] = r.IntN(n1)
		}
		s0, ok0 := stat0(idx0)
		s1, ok1 := stat1(idx1)
		if ok0 && ok1 {
			diffs = append(diffs, s1-s0)
		}
	}
	if len(diffs) < BootstrapRounds/2 {
		return 0, 0, 1, false
	}
	slices.Sort(diffs)
	lo, hi = quantile(diffs, 0.025), quantile(diffs, 0.975)
	var below, above int
	for _, d := range diffs {
		if d <= 0 {
			below++
		}
		if d >= 0 {
			above++
		}
	}
	// The bootstrap cannot resolve p below one resample in len(diffs).
	p = min(1, max(1/float64(len(diffs)), 2*float64(min(below, above))/float64(len(diffs))))
	return lo, hi, p, true
}

// quantile is the linear-interpolation quantile q of sorted xs (used for
// bootstrap intervals only; reported percentiles use nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}

// NearestRank returns the nearest-rank percentile q (0 < q ≤ 1) of sorted
// xs: the smallest value with at least a share q of the values at or below
// it, that is sorted[⌈q·n⌉−1]. 0 for an empty slice.
func NearestRank(sorted []int, q float64) int {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
