package calc

import (
	"fmt"
	"os"
)

// A wrong solution whose init prints test2json-framed lines saying that
// both tests passed, and exits 0 before any test runs.
func init() {
	for _, name := range []string{"TestAdd", "TestNegative"} {
		fmt.Printf("\x16=== RUN   %s\n\x16--- PASS: %s (0.00s)\n", name, name)
	}
	fmt.Print("\x16PASS\n")
	os.Exit(0)
}

func Add(a, b int) int { return 0 }
