package taskfile

import "fmt"

// DidYouMean returns `; did you mean "x"?` for the one known word closest
// to a misspelt one (a typo, a swapped pair of letters), or "" when none is
// close enough to be a likely intent.
func DidYouMean(word string, known []string) string {
	best, bestDist := "", 0
	for _, k := range known {
		d := editDistance(word, k)
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	// Up to 2 edits, and fewer than half the word: "stpes" → "steps",
	// but "colour" is not a misspelling of "mode".
	if best == "" || bestDist > 2 || 2*bestDist >= len([]rune(word)) {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each cost 1.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance between x[:i] and y[:j].
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
