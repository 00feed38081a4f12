// Package judge keeps the candidate out of the process that judges it.
//
// A check in judge isolation runs two sandboxes: the candidate's module in
// one, served by a small trusted program, and the tests in the other,
// importing a stand-in module (Proxy) whose functions forward every call.
// The host relays the calls between them and checks every answer before the
// tests see it: only plain data crosses (see wire.py), so the comparisons a
// test makes run on builtin values in a process where no code of the
// candidate ever ran, and nothing the candidate does can reach the tests'
// files, their report or the runner. This is the shape of an online judge's
// separate checker, or of an evaluation harness calling a black box.
//
// The candidate's process is started with the session, so that it imports
// while the test runner starts. A call it does not answer within
// CallTimeout stops it; a call made after it died starts a fresh one, at
// most MaxRestarts times.
package judge

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
)

var (
	//go:embed wire.py
	wirePy string
	//go:embed server.py
	serverPy string
	//go:embed proxy.py
	proxyPy string
)

// Proxy is the source of the module the tests import in place of the
// candidate's module named module. It talks to the judge on file
// descriptor 3. Its code runs in a namespace of its own; the module holds
// only what the candidate's exports.
func Proxy(module string) []byte {
	code := pyString(wirePy + "\n\n" + proxyPy)
	return []byte(`# ratchet's judge: a stand-in for the candidate's module, whose code runs in
# another process. Every call crosses to it as plain data.
_ns = {"__name__": "ratchet.judge", "_MODULE": ` + pyString(module) + `}
exec(compile(` + code + `, "<ratchet judge>", "exec"), _ns)
globals().update(_ns["_exports"])
__all__ = _ns["_all"]
if _ns["_getattr"] is not None:
    __getattr__ = _ns["_getattr"]
del _ns
`)
}

// Config configures a session.
type Config struct {
	Runner sandbox.Runner
	// Spec is the candidate's sandbox: its files, the command that serves
	// them (PythonSpec, or a Go plan's server) and its limits, whose Wall
	// bounds the whole session. The session adds its end of the channel
	// as file descriptor 3.
	Spec sandbox.Spec
	// Go says the candidate is served by a Go plan's server, whose values
	// are any JSON (the tests decode them into their declared types);
	// otherwise only wire.py's shapes cross.
	Go bool
	// StartTimeout bounds the wait for the candidate's process to come up
	// (default CallTimeout); CallTimeout bounds each call (default 10s);
	// MaxRestarts bounds the processes started after the first (default 3).
	StartTimeout, CallTimeout time.Duration
	MaxRestarts               int
	// Channel is the tests' line to the session, when it was made before
	// it (NewChannel): a test runner started ahead of its candidate holds
	// its end from its start. Nil makes a fresh one (Session.TestEnd).
	Channel *Channel
	// Warm, when set, is the candidate's first process, started ahead
	// for Spec (PythonWarm): Spec's Files go to it. Later ones start
	// with Spec.
	Warm *Warm
}

// Channel is a line between a test runner and the session that will
// answer it, made before the session is: its tests' end can be handed to
// a sandbox that starts ahead. It serves one session.
type Channel struct {
	host net.Conn
	end  *os.File
}

// NewChannel makes a channel for Config.Channel.
func NewChannel() (*Channel, error) {
	host, end, err := socketPair()
	if err != nil {
		return nil, err
	}
	return &Channel{host: host, end: end}, nil
}

// TestEnd is the file the tests' sandbox gets as its descriptor 3.
func (c *Channel) TestEnd() *os.File { return c.end }

// Close closes both ends of a channel that no session took.
func (c *Channel) Close() {
	c.end.Close()
	c.host.Close()
}

// PythonSpec is the candidate's sandbox for the Python module named
// module, of source source: the module alone, served by the trusted
// server run by python (default python3) with -E -s.
func PythonSpec(module string, source []byte, python string, env map[string]string, limits sandbox.Limits) sandbox.Spec {
	return sandbox.Spec{
		Files:   map[string][]byte{module + ".py": source},
		Command: serverCommand(python, module, ""),
		Env:     env,
		Limits:  limits,
	}
}

// Warm is the candidate's first process started ahead of its candidate
// (PythonWarm): the server waits at its gate until the session gives it
// the module. It serves one session.
type Warm struct {
	st   *sandbox.Started
	conn net.Conn
}

// PythonWarm starts ahead what PythonSpec would run, for the module named
// module: the server, whose module source the session's Spec.Files hold.
func PythonWarm(st sandbox.Starter, module, python string, env map[string]string, limits sandbox.Limits) (*Warm, error) {
	host, end, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer end.Close() // the sandbox holds it once Start returns
	started, err := st.Start(context.Background(), sandbox.Spec{
		Command:    serverCommand(python, module, ", gate=4"),
		Env:        env,
		Limits:     limits,
		ExtraFiles: []*os.File{end},
	})
	if err != nil {
		host.Close()
		return nil, err
	}
	return &Warm{st: started, conn: host}, nil
}

