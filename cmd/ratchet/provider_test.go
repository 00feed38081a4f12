package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// ratchet run drives an OpenAI-compatible server named by the model string:
// the first attempt is rate limited and retried (a retry entry in the log,
// a line on the terminal), the reply streams, and the run is done. The cost
// of a local model is unknown, so the default budget reports it as such.
func TestRunOpenAICompatible(t *testing.T) {
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if attempts.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "10")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
			return
		}
		if !strings.Contains(string(body), `"stream":true`) || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("request %s %s", r.URL.Path, body)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"llama\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		}
		chunk(`{"role":"assistant","content":"The magic "}`)
		chunk(`{"content":"word is please."}`)
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"finish","arguments":"{\"answer\":\"please\",\"confidence\":0.95}"}}]}`)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := write(t, map[string]string{"task.yaml": "goal: Say the magic word.\nchecks: [{equals: please}]\n"})
	logFile := filepath.Join(dir, "run.jsonl")
	c := run(t, nil, "run", "--log", logFile, "--model", "openai-compatible:"+srv.URL+"/v1#llama", filepath.Join(dir, "task.yaml"))
	c.wantCode(t, exitDone)
	for _, want := range []string{
		"↻ 429 rate_limited: retry 2 in 10ms",
		"step 1  The magic word is please.\n",
		"cost incomplete",
	} {
		if !strings.Contains(c.stdout+c.stderr, want) {
			t.Errorf("output lacks %q:\n%v", want, c)
		}
	}
	if n := strings.Count(c.stdout+c.stderr, "The magic word is please."); n != 1 {
		t.Errorf("the streamed text shows %d times:\n%v", n, c)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	if !strings.Contains(log, `"kind":"retry"`) || !strings.Contains(log, `"status":429`) {
		t.Errorf("the log has no retry entry:\n%s", log)
	}
	// A log with retries replays.
	rc := run(t, nil, "replay", logFile)
	rc.wantCode(t, 0)
}

// An explicit cost limit with a model of unknown price is a config error.
func TestRunCostBudgetNeedsAPrice(t *testing.T) {
	dir := write(t, map[string]string{"task.yaml": "goal: Say the magic word.\nchecks: [{equals: please}]\nbudget: {cost: 0.50}\n"})
	c := run(t, nil, "run", "--model", "openai-compatible:http://127.0.0.1:9/v1#llama", filepath.Join(dir, "task.yaml"))
	if c.code == exitDone || !strings.Contains(c.stderr, "known price") {
		t.Errorf("want a refusal naming the price:\n%v", c)
	}
}
