package money

import "testing"

func TestFormatWhole(t *testing.T) {
	if got := Format(1230); got != "12.30" {
		t.Errorf("Format(1230) = %q, want 12.30", got)
	}
}

func TestFormatPadsCents(t *testing.T) {
	if got := Format(1205); got != "12.05" {
		t.Errorf("Format(1205) = %q, want 12.05", got)
	}
}
