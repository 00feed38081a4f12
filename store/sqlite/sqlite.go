// Package sqlite is the default store: one SQLite file in WAL mode, on the
// pure-Go modernc.org/sqlite driver (no cgo).
//
// Durability: every write commits with synchronous=FULL, so when Append
// returns its entries have been fsynced to the write-ahead log and survive a
// crash of the process or of the machine.
//
// Writes go through one writer goroutine per Store that commits whatever is
// pending from every run in one transaction (group commit): SQLite has a
// single writer, and one fsync shared by many runs is what lets a hundred
// concurrent loops append thousands of events a second. Each write runs in
// its own savepoint, so a conflict fails only its caller. Reads use a small
// pool of connections and never wait for the writer (WAL readers see the
// last commit).
//
// Several processes may open the same file (a running loop and `ratchet
// answer`, say): SQLite's file locks serialize their writers, with
// Config.BusyTimeout as the patience.
//
// Opening a store switches the driver to fdatasync for the whole process
// (see modernc.org/sqlite.Fdatasync), as SQLite's own Linux builds do.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	driver "modernc.org/sqlite"

	"github.com/ratchetloop/ratchet/internal/sqlitefile"

	"github.com/ratchetloop/ratchet/store"
)

// Config says where the database is and how to use it. Path is required;
// the zero value of every other field means its default.
type Config struct {
	// Path is the database file. It and its directory are created if
	// missing. DefaultPath gives the conventional location.
	Path string
	// BusyTimeout is how long a write waits for another process holding the
	// database's write lock before failing; default 10s.
	BusyTimeout time.Duration
	// MaxBatch caps the writes committed in one transaction; default 512.
	MaxBatch int
	// Readers caps the connections used for reads; default 4.
	Readers int
}

// DefaultPath returns where ratchet keeps its database unless told
// otherwise: $RATCHET_DB if set, else $XDG_STATE_HOME/ratchet/ratchet.db,
// else ~/.local/state/ratchet/ratchet.db. It does not create anything (Open
// creates the directory).
func DefaultPath() (string, error) {
	if p := os.Getenv("RATCHET_DB"); p != "" {
		return p, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "ratchet", "ratchet.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sqlite: no default database path: %w", err)
	}
	return filepath.Join(home, ".local", "state", "ratchet", "ratchet.db"), nil
}