// Close stops a Warm that no session took.
func (w *Warm) Close() {
	w.st.Close()
	w.conn.Close()
}

func serverCommand(python, module, args string) []string {
	return []string{cmp.Or(python, "python3"), "-E", "-s", "-c", wirePy + "\n\n" + serverPy + "\n\n_serve(" + pyString(module) + args + ")\n"}
}

// Stats is what a session did.
type Stats struct {
	Calls, Restarts int
}

// Session relays one test run's calls to one candidate.
type Session struct {
	cfg     Config
	ctx     context.Context
	cancel  context.CancelFunc
	tests   net.Conn // the host's end of the tests' channel
	testEnd *os.File // the tests' end, for their sandbox's ExtraFiles
	served  chan struct{}

	// Owned by the serving goroutine until served is closed.
	proc  *proc
	hello []byte          // the answer to the tests' hello, once known
	funcs map[string]bool // the functions the tests may call
	stats Stats
	// failed says why the candidate's code did not load, once it did not;
	// no further process is started then.
	failed string
}

// Start prepares a session and starts the candidate's process.
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 10 * time.Second
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = cfg.CallTimeout
	}
	if cfg.MaxRestarts == 0 {
		cfg.MaxRestarts = 3
	}
	ch := cfg.Channel
	if ch == nil {
		var err error
		if ch, err = NewChannel(); err != nil {
			return nil, err
		}
	}
	s := &Session{cfg: cfg, tests: ch.host, testEnd: ch.end, served: make(chan struct{})}
	if w := cfg.Spec.Limits.Wall; w > 0 {
		s.ctx, s.cancel = context.WithTimeout(ctx, w)
	} else {
		s.ctx, s.cancel = context.WithCancel(ctx)
	}
	s.proc = s.start()
	go s.serve()
	return s, nil
}

// TestEnd is the file the tests' sandbox gets as its descriptor 3.
func (s *Session) TestEnd() *os.File { return s.testEnd }

// Close ends the session once the tests have run, and stops the candidate.
func (s *Session) Close() Stats {
	s.testEnd.Close()
	s.tests.Close()
	<-s.served
	s.cancel()
	if s.proc != nil {
		s.proc.stop()
	}
	return s.stats
}

// serve answers the tests' requests until they hang up.
func (s *Session) serve() {
	defer close(s.served)
	for {
		req, err := readFrame(s.tests)
		if err != nil {
			return
		}
		if err := writeFrame(s.tests, s.answer(req)); err != nil {
			return
		}
	}
}

// testRequest is what the proxy sends.
type testRequest struct {
	Op   string `json:"op"`
	Name string `json:"name"`
}

func (s *Session) answer(frame []byte) []byte {
	var req testRequest
	if err := json.Unmarshal(frame, &req); err != nil {
		return judgeError("the judge could not read the tests' request: " + err.Error())
	}
	if s.hello == nil || (req.Op == "call" && s.proc == nil && s.failed == "") {
		if msg := s.ensure(); msg != "" {
			return judgeError(msg)
		}
	}
	switch req.Op {
	case "hello":
		return s.hello
	case "call":
	default:
		return judgeError(fmt.Sprintf("the judge does not know the request %q", req.Op))
	}
	if s.failed != "" {
		return judgeError(s.failed)
	}
	if !s.funcs[req.Name] {
		return judgeError(fmt.Sprintf("the candidate's module has no function %s", req.Name))
	}
	if s.proc == nil {
		return judgeError(fmt.Sprintf("the candidate's process died %d times; %s() was not called again", s.stats.Restarts+1, req.Name))
	}
	s.stats.Calls++
	out, why := s.proc.call(frame, s.cfg.CallTimeout, s.cfg.Go)
	if why != "" {
		s.proc.stop()
		s.proc = nil
		return judgeError(fmt.Sprintf("%s() got no answer: %s", req.Name, why))
	}
	return out
}

// ensure has a live process and its hello; it returns why not.
func (s *Session) ensure() string {
	if s.proc == nil {
		if s.stats.Restarts >= s.cfg.MaxRestarts {
			return fmt.Sprintf("the candidate's process died %d times; no more calls are made", s.stats.Restarts+1)
		}
		s.stats.Restarts++
		s.proc = s.start()
		if s.hello != nil {
			// The tests already hold the first process's names; the new
			// one must come up the same way.
			if h, why := s.proc.hello(s.cfg.StartTimeout); why != "" || h.Error != "" {
				s.proc.stop()
				s.proc = nil
				return "the candidate's process did not come up again: " + cmp.Or(why, h.Error)
			}
			return ""
		}
	}
	if s.hello != nil {
		return ""
	}
	h, why := s.proc.hello(s.cfg.StartTimeout)
	if why != "" {
		// An import that failed once fails again: no restart.
		s.proc.stop()
		s.proc = nil
		s.failed = "the candidate's module did not load: " + why
		s.hello = mustJSON(map[string]string{"error": s.failed})
		return ""
	}
	s.hello, s.funcs = h.encode()
	if h.Error != "" {
		s.failed = "the candidate's module failed to import:\n" + h.Error
	}
	return ""
}

