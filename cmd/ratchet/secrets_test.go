//go:build unix

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server whose tool prints its
// environment, when this variable is set.
const envServerVar = "RATCHET_SECRETS_TEST_SERVER"

// serveEnvPrinter is that server (TestMain in fields_test.go starts it).
func serveEnvPrinter() {
	s := sdk.NewServer(&sdk.Implementation{Name: "env-printer", Version: "v0"}, nil)
	s.AddTool(&sdk.Tool{Name: "printenv", Description: "Print the environment.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			env := os.Environ()
			slices.Sort(env)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(env, "\n")}}}, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

// The canaries: every secret a run holds has "CANARY" in it, and no other
// text of the run does.
const (
	canaryKey     = "sk-ant-CANARY-api-5f2e9d"   // the provider key, from the environment
	canaryMCP     = "CANARY-mcp-token-77a1c3"    // an MCP header's ${VAR}
	canaryService = "CANARY-service-token-31c4e" // a stdio server's env ${VAR}
)

// hostileAnthropic is a Messages API server that echoes the key it was
// sent wherever it can: in a 500's body and headers (retried), in the
// text of its replies, and in a 401 that ends the run.
type hostileAnthropic struct {
	mu    sync.Mutex
	n     int
	texts []string // what each request's last user content said
}

func (h *hostileAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	key := cmp.Or(r.Header.Get("X-Api-Key"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	h.mu.Lock()
	h.n++
	n := h.n
	if len(req.Messages) > 0 {
		h.texts = append(h.texts, string(req.Messages[len(req.Messages)-1].Content))
	}
	h.mu.Unlock()
	fail := func(status int, typ string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req-"+key)
		w.Header().Set("X-Echo-Key", key)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":"the key %s is no good"}}`, typ, key)
	}
	var blocks []map[string]any
	switch n {
	case 1:
		fail(500, "api_error")
		return
	case 2:
		blocks = []map[string]any{{"type": "text", "text": "Calling with key " + key + "."}, toolUse("t1", "whoami")}
	case 3:
		blocks = []map[string]any{{"type": "text", "text": "Now the environment."}, toolUse("t2", "printenv")}
	case 4:
		blocks = []map[string]any{{"type": "text", "text": "Finishing."}, {"type": "tool_use", "id": "t3", "name": "finish", "input": map[string]any{"answer": "the key is " + key, "confidence": 0.9}}}
	default:
		fail(401, "authentication_error")
		return
	}
	if req.Stream {
		writeStream(w, blocks)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks,
		"stop_reason": "tool_use", "usage": map[string]int{"input_tokens": 100, "output_tokens": 20},
	})
}

func toolUse(id, name string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}
}

