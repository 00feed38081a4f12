//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/mcp"
)

// The test binary doubles as a stdio MCP server when this variable is set,
// so that the stdio plumbing (process, environment, stderr, shutdown) is
// tested without node.
const serverEnv = "RATCHET_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		runStdioServer()
		return
	}
	os.Exit(m.Run())
}

func runStdioServer() {
	fmt.Fprintln(os.Stderr, "test server: starting")
	s := sdk.NewServer(&sdk.Implementation{Name: "stdio-fake", Version: "v0"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&sdk.Tool{Name: "env", Description: "Lists the environment.", InputSchema: empty},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			env := os.Environ()
			slices.Sort(env)
			return text(strings.Join(env, "\n")), nil
		})
	s.AddTool(&sdk.Tool{Name: "spawn", Description: "Starts a long sleep and returns its pid.", InputSchema: empty},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			return text(strconv.Itoa(cmd.Process.Pid)), nil
		})
	s.AddTool(&sdk.Tool{Name: "chatter", Description: "Writes a lot to stderr.", InputSchema: empty},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			for i := range 10000 {
				fmt.Fprintf(os.Stderr, "chatter line %d\n", i)
			}
			return text("done"), nil
		})
	s.AddTool(&sdk.Tool{Name: "crash", Description: "Exits the server.", InputSchema: empty},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "test server: crashing")
			os.Exit(2)
			return nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
}

// selfServer is a Config that runs this test binary as a stdio server.
func selfServer(t *testing.T) mcp.Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Config{Name: "self", Command: []string{exe}, Env: map[string]string{serverEnv: "1"}, StopTimeout: 500 * time.Millisecond}
}

func runTool(t *testing.T, s *mcp.Server, name string) tool.Result {
	t.Helper()
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	return tool.NewExecutor(tool.ExecConfig{MaxOutputBytes: 1 << 20, MaxOutputLines: 1 << 20}).RunOne(context.Background(), reg, tool.Call{Name: name})
}

// TestStdioEnvironment: the server sees PATH, HOME, LANG and what Env
// sets, and nothing else of this process's environment.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("HOME", "/home/someone")
	t.Setenv("LANG", "C.UTF-8")
	cfg := selfServer(t)
	cfg.Env["FOO"] = "bar"
	s, err := mcp.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := runTool(t, s, "env")
	got := strings.Split(res.Output, "\n")
	want := []string{"FOO=bar", "HOME=/home/someone", "LANG=C.UTF-8", "PATH=/usr/bin:/bin", serverEnv + "=1"}
	if !slices.Equal(got, want) {
		// Names only: the values could be secrets.
		t.Errorf("server environment:\n got %q\nwant %q", names(got), names(want))
	}
}

func names(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i], _, _ = strings.Cut(kv, "=")
	}
	return out
}

func TestEnviron(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	t.Setenv("PATH", "/bin")
	t.Setenv("LANG", "")
	os.Unsetenv("LANG") // Setenv restores it at cleanup
	t.Setenv("HOME", "/h")
	got := mcp.Environ(map[string]string{"ANTHROPIC_API_KEY": "named", "PATH": "/opt/bin"})
	want := []string{"ANTHROPIC_API_KEY=named", "HOME=/h", "PATH=/opt/bin"}
	if !slices.Equal(got, want) {
		t.Errorf("Environ = %q, want %q", got, want)
	}
}

