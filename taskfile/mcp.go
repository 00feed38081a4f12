package taskfile

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/tool/mcp"
)

// MCPServer is one server of the mcp: section as written. Its strings may
// hold ${NAME} references, expanded by [File.MCPConfigs].
type MCPServer struct {
	Name string
	// Command is a stdio server's program and arguments; URL a streamable
	// HTTP server's endpoint. Exactly one is set.
	Command []string
	URL     string
	// Env is added to a stdio server's otherwise scrubbed environment;
	// Headers are sent with every HTTP request.
	Env, Headers map[string]string
	// Tools is an allow-list of the server's tool names; empty means all.
	Tools  []string
	Prefix string
	// Timeout bounds each call; StartTimeout starting the server. Zero
	// means the default.
	Timeout, StartTimeout time.Duration
	Line                  int
}

// MCPFields are the fields of a server in the mcp: section.
var MCPFields = []string{"name", "command", "url", "env", "headers", "tools", "prefix", "timeout", "start_timeout"}

// Built-in variables of ${NAME} references; any other name is read from
// the environment.
const (
	varWorkspace = "WORKSPACE" // the run's workspace directory
	varTaskDir   = "TASK_DIR"  // the task file's directory
)

func (p *parser) mcpServers(n *yaml.Node) {
	if n.Tag == "!!null" { // mcp: with nothing after it
		return
	}
	for _, item := range p.nodes(n, "mcp") {
		s := MCPServer{Line: item.Line}
		var command, url *yaml.Node
		p.fields(item, "mcp server", MCPFields, func(key string, v *yaml.Node) {
			field := "mcp." + key
			switch key {
			case "name":
				s.Name = p.str(v, field)
				if v.Kind == yaml.ScalarNode && !validServerName(s.Name) {
					p.errorf(v, "mcp.name must be letters, digits, _ and - (it names the server in messages), got %q", s.Name)
				}
			case "command":
				command = v
				s.Command = p.strList(v, field)
				if (v.Kind == yaml.SequenceNode || v.Kind == yaml.ScalarNode) && (len(s.Command) == 0 || s.Command[0] == "") {
					p.errorf(v, "mcp.command needs the program first, e.g. [npx, -y, \"@modelcontextprotocol/server-filesystem\", \"${WORKSPACE}\"]")
				}
				for i, arg := range s.Command {
					p.refs(itemNode(v, i), field, arg)
				}
			case "url":
				url = v
				s.URL = p.str(v, field)
				p.refs(v, field, s.URL)
				if v.Kind == yaml.ScalarNode && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
					p.errorf(v, "mcp.url must start with http:// or https://, got %q", s.URL)
				}
			case "env":
				s.Env = p.strMap(v, field, true)
			case "headers":
				s.Headers = p.strMap(v, field, false)
			case "tools":
				items := p.nodes(v, field)
				for i, name := range p.strList(v, field) {
					switch {
					case i >= len(items) || items[i].Kind != yaml.ScalarNode: // reported
					case name == "":
						p.errorf(items[i], "mcp.tools: a tool name is empty")
					case slices.Contains(s.Tools, name):
						p.errorf(items[i], "mcp.tools: %s is listed twice", name)
					default:
						s.Tools = append(s.Tools, name)
					}
				}
			case "prefix":
				s.Prefix = p.str(v, field)
				if v.Kind == yaml.ScalarNode && !validServerName(s.Prefix) {
					p.errorf(v, "mcp.prefix must be letters, digits, _ and -, such as fs_, got %q", s.Prefix)
				}
			case "timeout":
				s.Timeout = p.positiveDuration(v, field)
			case "start_timeout":
				s.StartTimeout = p.positiveDuration(v, field)
			}
		})
		if item.Kind != yaml.MappingNode {
			continue
		}
		if s.Name == "" {
			p.errorf(item, "an mcp server needs a name")
		}
		for _, other := range p.f.MCP {
			if s.Name != "" && other.Name == s.Name {
				p.errorf(item, "mcp server %s is declared twice (also line %d)", s.Name, other.Line)
			}
		}
		switch {
		case command == nil && url == nil:
			p.errorf(item, "mcp server %s needs a command (a stdio server) or a url (a streamable HTTP server)", s.Name)
		case command != nil && url != nil:
			p.errorf(url, "mcp server %s has both a command and a url; give one", s.Name)
		case command != nil && s.Headers != nil:
			p.errorf(item, "mcp server %s: headers are for a url; a command's server takes env", s.Name)
		case url != nil && s.Env != nil:
			p.errorf(item, "mcp server %s: env is for a command; a url's server takes headers", s.Name)
		}
		p.f.MCP = append(p.f.MCP, s)
	}
}

