//go:build unix

package main

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// countingAnthropic is a Messages API server that answers every request
// with the same finishing turn, echoing the key it was sent in the text,
// and counts the requests it gets.
type countingAnthropic struct {
	requests atomic.Int64
	answer   func(lastUser string) string // the finish answer; nil means "please"
}

func (s *countingAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	answer := "please"
	if s.answer != nil && len(req.Messages) > 0 {
		answer = s.answer(string(req.Messages[len(req.Messages)-1].Content))
	}
	blocks := []map[string]any{
		{"type": "text", "text": "The magic word is " + answer + " (key " + cmp.Or(r.Header.Get("X-Api-Key"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) + ")."},
		{"type": "tool_use", "id": "t1", "name": "finish", "input": map[string]any{"answer": answer, "confidence": 0.9}},
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

// ratchet run --cache: a run made again is answered from the cache with
// no request to the provider (counted at the server), its text still
// streams to the terminal, its log marks the reply cached and it costs
// nothing; the log replays; the cache file holds no key.
func TestRunCache(t *testing.T) {
	srv := &countingAnthropic{}
	api := httptest.NewServer(srv)
	defer api.Close()
	dir := write(t, map[string]string{"task.yaml": "goal: Say the magic word.\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: please}]\n"})
	cacheDir := filepath.Join(dir, "cache")
	env := map[string]string{"ANTHROPIC_API_KEY": canaryKey, "ANTHROPIC_BASE_URL": api.URL}
	first := run(t, env, "run", "--cache", cacheDir, "--json", filepath.Join(dir, "task.yaml"))
	first.wantCode(t, exitDone)
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("the first run made %d requests, want 1", n)
	}
	if res := first.result(t); res.Usage.Cost == 0 {
		t.Errorf("the first run cost nothing: %+v", res.Usage)
	}
	logFile := filepath.Join(dir, "again.jsonl")
	again := run(t, env, "run", "--cache", cacheDir, "--log", logFile, filepath.Join(dir, "task.yaml"))
	again.wantCode(t, exitDone)
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("the cached run made %d requests, want 0", n-1)
	}
	for _, want := range []string{"step 1  The magic word is please (key [redacted]).", "1 replies from the cache, 0 model calls", "cost=$0.000000/"} {
		if !strings.Contains(again.stdout+again.stderr, want) {
			t.Errorf("the cached run's output lacks %q:\n%v", want, again)
		}
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"cached":true`) {
		t.Errorf("the log does not mark the reply cached:\n%s", log)
	}
	run(t, nil, "replay", logFile).wantCode(t, exitDone)
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if strings.Contains(string(data), "CANARY") {
			t.Errorf("%s holds the provider key", f)
		}
	}
	// Without --cache, the provider is asked again.
	run(t, env, "run", filepath.Join(dir, "task.yaml")).wantCode(t, exitDone)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("a run without --cache made %d requests, want 1", n-1)
	}
}
