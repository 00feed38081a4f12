// Package testenv is what tests share about the machine they run on. A
// test whose real component (a sandbox, PostgreSQL, Chromium, an npm
// package…) is missing fails under CI=true, where ./test.sh has installed
// everything, and skips elsewhere.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Missing ends the test because what it needs is missing (what says what
// and how to get it): a failure under CI=true, a skip elsewhere.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("missing under CI=true, so this fails instead of skipping: %s", what)
	}
	t.Skipf("skipping: %s (under CI=true this fails)", what)
}

// PostgresDSN returns the DSN of the throwaway PostgreSQL cluster that
// ./test.sh starts, or ends the test with Missing.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("RATCHET_TEST_POSTGRES_DSN")
	if dsn == "" {
		Missing(t, "RATCHET_TEST_POSTGRES_DSN is not set (./test.sh starts a throwaway PostgreSQL cluster and sets it)")
	}
	return dsn
}

// NPMBin returns the path of an executable that ./test.sh installs with
// npm into the repository's .cache/npm ($RATCHET_NPM_BIN names another
// directory), or ends the test with Missing.
func NPMBin(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("RATCHET_NPM_BIN")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "npm", "node_modules", ".bin")
	}
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		Missing(t, fmt.Sprintf("%s is not installed at %s (./test.sh installs it with npm)", name, path))
	} else if _, err := exec.LookPath("node"); err != nil {
		Missing(t, "node is not installed (./test.sh installs it)")
	}
	return path
}

// moduleRoot is the nearest directory above the working directory (a
// test's package directory) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}
