// Package mcp exposes the tools of Model Context Protocol servers as ratchet
// tools, through the official Go SDK.
//
// [Connect] starts a stdio server (a command) or reaches a streamable HTTP
// server (a URL), completes the MCP handshake and lists the server's tools.
// [Server.Tools] returns each as a [tool.Tool] whose schema is the server's
// input schema, so the registry validates arguments exactly as it does for
// built-in tools and an invalid call never reaches the server. A call runs
// under the executor's context: a timeout or cancellation is sent on to the
// server as an MCP cancellation.
//
// What a call returns becomes the tool's output: text as is, an image or
// audio clip as a placeholder line (the model sees text only), an embedded
// resource as its text or a line naming it, a resource link as a line with
// its URI, and structured content as JSON when there is nothing else. A
// result the server flags isError is a tool error, an observation for the
// model like any other.
//
// The tool list is read once, by Connect: a run's tools are fixed, so a
// server's later changes to its list are not followed.
//
// A stdio server runs with a scrubbed environment: only PATH, HOME and LANG
// are inherited, plus what [Config.Env] sets, so API keys never leak to a
// server unless the configuration names them. Its stderr is kept (the last
// few KiB) rather than shown; the tail is part of the error when the server
// fails to start. [Server.Close] ends the session and the server's process
// group.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/tool"
)

// Config describes one MCP server. Exactly one of Command, URL and
// Transport is set.
type Config struct {
	// Name names the server in errors. Required.
	Name string

	// Command is the program and arguments of a stdio server. The program
	// is looked up in PATH unless it contains a slash.
	Command []string
	// Dir is the stdio server's working directory; "" means this process's.
	Dir string
	// Env is added to a stdio server's environment, which otherwise holds
	// only PATH, HOME and LANG from this process (see [Environ]).
	Env map[string]string

	// URL is the endpoint of a streamable HTTP server, such as
	// http://localhost:3001/mcp.
	URL string
	// Headers are sent with every HTTP request, e.g. Authorization.
	Headers map[string]string
	// HTTPClient makes the HTTP requests; nil means a default client.
	HTTPClient *http.Client

	// Transport reaches a server some other way, such as the SDK's
	// in-memory transports in tests.
	Transport sdk.Transport

	// Tools is an allow-list of the server's tool names (before Prefix);
	// empty means every tool. Naming a tool the server lacks is an error.
	Tools []string
	// Prefix is put before every tool name, e.g. "fs_", to keep apart
	// servers whose tools share names. Characters a tool name cannot hold
	// (anything but ASCII letters, digits, _ and -) become _.
	Prefix string
	// Timeout bounds each call; zero means the executor's default.
	Timeout time.Duration
	// StartTimeout bounds starting the server, the handshake and listing
	// its tools (default 60s: an npx server may be downloaded first).
	StartTimeout time.Duration
	// StopTimeout is how long Close waits for a stdio server to exit after
	// closing its input before it is signalled (default 2s).
	StopTimeout time.Duration
}

// Validate reports every problem with c at once; Connect calls it first.
func (c Config) Validate() error {
	var errs []error
	problem := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Name == "" {
		problem("name is missing")
	}
	ways := 0
	for _, set := range []bool{len(c.Command) > 0, c.URL != "", c.Transport != nil} {
		if set {
			ways++
		}
	}
	switch {
	case ways == 0:
		problem("give a command (stdio) or a url (streamable HTTP)")
	case ways > 1:
		problem("give one of a command, a url and a transport")
	case len(c.Command) > 0:
		if c.Command[0] == "" {
			problem("command: the program is empty")
		}
		if len(c.Headers) > 0 {
			problem("headers apply to a url, not a command")
		}
	case c.URL != "":
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			problem("url %q must start with http:// or https://", c.URL)
		}
		if len(c.Env) > 0 || c.Dir != "" {
			problem("env and dir apply to a command, not a url")
		}
	}
	if c.Prefix != "" && !validName(c.Prefix) {
		problem("prefix %q may hold only ASCII letters, digits, _ and -", c.Prefix)
	}
	for _, name := range c.Tools {
		if name == "" {
			problem("tools: a name is empty")
		}
	}
	if c.Timeout < 0 || c.StartTimeout < 0 || c.StopTimeout < 0 {
		problem("timeouts cannot be negative")
	}
	return errors.Join(errs...)
}

