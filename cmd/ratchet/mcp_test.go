package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/loop"
)

// TestRunMCP runs a task file whose tool comes from an MCP server.
func TestRunMCP(t *testing.T) {
	bin := testenv.NPMBin(t, "mcp-server-everything")
	dir := write(t, map[string]string{
		"task.yaml": `goal: What is 20+22? Use the tool, then finish.
model: scripted:turns.yaml
mcp:
  - name: everything
    command: ["` + bin + `", stdio]
    tools: [get-sum]
    prefix: ev_
    timeout: 10s
checks: [{equals: "42"}]
budget: {steps: 4, time: 1m}
`,
		"turns.yaml": `turns:
  - tools: [{name: ev_get-sum, args: {a: 20, b: 22}}]
  - expect: ["The sum of 20 and 22 is 42."]
    finish: {answer: "42", confidence: 0.9}
`,
	})
	c := run(t, nil, "run", "--json", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	res := c.result(t)
	if res.Status != loop.Done || res.Usage.ToolCalls != 1 {
		t.Errorf("result %s with %d tool calls: %v", res.Status, res.Usage.ToolCalls, c)
	}
	if !strings.Contains(c.stderr, "ratchet: MCP server everything offers ev_get-sum\n") {
		t.Errorf("stderr does not list the server's tools:\n%s", c.stderr)
	}
}

// TestRunMCPClash: a server tool may not take a workspace tool's name.
func TestRunMCPClash(t *testing.T) {
	bin := testenv.NPMBin(t, "mcp-server-filesystem")
	dir := write(t, map[string]string{
		"task.yaml": `goal: g
model: scripted:turns.yaml
tools: [read_file]
mcp:
  - name: fs
    command: ["` + bin + `", "${WORKSPACE}"]
    tools: [read_file, list_directory]
checks: [{equals: "42"}]
`,
		"turns.yaml": "turns: []\n",
	})
	c := run(t, nil, "run", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitUsage)
	want := filepath.Join(dir, "task.yaml") + `:5: MCP server "fs": its tool read_file clashes with the workspace tool read_file; give the server a prefix: such as fs_`
	if strings.TrimSpace(c.stderr) != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", c.stderr, want)
	}
}

func TestRunMCPProblems(t *testing.T) {
	for _, tc := range []struct {
		name, mcp string
		want      []string
	}{
		{"server fails to start", `
  - name: broken
    command: [sh, -c, "echo 'cannot open config' >&2; exit 1"]`,
			[]string{`task.yaml:4: MCP server "broken" failed to start: `, "its stderr ends:\n  cannot open config"}},
		{"unset variable", `
  - name: web
    url: http://127.0.0.1:1/mcp
    headers: {Authorization: "Bearer ${RATCHET_TEST_UNSET_TOKEN}"}`,
			[]string{"task.yaml:4: mcp server web: headers.Authorization: ${RATCHET_TEST_UNSET_TOKEN} is not set"}},
		{"unreachable url", `
  - name: web
    url: http://127.0.0.1:1/mcp
    start_timeout: 5s`,
			[]string{`task.yaml:4: MCP server "web" failed to start: `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, map[string]string{
				"task.yaml":  "goal: g\nmodel: scripted:turns.yaml\nmcp:" + tc.mcp + "\nchecks: [{equals: a}]\n",
				"turns.yaml": "turns: []\n",
			})
			c := run(t, nil, "run", filepath.Join(dir, "task.yaml"))
			c.wantCode(t, exitUsage)
			for _, w := range tc.want {
				if !strings.Contains(c.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, c.stderr)
				}
			}
		})
	}
}
