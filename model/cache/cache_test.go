package cache_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/cache"
	"github.com/ratchetloop/ratchet/redact"
)

// counting is a model that numbers its replies and counts its calls.
type counting struct {
	calls atomic.Int64
	text  string // the reply's text, before its number
	fail  error
}

func (c *counting) Generate(_ context.Context, req model.Request) (model.Response, error) {
	n := c.calls.Add(1)
	if c.fail != nil {
		return model.Response{}, c.fail
	}
	return model.Response{
		Content:    []model.Block{model.TextBlock(fmt.Sprintf("%s%d", c.text, n)), {Type: model.ToolUse, ID: "t1", Name: "finish", Input: json.RawMessage(`{"answer":"x"}`)}},
		StopReason: "tool_use",
		Usage:      model.Usage{InputTokens: 100, OutputTokens: 20, Cost: 1234, CostKnown: true},
	}, nil
}

func (c *counting) Name() string { return "anthropic:claude-test" }

func open(t testing.TB, dir string, r *redact.Redactor) *cache.Cache {
	t.Helper()
	c, err := cache.Open(cache.Config{Dir: dir, Redactor: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func req(text string) model.Request {
	return model.Request{System: "be brief", Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock(text)}}}}
}

func text(r model.Response) string { return r.Content[0].Text }

