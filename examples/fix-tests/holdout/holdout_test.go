// Package holdout holds tests the agent never sees: they measure whether a
// fix that passes the visible tests is right beyond them.
package holdout

import (
	"testing"

	"invoice/cart"
	"invoice/money"
)

func TestFormatSmallAndNegative(t *testing.T) {
	for cents, want := range map[int]string{0: "0.00", 7: "0.07", -1205: "-12.05", 100000: "1000.00"} {
		if got := money.Format(cents); got != want {
			t.Errorf("Format(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestReceiptOfManyLines(t *testing.T) {
	var c cart.Cart
	c.Add("bread", 250, 2)
	c.Add("jam", 399, 1)
	c.Add("butter", 1, 5)
	want := "2 x bread\n1 x jam\n5 x butter\ntotal 9.04\n"
	if got := c.Receipt(); got != want {
		t.Errorf("Receipt() = %q, want %q", got, want)
	}
}