// TestStdioStderrIsCaptured: a chatty server does not write to this
// process's stderr; calls still work.
func TestStdioStderrIsCaptured(t *testing.T) {
	s, err := mcp.Connect(context.Background(), selfServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res := runTool(t, s, "chatter"); res.Output != "done" {
		t.Errorf("chatter: %s %q", res.Outcome, res.Output)
	}
}

// TestStdioCloseStopsChildren: Close ends the server and what it started.
func TestStdioCloseStopsChildren(t *testing.T) {
	s, err := mcp.Connect(context.Background(), selfServer(t))
	if err != nil {
		t.Fatal(err)
	}
	res := runTool(t, s, "spawn")
	pid, err := strconv.Atoi(res.Output)
	if err != nil {
		s.Close()
		t.Fatalf("spawn: %s %q", res.Outcome, res.Output)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the child is not running: %v", err)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("Close took %v", time.Since(start))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the server's child outlived Close")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs: it exists and is not a zombie waiting for
// a parent (or an init that may not reap) to collect it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill
	}
	// The state follows the command name in parentheses.
	rest := stat[strings.LastIndexByte(string(stat), ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(string(rest)), "Z")
}

// TestStdioCrash: a server that dies is a tool error for the call in
// flight and for every later call, never a hang or a panic.
func TestStdioCrash(t *testing.T) {
	s, err := mcp.Connect(context.Background(), selfServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, name := range []string{"crash", "env"} {
		res := runTool(t, s, name)
		if res.Outcome != tool.OutcomeToolError || !strings.Contains(res.Output, `MCP server "self" is not running any more`) {
			t.Errorf("call %d (%s): %s %q", i, name, res.Outcome, res.Output)

		}
	}
}

func TestStdioStartErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		want    []string
		notWant []string
	}{
		{"exits at once", []string{"sh", "-c", "echo 'fatal: no config file' >&2; exit 3"},
			[]string{`MCP server "bad" failed to start: `, "its stderr ends:\n  fatal: no config file"}, nil},
		{"no such program", []string{"/nonexistent/mcp-server"},
			[]string{`MCP server "bad" failed to start: `, "/nonexistent/mcp-server"}, []string{"stderr ends"}},
		{"floods stderr", []string{"sh", "-c", "i=0; while [ $i -lt 3000 ]; do echo \"noise $i\" >&2; i=$((i+1)); done; echo 'the real error' >&2; exit 1"},
			[]string{"its stderr ends:\n  […]\n", "noise 2999\n  the real error"}, []string{"noise 1\n"}},
		{"not an MCP server", []string{"sh", "-c", "echo hello; sleep 30"},
			[]string{`MCP server "bad" failed to start: `}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := mcp.Connect(context.Background(), mcp.Config{Name: "bad", Command: tc.command, StartTimeout: 5 * time.Second, StopTimeout: 200 * time.Millisecond})
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q:\n%s", w, msg)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("error contains %q:\n%s", w, msg)
				}
			}
			if len(msg) > 6000 {
				t.Errorf("error is %d bytes long", len(msg))
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// BenchmarkCall measures one call through the executor, over the SDK's
// in-memory transport and over stdio to a Go server (this test binary).
func BenchmarkCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  func() mcp.Config
	}{
		{"inmemory", func() mcp.Config {
			ct, st := sdk.NewInMemoryTransports()
			if _, err := newFake().server().Connect(context.Background(), st, nil); err != nil {
				b.Fatal(err)
			}
			return mcp.Config{Name: "fake", Transport: ct}
		}},
		{"stdio", func() mcp.Config {
			return mcp.Config{Name: "self", Command: []string{exe}, Env: map[string]string{serverEnv: "1"}, StopTimeout: 500 * time.Millisecond}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := mcp.Connect(context.Background(), tc.cfg())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			reg, err := tool.NewRegistry(s.Tools()...)
			if err != nil {
				b.Fatal(err)
			}
			name := "env"
			if _, ok := reg.Lookup("echo"); ok {
				name = "echo"
			}
			ex := tool.NewExecutor(tool.ExecConfig{})
			call := tool.Call{Name: name, Args: json.RawMessage(`{"message":"hi"}`)}
			if name == "env" {
				call.Args = nil
			}
			for b.Loop() {
				if res := ex.RunOne(context.Background(), reg, call); res.IsError {
					b.Fatal(res.Output)
				}
			}
		})
	}
}
