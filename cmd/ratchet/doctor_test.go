package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDoctor: every check gets a line; keys are named, never shown; a
// model check sends one request and reports its reply or its error.
func TestDoctor(t *testing.T) {
	const key = "sk-doctor-canary-0123456789"
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		body, _ := io.ReadAll(r.Body)
		var req struct {
			MaxTokens int `json:"max_tokens"`
			MaxCompl  int `json:"max_completion_tokens"`
		}
		json.Unmarshal(body, &req)
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			// An error body that echoes the key it was sent, as some
			// servers do.
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"bad key `+strings.TrimPrefix(got, "Bearer ")+`","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"message":{"role":"assistant","content":"OK"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}`)
	}))
	defer srv.Close()
	spec := "openai-compatible:" + srv.URL + "/v1#tiny"

	c := run(t, map[string]string{"OPENAI_API_KEY": key, "RATCHET_NO_STREAM": "1"}, "doctor", "--model", spec)
	for _, want := range []string{"sandbox: ", "python3: ", "pytest: ", "go: ", "run database: ", "OPENAI_API_KEY: set",
		"ANTHROPIC_API_KEY: not set (fix: export ANTHROPIC_API_KEY=... to use anthropic:MODEL)",
		"model " + spec + ": replied in ", "(7 input, 1 output tokens)"} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("doctor lacks %q:\n%v", want, c)
		}
	}
	if requests != 1 {
		t.Errorf("the model check sent %d requests, want 1", requests)
	}

	// A rejected key: the check fails, and the key the server echoed back
	// is not printed.
	wrong := "sk-wrong-9876543210"
	c = run(t, map[string]string{"OPENAI_API_KEY": wrong, "RATCHET_NO_STREAM": "1"}, "doctor", "--model", spec)
	if c.code != exitNotDone || !strings.Contains(c.stdout, "FAIL  model "+spec) || !strings.Contains(c.stdout, "bad key [redacted]") {
		t.Errorf("doctor with a rejected key: %v", c)
	}
	if strings.Contains(c.stdout+c.stderr, wrong) {
		t.Errorf("doctor printed the key:\n%v", c)
	}
}