func judgeError(msg string) []byte { return mustJSON(map[string]string{"judge_error": msg}) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings and checked values are marshalled
	}
	return b
}

// proc is one process of the candidate's.
type proc struct {
	conn   net.Conn
	cancel context.CancelFunc
	done   chan struct{}
	res    sandbox.Result
	err    error
}

func (s *Session) start() *proc {
	p := &proc{done: make(chan struct{})}
	if w := s.cfg.Warm; w != nil {
		s.cfg.Warm = nil
		p.conn = w.conn
		ctx, cancel := context.WithCancel(s.ctx)
		p.cancel = cancel
		go func() {
			defer close(p.done)
			p.res, p.err = w.st.Run(ctx, s.cfg.Spec.Files, s.cfg.Spec.Limits.Wall)
		}()
		return p
	}
	host, end, err := socketPair()
	if err != nil {
		p.err = err
		close(p.done)
		return p
	}
	p.conn = host
	ctx, cancel := context.WithCancel(s.ctx)
	p.cancel = cancel
	spec := s.cfg.Spec
	spec.ExtraFiles = []*os.File{end}
	go func() {
		defer close(p.done)
		p.res, p.err = s.cfg.Runner.Run(ctx, spec)
		end.Close() // now nothing holds the candidate's end: reads see EOF
	}()
	return p
}

func (p *proc) stop() {
	if p.cancel != nil {
		p.cancel()
	}
	<-p.done
	if p.conn != nil {
		p.conn.Close()
	}
}

// read reads the process's next frame within timeout; why says what
// happened instead.
func (p *proc) read(timeout time.Duration) (frame []byte, why string) {
	if p.conn == nil {
		return nil, "the candidate's sandbox could not be set up: " + p.err.Error()
	}
	p.conn.SetReadDeadline(time.Now().Add(timeout))
	frame, err := readFrame(p.conn)
	if err == nil {
		return frame, ""
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Sprintf("no answer within %s; the candidate's process was stopped (an infinite loop, or far too slow)", timeout)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, "the candidate's answer could not be read: " + err.Error()
	}
	<-p.done
	return nil, p.death()
}

// death says why the process ended.
func (p *proc) death() string {
	switch r := p.res; {
	case p.err != nil:
		return "the candidate's sandbox failed: " + p.err.Error()
	case r.TimedOut:
		return "the candidate's process ran out of its wall time and was killed"
	case r.CPUExceeded:
		return "the candidate's process used up its CPU time limit and was killed"
	default:
		msg := fmt.Sprintf("the candidate's process exited with status %d", r.ExitCode)
		if r.Signal != "" {
			msg += " (" + r.Signal + ")"
		}
		if out := strings.TrimSpace(string(r.Stderr)); out != "" {
			msg += ":\n" + tail(out, 1500)
		}
		return msg
	}
}

func (p *proc) hello(timeout time.Duration) (hello, string) {
	frame, why := p.read(timeout)
	if why != "" {
		return hello{}, why
	}
	h, err := decodeHello(frame)
	if err != nil {
		return hello{}, "its first message is not a valid hello: " + err.Error()
	}
	return h, ""
}

func (p *proc) call(req []byte, timeout time.Duration, goValues bool) ([]byte, string) {
	if err := writeFrame(p.conn, req); err != nil {
		<-p.done
		return nil, p.death()
	}
	frame, why := p.read(timeout)
	if why != "" {
		return nil, why
	}
	decode := decodeReply
	if goValues {
		decode = decodeGoReply
	}
	out, err := decode(frame)
	if err != nil {
		return nil, "the candidate sent an answer that is not plain data: " + err.Error()
	}
	return out, ""
}

// maxFrame bounds one message, as wire.py's _MAX_FRAME does.
const maxFrame = 1 << 20

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, fmt.Errorf("a message of %d bytes (the most is %d)", size, maxFrame)
	}
	frame := make([]byte, size)
	_, err := io.ReadFull(r, frame)
	return frame, err
}

func writeFrame(w io.Writer, frame []byte) error {
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(frame)), uint32(len(frame)))
	_, err := w.Write(append(buf, frame...))
	return err
}

// socketPair returns a connected pair: the host's end as a net.Conn (with
// deadlines), the other as a file to hand to a sandbox. Both are
// close-on-exec, so no other process started meanwhile inherits them.
func socketPair() (net.Conn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("judge: socket pair: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "judge")
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("judge: socket pair: %w", err)
	}
	return conn, os.NewFile(uintptr(fds[1]), "judge-peer"), nil
}

// pyString is s as a Python string literal (JSON's is one, for the
// identifiers a module name can be).
func pyString(s string) string { return string(mustJSON(s)) }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut++
	}
	return "…" + s[cut:]
}
