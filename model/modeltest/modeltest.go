// Package modeltest is the conformance suite of model.Model implementations,
// in the spirit of testing/slogtest: Run checks any provider against one set
// of cases, so every provider behaves the same to the loop core.
//
// The cases: a tool round trip (the history's tool calls and results reach
// the server, consecutive same-role messages are accepted), parallel tool
// calls in order, text and calls interleaved as the thought then the acts,
// usage and cost accounting, malformed tool arguments passed through byte
// for byte, cancellation, streaming giving the same Response as not
// streaming, thinking (kept first with its signature, never shown as text,
// sent back where the provider sends it back), and the transport's retry
// policy: a retry on each of 429, 529,
// 500, 502, 503, 504, a connection reset and an attempt timeout, each
// reported through model.Hooks.OnRetry; retry-after and retry-after-ms
// honoured; no wait past the context's deadline; and 400, 401, 403 and 404
// failing at once with a *model.APIError that names a fix and never the key.
//
// Providers with a transport are run against a local Server that speaks
// their wire format through a Wire. A model without a transport (scripted)
// runs the cases that apply; the transport cases then fail unless the
// Harness says NoTransport, and are reported as not applicable.
package modeltest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/retry"
)

// Turn is one model call as the fake side plays it: the failed attempts
// that come first, then the reply.
type Turn struct {
	Fail  []Failure
	Reply Reply
}

// Reply is a provider-neutral reply for a Wire to encode.
type Reply struct {
	// Thinking is the reasoning the reply starts with, and Signature the
	// provider's seal over it, for a wire that has one.
	Thinking, Signature string
	Text                string
	Calls               []Call
	// Refusal is the provider's refusal in place of an answer, encoded as
	// the provider sends one (OpenAI's refusal, Anthropic's and Gemini's
	// safety stops); the Response must be its text, stop reason refusal.
	Refusal string
	// Usage is the reply's token counts (Cost fields ignored).
	Usage model.Usage
}

// Call is one tool call. Args is sent as the model produced it, valid JSON
// or not.
type Call struct{ ID, Name, Args string }

// Failure is one failed attempt: an HTTP status (with headers), a
// connection reset, a hang until the client gives up, or a reply broken
// off half way (status 200, half the body, whole or streamed, then a reset).
type Failure struct {
	Status int
	Header map[string]string
	Reset  bool
	Hang   bool
	Break  bool
	// StreamError is a status whose error arrives inside a stream: the
	// reply begins (200) and an error event says what the status would
	// (see ErrorEventWire).
	StreamError int
}

// ErrorEventWire is a Wire of a provider whose streams can carry an error
// event: ErrorEvent is a stream that begins, then fails as status would.
type ErrorEventWire interface {
	Wire
	ErrorEvent(status int) (contentType string, body []byte)
}

// Options are what the suite asks of a model under test.
type Options struct {
	Stream bool
	Retry  retry.Config
	// APIKey is the key to configure; the suite checks errors never show it.
	APIKey string
}

// Harness describes the implementation under test.
type Harness struct {
	// New returns a model that plays turns, in order, one per Generate
	// call. For a provider, it serves them with Serve and points the model
	// at the server; srv is nil for a model without a transport.
	New func(t *testing.T, turns []Turn, o Options) (m model.Model, srv *Server)
	// NoTransport says the model has no HTTP transport (scripted), so the
	// retry, fail-fast and streaming cases do not apply. Saying so is
	// required: a nil srv without it fails those cases.
	NoTransport bool
	// Streams says the model supports Options.Stream.
	Streams bool
	// MalformedNeedsStream says the wire can carry malformed tool arguments
	// only in a streamed reply, so the malformed-arguments case streams.
	// (Anthropic: a whole reply's tool input is always a JSON object; only
	// the streamed partial_json fragments can add up to something else.)
	MalformedNeedsStream bool
	// ObjectArgs says the wire carries tool arguments only as a JSON
	// object (Gemini), so no malformed arguments can arrive and that case
	// does not apply.
	ObjectArgs bool
	// NoCacheWrites says the wire reports no cache writes (Gemini bills
	// none), so the usage case expects none.
	NoCacheWrites bool
	// Alternates says the wire requires user and assistant to alternate, so
	// consecutive same-role messages must arrive merged.
	Alternates bool
	// Thinks says the wire carries a reply's thinking; Signs that it
	// carries a signature with it; SendsThinkingBack that the provider
	// sends an assistant turn's thinking back (Anthropic, OpenAI-compatible
	// servers), else it must not (OpenAI).
	Thinks, Signs, SendsThinkingBack bool
	// RefusalText is the text a refusal must come back as when the wire
	// carries none of its own (Gemini's safety stop: the SDK drops its
	// finishMessage); "" means the refusal's own text.
	RefusalText string
	// OutputSchema says the wire carries a native output schema
	// (Request.OutputSchema), StrictTools strict tools (ToolSpec.Strict);
	// a provider without them must send neither.
	OutputSchema, StrictTools bool
	// Cost returns the cost a reply with usage u must report, and whether it
	// is known.
	Cost func(u model.Usage) (budget.Micros, bool)
}

