package broken

// Double doubles x.
func Double(x int) int {
	return x * two
}
