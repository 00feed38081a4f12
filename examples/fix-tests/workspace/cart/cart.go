// Package cart adds up a shopping cart.
package cart

import (
	"fmt"
	"strings"

	"invoice/money"
)

// Line is one product in the cart: its unit price in cents and how many.
type Line struct {
	Name  string
	Cents int
	Qty   int
}

// Cart is the lines bought together.
type Cart struct{ Lines []Line }

// Add puts qty of a product into the cart.
func (c *Cart) Add(name string, cents, qty int) {
	c.Lines = append(c.Lines, Line{name, cents, qty})
}

// Total is what the whole cart costs, in cents.
func (c *Cart) Total() int {
	sum := 0
	for _, l := range c.Lines {
		sum += l.Cents
	}
	return sum
}

// Receipt lists the lines and the total, one per line.
func (c *Cart) Receipt() string {
	var b strings.Builder
	for _, l := range c.Lines {
		fmt.Fprintf(&b, "%d x %s\n", l.Qty, l.Name)
	}
	fmt.Fprintf(&b, "total %s\n", money.Format(c.Total()))
	return b.String()
}