// Seen is what a Wire read from a request body.
type Seen struct {
	System      string
	Tools       []string
	Roles       []string // each message's role, in order
	UserTexts   []string
	ToolUses    []Call
	ToolResults []string // tool_use ids answered
	Stream      bool
	// Thinking and Signatures are the thinking sent back in assistant
	// turns, and its signatures.
	Thinking, Signatures []string
	// OutputSchema is the schema the request asked the reply's text to
	// follow natively (compact JSON), StrictTools the tools sent strict.
	OutputSchema string
	StrictTools  []string
}

// Wire speaks one provider's format for a Server.
type Wire interface {
	// Reply encodes r as the provider's reply body, whole or as an SSE
	// stream, returning the content type and body.
	Reply(r Reply, stream bool) (contentType string, body []byte)
	// Error is the provider's error body for status.
	Error(status int) []byte
	// Parse reads a request body.
	Parse(body []byte) (Seen, error)
}

// PathWire is a Wire whose requests say in their path what their body
// does not: Gemini asks for a stream with :streamGenerateContent.
type PathWire interface {
	Wire
	ParsePath(path string, body []byte) (Seen, error)
}

// Server is a local HTTP server that plays turns in a provider's wire
// format and records what it received.
type Server struct {
	*httptest.Server
	wire Wire

	mu       sync.Mutex
	turns    []Turn
	turn     int // index of the turn being played
	fail     int // failures of that turn already played
	attempts int
	bodies   [][]byte
	paths    []string
	headers  []http.Header
}

// Serve starts a Server playing turns; it is closed when t ends.
func Serve(t testing.TB, w Wire, turns []Turn) *Server {
	s := &Server{wire: w, turns: turns}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Attempts is how many requests arrived.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Bodies returns every request body received, in order.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// Seen parses the nth request received (from 0), as its Wire reads it.
func (s *Server) Seen(n int) (Seen, error) {
	s.mu.Lock()
	body, path := s.bodies[n], s.paths[n]
	s.mu.Unlock()
	return s.parse(path, body)
}

func (s *Server) parse(path string, body []byte) (Seen, error) {
	if pw, ok := s.wire.(PathWire); ok {
		return pw.ParsePath(path, body)
	}
	return s.wire.Parse(body)
}

// Headers returns every request's headers, in order.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := readAll(r)
	s.mu.Lock()
	s.attempts++
	s.bodies = append(s.bodies, body)
	s.paths = append(s.paths, r.URL.Path)
	s.headers = append(s.headers, r.Header.Clone())
	if s.turn >= len(s.turns) {
		s.mu.Unlock()
		http.Error(w, "modeltest: no turn left", http.StatusTeapot)
		return
	}
	t := s.turns[s.turn]
	var f *Failure
	if s.fail < len(t.Fail) {
		f = &t.Fail[s.fail]
		s.fail++
	} else {
		s.turn, s.fail = s.turn+1, 0
	}
	s.mu.Unlock()

	switch {
	case f == nil:
		seen, _ := s.parse(r.URL.Path, body)
		ct, out := s.wire.Reply(t.Reply, seen.Stream)
		w.Header().Set("Content-Type", ct)
		w.Write(out)
	case f.Reset:
		reset(w)
	case f.Break:
		seen, _ := s.parse(r.URL.Path, body)
		ct, out := s.wire.Reply(t.Reply, seen.Stream)
		w.Header().Set("Content-Type", ct)
		if !seen.Stream {
			w.Header().Set("Content-Length", fmt.Sprint(len(out)))
		}
		w.WriteHeader(http.StatusOK)
		w.Write(out[:len(out)/2])
		w.(http.Flusher).Flush()
		reset(w)
	case f.Hang:
		<-r.Context().Done()
	case f.StreamError != 0:
		ew, ok := s.wire.(ErrorEventWire)
		if !ok {
			http.Error(w, "modeltest: the wire has no error events (ErrorEventWire)", http.StatusTeapot)
			return
		}
		ct, out := ew.ErrorEvent(f.StreamError)
		w.Header().Set("Content-Type", ct)
		w.Write(out)
	default:
		for k, v := range f.Header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		w.Write(s.wire.Error(f.Status))
	}
}

