// Package postgres is the store for many processes or machines: PostgreSQL
// by DSN, on github.com/jackc/pgx/v5's connection pool.
//
// Durability: every write is a committed transaction, durable as the server
// is configured to make it (fsync and synchronous_commit on, their
// defaults): when Append returns, its entries are in the server's fsynced
// write-ahead log.
//
// Appends from many runs are committed together (group commit): a few
// writer goroutines each take whatever appends are pending, lock those runs'
// rows, check every append's sequence numbers against the locked rows,
// insert the accepted entries in one statement and commit. An append that
// does not continue its run's log fails alone with store.ErrConflict. The
// row lock is what makes a second writer on the same run, in this process or
// another, fail cleanly; the (run, seq) primary key is the backstop.
//
// Strings (IDs, goals, kinds, labels) are PostgreSQL text: valid UTF-8
// without NUL bytes. Byte fields are bytea and round-trip exactly.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratchetloop/ratchet/store"
)

// Config says which database to use and how. DSN is required; the zero
// value of every other field means its default.
type Config struct {
	// DSN is a libpq connection string, as a URL
	// ("postgres://user:pass@host:5432/db?sslmode=disable") or as
	// key=value pairs ("host=/run/postgresql dbname=ratchet").
	DSN string
	// Schema holds ratchet's tables; it is created if missing. Default: the
	// connection's search_path (usually public).
	Schema string
	// MaxConns caps the pool's connections; default 16.
	MaxConns int32
	// Writers is how many appending transactions may be in flight at once;
	// default 4.
	Writers int
	// MaxBatch caps the appends committed in one transaction; default 256.
	MaxBatch int
}

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
	w    *writer
	pcfg *pgxpool.Config // the pool's, for the ledger's own (Ledger)
	// ledger is the store's own limit ledger (Ledger), made on first use.
	ledgerOnce sync.Once
	ledger     *Ledger
	ledgerErr  error
}

var _ store.Store = (*Store)(nil)

// Open connects to the database dsn names with the default configuration
// and brings its schema up to date.
func Open(ctx context.Context, dsn string) (*Store, error) { return New(ctx, Config{DSN: dsn}) }

