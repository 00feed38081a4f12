package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCaches: what a Fill run writes into a cache every later run reads;
// what any other run writes there (overwriting, planting, removing) it
// sees itself, at a target inside the workspace that ${WORKSPACE} can
// name, but no later run does, and the host directory never changes.
// Under the unsafe backend, which sees the host's files, the sandbox uid
// cannot reach the cache's content through its host path either.
func TestCaches(t *testing.T) {
	for _, backend := range []string{IsolationBwrap, IsolationNamespaces, IsolationUnsafe} {
		t.Run(backend, func(t *testing.T) {
			r := runnerFor(t, backend)
			host := filepath.Join(os.TempDir(), fmt.Sprintf("ratchet-cache-test-%d-%s", os.Getpid(), backend))
			t.Cleanup(func() { os.RemoveAll(host) })
			spec := func(cmd string, fill bool) Spec {
				return Spec{
					Command: []string{"sh", "-c", cmd},
					Env:     map[string]string{"CACHE": "${WORKSPACE}/.cache/x", "HOSTDIR": host},
					Caches:  []Cache{{Host: host, Target: ".cache/x", Fill: fill}},
				}
			}
			mustRun := func(cmd string, fill bool) Result {
				t.Helper()
				res := run(t, r, spec(cmd, fill))
				if res.ExitCode != 0 {
					t.Fatalf("%s: exit %d, stdout %q, stderr %q", cmd, res.ExitCode, res.Stdout, res.Stderr)
				}
				return res
			}
			mustRun(`echo kept > "$CACHE/f" && mkdir "$CACHE/d" && echo kept > "$CACHE/d/x"`, true)
			uid := testUID
			if os.Geteuid() != 0 {
				uid = os.Getuid()
			}
			layer := cacheLayer(host, uid)
			want := snapshotDir(t, layer)
			// A candidate's run may write its view of the cache, and reads
			// back what it wrote.
			mustRun(`cat "$CACHE/f" | grep -qx kept && echo forged > "$CACHE/f" && echo planted > "$CACHE/g" &&
				rm -r "$CACHE/d" && grep -qx forged "$CACHE/f" && test -f "$CACHE/g" && test ! -e "$CACHE/d"`, false)
			res := mustRun(`cat "$CACHE/f" "$CACHE/d/x"; ls "$CACHE"`, false)
			if got := strings.Fields(string(res.Stdout)); strings.Join(got, " ") != "kept kept d f" {
				t.Errorf("a later run reads %q, want the filled cache (kept kept d f)", got)
			}
			if got := snapshotDir(t, layer); got != want {
				t.Errorf("the host directory changed:\n%s\nwant\n%s", got, want)
			}
			if backend == IsolationUnsafe && os.Geteuid() == 0 {
				res := run(t, r, spec(`echo forged > "$HOSTDIR/layer-`+strconv.Itoa(uid)+`/f" || ls "$HOSTDIR"`, false))
				if res.ExitCode == 0 || snapshotDir(t, layer) != want {
					t.Errorf("the sandbox uid reached the cache through its host path: exit %d, stdout %q", res.ExitCode, res.Stdout)
				}
			}
			bad := spec("true", false)
			bad.Caches[0].Target = "../outside"
			if _, err := r.Run(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
				t.Errorf("escaping target: err %v", err)
			}
		})
	}
}

// snapshotDir lists every path below dir with its content.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
