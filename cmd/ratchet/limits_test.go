package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// inFlightServer is a local Anthropic Messages server that answers every
// request, slowly, with an unsure finish (so the loop samples alternatives
// in parallel), and counts how many requests it served at once.
type inFlightServer struct {
	mu          sync.Mutex
	now, maxNow int
	requests    int
}

func (s *inFlightServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.now++
	s.requests++
	s.maxNow = max(s.maxNow, s.now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	time.Sleep(100 * time.Millisecond) // long enough for the samples to overlap, however busy the machine
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"finish","input":{"answer":"5","confidence":0.3}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)
}

const limitedTask = `goal: What is 2+3?
model: anthropic:claude-sonnet-4-5
checks: [{equals: "5"}]
effort: {samples: 3, confidence_threshold: 0.9}
budget: {steps: 4, time: 1m}
`

// A task file's provider_limits: reach the calls of ratchet run and of
// ratchet eval run (ratchet resume builds its run as ratchet run does), and
// --provider-limit does the same from the command line: measured at the
// server, the unsure answer's parallel samples go one at a time under
// max_in_flight: 1, and at once without it.
func TestProviderLimitsReachTheCalls(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limits    string // the task file's provider_limits:
		flags     []string
		eval      bool
		wantAtMax int
	}{
		{"run, unlimited", "", nil, false, 3},
		{"run, provider_limits", "provider_limits: {anthropic: {max_in_flight: 1}}\n", nil, false, 1},
		{"run, --provider-limit", "", []string{"--provider-limit", "anthropic:max_in_flight=2"}, false, 2},
		{"eval run, provider_limits", "provider_limits: {anthropic: {max_in_flight: 1}}\n", nil, true, 1},
		{"eval run, --provider-limit", "", []string{"--provider-limit", "anthropic:max_in_flight=1"}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &inFlightServer{}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			dir := write(t, map[string]string{"task.yaml": limitedTask + tc.limits, "suite.yaml": "cases: [{task: task.yaml}]\n"})
			env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": hs.URL, "RATCHET_NO_STREAM": "1",
				"RATCHET_EVAL_DIR": filepath.Join(dir, "eval")}
			args := append([]string{"run", "--quiet"}, tc.flags...)
			args = append(args, filepath.Join(dir, "task.yaml"))
			if tc.eval {
				args = append([]string{"eval", "run", "--quiet"}, tc.flags...)
				args = append(args, filepath.Join(dir, "suite.yaml"))
			}
			c := run(t, env, args...)
			c.wantCode(t, exitDone)
			if srv.requests < 4 {
				t.Fatalf("the server saw %d requests; the unsure answer was not sampled:\n%v", srv.requests, c)
			}
			if srv.maxNow != tc.wantAtMax {
				t.Errorf("the server served %d requests at once, want %d", srv.maxNow, tc.wantAtMax)
			}
		})
	}
}

func TestProviderLimitFlagProblems(t *testing.T) {
	c := run(t, nil, "run", "--provider-limit", "bedrock:max_in_flight=1", "task.yaml")
	c.wantCode(t, exitUsage)
	if !strings.Contains(c.stderr, `unknown provider "bedrock" for limits`) {
		t.Errorf("stderr:\n%s", c.stderr)
	}
}

// --model given twice is a fallback chain: with Anthropic overloaded, the
// run is done on OpenAI, the hand-over is printed, and the Result shares
// the usage by model.
func TestModelFlagChain(t *testing.T) {
	overloaded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "1") // retried at once, so that the test is quick
		w.WriteHeader(529)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer overloaded.Close()
	openai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"finish","arguments":"{\"answer\":\"5\",\"confidence\":0.99}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer openai.Close()
	dir := write(t, map[string]string{"task.yaml": "goal: What is 2+3?\nchecks: [{equals: \"5\"}]\nbudget: {steps: 4, time: 1m}\n"})
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": overloaded.URL, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL + "/v1", "RATCHET_NO_STREAM": "1"}
	c := run(t, env, "run", "--json", "--model", "anthropic:claude-sonnet-4-5", "--model", "openai:gpt-4.1", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(c.stdout)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"by_model":[{"model":"openai:gpt-4.1","model_calls":1,"input_tokens":10,"output_tokens":5`) {
		t.Errorf("the Result lacks the usage by model:\n%s", c.stdout)
	}
	c = run(t, env, "run", "--model", "anthropic:claude-sonnet-4-5,openai:gpt-4.1", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout+c.stderr, "⇢ anthropic:claude-sonnet-4-5 failed: anthropic:claude-sonnet-4-5: anthropic: 529 overloaded") || !strings.Contains(c.stdout+c.stderr, "openai:gpt-4.1 takes the call") {
		t.Errorf("the hand-over is not printed:\n%v", c)
	}
}