// Store is a store.Store in one SQLite file.
type Store struct {
	db  *sql.DB // readers
	w   *writer
	cfg Config
	// ledger is the store's own limit ledger (Ledger), made on first use.
	ledgerOnce sync.Once
	ledger     *Ledger
	ledgerErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path with the default
// configuration.
func Open(path string) (*Store, error) { return New(Config{Path: path}) }

// New opens (creating if needed) the database cfg describes and brings its
// schema up to date.
func New(cfg Config) (*Store, error) {
	var problems []string
	if cfg.Path == "" {
		problems = append(problems, "Path is empty")
	}
	if cfg.BusyTimeout < 0 {
		problems = append(problems, "BusyTimeout is negative")
	}
	if cfg.MaxBatch < 0 {
		problems = append(problems, "MaxBatch is negative")
	}
	if cfg.Readers < 0 {
		problems = append(problems, "Readers is negative")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("sqlite: invalid config: %s", strings.Join(problems, "; "))
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = 10 * time.Second
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 512
	}
	if cfg.Readers == 0 {
		cfg.Readers = 4
	}
	if dir := filepath.Dir(cfg.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}

	// Every connection gets these; journal_mode is set once below since it
	// is a property of the file.
	dsn := sqlitefile.DSN(cfg.Path, cfg.BusyTimeout, "foreign_keys(1)", "synchronous(FULL)")

	// SQLite's own Linux builds commit with fdatasync; the transpiled
	// library needs telling. Same durability, less journal traffic.
	driver.Fdatasync(true)

	ctx := context.Background()
	wdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetConnMaxIdleTime(0)
	wdb.SetConnMaxLifetime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	fail := func(err error) (*Store, error) {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	if err := sqlitefile.WAL(ctx, conn, cfg.BusyTimeout); err != nil {
		return fail(err)
	}
	// Keep the WAL file when the last connection closes, so the next
	// process overwrites its blocks instead of growing a new file: a commit
	// into a file that grows also syncs the file's size, which costs more
	// than the commit itself on ext4. Close closes the writer last.
	if err := conn.Raw(func(dc any) error {
		if fc, ok := dc.(driver.FileControl); ok {
			_, err := fc.FileControlPersistWAL("main", 1)
			return err
		}
		return nil
	}); err != nil {
		return fail(fmt.Errorf("persist WAL: %w", err))
	}
	if err := migrate(ctx, conn); err != nil {
		return fail(err)
	}

	rdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fail(err)
	}
	rdb.SetMaxOpenConns(cfg.Readers)
	rdb.SetMaxIdleConns(cfg.Readers)
	return &Store{db: rdb, w: startWriter(wdb, conn, cfg.MaxBatch), cfg: cfg}, nil
}

// Close waits for the writes in flight, then closes the database. Calls
// after Close fail.
func (s *Store) Close() error {
	s.ledgerOnce.Do(func() {}) // no ledger is made from here on
	if s.ledger != nil {
		s.ledger.Stop()
	}
	err := s.db.Close()
	return errors.Join(err, s.w.close())
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if r.ID == "" {
		return errors.New("sqlite: create run: empty ID")
	}
	labels, err := json.Marshal(nonNil(r.Labels))
	if err != nil {
		return fmt.Errorf("sqlite: create run %q: %w", r.ID, err)
	}
	err = s.w.do(ctx, func(t tx) error {
		res, err := t.exec(`INSERT INTO runs
			(id, parent, goal, labels, status, question, task, result, steps, cost_micros, created, updated, holder, heartbeat, fork_of, fork_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			r.ID, r.Parent, r.Goal, string(labels), r.Status, r.Question, r.Task, r.Result,
			r.Steps, r.CostMicros, r.Created.UnixMicro(), r.Updated.UnixMicro(), r.Holder, toMicros(r.Heartbeat), r.ForkOf, r.ForkSeq)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrExists
		}
		for _, l := range r.Labels {
			if _, err := t.exec(`INSERT INTO run_labels (label, run) VALUES (?, ?) ON CONFLICT DO NOTHING`, l, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: create run %q: %w", r.ID, err)
	}
	return nil
}

const runColumns = `id, parent, goal, labels, status, question, task, result, steps, cost_micros, created, updated, holder, heartbeat, fork_of, fork_seq`

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner) (store.Run, error) {
	var (
		r                store.Run
		labels           string
		created, updated int64
		heartbeat        int64
	)
	if err := sc.Scan(&r.ID, &r.Parent, &r.Goal, &labels, &r.Status, &r.Question, &r.Task, &r.Result,
		&r.Steps, &r.CostMicros, &created, &updated, &r.Holder, &heartbeat, &r.ForkOf, &r.ForkSeq); err != nil {
		return store.Run{}, err
	}
	if err := json.Unmarshal([]byte(labels), &r.Labels); err != nil {
		return store.Run{}, fmt.Errorf("labels of run %q: %w", r.ID, err)
	}
	if len(r.Labels) == 0 {
		r.Labels = nil
	}
	r.Created = fromMicros(created)
	r.Updated = fromMicros(updated)
	if heartbeat != 0 {
		r.Heartbeat = fromMicros(heartbeat)
	}
	return r, nil
}

// DeleteRun implements store.Store.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	err := s.w.do(ctx, func(t tx) error {
		for _, q := range []string{
			`DELETE FROM entries WHERE run = ?`,
			`DELETE FROM snapshots WHERE run = ?`,
			`DELETE FROM run_labels WHERE run = ?`,
			`DELETE FROM messages WHERE run = ?`,
		} {
			if _, err := t.exec(q, id); err != nil {
				return err
			}
		}
		res, err := t.exec(`DELETE FROM runs WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete run %q: %w", id, err)
	}
	return nil
}

// Run implements store.Store.
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: run %q: %w", id, err)
	}
	return r, nil
}

// UpdateRun implements store.Store.
func (s *Store) UpdateRun(ctx context.Context, id string, u store.Update) error {
	var (
		set  []string
		args []any
	)
	u.Columns(func(col string, v any) {
		if t, ok := v.(time.Time); ok {
			v = toMicros(t) // times are stored as microseconds
		}
		set = append(set, col+" = ?")
		args = append(args, v)
	})
	query := `SELECT 1 FROM runs WHERE id = ?`
	if len(set) > 0 {
		query = `UPDATE runs SET ` + strings.Join(set, ", ") + ` WHERE id = ? RETURNING 1`
	}
	args = append(args, id)
	err := s.w.do(ctx, func(t tx) error {
		var one int
		err := t.queryRow(query, args...).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: update run %q: %w", id, err)
	}
	return nil
}

// ListRuns implements store.Store.
func (s *Store) ListRuns(ctx context.Context, f store.Filter) ([]store.Run, error) {
	var (
		where []string
		args  []any
	)
	if len(f.Status) > 0 {
		var or []string
		for _, st := range f.Status {
			if strings.HasSuffix(st, ":") {
				// A prefix as a range of bytes ("a:" ≤ s < "a;"), which
				// the status index serves.
				or = append(or, "(status >= ? AND status < ?)")
				args = append(args, st, st[:len(st)-1]+";")
			} else {
				or = append(or, "status = ?")
				args = append(args, st)
			}
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if f.Label != "" {
		where = append(where, "id IN (SELECT run FROM run_labels WHERE label = ?)")
		args = append(args, f.Label)
	}
	if f.Parent != "" {
		where = append(where, "parent = ?")
		args = append(args, f.Parent)
	}
	if f.Text != "" {
		// SQLite's lower() folds ASCII letters only, as Filter.Text says.
		where = append(where, "(instr(lower(id), ?) > 0 OR instr(lower(goal), ?) > 0)")
		args = append(args, store.LowerASCII(f.Text), store.LowerASCII(f.Text))
	}
	order, ok := f.Order.OrderBy()
	if !ok {
		return nil, fmt.Errorf("sqlite: list runs: unknown order %q", f.Order)
	}
	cond := ""
	if len(where) > 0 {
		cond = ` WHERE ` + strings.Join(where, " AND ")
	}
	query := `SELECT ` + runColumns + ` FROM runs` + cond + ` ORDER BY ` + order
	if f.Limit > 0 || f.Offset > 0 {
		limit := f.Limit
		if limit <= 0 {
			limit = -1 // SQLite's "no limit", which OFFSET needs beside it
		}
		// A page is chosen on the row numbers alone, then read: sorting
		// whole rows (results and all) by an unindexed column took 0.7 s
		// for 10,000 runs, sorting their numbers takes milliseconds.
		query = `SELECT ` + runColumns + ` FROM runs WHERE n IN (SELECT n FROM runs` + cond + ` ORDER BY ` + order + ` LIMIT ? OFFSET ?) ORDER BY ` + order
		args = append(args, limit, max(f.Offset, 0))
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	return runs, nil
}

// maxRowsPerInsert caps the rows of one multi-row INSERT: few rows make a
// statement that is quick to prepare and is kept prepared (one per row
// count up to this), many rows come in chunks of this size.
const maxRowsPerInsert = 16

// Append implements store.Store. If ctx ends before the write is taken into
// a transaction, nothing is written and ctx's error is returned; once taken,
// Append waits for the commit.
func (s *Store) Append(ctx context.Context, run string, entries []store.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := contiguous(entries); err != nil {
		return fmt.Errorf("sqlite: append to run %q: %w", run, err)
	}
	err := s.w.do(ctx, func(t tx) error {
		// One statement checks that the entries continue the log and
		// moves its end; it matches no row on a conflict or a missing run.
		first, last := entries[0].Seq, entries[len(entries)-1].Seq
		res, err := t.exec(`UPDATE runs SET last_seq = ? WHERE id = ? AND last_seq = ?`, last, run, first-1)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var end int64
			if err := t.queryRow(`SELECT last_seq FROM runs WHERE id = ?`, run).Scan(&end); errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			} else if err != nil {
				return err
			}
			return fmt.Errorf("%w: entries start at %d, the log ends at %d", store.ErrConflict, first, end)
		}
		for rest := entries; len(rest) > 0; {
			chunk := rest[:min(len(rest), maxRowsPerInsert)]
			rest = rest[len(chunk):]
			var q strings.Builder
			q.WriteString(`INSERT INTO entries (run, seq, kind, at, data) VALUES `)
			args := make([]any, 0, 5*len(chunk))
			for i, e := range chunk {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?)")
				args = append(args, run, e.Seq, e.Kind, e.At.UnixMicro(), nonNil(e.Data))
			}
			if _, err := t.exec(q.String(), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append to run %q: %w", run, err)
	}
	return nil
}

// contiguous reports a gap or repeat inside entries.
func contiguous(entries []store.Entry) error {
	for i := 1; i < len(entries); i++ {
		if entries[i].Seq != entries[i-1].Seq+1 {
			return fmt.Errorf("%w: entry %d has seq %d after %d", store.ErrConflict, i, entries[i].Seq, entries[i-1].Seq)
		}
	}
	return nil
}

// Entries implements store.Store.
func (s *Store) Entries(ctx context.Context, run string, after int64) ([]store.Entry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, at, data FROM entries WHERE run = ? AND seq > ? ORDER BY seq`, run, after)
	if err != nil {
		return nil, fmt.Errorf("sqlite: entries of run %q: %w", run, err)
	}
	defer rows.Close()
	var out []store.Entry
	for rows.Next() {
		var (
			e  store.Entry
			at int64
		)
		if err := rows.Scan(&e.Seq, &e.Kind, &at, &e.Data); err != nil {
			return nil, fmt.Errorf("sqlite: entries of run %q: %w", run, err)
		}
		e.At = fromMicros(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: entries of run %q: %w", run, err)
	}
	if len(out) == 0 {
		// Tell an empty log from a missing run.
		if _, err := s.LastSeq(ctx, run); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LastSeq implements store.Store.
func (s *Store) LastSeq(ctx context.Context, run string) (int64, error) {
	var last int64
	err := s.db.QueryRowContext(ctx, `SELECT last_seq FROM runs WHERE id = ?`, run).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: last seq of run %q: %w", run, err)
	}
	return last, nil
}

// SaveSnapshot implements store.Store; it keeps only the run's latest
// snapshot.
func (s *Store) SaveSnapshot(ctx context.Context, run string, snap store.Snapshot) error {
	err := s.w.do(ctx, func(t tx) error {
		var one int
		err := t.queryRow(`SELECT 1 FROM runs WHERE id = ?`, run).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = t.exec(`INSERT INTO snapshots (run, seq, data) VALUES (?, ?, ?)
			ON CONFLICT (run) DO UPDATE SET seq = excluded.seq, data = excluded.data`,
			run, snap.Seq, nonNil(snap.Data))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: save snapshot of run %q: %w", run, err)
	}
	return nil
}

// LatestSnapshot implements store.Store.
func (s *Store) LatestSnapshot(ctx context.Context, run string) (store.Snapshot, error) {
	var snap store.Snapshot
	err := s.db.QueryRowContext(ctx, `SELECT seq, data FROM snapshots WHERE run = ?`, run).Scan(&snap.Seq, &snap.Data)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Snapshot{}, fmt.Errorf("sqlite: latest snapshot of run %q: %w", run, err)
	}
	return snap, nil
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, run string, m store.Message) (int64, error) {
	var id int64
	err := s.w.do(ctx, func(t tx) error {
		var one int
		if err := t.queryRow(`SELECT 1 FROM runs WHERE id = ?`, run).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		} else if err != nil {
			return err
		}
		return t.queryRow(`INSERT INTO messages (run, text, at) VALUES (?, ?, ?) RETURNING id`, run, m.Text, m.At.UnixMicro()).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: enqueue for run %q: %w", run, err)
	}
	return id, nil
}

// Messages implements store.Store.
func (s *Store) Messages(ctx context.Context, run string, after int64) ([]store.Message, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, text, at FROM messages WHERE run = ? AND id > ? ORDER BY id`, run, after)
	if err != nil {
		return nil, fmt.Errorf("sqlite: messages of run %q: %w", run, err)
	}
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		var (
			m  store.Message
			at int64
		)
		if err := rows.Scan(&m.ID, &m.Text, &at); err != nil {
			return nil, fmt.Errorf("sqlite: messages of run %q: %w", run, err)
		}
		m.At = fromMicros(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: messages of run %q: %w", run, err)
	}
	return out, nil
}

// DeleteMessages implements store.Store.
func (s *Store) DeleteMessages(ctx context.Context, run string, through int64) error {
	err := s.w.do(ctx, func(t tx) error {
		_, err := t.exec(`DELETE FROM messages WHERE run = ? AND id <= ?`, run, through)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete messages of run %q: %w", run, err)
	}
	return nil
}

// fromMicros is the inverse of time.Time.UnixMicro, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// toMicros stores a time; the zero time (no heartbeat yet) is 0.
func toMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// nonNil turns nil into an empty value, for NOT NULL columns.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// busy says err is SQLite's SQLITE_BUSY (or one of its extended codes).
