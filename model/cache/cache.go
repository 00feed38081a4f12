// Package cache is a response cache for model calls: a model.Model that
// answers a request identical to one already answered from a SQLite file
// instead of calling the model it wraps.
//
// A request is identified by Key: the model's name and everything the
// provider is sent (system prompt, messages, tools, output cap), in a
// canonical form. Within one Model (one run), the nth time a request is
// asked gets the nth reply stored for it, so that alternatives sampled with
// one request stay distinct; a scope (an eval's CASE/rN) keeps the repeats
// of a case apart, since they ask the same first request.
//
// A reply from the cache has Response.Cached set and costs nothing
// (Usage.Cost 0, CostKnown true): no call was made. Its token counts are
// kept as the call that made it reported them, so that the token budget
// and the context size run as they did. Text is passed to
// model.Hooks.OnText, one piece per text block, as a streaming call would.
// Errors are never stored: a failed call is tried again next time.
//
// Replies are stored after redaction, so the file holds no secret the
// Redactor knows. The file is in WAL mode with a busy timeout: many Models
// in one process and several processes may share a directory.
package cache

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the driver store/sqlite uses

	"github.com/ratchetloop/ratchet/internal/sqlitefile"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/redact"
)

// File is the name of the cache file in its directory.
const File = "cache.db"

// schemaVersion is the cache file's PRAGMA user_version.
const schemaVersion = 1

// Config configures Open. Dir is required; the zero value of every other
// field means its default.
type Config struct {
	// Dir holds the cache file (File); it is created if missing.
	Dir string
	// BusyTimeout is how long a write waits for another process's write
	// lock; default 10s.
	BusyTimeout time.Duration
	// Redactor knows the secrets to keep out of the file; nil knows none.
	Redactor *redact.Redactor
	// Now stamps stored replies; nil means time.Now.
	Now func() time.Time
}

// Cache is an open cache file. It is safe for concurrent use.
type Cache struct {
	db  *sql.DB
	cfg Config

	hits, misses, failures atomic.Int64
	lastErr                atomic.Pointer[error]
}

// Open opens (creating) the cache file in cfg.Dir.
func Open(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("cache: Config.Dir is empty")
	}
	if cfg.BusyTimeout < 0 {
		return nil, errors.New("cache: Config.BusyTimeout is negative")
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	path := filepath.Join(cfg.Dir, File)
	// A reply lost to a power cut costs one call again: NORMAL is enough.
	db, err := sql.Open("sqlite", sqlitefile.DSN(path, cfg.BusyTimeout, "synchronous(NORMAL)"))
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache{db: db, cfg: cfg}
	if err := c.setUp(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("cache: open %s: %w", path, err)
	}
	return c, nil
}

