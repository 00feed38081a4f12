package execcheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTestNamesOutsideASCII: a test named outside ASCII is required like
// any other, under the name its runner reports it by.
func TestTestNamesOutsideASCII(t *testing.T) {
	dir := t.TempDir()
	py := filepath.Join(dir, "test_x.py")
	// Python NFKC-normalizes identifiers: pytest reports test_ﬁx as test_fix.
	src := "def test_négatif():\n    pass\n\ndef test_ﬁx():\n    pass\n\nclass TestÉté:\n    def test_α(self):\n        pass\n"
	if err := os.WriteFile(py, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := pytestNames(py)
	if want := []string{"test_négatif", "test_fix", "test_α"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("pytest names %q %v, want %q", got, err, want)
	}
	gof := filepath.Join(dir, "x_test.go")
	// go test runs TestÉté (É is upper case) but not Testété.
	src = "package x\n\nimport \"testing\"\n\nfunc TestÉté(t *testing.T) {}\n\nfunc Testété(t *testing.T) {}\n\nfunc Test_α(t *testing.T) {}\n"
	if err := os.WriteFile(gof, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = goTestNames(gof)
	if want := []string{"TestÉté", "Test_α"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("go test names %q %v, want %q", got, err, want)
	}
}
