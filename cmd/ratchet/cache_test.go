//go:build unix

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
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
	if n := strings.Count(again.stdout, "The magic word is please"); n != 1 {
		t.Errorf("the cached reply's text shows %d times:\n%v", n, again)
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

// ratchet eval run --cache, against a Messages API server that counts its
// requests: the suite run again (under a new label) makes none; a harness
// change to one case makes only that case's calls; ratchet eval rescore
// judges the stored candidates with edited checks with no request, and
// eval compare reads what it wrote.
func TestEvalCacheAndRescore(t *testing.T) {
	srv := &countingAnthropic{}
	api := httptest.NewServer(srv)
	defer api.Close()
	dir := t.TempDir()
	task := filepath.Join(dir, "magic", "task.yaml")
	os.MkdirAll(filepath.Dir(task), 0o755)
	writeFile(t, task, "goal: Say the magic word.\nchecks: [{equals: please}]\n")
	suiteText := func(goal string) string {
		return "label: s\nmodel: anthropic:claude-sonnet-4-5\nconcurrency: 4\ncases:\n" +
			"  - task: magic/task.yaml\n    repeats: 2\n" +
			"  - name: polite\n    repeats: 2\n    task:\n      goal: " + goal + "\n      checks: [{equals: please}]\n"
	}
	suite := filepath.Join(dir, "suite.yaml")
	writeFile(t, suite, suiteText("Be polite."))
	root := filepath.Join(dir, "results")
	cacheDir := filepath.Join(dir, "cache")
	env := map[string]string{"ANTHROPIC_API_KEY": canaryKey, "ANTHROPIC_BASE_URL": api.URL,
		"RATCHET_EVAL_DIR": root, "RATCHET_DB": filepath.Join(dir, "runs.db")}
	requests := func() int64 { return srv.requests.Load() }

	run(t, env, "eval", "run", suite, "--cache", cacheDir, "--label", "base", "--quiet").wantCode(t, exitDone)
	if n := requests(); n != 4 {
		t.Fatalf("the first eval run made %d requests, want 4 (2 cases, 2 repeats)", n)
	}
	c := run(t, env, "eval", "run", suite, "--cache", cacheDir, "--label", "cand", "--quiet")
	c.wantCode(t, exitDone)
	if n := requests() - 4; n != 0 {
		t.Errorf("the suite run again made %d requests, want 0:\n%v", n, c)
	}
	if !strings.Contains(c.stderr, "4 replies from the cache, 0 model calls") {
		t.Errorf("no cache line:\n%v", c)
	}
	cand, err := eval.ReadRecords(filepath.Join(root, "cand"))
	if err != nil || len(cand) != 4 {
		t.Fatalf("cand: %d records, %v", len(cand), err)
	}
	base, _ := eval.ReadRecords(filepath.Join(root, "base"))
	byKey := map[eval.Key]eval.Record{}
	for _, r := range base {
		byKey[r.Key()] = r
	}
	for _, r := range cand {
		b := byKey[r.Key()]
		if !r.Success() || r.Result.Usage.Cost != 0 || b.Result.Usage.Cost == 0 {
			t.Errorf("%s#%d from the cache: %s, cost %d (base %d)", r.Case, r.Repeat, r.Result.Status, r.Result.Usage.Cost, b.Result.Usage.Cost)
		}
		// The same run again: the same steps, attempts and tokens.
		if r.Result.Usage.Steps != b.Result.Usage.Steps || r.Result.Usage.InputTokens != b.Result.Usage.InputTokens ||
			len(r.Result.Attempts) != len(b.Result.Attempts) || r.Result.Best.Answer != b.Result.Best.Answer {
			t.Errorf("%s#%d from the cache differs from base: %+v vs %+v", r.Case, r.Repeat, r.Result.Usage, b.Result.Usage)
		}
	}
	// A change to one case's prompt: only its calls are made.
	changed := filepath.Join(dir, "changed.yaml")
	writeFile(t, changed, suiteText("Be very polite."))
	run(t, env, "eval", "run", changed, "--cache", cacheDir, "--label", "cand2", "--quiet").wantCode(t, exitDone)
	if n := requests() - 4; n != 2 {
		t.Errorf("after changing one case's goal the suite made %d requests, want 2", n)
	}

	// The checks change (the magic word is now "thanks"): rescored with
	// no request.
	before := requests()
	writeFile(t, task, "goal: Say the magic word.\nchecks: [{equals: thanks}]\n")
	// Without --suite the inline case has no task file to take checks from.
	c = run(t, env, "eval", "rescore", "base")
	if c.code != exitUsage || !strings.Contains(c.stderr, "inline case") || !strings.Contains(c.stderr, "nothing written") {
		t.Errorf("rescore without --suite:\n%v", c)
	}
	c = run(t, env, "eval", "rescore", "base", "--suite", suite)
	c.wantCode(t, exitDone)
	if n := requests() - before; n != 0 {
		t.Errorf("the rescore made %d requests", n)
	}
	got, err := eval.ReadRecords(filepath.Join(root, "base.rescore"))
	if err != nil || len(got) != 4 {
		t.Fatalf("base.rescore: %d records, %v\n%v", len(got), err, c)
	}
	for _, r := range got {
		want := loop.Done
		if r.Case == "magic" {
			want = eval.Rejected
		}
		if r.Result.Status != want || r.Run == "" {
			t.Errorf("%s#%d rescored: %s (%s), run %q", r.Case, r.Repeat, r.Result.Status, r.Result.Reason, r.Run)
		}
	}
	c = run(t, env, "eval", "compare", "base", "base.rescore", "--json")
	c.wantCode(t, exitDone)
	if !strings.Contains(c.stdout, `"success rate"`) {
		t.Errorf("compare:\n%v", c)
	}
	// Run again, the rescore replaces its result set whole.
	run(t, env, "eval", "rescore", "base", "--suite", suite).wantCode(t, exitDone)
	if again, _ := eval.ReadRecords(filepath.Join(root, "base.rescore")); len(again) != 4 {
		t.Errorf("rescored again: %d records", len(again))
	}
	data, _ := os.ReadFile(filepath.Join(root, "base.rescore", eval.ResultsFile))
	if n := strings.Count(string(data), "\n"); n != 4 {
		t.Errorf("results.jsonl has %d lines, want 4", n)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// countingGrader is a Chat Completions server that passes every rubric
// point it is asked about (the first, "polite") and counts its requests.
type countingGrader struct{ requests atomic.Int64 }

func (g *countingGrader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	grade := `{"points":[{"name":"polite","pass":true,"reason":"it says please"}]}`
	if strings.Contains(string(body), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		content, _ := json.Marshal(grade)
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"role":"assistant","content":`+string(content)+`},"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "llama",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": grade}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 50, "completion_tokens": 10}})
}

