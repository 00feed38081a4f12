package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
)

// need fails (under CI=true) or skips the test when ok is false.
func need(t testing.TB, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	testenv.Missing(t, what+" (./test.sh installs it)")
}

var (
	runnersMu sync.Mutex
	runners   = map[string]Runner{}
)

// runnerFor returns a Runner for backend, or fails/skips when the backend
// does not work here.
func runnerFor(t testing.TB, backend string) Runner {
	t.Helper()
	runnersMu.Lock()
	defer runnersMu.Unlock()
	if r, ok := runners[backend]; ok {
		return r
	}
	if backend == IsolationNamespaces {
		need(t, os.Geteuid() == 0, "the namespaces backend needs root")
	}
	r, err := New(Config{Backend: backend, AllowUnsafe: backend == IsolationUnsafe, UID: testUID, GID: testUID})
	need(t, err == nil, "backend "+backend+": "+errString(err))
	runners[backend] = r
	return r
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// needPython requires /usr/bin/python3 with pytest.
func needPython(t testing.TB) {
	t.Helper()
	err := exec.Command("/usr/bin/python3", "-c", "import pytest").Run()
	need(t, err == nil, "/usr/bin/python3 with pytest (apt-get install python3 python3-pytest)")
}

// isolated are the backends that must contain hostile candidates.
var isolated = []string{IsolationBwrap, IsolationNamespaces}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testUID is the host uid the tests' sandboxes run as (when root): not
// nobody, so that other programs' processes running as nobody neither count
// against the tests' RLIMIT_NPROC nor look like sandbox leftovers.
const testUID = 61999

// noSandboxProcs fails if any process of the sandbox uid is alive.
func noSandboxProcs(t testing.TB) {
	t.Helper()
	if left := testenv.ProcessesOf(testUID); len(left) > 0 {
		t.Errorf("processes of the sandbox uid %d still alive after Run returned: %v", testUID, left)
	}
}

func run(t testing.TB, r Runner, s Spec) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }

func hasTampered(res Result, prefix string) bool {
	for _, s := range res.Tampered {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 0, 64) + " ms" }