// reset closes the connection with a TCP RST, as a crashed proxy does.
func reset(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func readAll(r *http.Request) ([]byte, error) {
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return []byte(b.String()), nil
		}
	}
}

// sleeps records the retry waits instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// retryConfig retries fast and records waits: jitter fixed at its middle.
func retryConfig(s *sleeps) retry.Config {
	return retry.Config{
		BaseDelay:      100 * time.Millisecond,
		AttemptTimeout: time.Second, // generous: a loaded CI machine must not time out a normal reply
		Rand:           func() float64 { return 0.5 },
		Sleep:          s.sleep,
	}
}

// secretKey is configured as the API key and must never appear in errors.
const secretKey = "sk-modeltest-SECRET-0123456789"

func (h Harness) model(t *testing.T, turns []Turn, o Options) (model.Model, *Server) {
	t.Helper()
	o.APIKey = secretKey
	m, srv := h.New(t, turns, o)
	if m == nil {
		t.Fatal("Harness.New returned a nil model")
	}
	return m, srv
}

// Run runs every case as a subtest of t.
func Run(t *testing.T, h Harness) {
	if h.New == nil || h.Cost == nil {
		t.Fatal("modeltest: Harness.New and Harness.Cost are required")
	}
	t.Run("ToolRoundTrip", func(t *testing.T) { testRoundTrip(t, h) })
	t.Run("ParallelCalls", func(t *testing.T) { testParallel(t, h, false) })
	t.Run("Usage", func(t *testing.T) { testUsage(t, h) })
	t.Run("MalformedArgs", func(t *testing.T) {
		if h.ObjectArgs {
			t.Log("not applicable: the wire carries arguments only as a JSON object (Harness.ObjectArgs)")
			return
		}
		testMalformed(t, h)
	})
	t.Run("Cancellation", func(t *testing.T) { testCancel(t, h) })
	t.Run("Thinking", func(t *testing.T) {
		if !h.Thinks {
			t.Log("not applicable: the model's replies carry no thinking (Harness.Thinks)")
			return
		}
		testThinking(t, h, false)
	})
	transport := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			if h.NoTransport {
				t.Log("not applicable: the model has no transport (Harness.NoTransport)")
				return
			}
			f(t)
		})
	}
	transport("Streaming", func(t *testing.T) {
		if !h.Streams {
			t.Fatal("the model has a transport but Harness.Streams is false")
		}
		testParallel(t, h, true)
	})
	transport("Refusal", func(t *testing.T) { testRefusal(t, h, false) })
	transport("StreamingRefusal", func(t *testing.T) { testRefusal(t, h, true) })
	transport("StructuredOutput", func(t *testing.T) { testStructured(t, h) })
	transport("StreamErrorFailsFast", func(t *testing.T) { testStreamError(t, h, 400) })
	transport("StreamErrorRetried", func(t *testing.T) { testStreamError(t, h, 503) })
	transport("StreamingThinking", func(t *testing.T) {
		if h.Thinks {
			testThinking(t, h, true)
		}
	})
	for _, st := range []int{429, 529, 500, 502, 503, 504} {
		transport(fmt.Sprintf("Retry%d", st), func(t *testing.T) { testRetry(t, h, Failure{Status: st}, st, "") })
	}
	transport("RetryReset", func(t *testing.T) { testRetry(t, h, Failure{Reset: true}, 0, "") })
	transport("RetryBrokenReply", func(t *testing.T) { testRetryBroken(t, h, false) })
	transport("RetryBrokenStream", func(t *testing.T) { testRetryBroken(t, h, true) })
	transport("RetryTimeout", func(t *testing.T) { testRetry(t, h, Failure{Hang: true}, 0, "attempt timed out") })
	transport("RetryAfter", func(t *testing.T) { testRetryAfter(t, h) })
	transport("Deadline", func(t *testing.T) { testDeadline(t, h) })
	transport("GivesUp", func(t *testing.T) { testGivesUp(t, h) })
	for _, st := range []int{400, 401, 403, 404} {
		transport(fmt.Sprintf("FailFast%d", st), func(t *testing.T) { testFailFast(t, h, st) })
	}
}

