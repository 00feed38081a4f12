package provider_test

// Many runs in one process against local servers speaking Anthropic's and
// OpenAI's wire formats: a fallback chain, and the limits every run on a
// provider shares, measured where the provider would measure them, at the
// server.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/modeltest"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/model/retry"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

const finishArgs = `{"answer":"5","confidence":0.99}`

// anthropicReply is a Messages API reply that finishes with answer 5.
func anthropicReply(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"finish","input":%s}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":20}}`, finishArgs)
}

// openaiReply is a Chat Completions reply that finishes with answer 5.
func openaiReply(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"finish","arguments":%q}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`, finishArgs)
}

// anthropicError is Anthropic's error reply for status.
func anthropicError(w http.ResponseWriter, status int, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, http.StatusText(status))
}

// arrivals records when each request reached a server, and how many were
// being served at once.
type arrivals struct {
	mu          sync.Mutex
	at          []time.Time
	now, maxNow int
}

func (a *arrivals) arrive() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = append(a.at, time.Now())
	a.now++
	a.maxNow = max(a.maxNow, a.now)
	return len(a.at)
}

func (a *arrivals) leave() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now--
}

func (a *arrivals) times() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.at)
}

func serve(t *testing.T, a *arrivals, h func(n int, w http.ResponseWriter)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := a.arrive()
		defer a.leave()
		h(n, w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fast retries: a few attempts, millisecond waits.
var fast = retry.Config{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}

// open opens spec as each run of an eval would: its own model, the
// process's registry.
func open(t *testing.T, spec string, env map[string]string, reg *limit.Registry) model.Model {
	t.Helper()
	m, err := provider.Open(spec, provider.Config{Retry: fast, Limits: reg, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func task(time_ time.Duration) runner.Task {
	return runner.Task{
		Goal:   "What is 2+3? Finish with the answer.",
		Checks: verify.Tiers{Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 4, Time: time_},
	}
}

// outcome is one run's Result and log.
type outcome struct {
	res loop.Result
	err error
	mem *observe.Memory
	log bytes.Buffer
}

// runAll runs n runs at once, each with the model open returns.
func runAll(t *testing.T, n int, limit time.Duration, open func() model.Model) []*outcome {
	t.Helper()
	out := make([]*outcome, n)
	var wg sync.WaitGroup
	for i := range out {
		o := &outcome{mem: &observe.Memory{}}
		out[i] = o
		m := open()
		wg.Go(func() {
			jl := observe.NewJSONL(&o.log)
			o.res, o.err = runner.Run(context.Background(), task(limit), runner.Config{Model: m, RunID: fmt.Sprintf("run-%d", i), Observers: []observe.Observer{o.mem, jl}})
			if err := jl.Flush(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return out
}

// kinds counts the entries of each kind in o's log.
func (o *outcome) count(k observe.Kind) int {
	n := 0
	for _, e := range o.mem.Entries() {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func replays(t *testing.T, o *outcome) {
	t.Helper()
	recs, err := observe.ReadJSONL(&o.log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(recs); err != nil {
		t.Errorf("the log does not replay: %v", err)
	}
}

// 50 runs at once, with Anthropic always overloaded: every call fails over
// to OpenAI after Anthropic's retries, each run is done inside its time
// budget, its usage is OpenAI's, the hand-over is in its log, and the log
// replays.
func TestFiftyRunsFinishOnTheFallback(t *testing.T) {
	var a, b arrivals
	env := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test",
		"ANTHROPIC_BASE_URL": serve(t, &a, func(_ int, w http.ResponseWriter) { anthropicError(w, 529, "overloaded_error") }),
		"OPENAI_BASE_URL":    serve(t, &b, func(_ int, w http.ResponseWriter) { openaiReply(w) }) + "/v1",
	}
	reg := limit.NewRegistry(limit.Config{})
	const runs, budgetTime = 50, 10 * time.Second
	out := runAll(t, runs, budgetTime, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5,openai:gpt-4.1", env, reg) })
	for i, o := range out {
		if o.err != nil || o.res.Status != loop.Done {
			t.Fatalf("run %d: %s (%s), err %v", i, o.res.Status, o.res.Reason, o.err)
		}
		if o.res.Usage.Time >= budgetTime {
			t.Errorf("run %d took %s of its %s", i, o.res.Usage.Time, budgetTime)
		}
		want := []loop.ModelUsage{{Model: "openai:gpt-4.1", ModelCalls: 1, InputTokens: 100, OutputTokens: 20, Cost: o.res.Usage.Cost}}
		if diff := cmp.Diff(want, o.res.ByModel); diff != "" || o.res.Usage.Cost == 0 {
			t.Errorf("run %d: usage by model (-want +got):\n%s(cost %s)", i, diff, o.res.Usage.Cost)
		}
		if n := o.count(observe.KindFallback); n != 1 {
			t.Errorf("run %d logged %d fallbacks, want 1", i, n)
		}
		replays(t, o)
	}
	for _, e := range out[0].mem.Entries() {
		if e.Kind == observe.KindFallback {
			f := e.Fallback
			if f.From != "anthropic:claude-sonnet-4-5" || f.To != "openai:gpt-4.1" || !strings.Contains(f.Reason, "529 overloaded") || !strings.Contains(f.Reason, "gave up after 3 attempts") {
				t.Errorf("fallback entry %+v", f)
			}
		}
	}
	if got := len(a.times()); got != runs*fast.MaxAttempts {
		t.Errorf("Anthropic saw %d requests, want %d (every attempt of every run)", got, runs*fast.MaxAttempts)
	}
	if got := len(b.times()); got != runs {
		t.Errorf("OpenAI saw %d requests, want %d", got, runs)
	}
}

// An auth error does not fall back: the run fails naming the model, and
// the next model is never asked.
func TestAuthErrorDoesNotFallBack(t *testing.T) {
	var a, b arrivals
	env := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-wrong", "OPENAI_API_KEY": "sk-test",
		"ANTHROPIC_BASE_URL": serve(t, &a, func(_ int, w http.ResponseWriter) { anthropicError(w, 401, "authentication_error") }),
		"OPENAI_BASE_URL":    serve(t, &b, func(_ int, w http.ResponseWriter) { openaiReply(w) }) + "/v1",
	}
	out := runAll(t, 1, 10*time.Second, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5,openai:gpt-4.1", env, nil) })
	res := out[0].res
	if res.Status != loop.Failed || !strings.Contains(res.Reason, "anthropic:claude-sonnet-4-5: anthropic: 401 auth") {
		t.Errorf("status %s, reason %q; want failed, naming the model", res.Status, res.Reason)
	}
	if len(b.times()) != 0 || out[0].count(observe.KindFallback) != 0 {
		t.Errorf("OpenAI was asked %d times after an auth error", len(b.times()))
	}
	if strings.Contains(out[0].log.String(), "sk-ant-wrong") {
		t.Error("the key is in the log")
	}
}

// window is the tests' stand-in for a minute: the limits hold per window.
const window = 100 * time.Millisecond

// Requests per minute, measured at the server: 50 runs at once, a limit of
// 5 per window, and no window of the server's clock sees a sixth.
func TestRequestsPerMinuteHoldAtTheServer(t *testing.T) {
	var a arrivals
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": serve(t, &a, func(_ int, w http.ResponseWriter) {
		time.Sleep(5 * time.Millisecond) // so that calls overlap
		anthropicReply(w)
	})}
	reg := limit.NewRegistry(limit.Config{Window: window})
	const rpm, runs = 5, 50
	reg.Set("anthropic", limit.Limits{RequestsPerMinute: rpm})
	start := time.Now()
	out := runAll(t, runs, 30*time.Second, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5", env, reg) })
	elapsed := time.Since(start)
	waited := 0
	for i, o := range out {
		if o.err != nil || o.res.Status != loop.Done {
			t.Fatalf("run %d: %s (%s), err %v", i, o.res.Status, o.res.Reason, o.err)
		}
		if o.count(observe.KindWait) > 0 {
			waited++
		}
		replays(t, o)
	}
	at := a.times()
	if len(at) != runs {
		t.Fatalf("the server saw %d requests, want %d", len(at), runs)
	}
	for i := 0; i+rpm < len(at); i++ {
		if d := at[i+rpm].Sub(at[i]); d < window {
			t.Errorf("requests %d to %d arrived within %s: %d requests in one window, over the limit of %d", i+1, i+rpm+1, d, rpm+1, rpm)
		}
	}
	// The limit is a limit, not a stall: the runs took about as many
	// windows as the limit needs.
	if need := window * (runs/rpm - 1); elapsed < need || elapsed > 10*need {
		t.Errorf("50 runs took %s; the limit needs %s", elapsed, need)
	}
	// How many waited depends on how the runs' starts spread out; that
	// some did, and said why, does not.
	if waited == 0 {
		t.Error("no run logged a wait")
	}
	t.Logf("%d requests in %s, %d runs waited", len(at), elapsed.Round(time.Millisecond), waited)
}

// Calls in flight, measured at the server: 30 runs at once, each reply
// slow, and the server never serves more than max_in_flight at a time.
func TestMaxInFlightHoldsAtTheServer(t *testing.T) {
	var a arrivals
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": serve(t, &a, func(_ int, w http.ResponseWriter) {
		time.Sleep(20 * time.Millisecond)
		anthropicReply(w)
	})}
	reg := limit.NewRegistry(limit.Config{})
	const inFlight, runs = 3, 30
	reg.Set("anthropic", limit.Limits{MaxInFlight: inFlight})
	for i, o := range runAll(t, runs, 30*time.Second, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5", env, reg) }) {
		if o.res.Status != loop.Done {
			t.Fatalf("run %d: %s (%s)", i, o.res.Status, o.res.Reason)
		}
	}
	// Calls did overlap (up to the limit: reaching it exactly depends on
	// scheduling), and never past it.
	if a.maxNow > inFlight || a.maxNow < 2 {
		t.Errorf("the server served at most %d requests at once; want max_in_flight, %d", a.maxNow, inFlight)
	}
}

// A 429 with retry-after that one run gets pauses the others: no request
// of any run reaches the server before the pause is over.
func TestRetryAfterPausesEveryRun(t *testing.T) {
	var a arrivals
	const pause = 300 * time.Millisecond
	var first time.Time
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": serve(t, &a, func(n int, w http.ResponseWriter) {
		if n == 1 {
			first = time.Now()
			w.Header().Set("Retry-After-Ms", fmt.Sprint(pause.Milliseconds()))
			anthropicError(w, 429, "rate_limit_error")
			return
		}
		anthropicReply(w)
	})}
	reg := limit.NewRegistry(limit.Config{})
	// The first run gets the 429; the others start once its transport has
	// seen it (its retry is logged).
	retried := make(chan struct{})
	var once sync.Once
	m := open(t, "anthropic:claude-sonnet-4-5", env, reg)
	var res loop.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, _ = runner.Run(context.Background(), task(10*time.Second), runner.Config{Model: m, Observers: []observe.Observer{observe.Func(func(e observe.Entry) {
			if e.Kind == observe.KindRetry {
				once.Do(func() { close(retried) })
			}
		})}})
	}()
	<-retried
	out := runAll(t, 10, 10*time.Second, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5", env, reg) })
	<-done
	if res.Status != loop.Done {
		t.Fatalf("the first run: %s (%s)", res.Status, res.Reason)
	}
	waited := 0
	for i, o := range out {
		if o.res.Status != loop.Done {
			t.Fatalf("run %d: %s (%s)", i, o.res.Status, o.res.Reason)
		}
		for _, e := range o.mem.Entries() {
			if w := e.Wait; w != nil {
				waited++
				if w.Provider != "anthropic" || w.Reason != "paused by the server's retry-after" || w.For <= 0 || w.For > pause {
					t.Errorf("run %d logged the wait %+v", i, w)
				}
			}
		}
	}
	// A run started late on a busy machine may find the pause over; the
	// server's clock below is what the test is about.
	if waited == 0 {
		t.Error("no run logged a wait for the pause")
	}
	at := a.times()
	for i, t1 := range at[1:] {
		if d := t1.Sub(first); d < pause {
			t.Errorf("request %d arrived %s after the 429 asked for %s", i+2, d, pause)
		}
	}
}

// Waiting for the limits counts against the time budget: a run whose
// budget ends during a pause ends at its budget, not at the pause's end.
func TestWaitingCountsAgainstTheTimeBudget(t *testing.T) {
	var a arrivals
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": serve(t, &a, func(_ int, w http.ResponseWriter) { anthropicReply(w) })}
	reg := limit.NewRegistry(limit.Config{})
	reg.Limiter("anthropic").Pause(5 * time.Second)
	start := time.Now()
	out := runAll(t, 3, 300*time.Millisecond, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5", env, reg) })
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the runs took %s: they waited past their 300ms budget", took)
	}
	for i, o := range out {
		if o.res.Status != loop.Exhausted(budget.Time) || o.count(observe.KindWait) == 0 {
			t.Errorf("run %d: %s (%s) with %d waits; want it ended by its time budget while waiting", i, o.res.Status, o.res.Reason, o.count(observe.KindWait))
		}
	}
	if n := len(a.times()); n != 0 {
		t.Errorf("the server saw %d requests during the pause", n)
	}
	t.Logf("status %s: %s", out[0].res.Status, out[0].res.Reason)
}

// Tokens per minute, measured at the server: each call uses 120 tokens
// and the limit is 240 per window, so (one call in flight at a time) no
// window of the server's clock sees a third request.
func TestTokensPerMinuteHoldAtTheServer(t *testing.T) {
	var a arrivals
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": serve(t, &a, func(_ int, w http.ResponseWriter) { anthropicReply(w) })}
	reg := limit.NewRegistry(limit.Config{Window: window})
	reg.Set("anthropic", limit.Limits{TokensPerMinute: 240, MaxInFlight: 1})
	const runs = 12
	for i, o := range runAll(t, runs, 30*time.Second, func() model.Model { return open(t, "anthropic:claude-sonnet-4-5", env, reg) }) {
		if o.res.Status != loop.Done || o.res.Usage.TotalTokens() != 120 {
			t.Fatalf("run %d: %s (%s), %d tokens", i, o.res.Status, o.res.Reason, o.res.Usage.TotalTokens())
		}
	}
	at := a.times()
	for i := 0; i+2 < len(at); i++ {
		if d := at[i+2].Sub(at[i]); d < window {
			t.Errorf("requests %d to %d arrived within %s: 360 tokens in one window, over the limit of 240", i+1, i+3, d)
		}
	}
}

// A run through the loop with Anthropic's extended thinking, the first
// reply recorded from the real API (model/anthropic/testdata/cassettes):
// the loop keeps the thinking block of a reply that calls a tool, the next
// request carries it back with its signature byte for byte (the API
// refuses a tool loop's next request without it), the run's reasoning
// setting reaches every request, and the log, which holds the signature,
// replays.
func TestThinkingThroughTheLoop(t *testing.T) {
	rec := modeltest.LoadCassette(t, "../anthropic/testdata/cassettes/test_anthropic_tool_with_thinking.yaml")
	var bodies [][]byte
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Write(rec[0].Body)
			return
		}
		anthropicReply(w)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": srv.URL}
	m := open(t, "anthropic:claude-sonnet-4-0", env, nil)
	tk := task(10 * time.Second)
	tk.Policy.Reasoning = &model.Reasoning{BudgetTokens: 3000}
	var log bytes.Buffer
	jl := observe.NewJSONL(&log)
	res, err := runner.Run(context.Background(), tk, runner.Config{Model: m, Observers: []observe.Observer{jl}})
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %s (%s), %v", res.Status, res.Reason, err)
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	for i, b := range bodies {
		if got := modeltest.Field(t, b, "thinking"); got != `{"budget_tokens":3000,"type":"enabled"}` {
			t.Errorf("request %d: thinking %s", i+1, got)
		}
	}
	recorded := modeltest.Field(t, rec[0].Body, "content", "0")
	var sent string
	for i := 0; ; i++ {
		msg := modeltest.Field(t, bodies[1], "messages", fmt.Sprint(i))
		if msg == "" {
			break
		}
		if modeltest.Field(t, bodies[1], "messages", fmt.Sprint(i), "role") == `"assistant"` {
			sent = modeltest.Field(t, bodies[1], "messages", fmt.Sprint(i), "content", "0")
		}
	}
	if sent != recorded {
		t.Errorf("the assistant turn sent back begins\n%s\nwant the recorded thinking block\n%s", sent, recorded)
	}
	var sig string
	json.Unmarshal([]byte(modeltest.Field(t, rec[0].Body, "content", "0", "signature")), &sig)
	if !strings.Contains(log.String(), sig) {
		t.Error("the log does not hold the thinking block's signature")
	}
	o := &outcome{log: log}
	replays(t, o)
}

// The same with DeepSeek's thinking mode, its first reply recorded from
// the real API (model/openai/testdata/cassettes): the next request of the
// tool loop carries the reasoning_content back, without which DeepSeek
// answers 400.
func TestDeepSeekReasoningThroughTheLoop(t *testing.T) {
	rec := modeltest.LoadCassette(t, "../openai/testdata/cassettes/test_deepseek_deferred_capability_with_thinking.yaml")
	var bodies [][]byte
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Write(rec[0].Body)
			return
		}
		openaiReply(w)
	}))
	t.Cleanup(srv.Close)
	m := open(t, "openai-compatible:"+srv.URL+"/v1#deepseek-reasoner", nil, nil)
	tk := task(10 * time.Second)
	tk.Policy.Reasoning = &model.Reasoning{Effort: model.EffortHigh}
	res, err := runner.Run(context.Background(), tk, runner.Config{Model: m})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("run: %s (%s), %v", res.Status, res.Reason, err)
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	recorded := modeltest.Field(t, rec[0].Body, "choices", "0", "message", "reasoning_content")
	var sent string
	for i := 0; ; i++ {
		if modeltest.Field(t, bodies[1], "messages", fmt.Sprint(i)) == "" {
			break
		}
		if modeltest.Field(t, bodies[1], "messages", fmt.Sprint(i), "role") == `"assistant"` {
			sent = modeltest.Field(t, bodies[1], "messages", fmt.Sprint(i), "reasoning_content")
		}
	}
	if sent != recorded || recorded == "" {
		t.Errorf("the assistant turn sent back reasoning_content %s, want the recorded %s", sent, recorded)
	}
	if got := modeltest.Field(t, bodies[0], "reasoning_effort"); got != `"high"` {
		t.Errorf("reasoning_effort %s", got)
	}
}
