// Package money formats amounts kept in cents, so that sums are exact.
package money

import "fmt"

// Format writes cents as units and two-digit cents: 1205 is "12.05".
func Format(cents int) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%d", sign, cents/100, cents%100)
}