func (c *Cache) setUp(ctx context.Context) error {
	if err := sqlitefile.WAL(ctx, c.db, c.cfg.BusyTimeout); err != nil {
		return err
	}
	var v int
	if err := c.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("made by a newer ratchet (schema %d; this one knows %d)", v, schemaVersion)
	}
	_, err := c.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS replies (
		key     TEXT NOT NULL,    -- Key(model, request)
		scope   TEXT NOT NULL,    -- the Model's scope, e.g. an eval's CASE/rN
		n       INTEGER NOT NULL, -- the nth time the scope asked key
		model   TEXT NOT NULL,
		reply   BLOB NOT NULL,    -- the redacted model.Response, JSON
		created INTEGER NOT NULL, -- unix microseconds
		PRIMARY KEY (key, scope, n)
	) WITHOUT ROWID;
	PRAGMA user_version = 1`)
	return err
}

// Close closes the file.
func (c *Cache) Close() error { return c.db.Close() }

// Stats counts what every Model of c did.
type Stats struct {
	Hits   int64 // calls answered from the cache
	Misses int64 // calls passed on to the wrapped model
	// Failures counts reads and writes of the file that failed (a busy
	// timeout, a full disk, a damaged row); Last is the last one's error.
	Failures int64
	Last     error
}

// Stats reports what c's Models did so far.
func (c *Cache) Stats() Stats {
	s := Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Failures: c.failures.Load()}
	if p := c.lastErr.Load(); p != nil {
		s.Last = *p
	}
	return s
}

func (c *Cache) fail(err error) {
	c.failures.Add(1)
	c.lastErr.Store(&err)
}

// Wrap returns inner answered from c. name identifies the model in keys
// (its model string: anthropic:claude-sonnet-4-5); "" means inner's
// model.Named name (models with neither share their keys). scope separates runs that ask the same requests but
// must get their own replies (the repeats of an eval case); runs with one
// scope share replies.
func (c *Cache) Wrap(inner model.Model, name, scope string) *Model {
	if name == "" {
		if n, ok := inner.(model.Named); ok {
			name = n.Name()
		}
	}
	return &Model{c: c, inner: inner, name: name, scope: scope, asked: map[string]int{}}
}

// Model is a model.Model answered from a Cache where it can be. It is safe
// for concurrent use.
type Model struct {
	c           *Cache
	inner       model.Model
	name, scope string

	mu    sync.Mutex
	asked map[string]int // key → times asked so far
}

var (
	_ model.Model  = (*Model)(nil)
	_ model.Named  = (*Model)(nil)
	_ model.Priced = (*Model)(nil)
)

// Name is the wrapped model's name (what the run records and checks for
// grader independence), not the key's.
func (m *Model) Name() string {
	if n, ok := m.inner.(model.Named); ok {
		return n.Name()
	}
	return m.name
}

// PriceKnown is the wrapped model's: a cached reply is free, but the calls
// that miss are not.
func (m *Model) PriceKnown() bool {
	if p, ok := m.inner.(model.Priced); ok {
		return p.PriceKnown()
	}
	return true
}

// Unwrap returns the wrapped model.
func (m *Model) Unwrap() model.Model { return m.inner }

// Generate answers req from the cache, or calls the wrapped model and
// stores its reply. A cache file that cannot be read or written does not
// fail the call: the wrapped model answers, and Stats counts the failure
// (a cache saves calls; it is never the source of truth).
func (m *Model) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	key := Key(m.name, req)
	m.mu.Lock()
	n := m.asked[key]
	m.asked[key]++
	m.mu.Unlock()

	if resp, ok := m.c.lookup(ctx, key, m.scope, n); ok {
		m.c.hits.Add(1)
		if onText := model.HooksFrom(ctx).OnText; onText != nil {
			for _, b := range resp.Content {
				if b.Type == model.Text && b.Text != "" {
					onText(b.Text)
				}
			}
		}
		return resp, nil
	}
	m.c.misses.Add(1)
	resp, err := m.inner.Generate(ctx, req)
	if err != nil {
		return resp, err
	}
	m.c.store(context.WithoutCancel(ctx), key, m.scope, n, m.name, resp)
	return resp, nil
}

func (c *Cache) lookup(ctx context.Context, key, scope string, n int) (model.Response, bool) {
	var data []byte
	err := c.db.QueryRowContext(ctx, `SELECT reply FROM replies WHERE key = ? AND scope = ? AND n = ?`, key, scope, n).Scan(&data)
	if err != nil {
		if !errors.Is(err, sql.ErrNoRows) && ctx.Err() == nil {
			c.fail(fmt.Errorf("cache: reading a reply: %w", err))
		}
		return model.Response{}, false
	}
	resp, err := DecodeReply(data)
	if err != nil {
		c.fail(err) // a damaged row: call again, and overwrite it
		return model.Response{}, false
	}
	return resp, true
}

func (c *Cache) store(ctx context.Context, key, scope string, n int, name string, resp model.Response) {
	data, err := encodeReply(resp)
	if err != nil {
		c.fail(fmt.Errorf("cache: encoding a reply: %w", err))
		return
	}
	data = c.cfg.Redactor.Bytes(data)
	if _, err := c.db.ExecContext(ctx, `INSERT OR REPLACE INTO replies (key, scope, n, model, reply, created) VALUES (?, ?, ?, ?, ?, ?)`,
		key, scope, n, name, data, c.cfg.Now().UnixMicro()); err != nil {
		c.fail(fmt.Errorf("cache: storing a reply: %w", err))
	}
}

// DecodeReply reads a stored reply back as a cached Response: Cached set,
// cost 0 and known. The file is outside ratchet's control, so a row that
// is not a reply ratchet could have stored is an error, never a panic or
// a half-read Response.
func DecodeReply(data []byte) (model.Response, error) {
	var st storedReply
	if err := json.Unmarshal(data, &st); err != nil {
		return model.Response{}, fmt.Errorf("cache: a stored reply does not parse: %w", err)
	}
	resp := st.Response
	resp.Content = make([]model.Block, len(st.Content))
	for i, sb := range st.Content {
		b := sb.Block
		switch b.Type {
		case model.Text, model.ToolUse:
		default:
			return model.Response{}, fmt.Errorf("cache: a stored reply's block %d has type %q", i, b.Type)
		}
		b.Input = sb.Input
		if sb.InvalidInput != nil {
			if sb.Input != nil {
				return model.Response{}, fmt.Errorf("cache: a stored reply's block %d has both input and invalid_input", i)
			}
			b.Input = json.RawMessage(*sb.InvalidInput)
		}
		resp.Content[i] = b
	}
	u := resp.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
		return model.Response{}, errors.New("cache: a stored reply has negative token counts")
	}
	resp.Cached = true
	resp.Usage.Cost, resp.Usage.CostKnown = 0, true
	return resp, nil
}

// storedReply is a Response as the file keeps it, as the event log keeps
// one: valid tool arguments compacted, and arguments that are not valid
// JSON (which the loop must see as they are) as a string in
// invalid_input, so that every reply can be stored.
type storedReply struct {
	model.Response
	Content []storedBlock `json:"content"`
}

// storedBlock's Input and InvalidInput replace the Block's Input.
type storedBlock struct {
	model.Block
	Input        json.RawMessage `json:"input,omitempty"`
	InvalidInput *string         `json:"invalid_input,omitempty"`
}

func encodeReply(resp model.Response) ([]byte, error) {
	st := storedReply{Response: resp, Content: make([]storedBlock, len(resp.Content))}
	for i, b := range resp.Content {
		sb := storedBlock{Block: b}
		switch {
		case len(b.Input) == 0:
		case json.Valid(b.Input):
			sb.Input = b.Input
		default:
			in := string(b.Input)
			sb.InvalidInput = &in
		}
		st.Content[i] = sb
	}
	return json.Marshal(st)
}