var tools = []model.ToolSpec{
	{Name: "add", Description: "Add two integers.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)},
	{Name: "finish", Description: "Finish with an answer.", InputSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)},
}

func request(msgs ...model.Message) model.Request {
	if len(msgs) == 0 {
		msgs = []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("What is 2+3?")}}}
	}
	return model.Request{System: "You are a careful agent.", Tools: tools, Messages: msgs, MaxOutputTokens: 512, Purpose: model.PurposeStep}
}

// want is the Response a reply must come back as (Model and cost aside).
func want(r Reply) model.Response {
	resp := model.Response{Content: []model.Block{}, StopReason: "end_turn"}
	if r.Text != "" {
		resp.Content = append(resp.Content, model.TextBlock(r.Text))
	}
	for _, c := range r.Calls {
		resp.Content = append(resp.Content, model.Block{Type: model.ToolUse, ID: c.ID, Name: c.Name, Input: json.RawMessage(c.Args)})
		resp.StopReason = "tool_use"
	}
	return resp
}

func generate(t *testing.T, m model.Model, ctx context.Context, req model.Request) model.Response {
	t.Helper()
	resp, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp
}

func checkReply(t *testing.T, got model.Response, r Reply) {
	t.Helper()
	w := want(r)
	got.Model, got.Usage = "", model.Usage{}
	if diff := diffResponse(w, got); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
}

func testRoundTrip(t *testing.T, h Harness) {
	reply := Reply{Text: "2+3 is 5; finishing.", Calls: []Call{{ID: "call_1_1", Name: "finish", Args: `{"answer":"5"}`}}}
	m, srv := h.model(t, []Turn{{Reply: reply}}, Options{})
	req := request(
		model.Message{Role: model.User, Content: []model.Block{model.TextBlock("What is 2+3?")}},
		model.Message{Role: model.Assistant, Content: []model.Block{
			model.TextBlock("I will add."),
			{Type: model.ToolUse, ID: "toolu_01", Name: "add", Input: json.RawMessage(`{"a":2,"b":3}`)},
		}},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "toolu_01", Text: "5"}}},
		// A second user message in a row, as the loop core sends feedback.
		model.Message{Role: model.User, Content: []model.Block{model.TextBlock("Now finish.")}},
	)
	checkReply(t, generate(t, m, context.Background(), req), reply)
	if srv == nil {
		return
	}
	bodies := srv.Bodies()
	if len(bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(bodies))
	}
	seen, err := srv.Seen(0)
	if err != nil {
		t.Fatalf("parse request: %v", err)
	}
	if seen.System != req.System {
		t.Errorf("system = %q, want %q", seen.System, req.System)
	}
	if got := strings.Join(seen.Tools, ","); got != "add,finish" {
		t.Errorf("tools = %s, want add,finish", got)
	}
	if len(seen.ToolUses) != 1 || seen.ToolUses[0] != (Call{"toolu_01", "add", `{"a":2,"b":3}`}) {
		t.Errorf("tool uses = %+v, want the add call", seen.ToolUses)
	}
	if strings.Join(seen.ToolResults, ",") != "toolu_01" {
		t.Errorf("tool results = %v, want [toolu_01]", seen.ToolResults)
	}
	texts := strings.Join(seen.UserTexts, "|")
	if !strings.Contains(texts, "What is 2+3?") || !strings.Contains(texts, "Now finish.") {
		t.Errorf("user texts = %q, want both user messages", texts)
	}
	if h.Alternates {
		for i := 1; i < len(seen.Roles); i++ {
			if seen.Roles[i] == seen.Roles[i-1] {
				t.Errorf("roles %v do not alternate", seen.Roles)
				break
			}
		}
	}
}

