//go:build unix

package mcp_test

// Tests against the reference servers from npm, which ./test.sh installs
// into .cache/npm at the repository's root. $RATCHET_NPM_BIN overrides
// where their executables are looked for. Outside CI a missing server skips
// these tests; under CI=true it fails them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/mcp"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

func mustConnect(t *testing.T, cfg mcp.Config) *mcp.Server {
	t.Helper()
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 300 * time.Millisecond
	}
	s, err := mcp.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type refCall struct {
	name     string
	args     string
	outcome  tool.Outcome
	output   string // a substring of the output
	notInOut string // must not appear in the output
}

func runCalls(t *testing.T, s *mcp.Server, ex *tool.Executor, calls []refCall) {
	t.Helper()
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		res := ex.RunOne(context.Background(), reg, tool.Call{Name: c.name, Args: json.RawMessage(c.args)})
		switch {
		case c.notInOut != "" && strings.Contains(res.Output, c.notInOut):
			// Not the output: it may hold what must not leak.
			t.Errorf("%s %s: the output contains %q", c.name, c.args, c.notInOut)
		case res.Outcome != c.outcome || !strings.Contains(res.Output, c.output):
			t.Errorf("%s %s: got %s %q; want %s containing %q", c.name, c.args, res.Outcome, res.Output, c.outcome, c.output)
		}
	}
}

// everythingCalls exercise server-everything the same way over any
// transport; its tools carry the ev_ prefix.
var everythingCalls = []refCall{
	{name: "ev_echo", args: `{"message":"hello"}`, outcome: tool.OutcomeOK, output: "Echo: hello"},
	{name: "ev_get-sum", args: `{"a":2,"b":3}`, outcome: tool.OutcomeOK, output: "The sum of 2 and 3 is 5."},
	// The registry checks the server's schema before anything is sent.
	{name: "ev_get-sum", args: `{"a":"two","b":3}`, outcome: tool.OutcomeInvalidArgs, output: `tool "ev_get-sum": arguments do not match the schema`},
	{name: "ev_echo", args: `{}`, outcome: tool.OutcomeInvalidArgs, output: "message"},
	{name: "ev_get-tiny-image", args: `{}`, outcome: tool.OutcomeOK, output: "[image: image/png, "},
	// A tool timeout (1s here) ends the call; the session lives on.
	{name: "ev_trigger-long-running-operation", args: `{"duration":30,"steps":2}`, outcome: tool.OutcomeTimeout, output: "timed out after 1s"},
	{name: "ev_echo", args: `{"message":"still alive"}`, outcome: tool.OutcomeOK, output: "Echo: still alive"},
	// Output trimming applies as to any tool (10 lines here).
	{name: "ev_echo", args: `{"message":"` + strings.Repeat(`row\n`, 100) + `"}`, outcome: tool.OutcomeOK, output: "bytes, 90 lines elided (lines 6–95 of 100)"},
}

var everythingTools = []string{"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation", "get-env"}

func checkEverythingTools(t *testing.T, s *mcp.Server) {
	t.Helper()
	got := summarize(s.Tools())
	if len(got) != len(everythingTools) {
		t.Fatalf("tools: %+v", got)
	}
	for i, name := range everythingTools {
		if got[i].Name != "ev_"+name || got[i].Description == "" || !got[i].Idempotent {
			// Every one of these is annotated read-only.
			t.Errorf("tool %d: %+v, want ev_%s, described, idempotent", i, got[i], name)
		}
	}
}

func TestEverythingStdio(t *testing.T) {
	bin := testenv.NPMBin(t, "mcp-server-everything")
	t.Setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
	s := mustConnect(t, mcp.Config{
		Name: "everything", Command: []string{bin, "stdio"}, Env: map[string]string{"FOO": "bar"},
		Tools: everythingTools, Prefix: "ev_", Timeout: time.Second,
	})
	checkEverythingTools(t, s)
	ex := tool.NewExecutor(tool.ExecConfig{MaxOutputLines: 10})
	runCalls(t, s, ex, append(everythingCalls,
		// The environment is scrubbed: what the config names passes, keys do not.
		refCall{name: "ev_get-env", args: `{}`, outcome: tool.OutcomeOK, output: `"FOO": "bar"`, notInOut: "OPENAI_API_KEY"},
	))
}