// A request answered once is answered again from the file, by another
// Cache on it (another process), with no call: marked cached, free, with
// the tokens the call reported.
func TestHitAfterMiss(t *testing.T) {
	dir := t.TempDir()
	inner := &counting{text: "reply "}
	first, err := open(t, dir, nil).Wrap(inner, "", "").Generate(context.Background(), req("hi"))
	if err != nil || first.Cached || first.Usage.Cost != 1234 {
		t.Fatalf("the first call: %+v, %v", first, err)
	}
	c2 := open(t, dir, nil)
	got, err := c2.Wrap(inner, "", "").Generate(context.Background(), req("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
	if !got.Cached || got.Usage.Cost != 0 || !got.Usage.CostKnown || got.Usage.InputTokens != 100 || got.Usage.OutputTokens != 20 {
		t.Errorf("cached usage: %+v (cached %v)", got.Usage, got.Cached)
	}
	if text(got) != "reply 1" || string(got.Content[1].Input) != `{"answer":"x"}` || got.StopReason != "tool_use" {
		t.Errorf("cached reply: %+v", got)
	}
	if s := c2.Stats(); s.Hits != 1 || s.Misses != 0 || s.Failures != 0 {
		t.Errorf("stats: %+v", s)
	}
	// Another request, or another model, misses.
	if r, _ := c2.Wrap(inner, "", "").Generate(context.Background(), req("bye")); r.Cached {
		t.Error("another request was answered from the cache")
	}
	if r, _ := c2.Wrap(inner, "openai:gpt-test", "").Generate(context.Background(), req("hi")); r.Cached {
		t.Error("another model's request was answered from the cache")
	}
}

// The nth time one run asks a request gets the nth reply (alternatives
// sampled with one request stay distinct); another scope (another repeat)
// gets its own.
func TestOccurrencesAndScopes(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, nil)
	inner := &counting{}
	ctx := context.Background()
	m := c.Wrap(inner, "", "case/r0")
	a, _ := m.Generate(ctx, req("q"))
	b, _ := m.Generate(ctx, req("q"))
	if text(a) == text(b) {
		t.Fatalf("two asks in one run got one reply %q", text(a))
	}
	again := c.Wrap(inner, "", "case/r0")
	a2, _ := again.Generate(ctx, req("q"))
	b2, _ := again.Generate(ctx, req("q"))
	if text(a2) != text(a) || text(b2) != text(b) || !a2.Cached || !b2.Cached {
		t.Errorf("replayed %q %q, want %q %q cached", text(a2), text(b2), text(a), text(b))
	}
	before := inner.calls.Load()
	other, _ := c.Wrap(inner, "", "case/r1").Generate(ctx, req("q"))
	if other.Cached || inner.calls.Load() != before+1 {
		t.Errorf("another scope was answered from the cache: %+v", other)
	}
}

// A failed call is not kept: it is tried again.
func TestErrorsAreNotCached(t *testing.T) {
	c := open(t, t.TempDir(), nil)
	inner := &counting{fail: &model.APIError{Provider: "anthropic", Status: 529, Kind: model.ErrOverloaded}}
	for range 2 {
		if _, err := c.Wrap(inner, "", "").Generate(context.Background(), req("q")); err == nil {
			t.Fatal("no error")
		}
	}
	if n := inner.calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// A cached reply's text reaches OnText, as a stream's would.
func TestCachedTextStreams(t *testing.T) {
	c := open(t, t.TempDir(), nil)
	inner := &counting{text: "streamed "}
	c.Wrap(inner, "", "").Generate(context.Background(), req("q"))
	var got []string
	ctx := model.WithHooks(context.Background(), &model.Hooks{OnText: func(d string) { got = append(got, d) }})
	r, _ := c.Wrap(inner, "", "").Generate(ctx, req("q"))
	if !r.Cached || strings.Join(got, "") != "streamed 1" {
		t.Errorf("OnText got %q (cached %v)", got, r.Cached)
	}
}

// The file never holds a secret the Redactor knows, in the reply's text
// or its tool input, whether in the database or its write-ahead log.
func TestNoSecretInTheFile(t *testing.T) {
	const canary = "sk-ant-CANARY-cache-9d1f0a"
	dir := t.TempDir()
	c := open(t, dir, redact.New(canary))
	inner := &counting{text: "the key is " + canary + " "}
	m := c.Wrap(inner, "", "")
	if _, err := m.Generate(context.Background(), req("what is the key "+canary)); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Wrap(inner, "", "").Generate(context.Background(), req("what is the key "+canary))
	if !got.Cached || strings.Contains(text(got), canary) || !strings.Contains(text(got), redact.Placeholder) {
		t.Errorf("cached reply %q", text(got))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		t.Fatal("no files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "CANARY") {
			t.Errorf("%s holds the canary", filepath.Base(f))
		}
	}
}

// Many runs in one process and two handles on the file (as two processes
// would have) answer and store at once without an error or a damaged file.
func TestConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	caches := []*cache.Cache{open(t, dir, nil), open(t, dir, nil)}
	inner := &counting{}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		wg.Go(func() {
			m := caches[i%2].Wrap(inner, "", fmt.Sprintf("run%d", i%10))
			for j := range 5 {
				if _, err := m.Generate(context.Background(), req(fmt.Sprint(j))); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, c := range caches {
		if s := c.Stats(); s.Failures != 0 {
			t.Errorf("%d reads or writes failed; the last: %v", s.Failures, s.Last)
		}
	}
	// Every (scope, request) is there now: a second pass calls nothing.
	before := inner.calls.Load()
	for i := range 100 {
		m := caches[i%2].Wrap(inner, "", fmt.Sprintf("run%d", i%10))
		for j := range 5 {
			if r, _ := m.Generate(context.Background(), req(fmt.Sprint(j))); !r.Cached {
				t.Fatalf("run %d request %d missed", i, j)
			}
		}
	}
	if n := inner.calls.Load() - before; n != 0 {
		t.Errorf("the second pass made %d calls", n)
	}
}

func TestOpenRefuses(t *testing.T) {
	if _, err := cache.Open(cache.Config{}); err == nil {
		t.Error("an empty Dir opened")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := cache.Open(cache.Config{Dir: file}); err == nil {
		t.Error("a file as Dir opened")
	}
	if _, err := cache.Open(cache.Config{Dir: t.TempDir(), BusyTimeout: -1}); err == nil {
		t.Error("a negative timeout opened")
	}
}

// The wrapper keeps the wrapped model's name and price and unwraps to it,
// so that it composes with other wrappers.
func TestWrapperKeepsIdentity(t *testing.T) {
	c := open(t, t.TempDir(), nil)
	m := c.Wrap(&counting{}, "", "")
	if m.Name() != "anthropic:claude-test" || !m.PriceKnown() {
		t.Errorf("name %q, priced %v", m.Name(), m.PriceKnown())
	}
	if _, ok := m.Unwrap().(*counting); !ok {
		t.Errorf("Unwrap gave %T", m.Unwrap())
	}
}

// rawCheck runs SQLite's integrity check on the cache file in dir and
// reads its journal mode.
func rawCheck(dir string, result, mode *string) error {
	db, err := sql.Open("sqlite", filepath.Join(dir, cache.File))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.QueryRow("PRAGMA journal_mode").Scan(mode); err != nil {
		return err
	}
	return db.QueryRow("PRAGMA integrity_check").Scan(result)
}

// malformed is a model whose tool arguments are not JSON.
type malformed struct{ calls atomic.Int64 }

func (m *malformed) Generate(context.Context, model.Request) (model.Response, error) {
	m.calls.Add(1)
	return model.Response{Content: []model.Block{{Type: model.ToolUse, ID: "t", Name: "f", Input: json.RawMessage(`{"a": 1,`)}}}, nil
}

// A reply with tool arguments that are not JSON is kept and comes back
// byte for byte: the loop must tell the model, as the first time.
func TestMalformedArgumentsAreCached(t *testing.T) {
	c := open(t, t.TempDir(), nil)
	inner := &malformed{}
	c.Wrap(inner, "m", "").Generate(context.Background(), req("q"))
	got, _ := c.Wrap(inner, "m", "").Generate(context.Background(), req("q"))
	if !got.Cached || inner.calls.Load() != 1 || string(got.Content[0].Input) != `{"a": 1,` {
		t.Errorf("cached %v after %d calls: %q", got.Cached, inner.calls.Load(), got.Content[0].Input)
	}
	if s := c.Stats(); s.Failures != 0 {
		t.Errorf("failures: %v", s.Last)
	}
}

// TestConcurrentOpenOfANewDir: the runs of a suite opening one new cache
// directory at once all open it (the switch to WAL is retried while
// another opener holds the lock, as the run database does): before, 8
// openers failed with SQLITE_BUSY in 5 of 9 tries.
func TestConcurrentOpenOfANewDir(t *testing.T) {
	for round := range 50 {
		dir := filepath.Join(t.TempDir(), "cache")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				c, err := cache.Open(cache.Config{Dir: dir})
				if err != nil {
					errs <- err
					return
				}
				c.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
	}
}