func testParallel(t *testing.T, h Harness, stream bool) {
	reply := Reply{Text: "Three sums at once.", Calls: []Call{
		{ID: "call_1_1", Name: "add", Args: `{"a":1,"b":2}`},
		{ID: "call_1_2", Name: "add", Args: `{"a":3,"b":4}`},
		{ID: "call_1_3", Name: "add", Args: `{"a":5,"b":6}`},
	}, Usage: model.Usage{InputTokens: 50, OutputTokens: 30}}
	plain, _ := h.model(t, []Turn{{Reply: reply}}, Options{})
	want := generate(t, plain, context.Background(), request())
	checkReply(t, want, reply)
	if !stream {
		return
	}
	m, srv := h.model(t, []Turn{{Reply: reply}}, Options{Stream: true})
	var deltas strings.Builder
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { deltas.WriteString(d) }})
	got := generate(t, m, ctx, request())
	if diff := diffResponse(want, got); diff != "" {
		t.Errorf("streamed response differs from the whole one (-whole +streamed):\n%s", diff)
	}
	if deltas.String() != reply.Text {
		t.Errorf("OnText saw %q, want %q", deltas.String(), reply.Text)
	}
	if seen, err := srv.Seen(0); err != nil || !seen.Stream {
		t.Errorf("the request did not ask for a stream (err %v)", err)
	}
}

func testUsage(t *testing.T, h Harness) {
	u := model.Usage{InputTokens: 1200, OutputTokens: 345, CacheReadTokens: 5000, CacheWriteTokens: 800}
	if h.NoCacheWrites {
		u.CacheWriteTokens = 0
	}
	reply := Reply{Text: "done", Usage: u}
	m, _ := h.model(t, []Turn{{Reply: reply}}, Options{})
	got := generate(t, m, context.Background(), request()).Usage
	want := u
	want.Cost, want.CostKnown = h.Cost(u)
	if got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
	if pm, ok := m.(model.Priced); ok && pm.PriceKnown() != want.CostKnown {
		t.Errorf("PriceKnown() = %v but CostKnown = %v", pm.PriceKnown(), want.CostKnown)
	}
}

// testThinking: a reply's thinking comes first, as model.Thinking with its
// text (and signature, where the wire has one), is never shown as text
// while streaming, and goes back in the next request where the provider
// sends it back, byte for byte.
func testThinking(t *testing.T, h Harness, stream bool) {
	reply := Reply{Thinking: "2+3: add them, then \"finish\" — é.", Text: "Adding.", Calls: []Call{{ID: "call_1_1", Name: "add", Args: `{"a":2,"b":3}`}}}
	if h.Signs {
		reply.Signature = "EqkBCkYICxgCKkDo5w3BcOFDM2J7+w==" // canonical base64: Gemini carries signatures as bytes
	}
	m, srv := h.model(t, []Turn{{Reply: reply}, {Reply: Reply{Text: "5"}}}, Options{Stream: stream})
	var shown strings.Builder
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { shown.WriteString(d) }})
	resp := generate(t, m, ctx, request())
	if len(resp.Content) == 0 || resp.Content[0].Type != model.Thinking || resp.Content[0].Text != reply.Thinking || resp.Content[0].Signature != reply.Signature {
		t.Fatalf("reply %+v: want a thinking block first, with the text %q and signature %q", resp.Content, reply.Thinking, reply.Signature)
	}
	rest := resp
	rest.Content = resp.Content[1:]
	noThinking := reply
	noThinking.Thinking, noThinking.Signature = "", ""
	checkReply(t, rest, noThinking)
	if stream && shown.String() != reply.Text {
		t.Errorf("OnText saw %q, want only the text %q", shown.String(), reply.Text)
	}
	req := request(
		model.Message{Role: model.User, Content: []model.Block{model.TextBlock("What is 2+3?")}},
		model.Message{Role: model.Assistant, Content: resp.Content},
		model.Message{Role: model.User, Content: []model.Block{{Type: model.ToolResult, ID: "call_1_1", Text: "5"}}},
	)
	generate(t, m, context.Background(), req)
	if srv == nil {
		return
	}
	seen, err := srv.Seen(1)
	if err != nil {
		t.Fatal(err)
	}
	var wantThinking, wantSigs []string
	if h.SendsThinkingBack {
		wantThinking = []string{reply.Thinking}
		if h.Signs {
			wantSigs = []string{reply.Signature}
		}
	}
	if !slices.Equal(seen.Thinking, wantThinking) || !slices.Equal(seen.Signatures, wantSigs) {
		t.Errorf("the next request sent back thinking %q, signatures %q; want %q, %q", seen.Thinking, seen.Signatures, wantThinking, wantSigs)
	}
}

