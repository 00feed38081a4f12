package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TemporalVersion is the Temporal CLI whose dev server the tests run;
// ./test.sh builds it into TemporalBin's default place.
const TemporalVersion = "v1.5.1"

// TemporalBin returns the path of the Temporal CLI: $RATCHET_TEMPORAL_BIN,
// else $HOME/.cache/ratchet/tools/temporal-<version>/temporal, or ends the
// test with Missing.
func TemporalBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("RATCHET_TEMPORAL_BIN")
	if bin == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			Missing(t, "no home directory to find the Temporal CLI in: "+err.Error())
		}
		bin = filepath.Join(home, ".cache", "ratchet", "tools", "temporal-"+TemporalVersion, "temporal")
	}
	if _, err := os.Stat(bin); err != nil {
		Missing(t, fmt.Sprintf("the Temporal CLI is not at %s (./test.sh builds it: GOBIN=%s go install github.com/temporalio/cli/cmd/temporal@%s)", bin, filepath.Dir(bin), TemporalVersion))
	}
	return bin
}

// TemporalServer starts a Temporal dev server (in memory, no UI) on free
// loopback ports, waits until it serves, and returns its HOST:PORT. The
// server is stopped when the test ends.
func TemporalServer(t testing.TB) string {
	t.Helper()
	bin := TemporalBin(t)
	ports := freePorts(t, 3)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]), "--http-port", strconv.Itoa(ports[1]), "--metrics-port", strconv.Itoa(ports[2]),
		"--db-filename", "", "--log-level", "error")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the Temporal dev server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("the Temporal dev server exited:\n%s", out.String())
		default:
		}
		// The frontend's port is listened on once the server serves.
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Temporal dev server did not serve on %s within a minute:\n%s", addr, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