// Server is a connected MCP server. Its tools are safe for concurrent use.
type Server struct {
	name    string
	session *sdk.ClientSession
	tools   []tool.Tool
	proc    *process // nil for HTTP
	// secrets are the header values and the values of Env variables whose
	// names look secret: a server may echo them, and they never pass on.
	secrets *redact.Redactor

	closeOnce sync.Once
}

// Connect starts or reaches the server, completes the handshake and lists
// its tools. ctx bounds only the start (with StartTimeout); the server runs
// until Close. Errors name the server and, for a stdio server, end with
// the tail of its stderr. Header values, and Env values whose names look
// secret (redact.SecretName), are replaced by [redacted] in its errors and
// tool results, whatever the server echoes.
func Connect(ctx context.Context, cfg Config) (_ *Server, err error) {
	secrets := redact.New(slices.Collect(maps.Values(cfg.Headers))...)
	for name, v := range cfg.Env {
		if redact.SecretName(name) {
			secrets.Add(v)
		}
	}
	defer func() { err = secrets.Error(err) }()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	s := &Server{name: cfg.Name, secrets: secrets}
	transport := cfg.Transport
	switch {
	case len(cfg.Command) > 0:
		cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
		cmd.Dir = cfg.Dir
		cmd.Env = Environ(cfg.Env)
		p, err := startable(cmd)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: %w", cfg.Name, err)
		}
		s.proc = p
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: cfg.StopTimeout}
	case cfg.URL != "":
		transport = &sdk.StreamableClientTransport{
			Endpoint:             cfg.URL,
			HTTPClient:           httpClient(cfg.HTTPClient, cfg.Headers),
			DisableStandaloneSSE: true, // requests and their replies are all we use
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "ratchet", Version: version()}, &sdk.ClientOptions{
		// No roots: a server such as server-filesystem would otherwise ask
		// for them and replace the directories it was given.
		Capabilities: &sdk.ClientCapabilities{},
	})
	session, err := client.Connect(ctx, transport, nil)
	if s.proc != nil {
		s.proc.started()
	}
	if err != nil {
		return nil, s.fail("failed to start", err)
	}
	s.session = session
	if s.tools, err = s.list(ctx, cfg); err != nil {
		return nil, s.fail("failed to list its tools", err)
	}
	return s, nil
}

