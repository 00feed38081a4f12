package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/mcp"
)

// fake is an in-process MCP server with tools that exercise every kind of
// result, and counters that tell whether a call reached it.
type fake struct {
	calls     atomic.Int64 // calls that reached any handler
	cancelled chan struct{}
	header    atomic.Value // the X-Test header of the last echo call, over HTTP
}

func newFake() *fake { return &fake{cancelled: make(chan struct{}, 8)} }

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func objectSchema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

// server builds the SDK server; a new one per session, as HTTP wants.
func (f *fake) server() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "fake", Version: "v0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo a message.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			f.calls.Add(1)
			if req.Extra != nil && req.Extra.Header != nil {
				f.header.Store(req.Extra.Header.Get("X-Test"))
			}
			return text("Echo: " + in.Message), nil, nil
		})
	add := func(t *sdk.Tool, h sdk.ToolHandler) {
		if t.InputSchema == nil {
			t.InputSchema = objectSchema("")
		}
		s.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			f.calls.Add(1)
			return h(ctx, req)
		})
	}
	add(&sdk.Tool{Name: "add", Description: "Add a and b.", InputSchema: objectSchema(`"a":{"type":"integer"},"b":{"type":"integer"}`, "a", "b"),
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text(itoa(in.A + in.B)), nil
		})
	add(&sdk.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("disk on fire")
			r.IsError = true
			return r, nil
		})
	add(&sdk.Tool{Name: "fail_silently", Description: "Fails without a word."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true}, nil
		})
	add(&sdk.Tool{Name: "picky", Description: "Refuses its params at the protocol level."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "n must be even"}
		})
	add(&sdk.Tool{Name: "broken", Description: "Fails at the protocol level."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, errors.New("database unreachable")
		})
	add(&sdk.Tool{Name: "media", Description: "Returns every kind of content."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "Here:"},
				&sdk.ImageContent{Data: []byte("PNGDATA"), MIMEType: "image/png"},
				&sdk.AudioContent{Data: []byte("x"), MIMEType: "audio/wav"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "alpha"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
				&sdk.ResourceLink{URI: "file:///c.md", Name: "c", MIMEType: "text/markdown", Description: "notes"},
			}}, nil
		})
	add(&sdk.Tool{Name: "structured", Description: "Returns structured content only."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"temp": 21}}, nil
		})
	add(&sdk.Tool{Name: "big", Description: "Returns 1000 numbered lines."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var b strings.Builder
			for i := range 1000 {
				b.WriteString("line " + itoa(i) + "\n")
			}
			return text(b.String()), nil
		})
	add(&sdk.Tool{Name: "block", Description: "Waits until cancelled."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			f.cancelled <- struct{}{}
			return nil, ctx.Err()
		})
	add(&sdk.Tool{Name: "ns.tool", Title: "Namespaced"}, // no description
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("ok"), nil
		})
	return s
}

var itoa = strconv.Itoa

