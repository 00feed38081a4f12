package execcheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ratchetloop/ratchet/sandbox"
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

// TestGoExpectedTestsOfMainModule: the tests a go check requires are those
// `go test ./...` runs in a mounted directory, not those of vendored
// modules, testdata, ignored directories or a module of its own (a mounted
// module cache counted its 421 tests as ones that must run).
func TestGoExpectedTestsOfMainModule(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"go.mod":                      "module m\n",
		"a_test.go":                   "package m\n\nfunc TestA(t *testing.T) {}\n",
		"pkg/b_test.go":               "package pkg\n\nfunc TestB(t *testing.T) {}\n",
		"vendor/x/x_test.go":          "package x\n\nfunc TestVendored(t *testing.T) {}\n",
		"testdata/t_test.go":          "package t\n\nfunc TestData(t *testing.T) {}\n",
		"_skip/s_test.go":             "package s\n\nfunc TestUnderscore(t *testing.T) {}\n",
		".hidden/h_test.go":           "package h\n\nfunc TestHidden(t *testing.T) {}\n",
		"modcache/y@v1/go.mod":        "module y\n",
		"modcache/y@v1/y_test.go":     "package y\n\nfunc TestOtherModule(t *testing.T) {}\n",
		"modcache/y@v1/sub/z_test.go": "package sub\n\nfunc TestOtherModuleSub(t *testing.T) {}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := expectedTests("go", []sandbox.Mount{{Source: dir, Target: "."}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.name)
	}
	slices.Sort(names)
	if want := []string{"TestA", "TestB"}; !slices.Equal(names, want) {
		t.Errorf("required tests %q, want %q", names, want)
	}
}