// fail stops a server that could not be set up and returns an error naming
// it, with its stderr's tail.
func (s *Server) fail(what string, err error) error {
	s.Close()
	msg := fmt.Sprintf("MCP server %q %s: %v", s.name, what, err)
	if s.proc != nil {
		if tail := s.proc.stderr.String(); tail != "" {
			msg += "\nits stderr ends:\n" + indent(tail)
		}
	}
	return errors.New(msg)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// list lists the server's tools and wraps those cfg allows.
func (s *Server) list(ctx context.Context, cfg Config) ([]tool.Tool, error) {
	var remote []*sdk.Tool
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		remote = append(remote, t)
	}
	if len(cfg.Tools) > 0 {
		byName := map[string]*sdk.Tool{}
		for _, t := range remote {
			byName[t.Name] = t
		}
		var missing []string
		allowed := make([]*sdk.Tool, 0, len(cfg.Tools))
		for _, name := range cfg.Tools {
			if t, ok := byName[name]; ok {
				allowed = append(allowed, t)
			} else {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			names := make([]string, len(remote))
			for i, t := range remote {
				names[i] = t.Name
			}
			sort.Strings(names)
			return nil, fmt.Errorf("it has no tool %s (it has: %s)", strings.Join(missing, ", "), strings.Join(names, ", "))
		}
		remote = allowed
	}
	tools := make([]tool.Tool, 0, len(remote))
	seen := map[string]string{}
	var errs []error
	size := 0
	for _, t := range remote {
		mt, err := s.wrap(t, cfg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		size += len(mt.info.Name) + len(mt.info.Description) + len(mt.info.Schema)
		if other, dup := seen[mt.info.Name]; dup {
			errs = append(errs, fmt.Errorf("tools %q and %q both become %q", other, t.Name, mt.info.Name))
			continue
		}
		seen[mt.info.Name] = t.Name
		tools = append(tools, mt)
	}
	if size > MaxToolListBytes {
		// Every model call carries the tool list: one this large would
		// spend the token budget before the model said a word.
		errs = append(errs, fmt.Errorf("its tools' names, descriptions and schemas come to %s, more than the %s a server may offer: name the tools the task needs (tools: [...])", bytesText(size), bytesText(MaxToolListBytes)))
	}
	return tools, errors.Join(errs...)
}

// MaxToolListBytes bounds what one server's tools add to every request.
const MaxToolListBytes = 256 << 10

func bytesText(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// wrap makes a ratchet tool of a server's tool.
func (s *Server) wrap(t *sdk.Tool, cfg Config) (*mcpTool, error) {
	name := cfg.Prefix + sanitize(t.Name)
	if len(name) > 64 {
		return nil, fmt.Errorf("tool %q: name %q is longer than 64 characters", t.Name, name)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: input schema: %v", t.Name, err)
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("The %s tool of MCP server %s.", t.Name, s.name)
	}
	info := tool.Info{
		Name:        name,
		Description: desc,
		Schema:      schema,
		Timeout:     cfg.Timeout,
	}
	// A tool that only reads is as safe to repeat as one declared
	// idempotent. The hints are the server's word; without them a call is
	// never repeated blindly.
	if a := t.Annotations; a != nil {
		info.Idempotent = a.ReadOnlyHint || a.IdempotentHint
	}
	return &mcpTool{srv: s, remote: t.Name, info: info}, nil
}

// sanitize maps a server's tool name onto the characters ratchet allows.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !validByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !validByte(s[i]) {
			return false
		}
	}
	return true
}

func validByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// Name is the server's name from its Config.
func (s *Server) Name() string { return s.name }

// Tools returns the server's tools, allowed by Config.Tools, in the order
// the server listed them.
func (s *Server) Tools() []tool.Tool { return slices.Clone(s.tools) }

// Close ends the session and, for a stdio server, stops its process and any
// it started: it closes the server's input, waits StopTimeout for it to
// exit, then signals it, and finally kills its process group. Calls still
// in flight fail. Close is idempotent and returns nil: how a server exits
// once its session is over is not worth reporting.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.session != nil {
			_ = s.session.Close()
		}
		if s.proc != nil {
			s.proc.stop()
		}
	})
	return nil
}

// mcpTool is one of a server's tools.
type mcpTool struct {
	srv    *Server
	remote string // the server's name for the tool
	info   tool.Info
}

func (t *mcpTool) Info() tool.Info { return t.info }

// Run calls the tool. A result flagged isError and a failed request are
// returned as errors, observations for the model; a request the server
// refuses as invalid params wraps [tool.ErrInvalidArgs].
func (t *mcpTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := t.srv.session.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		return "", t.srv.secrets.Error(t.srv.callError(ctx, err))
	}
	out := t.srv.secrets.String(Text(res))
	if res.IsError {
		if out == "" {
			out = "the server reported an error without a message"
		}
		return "", errors.New(out)
	}
	return out, nil
}

// callError describes a failed request.
func (s *Server) callError(ctx context.Context, err error) error {
	var werr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		// The executor reports the timeout or cancellation itself.
		return context.Cause(ctx)
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF):
		return fmt.Errorf("MCP server %q is not running any more (%v)", s.name, err)
	case errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams:
		return fmt.Errorf("%w: MCP server %q: %s", tool.ErrInvalidArgs, s.name, werr.Message)
	}
	return fmt.Errorf("MCP server %q: %v", s.name, err)
}

// version is ratchet's module version for the handshake.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "devel"
}

// httpClient returns base (or a default client) sending headers with every
// request.
func httpClient(base *http.Client, headers map[string]string) *http.Client {
	if base == nil {
		base = &http.Client{}
	}
	if len(headers) == 0 {
		return base
	}
	c := *base
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = headerTransport{base: rt, headers: h}
	return &c
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.headers {
		r.Header[k] = vs
	}
	return t.base.RoundTrip(r)
}
