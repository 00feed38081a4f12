package mcp

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
	"unicode/utf8"
)

// stderrTail is how much of a stdio server's stderr is kept.
const stderrTail = 4 << 10

// process is a stdio server's process, as far as this package looks after
// it: the SDK's CommandTransport starts it and closes it gracefully; this
// captures its stderr and makes sure nothing it started outlives Close.
type process struct {
	cmd     *exec.Cmd
	w       *os.File      // the child's stderr, closed here once it is started
	drained chan struct{} // closed when stderr reaches EOF
	stderr  *tail
}

// startable prepares cmd to be started by the SDK: its stderr goes to a
// pipe read into a bounded tail, and it gets a process group of its own
// (where the platform has them) so that stop reaches its children too,
// such as the node process npx starts.
func startable(cmd *exec.Cmd) (*process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, w: w, drained: make(chan struct{}), stderr: &tail{max: stderrTail}}
	// An *os.File is handed to the child as is, so no goroutine of the
	// exec package copies it and Wait does not wait for its EOF, which a
	// grandchild holding it open would delay.
	cmd.Stderr = w
	ownGroup(cmd)
	go func() {
		defer close(p.drained)
		io.Copy(p.stderr, r)
		r.Close()
	}()
	return p, nil
}

// started closes this process's copy of the child's stderr, so that the
// pipe reaches EOF when the child and its children have exited.
func (p *process) started() { p.w.Close() }

// stop kills whatever is left of the process group, after the SDK has
// closed the server's input and waited for it, and waits (briefly) for the
// last of its stderr.
func (p *process) stop() {
	p.w.Close()
	if p.cmd.Process != nil {
		killGroup(p.cmd)
	}
	select {
	case <-p.drained:
	case <-time.After(time.Second):
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if len(b) >= t.max {
		t.truncated = t.truncated || len(t.buf) > 0 || len(b) > t.max
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(b) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

// String returns what is kept, starting at a line (or at least a rune)
// boundary when the start was cut, after a marker saying so.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if !t.truncated {
		return string(b)
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)/2 {
		b = b[i+1:]
	} else {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return "[…]\n" + string(b)
}
