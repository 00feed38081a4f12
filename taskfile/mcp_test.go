package taskfile_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/tool/mcp"
)

const mcpTask = `goal: g
checks: [{equals: a}]
mcp:
  - name: fs
    command: [npx, -y, "@modelcontextprotocol/server-filesystem", "${WORKSPACE}"]
    env: {FOO: bar, GITHUB_TOKEN: "${GITHUB_TOKEN}"}
    tools: [read_file, list_directory]
    prefix: fs_
    timeout: 30s
    start_timeout: 2m
  - name: everything
    url: http://localhost:3001/mcp
    headers: {Authorization: "Bearer ${API_TOKEN}"}
  - name: local
    command: [./bin/server, --root, "${TASK_DIR}/data", "cost: $5"]
`

func TestParseMCP(t *testing.T) {
	dir := t.TempDir()
	f, err := taskfile.Load(writeTask(t, dir, "task.yaml", mcpTask))
	if err != nil {
		t.Fatal(err)
	}
	want := []taskfile.MCPServer{
		{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "${WORKSPACE}"},
			Env: map[string]string{"FOO": "bar", "GITHUB_TOKEN": "${GITHUB_TOKEN}"}, Tools: []string{"read_file", "list_directory"},
			Prefix: "fs_", Timeout: 30 * time.Second, StartTimeout: 2 * time.Minute, Line: 4},
		{Name: "everything", URL: "http://localhost:3001/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"}, Line: 11},
		{Name: "local", Command: []string{"./bin/server", "--root", "${TASK_DIR}/data", "cost: $5"}, Line: 14},
	}
	if diff := cmp.Diff(want, f.MCP); diff != "" {
		t.Errorf("MCP (-want +got):\n%s", diff)
	}

	env := map[string]string{"GITHUB_TOKEN": "ghp-test", "API_TOKEN": "tok", "OPENAI_API_KEY": "sk-never"}
	cfgs, err := f.MCPConfigs(taskfile.Env{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	wantCfgs := []mcp.Config{
		{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", dir}, Dir: dir,
			Env: map[string]string{"FOO": "bar", "GITHUB_TOKEN": "ghp-test"}, Tools: []string{"read_file", "list_directory"},
			Prefix: "fs_", Timeout: 30 * time.Second, StartTimeout: 2 * time.Minute},
		{Name: "everything", URL: "http://localhost:3001/mcp", Headers: map[string]string{"Authorization": "Bearer tok"}},
		{Name: "local", Command: []string{filepath.Join(dir, "bin/server"), "--root", dir + "/data", "cost: $5"}, Dir: dir},
	}
	if diff := cmp.Diff(wantCfgs, cfgs, cmpopts.IgnoreFields(mcp.Config{}, "Transport", "HTTPClient")); diff != "" {
		t.Errorf("MCPConfigs (-want +got):\n%s", diff)
	}
}

func TestMCPConfigsUnsetVariable(t *testing.T) {
	dir := t.TempDir()
	path := writeTask(t, dir, "task.yaml", mcpTask)
	f, err := taskfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.MCPConfigs(taskfile.Env{Getenv: func(string) string { return "" }})
	want := path + ":4: mcp server fs: env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set\n" +
		path + ":11: mcp server everything: headers.Authorization: ${API_TOKEN} is not set"
	if err == nil || err.Error() != want {
		t.Errorf("err =\n%v\nwant\n%s", err, want)
	}
}

func TestParseMCPProblems(t *testing.T) {
	type want struct {
		line int
		msg  string
	}
	ok := "goal: g\nchecks: [{equals: a}]\n"
	for _, tc := range []struct {
		name, data string
		want       []want
	}{
		{"not a list of mappings", ok + "mcp: [fs]\n", []want{{3, "mcp server must be a mapping"}}},
		{"unknown field", ok + "mcp:\n  - name: a\n    command: [x]\n    cmd: [y]\n", []want{{6, `unknown field "cmd" in mcp server (known: name, command, url, env, headers, tools, prefix, timeout, start_timeout)`}}},
		{"no name", ok + "mcp:\n  - command: [x]\n", []want{{4, "an mcp server needs a name"}}},
		{"bad name", ok + "mcp:\n  - name: my server\n    command: [x]\n", []want{{4, `mcp.name must be letters, digits, _ and -`}}},
		{"twice", ok + "mcp:\n  - {name: a, command: [x]}\n  - {name: a, url: 'http://h/mcp'}\n", []want{{5, "mcp server a is declared twice (also line 4)"}}},
		{"neither command nor url", ok + "mcp:\n  - name: a\n", []want{{4, "mcp server a needs a command (a stdio server) or a url"}}},
		{"both", ok + "mcp:\n  - name: a\n    command: [x]\n    url: http://h/mcp\n", []want{{6, "mcp server a has both a command and a url; give one"}}},
		{"empty command", ok + "mcp:\n  - name: a\n    command: []\n", []want{{5, "mcp.command needs the program first"}}},
		{"bad url", ok + "mcp:\n  - name: a\n    url: localhost:3001\n", []want{{5, `mcp.url must start with http:// or https://, got "localhost:3001"`}}},
		{"headers on a command", ok + "mcp:\n  - name: a\n    command: [x]\n    headers: {A: b}\n", []want{{4, "mcp server a: headers are for a url"}}},
		{"env on a url", ok + "mcp:\n  - name: a\n    url: http://h/mcp\n    env: {A: b}\n", []want{{4, "mcp server a: env is for a command"}}},
		{"env not a mapping", ok + "mcp:\n  - name: a\n    command: [x]\n    env: [A=b]\n", []want{{6, "mcp.env must be a mapping of names to strings"}}},
		{"bad env name", ok + "mcp:\n  - name: a\n    command: [x]\n    env: {1A: b}\n", []want{{6, `mcp.env: "1A" is not a variable name`}}},
		{"env value not a string", ok + "mcp:\n  - name: a\n    command: [x]\n    env: {A: [b]}\n", []want{{6, "mcp.env.A must be a string"}}},
		{"unterminated reference", ok + "mcp:\n  - name: a\n    command: [x, '${WORKSPACE']\n", []want{{5, `mcp.command: "${WORKSPACE" has a ${ without its }`}}},
		{"bad reference", ok + "mcp:\n  - name: a\n    command: [x]\n    env: {A: '${not-a-name}'}\n", []want{{6, "mcp.env.A: ${not-a-name} is not a variable reference"}}},
		{"tool listed twice", ok + "mcp:\n  - name: a\n    command: [x]\n    tools: [t, t]\n", []want{{6, "mcp.tools: t is listed twice"}}},
		{"empty tool", ok + "mcp:\n  - name: a\n    command: [x]\n    tools: ['']\n", []want{{6, "mcp.tools: a tool name is empty"}}},
		{"bad prefix", ok + "mcp:\n  - name: a\n    command: [x]\n    prefix: 'a.'\n", []want{{6, `mcp.prefix must be letters, digits, _ and -`}}},
		{"bad timeout", ok + "mcp:\n  - name: a\n    command: [x]\n    timeout: soon\n", []want{{6, `mcp.timeout must be a positive duration such as 30s, got "soon"`}}},
		{"zero start timeout", ok + "mcp:\n  - name: a\n    command: [x]\n    start_timeout: 0s\n", []want{{6, "mcp.start_timeout must be a positive duration"}}},
		{"generate mode", ok + "mode: generate\nmcp:\n  - {name: a, command: [x]}\n", []want{{1, "generate mode has no tools (every reply is a candidate); remove tools: and mcp: or use mode: agent"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTask(t, t.TempDir(), "task.yaml", tc.data)
			_, err := taskfile.Load(path)
			ps := problems(t, err)
			if len(ps) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(ps), len(tc.want), err)
			}
			for i, w := range tc.want {
				if p := ps[i]; p.Line != w.line || !strings.Contains(p.Msg, w.msg) {
					t.Errorf("problem %d = %q, want line %d: …%s…", i, p.Error(), w.line, w.msg)
				}
			}
		})
	}
}

func TestParseMCPEmpty(t *testing.T) {
	f, err := taskfile.Parse([]byte("goal: g\nchecks: [{equals: a}]\nmcp:\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := f.MCPConfigs(taskfile.Env{})
	if err != nil || len(f.MCP) != 0 || len(cfgs) != 0 {
		t.Errorf("MCP = %v, configs %v, err %v", f.MCP, cfgs, err)
	}
}
