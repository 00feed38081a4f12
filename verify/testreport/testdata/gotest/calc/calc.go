package calc

// Add returns a+b, except that it is wrong for two negatives.
func Add(a, b int) int {
	if a < 0 && b < 0 {
		return a + b - 1
	}
	return a + b
}