// A grader check is rescored from the replies the eval run cached, with
// no request to either server; without --cache, or for a grader request
// the cache has not seen (an edited rubric), the check cannot run rather
// than call the model.
func TestRescoreGraderFromCache(t *testing.T) {
	gen, grader := &countingAnthropic{}, &countingGrader{}
	genAPI, graderAPI := httptest.NewServer(gen), httptest.NewServer(grader)
	defer genAPI.Close()
	defer graderAPI.Close()
	dir := t.TempDir()
	taskText := func(description string) string {
		return "goal: Say the magic word.\nmodel: anthropic:claude-sonnet-4-5\nchecks:\n  - equals: please\n" +
			"  - grader:\n      model: openai-compatible:" + graderAPI.URL + "/v1#llama\n      rubric: [{name: polite, description: " + description + "}]\n"
	}
	task := filepath.Join(dir, "graded", "task.yaml")
	os.MkdirAll(filepath.Dir(task), 0o755)
	writeFile(t, task, taskText("it is polite"))
	suite := filepath.Join(dir, "suite.yaml")
	writeFile(t, suite, "label: g\ncases:\n  - task: graded/task.yaml\n")
	cacheDir := filepath.Join(dir, "cache")
	env := map[string]string{"ANTHROPIC_API_KEY": canaryKey, "ANTHROPIC_BASE_URL": genAPI.URL,
		"RATCHET_EVAL_DIR": filepath.Join(dir, "results"), "RATCHET_DB": filepath.Join(dir, "runs.db")}
	run(t, env, "eval", "run", suite, "--cache", cacheDir, "--quiet").wantCode(t, exitDone)
	if g, r := gen.requests.Load(), grader.requests.Load(); g != 1 || r != 1 {
		t.Fatalf("the eval run made %d generator and %d grader requests, want 1 and 1", g, r)
	}
	requests := func() int64 { return gen.requests.Load() + grader.requests.Load() }

	c := run(t, env, "eval", "rescore", "g", "--cache", cacheDir)
	c.wantCode(t, exitDone)
	got, _ := eval.ReadRecords(filepath.Join(dir, "results", "g.rescore"))
	if len(got) != 1 || got[0].Result.Status != loop.Done || len(got[0].Result.Best.Verdicts) != 2 {
		t.Fatalf("rescored from the cache: %+v\n%v", got, c)
	}
	c = run(t, env, "eval", "rescore", "g")
	if c.code != exitInfra || !strings.Contains(c.stderr, "makes no model calls") {
		t.Errorf("rescore of a grader without --cache:\n%v", c)
	}
	writeFile(t, task, taskText("it is very polite"))
	c = run(t, env, "eval", "rescore", "g", "--cache", cacheDir, "--label", "edited")
	if c.code != exitInfra || !strings.Contains(c.stderr, "check grader could not run") {
		t.Errorf("rescore with an edited rubric:\n%v", c)
	}
	if n := requests() - 2; n != 0 {
		t.Errorf("the rescores made %d requests", n)
	}
}

