package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaches: a cache keeps what one run wrote for the next, at a target
// inside the workspace that ${WORKSPACE} can name; targets outside the
// workspace are refused.
func TestCaches(t *testing.T) {
	for _, backend := range []string{IsolationBwrap, IsolationNamespaces} {
		t.Run(backend, func(t *testing.T) {
			r := runnerFor(t, backend)
			// Not in t.TempDir(): its 0700 parent would keep the sandbox
			// uid out, as the home directory does.
			host := filepath.Join(os.TempDir(), fmt.Sprintf("ratchet-cache-test-%d-%s", os.Getpid(), backend))
			t.Cleanup(func() { os.RemoveAll(host) })
			spec := func(cmd string) Spec {
				return Spec{
					Command: []string{"sh", "-c", cmd},
					Env:     map[string]string{"CACHE": "${WORKSPACE}/.cache/x"},
					Caches:  []Cache{{Host: host, Target: ".cache/x"}},
				}
			}
			if res := run(t, r, spec(`echo kept > "$CACHE/f"`)); res.ExitCode != 0 {
				t.Fatalf("write: exit %d: %s", res.ExitCode, res.Stderr)
			}
			res := run(t, r, spec(`cat "$CACHE/f"`))
			if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "kept" {
				t.Fatalf("read: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			bad := spec("true")
			bad.Caches[0].Target = "../outside"
			if _, err := r.Run(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
				t.Errorf("escaping target: err %v", err)
			}
		})
	}
}
