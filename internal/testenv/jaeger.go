package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// JaegerVersion is the Jaeger that ./test.sh builds for the telemetry
// tests.
const JaegerVersion = "v1.76.0"

// Jaeger returns the path of the Jaeger binary ./test.sh builds into
// $HOME/.cache/ratchet/tools ($RATCHET_JAEGER names another), or ends the
// test with Missing.
func Jaeger(t testing.TB) string {
	t.Helper()
	path := os.Getenv("RATCHET_JAEGER")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			Missing(t, "no home directory to find Jaeger in: "+err.Error())
		}
		path = filepath.Join(home, ".cache", "ratchet", "tools", "jaeger-"+JaegerVersion, "jaeger")
	}
	if _, err := os.Stat(path); err != nil {
		Missing(t, fmt.Sprintf("Jaeger %s is not built at %s (./test.sh builds it)", JaegerVersion, path))
	}
	return path
}