// writeStream sends blocks as a Messages API event stream.
func writeStream(w http.ResponseWriter, blocks []map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("message_start", map[string]any{"message": map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{}, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
	for i, b := range blocks {
		if b["type"] == "text" {
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			text := b["text"].(string)
			// Cut the text in the middle, where a key may be.
			for _, piece := range []string{text[:len(text)/2], text[len(text)/2:]} {
				event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": piece}})
			}
		} else {
			in, _ := json.Marshal(b["input"])
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]int{"output_tokens": 20}})
	event("message_stop", map[string]any{})
}

// TestSecretsNeverLeaveTheBinary runs the built CLI against a provider
// that echoes its key in a 500's body and headers, a 401 and its replies,
// an MCP server that echoes its auth header and one that prints its
// environment; then looks for the canaries in every surface: stdout,
// stderr, --json, the JSONL log, the SQLite file and 'show --events'.
func TestSecretsNeverLeaveTheBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ratchet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mcpSrv := sdk.NewServer(&sdk.Implementation{Name: "echo-auth", Version: "v0"}, nil)
	mcpSrv.AddTool(&sdk.Tool{Name: "whoami", Description: "Say who the caller is.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you sent Authorization: " + req.Extra.Header.Get("Authorization")}}}, nil
		})
	mcpHTTP := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpSrv }, nil))
	defer mcpHTTP.Close()

	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			provider := &hostileAnthropic{}
			api := httptest.NewServer(provider)
			defer api.Close()
			dir := t.TempDir()
			task := fmt.Sprintf(`goal: Find out who you are and what your environment holds, then finish with "done".
model: anthropic:claude-sonnet-4-5
mcp:
  - name: web
    url: %s
    headers: {Authorization: "Bearer ${RATCHET_E2E_MCP_TOKEN}"}
  - name: proc
    command: [%q]
    env: {%s: "1", SERVICE_CREDENTIAL: "${RATCHET_E2E_SERVICE}"}
checks: [{equals: "done"}]
budget: {steps: 6, time: 1m}
`, mcpHTTP.URL, self, envServerVar)
			if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(task), 0o644); err != nil {
				t.Fatal(err)
			}
			db, logFile := filepath.Join(dir, "runs.db"), filepath.Join(dir, "run.jsonl")
			env := append(os.Environ(), "ANTHROPIC_API_KEY="+canaryKey, "ANTHROPIC_BASE_URL="+api.URL,
				"RATCHET_E2E_MCP_TOKEN="+canaryMCP, "RATCHET_E2E_SERVICE="+canaryService, "RATCHET_DB="+db)
			if !stream {
				env = append(env, "RATCHET_NO_STREAM=1")
			}
			ratchet := func(args ...string) (stdout, stderr string, code int) {
				var out, errb bytes.Buffer
				cmd := exec.Command(bin, args...)
				cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, &out, &errb, dir
				err := cmd.Run()
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return out.String(), errb.String(), code
			}
			surfaces := map[string]string{}
			var code int
			surfaces["run --json stdout"], surfaces["run --json stderr"], code = ratchet("run", "--json", "--log", logFile, "task.yaml")
			if code != exitInfra {
				t.Fatalf("exit %d, want %d (the 401 fails the run)\nstdout:\n%s\nstderr:\n%s", code, exitInfra, surfaces["run --json stdout"], surfaces["run --json stderr"])
			}
			var res struct {
				Status, Reason string
			}
			if err := json.Unmarshal([]byte(surfaces["run --json stdout"]), &res); err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSpace(strings.TrimPrefix(lastLineWith(surfaces["run --json stderr"], "run: "), "run: "))
			id, _, _ = strings.Cut(id, " ")
			surfaces["show stdout"], surfaces["show stderr"], _ = ratchet("show", id)
			surfaces["show --events stdout"], surfaces["show --events stderr"], _ = ratchet("show", id, "--events")
			for _, f := range []string{logFile, db, db + "-wal"} {
				if b, err := os.ReadFile(f); err == nil {
					surfaces[filepath.Base(f)] = string(b)
				} else if f != db+"-wal" {
					t.Fatal(err)
				}
			}
			for name, s := range surfaces {
				if n := strings.Count(s, "CANARY"); n > 0 {
					i := strings.Index(s, "CANARY")
					t.Errorf("%s: %d canaries, want 0; the first in …%s…", name, n, s[max(0, i-80):min(len(s), i+40)])
				}
			}
			// The secrets did flow, and were redacted where they surfaced.
			all := strings.Join(provider.texts, "\n")
			for _, want := range []string{"Authorization: [redacted]", "SERVICE_CREDENTIAL=[redacted]"} {
				if !strings.Contains(all, want) {
					t.Errorf("the model was not shown %q; it saw:\n%s", want, all)
				}
			}
			if !strings.Contains(res.Reason, "[redacted]") || !strings.Contains(surfaces["run --json stderr"], "Calling with key [redacted].") {
				t.Errorf("reason %q / stderr lack the redacted key:\n%s", res.Reason, surfaces["run --json stderr"])
			}
		})
	}
}

// lastLineWith is the last line of s that starts with prefix.
func lastLineWith(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	return ""
}

func TestDSNPassword(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://ratchet:s3cret-pw@db:5432/runs": "s3cret-pw",
		"host=db dbname=runs password=s3cret-pw":    "s3cret-pw",
		"host=db dbname=runs password='s3cret-pw'":  "s3cret-pw",
		"postgres://db/runs":                        "",
	} {
		if got := dsnPassword(dsn); got != want {
			t.Errorf("dsnPassword(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestHostileTextIsEscaped: a reply that tries to clear the screen, retitle
// the window and ring the bell is shown escaped by run and by show, and
// no escape sequence is written when stdout is not a terminal.
func TestHostileTextIsEscaped(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": "goal: Say hi.\nmodel: scripted:turns.yaml\nchecks: [{contains: hi}]\nbudget: {steps: 3, time: 1m}\n",
		"turns.yaml": `turns:
  - text: "\e[2J\e]0;pwned\a clearing"
    finish: {answer: "hi \e[31mred\e[0m \x9b", confidence: 0.9}
`,
	})
	env := map[string]string{"RATCHET_DB": filepath.Join(dir, "runs.db")}
	c := run(t, env, "run", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	id := strings.Fields(strings.TrimPrefix(lastLineWith(c.stderr, "run: "), "run: "))[0]
	show := run(t, env, "show", id)
	show.wantCode(t, exitDone)
	for name, out := range map[string]string{"run": c.stdout + c.stderr, "show": show.stdout + show.stderr} {
		if at, bad := controlChar(out); bad {
			t.Errorf("%s printed a raw control character near %q:\n%s", name, at, out)
		}
		if !strings.Contains(out, `\x1b[31mred`) {
			t.Errorf("%s does not show the escape sequence escaped:\n%s", name, out)
		}
	}
}

// controlChar finds a control character other than newline and tab.
func controlChar(s string) (string, bool) {
	for i, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return s[max(0, i-20):min(len(s), i+20)], true
		}
	}
	return "", false
}