// connect connects cfg to a fresh in-process fake over in-memory transports.
func connect(t *testing.T, f *fake, cfg mcp.Config) *mcp.Server {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := f.server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	cfg.Transport = ct
	s, err := mcp.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type infoSummary struct {
	Name, Description string
	Idempotent        bool
	Timeout           time.Duration
}

func summarize(tools []tool.Tool) []infoSummary {
	out := make([]infoSummary, len(tools))
	for i, t := range tools {
		info := t.Info()
		out[i] = infoSummary{info.Name, info.Description, info.Idempotent, info.Timeout}
	}
	return out
}

func TestTools(t *testing.T) {
	f := newFake()
	s := connect(t, f, mcp.Config{Prefix: "f_", Tools: []string{"echo", "add", "fail", "ns.tool"}, Timeout: 7 * time.Second})
	got := summarize(s.Tools())
	want := []infoSummary{
		{"f_echo", "Echo a message.", true, 7 * time.Second},
		{"f_add", "Add a and b.", true, 7 * time.Second},
		{"f_fail", "Always fails.", false, 7 * time.Second},
		{"f_ns_tool", "Namespaced", false, 7 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	// The server's schema is passed on, so the registry validates with it.
	var schema map[string]any
	if err := json.Unmarshal(s.Tools()[1].Info().Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"a", "b"}, schema["required"]); diff != "" {
		t.Errorf("add's schema lost its required list (-want +got):\n%s", diff)
	}
	if _, err := tool.NewRegistry(s.Tools()...); err != nil {
		t.Errorf("registry refuses the tools: %v", err)
	}
	if f.calls.Load() != 0 {
		t.Errorf("listing called %d tools", f.calls.Load())
	}
}

func TestAllTools(t *testing.T) {
	s := connect(t, newFake(), mcp.Config{})
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Info().Name)
	}
	want := []string{"add", "big", "block", "broken", "echo", "fail", "fail_silently", "media", "ns_tool", "picky", "structured"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if s.Name() != "fake" {
		t.Errorf("Name() = %q", s.Name())
	}
}

func TestConnectErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mcp.Config
		want []string // substrings of the error
	}{
		{"allow-list names a missing tool", mcp.Config{Tools: []string{"echo", "nope", "zilch"}},
			[]string{`MCP server "fake" failed to list its tools`, "it has no tool nope, zilch", "(it has: add, big, block"}},
		{"bad prefix", mcp.Config{Prefix: "f."}, []string{`MCP server "fake"`, `prefix "f."`}},
		{"name too long", mcp.Config{Prefix: strings.Repeat("p", 62)}, []string{`tool "echo": name "ppp`, "longer than 64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			ct, st := sdk.NewInMemoryTransports()
			ss, err := f.server().Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			tc.cfg.Name, tc.cfg.Transport = "fake", ct
			s, err := mcp.Connect(context.Background(), tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Connect succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  mcp.Config
		want []string
	}{
		{"nothing", mcp.Config{}, []string{"name is missing", "give a command (stdio) or a url"}},
		{"both", mcp.Config{Name: "x", Command: []string{"a"}, URL: "http://h/mcp"}, []string{"give one of a command, a url and a transport"}},
		{"headers on a command", mcp.Config{Name: "x", Command: []string{"a"}, Headers: map[string]string{"A": "b"}}, []string{"headers apply to a url"}},
		{"env on a url", mcp.Config{Name: "x", URL: "http://h/mcp", Env: map[string]string{"A": "b"}}, []string{"env and dir apply to a command"}},
		{"bad url", mcp.Config{Name: "x", URL: "ftp://h"}, []string{`url "ftp://h" must start with http://`}},
		{"empty program and tool", mcp.Config{Name: "x", Command: []string{""}, Tools: []string{""}}, []string{"the program is empty", "tools: a name is empty"}},
		{"negative timeout", mcp.Config{Name: "x", Command: []string{"a"}, Timeout: -1}, []string{"timeouts cannot be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcp.Connect(context.Background(), tc.cfg)
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestCalls runs every kind of call through the executor, as the runner
// does.
func TestCalls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		call     tool.Call
		outcome  tool.Outcome
		output   string // exact, unless contains is set
		contains bool
		reached  bool // the call reached the server
	}{
		{name: "echo", call: tool.Call{Name: "echo", Args: json.RawMessage(`{"message":"hi"}`)},
			outcome: tool.OutcomeOK, output: "Echo: hi", reached: true},
		{name: "add", call: tool.Call{Name: "add", Args: json.RawMessage(`{"a":2,"b":3}`)},
			outcome: tool.OutcomeOK, output: "5", reached: true},
		{name: "schema failure stops before the server", call: tool.Call{Name: "add", Args: json.RawMessage(`{"a":"two","b":3}`)},
			outcome: tool.OutcomeInvalidArgs, output: `tool "add": arguments do not match the schema`, contains: true},
		{name: "missing required argument", call: tool.Call{Name: "echo", Args: json.RawMessage(`{}`)},
			outcome: tool.OutcomeInvalidArgs, output: `$: missing property 'message'`, contains: true},
		{name: "not JSON", call: tool.Call{Name: "echo", Args: json.RawMessage(`{"message":`)},
			outcome: tool.OutcomeInvalidArgs, output: "not valid JSON", contains: true},
		{name: "isError is a tool error", call: tool.Call{Name: "fail"},
			outcome: tool.OutcomeToolError, output: `tool "fail" failed: disk on fire`, reached: true},
		{name: "isError without text", call: tool.Call{Name: "fail_silently"},
			outcome: tool.OutcomeToolError, output: `tool "fail_silently" failed: the server reported an error without a message`, reached: true},
		{name: "protocol invalid params", call: tool.Call{Name: "picky"},
			outcome: tool.OutcomeInvalidArgs, output: `tool "picky": invalid arguments: MCP server "fake": n must be even`, reached: true},
		{name: "protocol error", call: tool.Call{Name: "broken"},
			outcome: tool.OutcomeToolError, output: `tool "broken" failed: MCP server "fake": calling "tools/call": database unreachable`, reached: true},
		{name: "content conversion", call: tool.Call{Name: "media"}, outcome: tool.OutcomeOK, reached: true,
			output: "Here:\n[image: image/png, 7 bytes, not shown]\n[audio: audio/wav, 1 byte, not shown]\n" +
				"[resource file:///a.txt]\nalpha\n[resource file:///b.bin: application/octet-stream, 3 bytes, not shown]\n" +
				"[resource link: c file:///c.md (text/markdown): notes]"},
		{name: "structured content", call: tool.Call{Name: "structured"},
			outcome: tool.OutcomeOK, output: `{"temp":21}`, reached: true},
		{name: "trimmed", call: tool.Call{Name: "big"}, outcome: tool.OutcomeOK, reached: true,
			output: "line 0\nline 1\nline 2\nline 3\nline 4\n[… 8810 bytes, 990 lines elided (lines 6–995 of 1000); they are not kept: to see them, call the tool again asking for less (a narrower path, query, filter or range) …]\nline 995\nline 996\nline 997\nline 998\nline 999\n"},
		{name: "unknown tool", call: tool.Call{Name: "nope"},
			outcome: tool.OutcomeUnknownTool, output: `unknown tool "nope"`, contains: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			s := connect(t, f, mcp.Config{})
			reg, err := tool.NewRegistry(s.Tools()...)
			if err != nil {
				t.Fatal(err)
			}
			ex := tool.NewExecutor(tool.ExecConfig{MaxOutputLines: 10})
			res := ex.RunOne(context.Background(), reg, tc.call)
			if res.Outcome != tc.outcome {
				t.Errorf("outcome = %s, want %s (output %q)", res.Outcome, tc.outcome, res.Output)
			}
			if tc.contains && !strings.Contains(res.Output, tc.output) || !tc.contains && res.Output != tc.output {
				t.Errorf("output = %q, want %q", res.Output, tc.output)
			}
			if reached := f.calls.Load() > 0; reached != tc.reached {
				t.Errorf("reached the server = %v, want %v", reached, tc.reached)
			}
		})
	}
}

// TestTimeoutReachesServer: the tool's timeout ends the call with a timeout
// observation, and the server's handler sees its context cancelled.
func TestTimeoutReachesServer(t *testing.T) {
	f := newFake()
	s := connect(t, f, mcp.Config{Timeout: 100 * time.Millisecond})
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	res := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{Name: "block"})
	if res.Outcome != tool.OutcomeTimeout || res.Output != `tool "block" timed out after 100ms` {
		t.Errorf("got %s %q", res.Outcome, res.Output)
	}
	select {
	case <-f.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the call cancelled")
	}
	// The session survives a cancelled call.
	res = tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{Name: "echo", Args: json.RawMessage(`{"message":"still here"}`)})
	if res.Output != "Echo: still here" {
		t.Errorf("after the timeout: %s %q", res.Outcome, res.Output)
	}
}

func TestCancelReachesServer(t *testing.T) {
	f := newFake()
	s := connect(t, f, mcp.Config{})
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res := tool.NewExecutor(tool.ExecConfig{}).RunOne(ctx, reg, tool.Call{Name: "block"})
	if res.Outcome != tool.OutcomeCancelled {
		t.Errorf("got %s %q", res.Outcome, res.Output)
	}
	select {
	case <-f.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the call cancelled")
	}
}

// TestParallel: calls of one batch share the session and are matched by id.
func TestParallel(t *testing.T) {
	s := connect(t, newFake(), mcp.Config{})
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	var calls []tool.Call
	var want []string
	for i := range 20 {
		calls = append(calls, tool.Call{ID: "c" + itoa(i), Name: "add", Args: json.RawMessage(`{"a":` + itoa(i) + `,"b":1000}`)})
		want = append(want, "c"+itoa(i)+"="+itoa(i+1000))
	}
	var got []string
	for _, r := range tool.NewExecutor(tool.ExecConfig{MaxParallel: 8}).Run(context.Background(), reg, calls) {
		got = append(got, r.ID+"="+r.Output)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestCallAfterClose(t *testing.T) {
	s := connect(t, newFake(), mcp.Config{})
	echo := s.Tools()[0]
	for _, tl := range s.Tools() {
		if tl.Info().Name == "echo" {
			echo = tl
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := echo.Run(context.Background(), json.RawMessage(`{"message":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `MCP server "fake" is not running any more`) {
		t.Errorf("err = %v", err)
	}
}

// TestHTTP reaches an in-process server over streamable HTTP, with headers.
func TestHTTP(t *testing.T) {
	f := newFake()
	srv := f.server()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	defer hs.Close()
	s, err := mcp.Connect(context.Background(), mcp.Config{Name: "web", URL: hs.URL, Headers: map[string]string{"X-Test": "sesame"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	res := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{Name: "echo", Args: json.RawMessage(`{"message":"over http"}`)})
	if res.Output != "Echo: over http" {
		t.Errorf("got %s %q", res.Outcome, res.Output)
	}
	if got, _ := f.header.Load().(string); got != "sesame" {
		t.Errorf("X-Test header = %q, want sesame", got)
	}
	// A header value is a secret: a server echoing it shows [redacted].
	res = tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), reg, tool.Call{Name: "echo", Args: json.RawMessage(`{"message":"the header is sesame"}`)})
	if res.Output != "Echo: the header is [redacted]" {
		t.Errorf("got %s %q, want the header value redacted", res.Outcome, res.Output)
	}
}

func TestHTTPUnreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL + "/mcp"
	hs.Close() // nothing listens there now
	_, err := mcp.Connect(context.Background(), mcp.Config{Name: "gone", URL: url, StartTimeout: 5 * time.Second})
	if err == nil || !strings.HasPrefix(err.Error(), `MCP server "gone" failed to start: `) {
		t.Errorf("err = %v", err)
	}
}

// TestToolListCap: a server whose tools would add more than
// MaxToolListBytes to every request is refused, saying so; naming the
// tools the task needs gets past it.
func TestToolListCap(t *testing.T) {
	connectTo := func(cfg mcp.Config) (*mcp.Server, error) {
		s := sdk.NewServer(&sdk.Implementation{Name: "huge", Version: "v0"}, nil)
		for _, name := range []string{"small", "manual"} {
			desc := "A tool."
			if name == "manual" {
				desc = strings.Repeat("Read this carefully. ", mcp.MaxToolListBytes/20)
			}
			s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: objectSchema("")}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("ok"), nil
			})
		}
		ct, st := sdk.NewInMemoryTransports()
		ss, err := s.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cfg.Name, cfg.Transport = "huge", ct
		return mcp.Connect(context.Background(), cfg)
	}
	if s, err := connectTo(mcp.Config{}); err == nil {
		s.Close()
		t.Error("a tool list over the cap was taken")
	} else if !strings.Contains(err.Error(), "more than the 256 KiB a server may offer: name the tools the task needs") {
		t.Errorf("error %q", err)
	}
	s, err := connectTo(mcp.Config{Tools: []string{"small"}})
	if err != nil {
		t.Fatalf("with an allow-list: %v", err)
	}
	s.Close()
}
