package eval

import (
	"math"
	"testing"
)

func TestFisherExact(t *testing.T) {
	for _, tc := range []struct {
		a, b, c, d int
		want       float64 // two-sided, as R's fisher.test
	}{
		{3, 1, 1, 3, 0.4857143},    // the tea-tasting lady: 34/70
		{1, 9, 11, 3, 0.002759456}, // Wikipedia's dieting example
		{5, 0, 0, 5, 0.007936508},  // 2/252
		{0, 0, 0, 0, 1},
		{10, 10, 10, 10, 1},
		{0, 10, 0, 10, 1}, // no successes on either side
	} {
		if got := FisherExact(tc.a, tc.b, tc.c, tc.d); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("FisherExact(%d,%d,%d,%d) = %.7f, want %.7f", tc.a, tc.b, tc.c, tc.d, got, tc.want)
		}
	}
}

func TestMannWhitney(t *testing.T) {
	for _, tc := range []struct {
		xs, ys []float64
		want   float64
	}{
		// U = 0, mean 4.5, variance 9/12·7 = 5.25: z = 4/√5.25 = 1.7457.
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.080856},
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{[]float64{2, 2, 2}, []float64{2, 2}, 1}, // all tied
		{nil, []float64{1}, 1},
	} {
		if got := MannWhitney(tc.xs, tc.ys); math.Abs(got-tc.want) > 1e-5 {
			t.Errorf("MannWhitney(%v, %v) = %.6f, want %.6f", tc.xs, tc.ys, got, tc.want)
		}
	}
}

func TestNewcombe(t *testing.T) {
	// Newcombe (1998), table II example (a): 56/70 vs 48/80, difference
	// 0.2 with interval 0.0524 to 0.3339.
	lo, hi := Newcombe(48, 80, 56, 70)
	if math.Abs(lo-0.0524) > 5e-4 || math.Abs(hi-0.3339) > 5e-4 {
		t.Errorf("Newcombe = [%.4f, %.4f], want [0.0524, 0.3339]", lo, hi)
	}
}

func TestNearestRank(t *testing.T) {
	xs := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := NearestRank(xs, 0.5); got != 5 {
		t.Errorf("p50 = %d, want 5", got)
	}
	if got := NearestRank(xs, 0.9); got != 9 {
		t.Errorf("p90 = %d, want 9", got)
	}
	if got := NearestRank(nil, 0.9); got != 0 {
		t.Errorf("p90 of nothing = %d", got)
	}
}