// New connects to the database cfg describes and brings its schema up to
// date. ctx bounds only the connecting and migrating.
func New(ctx context.Context, cfg Config) (*Store, error) {
	var problems []string
	if cfg.DSN == "" {
		problems = append(problems, "DSN is empty")
	}
	if cfg.MaxConns < 0 {
		problems = append(problems, "MaxConns is negative")
	}
	if cfg.Writers < 0 {
		problems = append(problems, "Writers is negative")
	}
	if cfg.MaxBatch < 0 {
		problems = append(problems, "MaxBatch is negative")
	}
	var pcfg *pgxpool.Config
	if cfg.DSN != "" {
		var err error
		if pcfg, err = pgxpool.ParseConfig(cfg.DSN); err != nil {
			// pgconn's parse errors never include the password.
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("postgres: invalid config: %s", strings.Join(problems, "; "))
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 16
	}
	if cfg.Writers == 0 {
		cfg.Writers = 4
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 256
	}
	pcfg.MaxConns = cfg.MaxConns
	if cfg.Schema != "" {
		pcfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, pool, cfg.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	return &Store{pool: pool, w: startWriter(pool, cfg.Writers, cfg.MaxBatch), pcfg: pcfg}, nil
}

// Close waits for the appends in flight, then closes the pool. Calls after
// Close fail.
func (s *Store) Close() error {
	s.ledgerOnce.Do(func() {}) // no ledger is made from here on
	if s.ledger != nil {
		s.ledger.Stop()
	}
	s.w.close()
	s.pool.Close()
	return nil
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if r.ID == "" {
		return errors.New("postgres: create run: empty ID")
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO runs
		(id, parent, goal, labels, status, question, task, result, steps, cost_micros, created, updated, holder, heartbeat, fork_of, fork_seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING`,
		r.ID, r.Parent, r.Goal, nonNil(r.Labels), r.Status, r.Question, r.Task, r.Result,
		r.Steps, r.CostMicros, r.Created, r.Updated, r.Holder, nullTime(r.Heartbeat), r.ForkOf, r.ForkSeq)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrExists
	}
	if err != nil {
		return fmt.Errorf("postgres: create run %q: %w", r.ID, err)
	}
	return nil
}

const runColumns = `id, parent, goal, labels, status, question, task, result, steps, cost_micros, created, updated, holder, heartbeat, fork_of, fork_seq`

func scanRun(row pgx.Row) (store.Run, error) {
	var (
		r         store.Run
		heartbeat *time.Time
	)
	if err := row.Scan(&r.ID, &r.Parent, &r.Goal, &r.Labels, &r.Status, &r.Question, &r.Task, &r.Result,
		&r.Steps, &r.CostMicros, &r.Created, &r.Updated, &r.Holder, &heartbeat, &r.ForkOf, &r.ForkSeq); err != nil {
		return store.Run{}, err
	}
	if heartbeat != nil {
		r.Heartbeat = heartbeat.UTC()
	}
	if len(r.Labels) == 0 {
		r.Labels = nil
	}
	r.Created = r.Created.UTC()
	r.Updated = r.Updated.UTC()
	return r, nil
}

// nullTime stores the zero time (no heartbeat yet) as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Run implements store.Store.
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres: run %q: %w", id, err)
	}
	return r, nil
}

// DeleteRun implements store.Store. One statement deletes the run and, by
// its data-modifying CTEs, the entries, snapshots and queued messages that
// reference it.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `WITH
		e AS (DELETE FROM entries WHERE run = $1),
		sn AS (DELETE FROM snapshots WHERE run = $1),
		q AS (DELETE FROM messages WHERE run = $1)
		DELETE FROM runs WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: delete run %q: %w", id, err)
	}
	return nil
}

// UpdateRun implements store.Store.
func (s *Store) UpdateRun(ctx context.Context, id string, u store.Update) error {
	args := []any{id}
	var set []string
	u.Columns(func(col string, v any) {
		args = append(args, v)
		set = append(set, fmt.Sprintf("%s = $%d", col, len(args)))
	})
	query := `SELECT FROM runs WHERE id = $1`
	if len(set) > 0 {
		query = `UPDATE runs SET ` + strings.Join(set, ", ") + ` WHERE id = $1`
	}
	tag, err := s.pool.Exec(ctx, query, args...)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: update run %q: %w", id, err)
	}
	return nil
}

// ListRuns implements store.Store.
func (s *Store) ListRuns(ctx context.Context, f store.Filter) ([]store.Run, error) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(f.Status) > 0 {
		var exact, prefixes []string
		for _, st := range f.Status {
			if strings.HasSuffix(st, ":") {
				prefixes = append(prefixes, st)
			} else {
				exact = append(exact, st)
			}
		}
		var or []string
		if len(exact) > 0 {
			or = append(or, "status = ANY("+arg(exact)+")")
		}
		for _, p := range prefixes {
			or = append(or, "starts_with(status, "+arg(p)+")")
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if f.Label != "" {
		where = append(where, "labels @> ARRAY["+arg(f.Label)+"::text]")
	}
	if f.Parent != "" {
		where = append(where, "parent = "+arg(f.Parent))
	}
	if f.Text != "" {
		// translate folds ASCII letters only (lower() would fold others
		// too), as Filter.Text says.
		text := arg(store.LowerASCII(f.Text))
		where = append(where, "(strpos("+asciiLower("id")+", "+text+") > 0 OR strpos("+asciiLower("goal")+", "+text+") > 0)")
	}
	order, ok := f.Order.OrderBy()
	if !ok {
		return nil, fmt.Errorf("postgres: list runs: unknown order %q", f.Order)
	}
	query := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY ` + order
	if f.Limit > 0 {
		query += ` LIMIT ` + arg(f.Limit)
	}
	if f.Offset > 0 {
		query += ` OFFSET ` + arg(f.Offset)
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) { return scanRun(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	return runs, nil
}

// asciiLower is SQL lowering column's ASCII letters and nothing else.
func asciiLower(column string) string {
	return "translate(" + column + ", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
}

// Append implements store.Store. If ctx ends before the append is taken
// into a transaction, nothing is written and ctx's error is returned; once
// taken, Append waits for the commit.
func (s *Store) Append(ctx context.Context, run string, entries []store.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].Seq != entries[i-1].Seq+1 {
			return fmt.Errorf("postgres: append to run %q: %w: entry %d has seq %d after %d",
				run, store.ErrConflict, i, entries[i].Seq, entries[i-1].Seq)
		}
	}
	if err := s.w.append(ctx, run, entries); err != nil {
		return fmt.Errorf("postgres: append to run %q: %w", run, err)
	}
	return nil
}

// Entries implements store.Store.
func (s *Store) Entries(ctx context.Context, run string, after int64) ([]store.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, kind, at, data FROM entries WHERE run = $1 AND seq > $2 ORDER BY seq`, run, after)
	if err != nil {
		return nil, fmt.Errorf("postgres: entries of run %q: %w", run, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Entry, error) {
		var e store.Entry
		err := row.Scan(&e.Seq, &e.Kind, &e.At, &e.Data)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: entries of run %q: %w", run, err)
	}
	if len(out) == 0 {
		// Tell an empty log from a missing run.
		if _, err := s.LastSeq(ctx, run); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return out, nil
}

// LastSeq implements store.Store.
func (s *Store) LastSeq(ctx context.Context, run string) (int64, error) {
	var last int64
	err := s.pool.QueryRow(ctx, `SELECT last_seq FROM runs WHERE id = $1`, run).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: last seq of run %q: %w", run, err)
	}
	return last, nil
}

// SaveSnapshot implements store.Store; it keeps only the run's latest
// snapshot.
func (s *Store) SaveSnapshot(ctx context.Context, run string, snap store.Snapshot) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO snapshots (run, seq, data)
		SELECT $1, $2, $3 WHERE EXISTS (SELECT FROM runs WHERE id = $1)
		ON CONFLICT (run) DO UPDATE SET seq = excluded.seq, data = excluded.data`,
		run, snap.Seq, nonNil(snap.Data))
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("postgres: save snapshot of run %q: %w", run, err)
	}
	return nil
}

// LatestSnapshot implements store.Store.
func (s *Store) LatestSnapshot(ctx context.Context, run string) (store.Snapshot, error) {
	var snap store.Snapshot
	err := s.pool.QueryRow(ctx, `SELECT seq, data FROM snapshots WHERE run = $1`, run).Scan(&snap.Seq, &snap.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Snapshot{}, fmt.Errorf("postgres: latest snapshot of run %q: %w", run, err)
	}
	return snap, nil
}

// nonNil turns nil into an empty value: pgx sends a nil slice as NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeTimeout bounds one append transaction, so a hung server fails the
// appends waiting on it instead of blocking their runs forever.
const writeTimeout = time.Minute

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, run string, m store.Message) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO messages (run, text, at)
		SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1) RETURNING id`, run, m.Text, m.At).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: enqueue for run %q: %w", run, err)
	}
	return id, nil
}

// Messages implements store.Store.
func (s *Store) Messages(ctx context.Context, run string, after int64) ([]store.Message, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, text, at FROM messages WHERE run = $1 AND id > $2 ORDER BY id`, run, after)
	if err != nil {
		return nil, fmt.Errorf("postgres: messages of run %q: %w", run, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Message, error) {
		var m store.Message
		err := row.Scan(&m.ID, &m.Text, &m.At)
		m.At = m.At.UTC()
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: messages of run %q: %w", run, err)
	}
	return out, nil
}

// DeleteMessages implements store.Store.
func (s *Store) DeleteMessages(ctx context.Context, run string, through int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM messages WHERE run = $1 AND id <= $2`, run, through); err != nil {
		return fmt.Errorf("postgres: delete messages of run %q: %w", run, err)
	}
	return nil
}