// Within a run, the steps before a change come from the cache and the
// rest are called: a run whose second request changed (the checks'
// feedback on its first attempt reads otherwise) makes one request.
func TestRunCacheUpToTheChange(t *testing.T) {
	srv := &countingAnthropic{answer: func(lastUser string) string {
		if strings.Contains(lastUser, "Not accepted") {
			return "please"
		}
		return "thanks"
	}}
	api := httptest.NewServer(srv)
	defer api.Close()
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yaml")
	writeFile(t, task, "goal: Say the magic word.\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: please}]\n")
	cacheDir := filepath.Join(dir, "cache")
	env := map[string]string{"ANTHROPIC_API_KEY": canaryKey, "ANTHROPIC_BASE_URL": api.URL}
	run(t, env, "run", "--cache", cacheDir, task).wantCode(t, exitDone)
	if n := srv.requests.Load(); n != 2 {
		t.Fatalf("the first run made %d requests, want 2", n)
	}
	run(t, env, "run", "--cache", cacheDir, task).wantCode(t, exitDone)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("the run again made %d requests, want 0", n-2)
	}
	writeFile(t, task, "goal: Say the magic word.\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: please}, {contains: ease}]\n")
	c := run(t, env, "run", "--cache", cacheDir, task)
	c.wantCode(t, exitDone)
	if n := srv.requests.Load(); n != 3 {
		t.Errorf("after the checks changed the run made %d requests, want 1 (its second step):\n%v", n-2, c)
	}
	if !strings.Contains(c.stderr, "1 replies from the cache, 1 model calls") {
		t.Errorf("cache line:\n%v", c)
	}
}

// TestResumeKeepsCacheAndLimits: a run started with --cache and
// --provider-limit keeps both on its row, and ratchet answer carries it on
// with them: the second time the same run is made and answered, neither
// its start nor its resume makes a request (counted at the server).
func TestResumeKeepsCacheAndLimits(t *testing.T) {
	srv := &countingAnthropic{answer: func(last string) string {
		if strings.Contains(last, "raised steps") {
			return "yes"
		}
		return "no"
	}}
	api := httptest.NewServer(srv)
	defer api.Close()
	dir := write(t, map[string]string{"task.yaml": "goal: Answer yes.\nmodel: anthropic:claude-sonnet-4-5\nchecks: [{equals: \"yes\"}]\nbudget: {steps: 2}\nescalate: true\n"})
	env := map[string]string{"ANTHROPIC_API_KEY": canaryKey, "ANTHROPIC_BASE_URL": api.URL, "XDG_STATE_HOME": t.TempDir()}
	cacheDir := filepath.Join(dir, "cache")
	waiting := regexp.MustCompile(`run (\S+) is waiting for a person`)
	for round, want := range []int64{3, 0} {
		before := srv.requests.Load()
		c := run(t, env, "run", "--cache", cacheDir, "--provider-limit", "anthropic:max_in_flight=1", filepath.Join(dir, "task.yaml"))
		c.wantCode(t, exitWaiting)
		m := waiting.FindStringSubmatch(c.stderr)
		if m == nil {
			t.Fatalf("round %d: no run waiting:\n%v", round, c)
		}
		c = run(t, env, "answer", m[1], "raise steps to 4")
		c.wantCode(t, exitDone)
		if got := srv.requests.Load() - before; got != want {
			t.Errorf("round %d made %d requests, want %d", round, got, want)
		}
	}
	db, err := sqlite.Open(filepath.Join(env["XDG_STATE_HOME"], "ratchet", "ratchet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.ListRuns(context.Background(), store.Filter{})
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d runs (%v), want 2", len(rows), err)
	}
	var info taskInfo
	if err := json.Unmarshal(rows[0].Task, &info); err != nil {
		t.Fatal(err)
	}
	if info.Cache != cacheDir || !slices.Equal(info.ProviderLimits, []string{"anthropic:max_in_flight=1"}) {
		t.Errorf("the row keeps cache %q and limits %q", info.Cache, info.ProviderLimits)
	}
}