// testRefusal: a provider's refusal is the reply's text with stop reason
// refusal, whole and streamed.
func testRefusal(t *testing.T, h Harness, stream bool) {
	reply := Reply{Refusal: "I can't help with that."}
	m, _ := h.model(t, []Turn{{Reply: reply}}, Options{Stream: stream})
	got := generate(t, m, context.Background(), request())
	got.Model, got.Usage = "", model.Usage{}
	want := model.Response{Content: []model.Block{model.TextBlock(cmp.Or(h.RefusalText, reply.Refusal))}, StopReason: "refusal"}
	if diff := diffResponse(want, got); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
}

// testStructured: a request's output schema and strict tools go out as the
// provider's native structured output where it has one, and not at all
// where it has none.
func testStructured(t *testing.T, h Harness) {
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	req := request()
	req.OutputSchema = json.RawMessage(schema)
	req.Tools = slices.Clone(req.Tools)
	req.Tools[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`)
	req.Tools[1].Strict = true
	m, srv := h.model(t, []Turn{{Reply: Reply{Text: `{"city":"Paris"}`}}}, Options{})
	checkReply(t, generate(t, m, context.Background(), req), Reply{Text: `{"city":"Paris"}`})
	seen, err := srv.Seen(0)
	if err != nil {
		t.Fatal(err)
	}
	wantSchema, wantStrict := "", []string(nil)
	if h.OutputSchema {
		wantSchema = schema
	}
	if seen.OutputSchema != "" { // keys in any order: an SDK may decode and re-encode it
		var v any
		json.Unmarshal([]byte(seen.OutputSchema), &v)
		b, _ := json.Marshal(v)
		seen.OutputSchema = string(b)
		json.Unmarshal([]byte(wantSchema), &v)
		b, _ = json.Marshal(v)
		wantSchema = string(b)
	}
	if h.StrictTools {
		wantStrict = []string{"finish"}
	}
	if seen.OutputSchema != wantSchema || !slices.Equal(seen.StrictTools, wantStrict) {
		t.Errorf("sent output schema %q, strict tools %q; want %q, %q", seen.OutputSchema, seen.StrictTools, wantSchema, wantStrict)
	}
}

// testStreamError: an error event inside a stream is classified as the
// same error outside a stream: a bad request fails at once, an
// unavailable server is asked again.
func testStreamError(t *testing.T, h Harness, status int) {
	if !h.Streams {
		t.Fatal("the model has a transport but Harness.Streams is false")
	}
	var s sleeps
	reply := Reply{Text: "after the error"}
	m, srv := h.model(t, []Turn{{Fail: []Failure{{StreamError: status}}, Reply: reply}}, Options{Stream: true, Retry: retryConfig(&s)})
	resp, err := m.Generate(context.Background(), request())
	if status < 500 {
		ae := apiError(t, err)
		if ae.Kind != model.KindOf(status) || ae.Temporary() || srv.Attempts() != 1 {
			t.Errorf("error %+v after %d attempts; want %s at once, as without a stream", ae, srv.Attempts(), model.KindOf(status))
		}
		return
	}
	if err != nil {
		t.Fatalf("Generate: %v (an unavailable server's error event is retried, as its status would be)", err)
	}
	checkReply(t, resp, reply)
	if srv.Attempts() != 2 {
		t.Errorf("%d attempts, want 2", srv.Attempts())
	}
}

func testMalformed(t *testing.T, h Harness) {
	for _, args := range []string{`{"a": 2,`, `{"a": 2, "b": }`, `not json at all`, `{"a":"\u00e9 \"quoted\""}`} {
		reply := Reply{Calls: []Call{{ID: "call_1_1", Name: "add", Args: args}}}
		m, _ := h.model(t, []Turn{{Reply: reply}}, Options{Stream: h.MalformedNeedsStream})
		resp, err := m.Generate(context.Background(), request())
		if err != nil {
			t.Errorf("args %q: Generate failed (malformed arguments are the model's, not infrastructure's): %v", args, err)
			continue
		}
		checkReply(t, resp, reply)
	}
}

func testCancel(t *testing.T, h Harness) {
	m, _ := h.model(t, []Turn{{Fail: []Failure{{Hang: true}}, Reply: Reply{Text: "late"}}}, Options{Retry: retry.Config{MaxAttempts: 1}})
	if h.NoTransport {
		// No server to hang: cancel before the call.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := m.Generate(ctx, request()); err == nil {
			t.Error("Generate with a cancelled context succeeded")
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := m.Generate(ctx, request())
	if err == nil {
		t.Fatal("Generate succeeded after cancellation")
	}
	if !errorsIsCanceled(err) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Generate took %v to notice cancellation", d)
	}
}

func testRetry(t *testing.T, h Harness, f Failure, status int, reason string) {
	var s sleeps
	reply := Reply{Text: "after a retry"}
	m, srv := h.model(t, []Turn{{Fail: []Failure{f}, Reply: reply}}, Options{Retry: retryConfig(&s)})
	if srv == nil {
		t.Fatal("the model has no server: set Harness.NoTransport if it has no transport")
	}
	var retries []model.Retry
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnRetry: func(r model.Retry) { retries = append(retries, r) }})
	checkReply(t, generate(t, m, ctx, request()), reply)
	if srv.Attempts() != 2 {
		t.Errorf("%d attempts, want 2", srv.Attempts())
	}
	if len(retries) != 1 {
		t.Fatalf("OnRetry called %d times, want 1: %+v", len(retries), retries)
	}
	r := retries[0]
	// The first retry waits BaseDelay with jitter in its middle: 75ms.
	if r.Attempt != 2 || r.Status != status || r.Wait != 75*time.Millisecond || r.Reason == "" {
		t.Errorf("retry = %+v, want attempt 2, status %d, wait 75ms and a reason", r, status)
	}
	if reason != "" && r.Reason != reason {
		t.Errorf("reason = %q, want %q", r.Reason, reason)
	}
	if w := s.waits(); len(w) != 1 || w[0] != r.Wait {
		t.Errorf("slept %v, want [%v]", w, r.Wait)
	}
}

func testRetryAfter(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name  string
		value func() string
		want  time.Duration
	}{
		{"Retry-After", func() string { return "2" }, 2 * time.Second},
		{"Retry-After-Ms", func() string { return "1500" }, 1500 * time.Millisecond},
		// An HTTP date has one-second resolution, and time passes before the
		// reply is read: allow two seconds less.
		{"Retry-After", func() string { return time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat) }, 20 * time.Second},
	} {
		var s sleeps
		header := map[string]string{tc.name: tc.value()}
		m, _ := h.model(t, []Turn{{Fail: []Failure{{Status: 429, Header: header}}, Reply: Reply{Text: "ok"}}}, Options{Retry: retryConfig(&s)})
		generate(t, m, context.Background(), request())
		w := s.waits()
		exact := tc.want < 10*time.Second
		if len(w) != 1 || exact && w[0] != tc.want || !exact && (w[0] > tc.want || w[0] < tc.want-2*time.Second) {
			t.Errorf("%v: waited %v, want %v", header, w, tc.want)
		}
	}
}

func testDeadline(t *testing.T, h Harness) {
	var s sleeps
	m, srv := h.model(t, []Turn{{Fail: []Failure{{Status: 429, Header: map[string]string{"Retry-After": "30"}}}, Reply: Reply{Text: "too late"}}}, Options{Retry: retryConfig(&s)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := m.Generate(ctx, request())
	ae := apiError(t, err)
	if ae.Status != 429 || ae.Kind != model.ErrRateLimited {
		t.Errorf("error = %+v, want the 429 the server sent", ae)
	}
	if w := s.waits(); len(w) != 0 || srv.Attempts() != 1 {
		t.Errorf("waited %v over %d attempts; a wait past the deadline must give up at once", w, srv.Attempts())
	}
	// The error says why it was not retried, not that retries gave up.
	if !strings.Contains(ae.Error(), "not retried: retry-after 30s exceeds the ") || !strings.Contains(ae.Error(), "s left") || strings.Contains(ae.Error(), "gave up") {
		t.Errorf("error %q does not say the retry-after exceeded the time left", ae)
	}
}

func testGivesUp(t *testing.T, h Harness) {
	var s sleeps
	rc := retryConfig(&s)
	rc.MaxAttempts = 3
	fails := []Failure{{Status: 503}, {Status: 503}, {Status: 503}}
	m, srv := h.model(t, []Turn{{Fail: fails, Reply: Reply{Text: "never"}}}, Options{Retry: rc})
	_, err := m.Generate(context.Background(), request())
	ae := apiError(t, err)
	if ae.Status != 503 || !ae.Temporary() || srv.Attempts() != 3 {
		t.Errorf("error %+v after %d attempts, want a temporary 503 after 3", ae, srv.Attempts())
	}
	// 100ms doubled once, each with jitter at its middle.
	if w := s.waits(); len(w) != 2 || w[0] != 75*time.Millisecond || w[1] != 150*time.Millisecond {
		t.Errorf("waits = %v, want [75ms 150ms]", w)
	}
	if !strings.Contains(ae.Error(), "gave up after 3 attempts") {
		t.Errorf("error %q does not say it gave up after 3 attempts", ae)
	}
	// Broken replies count against the same attempts.
	m, srv = h.model(t, []Turn{{Fail: []Failure{{Status: 503}, {Break: true}, {Break: true}}, Reply: Reply{Text: "never"}}}, Options{Retry: rc, Stream: h.Streams})
	_, err = m.Generate(context.Background(), request())
	if err == nil || srv.Attempts() != 3 || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Errorf("a 503 then two broken replies: %d attempts, error %v; want 3 attempts and an error saying so", srv.Attempts(), err)
	}
}

// testRetryBroken: a reply that breaks off half way (the connection reset
// after the headers and half the body) is asked for again, like a reset.
func testRetryBroken(t *testing.T, h Harness, stream bool) {
	var s sleeps
	reply := Reply{Text: "whole at last", Calls: []Call{{ID: "call_1_1", Name: "add", Args: `{"a":1,"b":2}`}}}
	m, srv := h.model(t, []Turn{{Fail: []Failure{{Break: true}}, Reply: reply}}, Options{Retry: retryConfig(&s), Stream: stream})
	var retries []model.Retry
	var billed []model.Usage
	ctx := model.WithHooks(context.Background(), &model.Hooks{
		OnRetry:  func(r model.Retry) { retries = append(retries, r) },
		OnBilled: func(u model.Usage) { billed = append(billed, u) },
	})
	checkReply(t, generate(t, m, ctx, request()), reply)
	if srv.Attempts() != 2 {
		t.Errorf("%d attempts, want 2", srv.Attempts())
	}
	// A stream cut after it began is billed all the same, so the attempt's
	// usage (estimated where the stream had not reported it) is reported,
	// priced like a reply. A whole reply's body cut off reports nothing:
	// its usage never arrived.
	switch {
	case !stream && len(billed) != 0:
		t.Errorf("billed %+v for a cut reply body, want nothing", billed)
	case stream && len(billed) != 1:
		t.Errorf("billed %d times (%+v), want once for the cut attempt", len(billed), billed)
	case stream:
		u := billed[0]
		if cost, known := h.Cost(u); u.InputTokens <= 0 || u.Cost != cost || u.CostKnown != known {
			t.Errorf("billed %+v, want input tokens and the cost %d (known %v) of that usage", u, cost, known)
		}
	}
	if len(retries) != 1 || retries[0].Attempt != 2 || retries[0].Wait != 75*time.Millisecond || !strings.HasPrefix(retries[0].Reason, "reply broke off") {
		t.Errorf("retries = %+v, want one, attempt 2 after 75ms, reason \"reply broke off…\"", retries)
	}
}

func testFailFast(t *testing.T, h Harness, status int) {
	var s sleeps
	m, srv := h.model(t, []Turn{{Fail: []Failure{{Status: status}}, Reply: Reply{Text: "never"}}}, Options{Retry: retryConfig(&s)})
	_, err := m.Generate(context.Background(), request())
	ae := apiError(t, err)
	if ae.Status != status || ae.Kind != model.KindOf(status) || ae.Temporary() {
		t.Errorf("error = %+v, want status %d of kind %s, not temporary", ae, status, model.KindOf(status))
	}
	if srv.Attempts() != 1 || len(s.waits()) != 0 {
		t.Errorf("%d attempts, waits %v: want one attempt and no wait", srv.Attempts(), s.waits())
	}
	if (status == 401 || status == 403 || status == 404) && ae.Fix == "" {
		t.Errorf("%d error has no fix: %v", status, err)
	}
	if strings.Contains(err.Error(), secretKey) || strings.Contains(fmt.Sprintf("%+v", ae), secretKey) {
		t.Errorf("the error shows the API key: %v", err)
	}
}

func apiError(t *testing.T, err error) *model.APIError {
	t.Helper()
	if err == nil {
		t.Fatal("Generate succeeded, want an error")
	}
	ae, ok := err.(*model.APIError)
	if !ok {
		t.Fatalf("error %T %v is not a *model.APIError", err, err)
	}
	return ae
}
