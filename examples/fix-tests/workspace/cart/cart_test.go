package cart

import "testing"

func TestTotal(t *testing.T) {
	var c Cart
	c.Add("apple", 50, 3)
	c.Add("pear", 75, 1)
	if got := c.Total(); got != 225 {
		t.Errorf("Total() = %d, want 225 (3 apples at 50 and a pear at 75)", got)
	}
}

func TestReceipt(t *testing.T) {
	var c Cart
	c.Add("tea", 401, 1)
	want := "1 x tea\ntotal 4.01\n"
	if got := c.Receipt(); got != want {
		t.Errorf("Receipt() = %q, want %q", got, want)
	}
}