func TestEverythingAllTools(t *testing.T) {
	t.Parallel() // node is slow to start
	bin := testenv.NPMBin(t, "mcp-server-everything")
	s := mustConnect(t, mcp.Config{Name: "everything", Command: []string{bin}})
	// Every tool the server lists is acceptable to the registry as is.
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Names()) < 10 {
		t.Errorf("only %d tools: %v", len(reg.Names()), reg.Names())
	}
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestEverythingHTTP(t *testing.T) {
	t.Parallel() // node is slow to start
	bin := testenv.NPMBin(t, "mcp-server-everything")
	port := freePort(t)
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = mcp.Environ(map[string]string{"PORT": fmt.Sprint(port)})
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never listened on %s; it said:\n%s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := mustConnect(t, mcp.Config{
		Name: "everything-http", URL: "http://" + addr + "/mcp", Headers: map[string]string{"X-Ratchet-Test": "1"},
		Tools: everythingTools, Prefix: "ev_", Timeout: time.Second,
	})
	checkEverythingTools(t, s)
	runCalls(t, s, tool.NewExecutor(tool.ExecConfig{MaxOutputLines: 10}), everythingCalls)
}

func TestFilesystem(t *testing.T) {
	t.Parallel() // node is slow to start
	bin := testenv.NPMBin(t, "mcp-server-filesystem")
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	for path, data := range map[string]string{
		"allowed/notes.txt":   "alpha\nbeta\n",
		"allowed/sub/x.txt":   "x",
		"outside/secret.txt":  "the secret",
		"outside/other/y.txt": "y",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := mustConnect(t, mcp.Config{
		Name: "fs", Command: []string{bin, allowed}, Dir: allowed,
		Tools: []string{"read_text_file", "list_directory"}, Prefix: "fs_",
	})
	ex := tool.NewExecutor(tool.ExecConfig{})
	q := func(p string) string { b, _ := json.Marshal(p); return string(b) }
	runCalls(t, s, ex, []refCall{
		{name: "fs_read_text_file", args: `{"path":` + q(filepath.Join(allowed, "notes.txt")) + `}`, outcome: tool.OutcomeOK, output: "alpha\nbeta"},
		{name: "fs_list_directory", args: `{"path":` + q(allowed) + `}`, outcome: tool.OutcomeOK, output: "[FILE] notes.txt\n[DIR] sub"},
		{name: "fs_read_text_file", args: `{"path":` + q(filepath.Join(root, "outside", "secret.txt")) + `}`, outcome: tool.OutcomeToolError, output: "Access denied", notInOut: "the secret"},
		{name: "fs_read_text_file", args: `{"path":` + q(allowed+"/../outside/secret.txt") + `}`, outcome: tool.OutcomeToolError, output: "Access denied", notInOut: "the secret"},
		{name: "fs_list_directory", args: `{"path":` + q(filepath.Join(root, "outside")) + `}`, outcome: tool.OutcomeToolError, output: "Access denied", notInOut: "secret.txt"},
		{name: "fs_read_text_file", args: `{"path":` + q(filepath.Join(allowed, "missing.txt")) + `}`, outcome: tool.OutcomeToolError, output: "ENOENT"},
	})
	// Only the allow-listed tools are offered.
	if got := len(s.Tools()); got != 2 {
		t.Errorf("%d tools, want 2", got)
	}
}

// TestRunWithMCPTool is a whole run: a scripted model calls a tool of
// server-everything, sees its result and finishes with it.
func TestRunWithMCPTool(t *testing.T) {
	t.Parallel() // node is slow to start
	bin := testenv.NPMBin(t, "mcp-server-everything")
	s := mustConnect(t, mcp.Config{Name: "everything", Command: []string{bin}, Tools: []string{"get-sum"}})
	sure := 0.95
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Text: "Let me add.", Tools: []scripted.ToolCall{{Name: "get-sum", Args: map[string]int{"a": 20, "b": 22}}}},
		{Expect: []string{"The sum of 20 and 22 is 42."}, Finish: &scripted.Finish{Answer: "42", Confidence: &sure}},
	}}, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), runner.Task{
		Goal:   "What is 20+22? Use the get-sum tool, then finish.",
		Tools:  s.Tools(),
		Checks: verify.Tiers{Expensive: []verify.Verifier{check.Equals("42")}},
		Budget: budget.Limits{Steps: 5, Time: time.Minute},
	}, runner.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Done || res.Best.Answer != "42" || res.Usage.ToolCalls != 1 {
		t.Errorf("result: %s %q, %d tool calls (%s)", res.Status, res.Best.Answer, res.Usage.ToolCalls, res.Reason)
	}
}

// tailBuffer collects a helper process's output for a failure message.
type tailBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() > 1<<16 {
		return len(p), nil
	}
	return b.b.Write(p)
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
