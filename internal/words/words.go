// Package words writes counts the way people read them.
package words

import "strconv"

// Count is n and noun, the noun plural unless n is 1: "1 run", "3 runs".
// Nouns with an irregular plural are not for it.
func Count[N int | int64](n N, noun string) string {
	s := strconv.FormatInt(int64(n), 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}
