package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to write and read from two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUIAddress: an address that is not loopback needs a token.
func TestUIAddress(t *testing.T) {
	c := run(t, nil, "ui", "--addr", "0.0.0.0:7777")
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, "--token") {
		t.Errorf("no word of --token:\n%v", c)
	}
	run(t, nil, "ui", "--addr", "nonsense").wantCode(t, exitUsage)
	if c := run(t, map[string]string{"RATCHET_UI_TOKEN": "t"}, "ui", "--addr", "0.0.0.0:99999"); strings.Contains(c.stderr, "--token") {
		t.Errorf("$RATCHET_UI_TOKEN is not taken as the token:\n%v", c)
	}
	run(t, nil, "ui", "extra").wantCode(t, exitUsage)
}

// TestUIAnswers: ratchet ui carries a waiting run on from its form through
// the same storedRun and runner.Resume as ratchet approve and deny: the
// TestApproveAndAnswer run, approved and then denied in the browser's way.
func TestUIAnswers(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": `goal: Journal the word yes, then answer yes.
model: scripted:turns.yaml
tools: [append_file]
permissions:
  - {tool: append_file, args: {path: "*.txt"}, action: ask}
checks: [{equals: "yes"}]
`,
		"turns.yaml": `turns:
  - tools: [{name: append_file, args: {path: journal.txt, text: "yes\n"}}]
  - tools: [{name: append_file, args: {path: other.txt, text: "no\n"}}]
  - expect: ["a person refused this call: not that file"]
    finish: {answer: "yes", confidence: 0.9}
`,
	})
	state := t.TempDir()
	env := map[string]string{"XDG_STATE_HOME": state, "RATCHET_EVAL_DIR": t.TempDir()}
	c := run(t, env, "run", "--json", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitWaiting)
	id := regexp.MustCompile(`run (\S+) is waiting`).FindStringSubmatch(c.stderr)[1]

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	uiEnv := maps.Clone(env)
	uiEnv["OTEL_TRACES_EXPORTER"] = "console"
	m := &Main{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return uiEnv[k] }}
	done := make(chan int)
	go func() { done <- m.Run(ctx, []string{"ui", "--addr", "127.0.0.1:0"}) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if code := <-done; code != exitDone {
				t.Errorf("ratchet ui exited %d\n%s", code, stderr.String())
			}
		}
	}
	defer stop()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`serving (http://\S+)/ `).FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("ratchet ui printed no address:\n%s%s", stdout.String(), stderr.String())
		}
	}
	answer := func(action, text string) {
		t.Helper()
		page := httpGet(t, base+"/runs/"+id)
		token := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
		if token == nil || !strings.Contains(page, "Waiting for approval") {
			t.Fatalf("no approval form:\n%s", page)
		}
		form := url.Values{"csrf": {token[1]}, "action": {action}, "text": {text}}
		req, _ := http.NewRequest("POST", base+"/answer/"+id, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s: %d", action, resp.StatusCode)
		}
	}
	status := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			c := run(t, env, "show", "--json", id)
			var row struct{ Status, Question string }
			json.Unmarshal([]byte(c.stdout), &row)
			if row.Status == want && (want != "awaiting_input" || strings.Contains(row.Question, "other.txt")) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("run is %s, want %s\n%s", row.Status, want, stderr.String())
			}
		}
	}
	answer("approve", "")
	status("awaiting_input") // the second call asks again
	if data, _ := os.ReadFile(filepath.Join(dir, "journal.txt")); string(data) != "yes\n" {
		t.Errorf("journal = %q after approval", data)
	}
	answer("deny", "not that file")
	status("done")
	if _, err := os.Stat(filepath.Join(dir, "other.txt")); !os.IsNotExist(err) {
		t.Errorf("a denied call ran: %v", err)
	}
	run(t, env, "replay", id).wantCode(t, exitDone)
	// The runs the UI carries on make spans as ratchet approve's would.
	stop()
	for _, want := range []string{`"Name":"invoke_agent ratchet"`, `"Name":"execute_tool append_file"`, `"Name":"check equals"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the UI made no span %s", want)
		}
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}