// itemNode returns the node of a list's i-th item, or the list itself.
func itemNode(n *yaml.Node, i int) *yaml.Node {
	if n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}

// strMap reads a mapping of strings; env says its keys are environment
// variable names. Values may hold ${NAME} references.
func (p *parser) strMap(n *yaml.Node, field string, env bool) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping of names to strings, e.g. {FOO: bar}", field)
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case env && !validVarName(k.Value):
			p.errorf(k, "%s: %q is not a variable name (letters, digits and _, not first a digit)", field, k.Value)
		case !env && (k.Value == "" || strings.ContainsAny(k.Value, " :\t\r\n")):
			p.errorf(k, "%s: %q is not a header name", field, k.Value)
		}
		if _, dup := m[k.Value]; dup {
			p.errorf(k, "%s.%s is given twice", field, k.Value)
		}
		val := p.str(v, field+"."+k.Value)
		p.refs(v, field+"."+k.Value, val)
		m[k.Value] = val
	}
	return m
}

// refs reports malformed ${NAME} references in s.
func (p *parser) refs(n *yaml.Node, field, s string) {
	if _, err := expand(s, func(string) (string, bool) { return "", true }); err != nil {
		p.errorf(n, "%s: %v", field, err)
	}
}

func (p *parser) positiveDuration(n *yaml.Node, field string) time.Duration {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || d <= 0 {
		p.errorf(n, "%s must be a positive duration such as 30s, got %q", field, n.Value)
		return 0
	}
	return d
}

func validServerName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validVarName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// expand replaces every ${NAME} in s by lookup(NAME). A $ not followed by
// { stands for itself; ${ must start a well-formed reference.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q has a ${ without its }", s)
		}
		name := s[i+2 : i+end]
		if !validVarName(name) {
			return "", fmt.Errorf("${%s} is not a variable reference (letters, digits and _)", name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("${%s} is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// MCPConfigs returns the configurations of the file's MCP servers, with
// ${WORKSPACE} expanded to the workspace, ${TASK_DIR} to the task file's
// directory and any other ${NAME} to env.Getenv(NAME), which must not be
// empty: a secret such as a token reaches a server only when the file names
// it. A stdio server runs in the workspace; a program given with a slash is
// relative to the task file.
func (f *File) MCPConfigs(env Env) ([]mcp.Config, error) {
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	lookup := func(name string) (string, bool) {
		switch name {
		case varWorkspace:
			return f.Workspace, true
		case varTaskDir:
			return f.Dir, true
		}
		v := getenv(name)
		env.Secrets.Add(v)
		return v, v != ""
	}
	var errs Problems
	var cfgs []mcp.Config
	for _, s := range f.MCP {
		var problems []string
		x := func(field, v string) string {
			out, err := expand(v, lookup)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", field, err))
			}
			return out
		}
		xmap := func(field string, m map[string]string) map[string]string {
			if m == nil {
				return nil
			}
			out := make(map[string]string, len(m))
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out[k] = x(field+"."+k, m[k])
			}
			return out
		}
		cfg := mcp.Config{
			Name: s.Name, URL: x("url", s.URL), Env: xmap("env", s.Env), Headers: xmap("headers", s.Headers),
			Tools: s.Tools, Prefix: s.Prefix, Timeout: s.Timeout, StartTimeout: s.StartTimeout,
		}
		if len(s.Command) > 0 {
			cfg.Dir = f.Workspace
			for i, arg := range s.Command {
				cfg.Command = append(cfg.Command, x("command", arg))
				if i == 0 && strings.Contains(cfg.Command[0], "/") && !filepath.IsAbs(cfg.Command[0]) {
					cfg.Command[0] = filepath.Join(f.Dir, cfg.Command[0])
				}
			}
		}
		for _, msg := range problems {
			errs = append(errs, Problem{File: f.Path, Line: s.Line, Msg: fmt.Sprintf("mcp server %s: %s", s.Name, msg)})
		}
		for _, v := range cfg.Headers {
			env.Secrets.Add(v)
		}
		cfgs = append(cfgs, cfg)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return cfgs, nil
}
