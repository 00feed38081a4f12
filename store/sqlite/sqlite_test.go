package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/sqlite"
	"github.com/ratchetloop/ratchet/store/storetest"
)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "ratchet.db"))
	})
}

var (
	ctx  = context.Background()
	when = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
)

func newRun(id string) store.Run {
	return store.Run{ID: id, Status: store.StatusRunning, Created: when, Updated: when}
}

// TestReopen checks that what one Store wrote is there for the next, and
// that opening an up-to-date database migrates nothing.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "ratchet.db")
	s := open(t, path)
	if err := s.CreateRun(ctx, newRun("r")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "r", []store.Entry{{Seq: 1, Kind: "k", At: when, Data: []byte("d")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "r", []store.Entry{{Seq: 2, Kind: "k", At: when}}); err == nil {
		t.Errorf("Append after Close = nil, want an error")
	}
	for range 2 {
		s = open(t, path)
		if last, err := s.LastSeq(ctx, "r"); err != nil || last != 1 {
			t.Errorf("after reopening, LastSeq = %d, %v; want 1", last, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, rows int
	if err := db.QueryRow(`SELECT version, (SELECT count(*) FROM schema_version) FROM schema_version`).Scan(&version, &rows); err != nil || version != 5 || rows != 1 {
		t.Errorf("schema_version = %d (%d rows), %v; want version 5 in one row", version, rows, err)
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

// TestNewerSchema checks that a build refuses a database a newer build
// migrated past what it knows.
func TestNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ratchet.db")
	if err := open(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := sqlite.Open(path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema = %v, want an error saying it is newer", err)
		if s != nil {
			s.Close()
		}
	}
}

// TestTwoProcesses has two Stores on one file (as two processes would) race
// to append to the same run: SQLite's lock serializes them and exactly one
// wins each seq.
func TestTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ratchet.db")
	a, b := open(t, path), open(t, path)
	defer a.Close()
	defer b.Close()
	storetest.TwoWriters(t, a, b)
}

func TestConfig(t *testing.T) {
	_, err := sqlite.New(sqlite.Config{BusyTimeout: -1, MaxBatch: -1, Readers: -1})
	if err == nil {
		t.Fatal("New of an invalid config = nil error")
	}
	for _, want := range []string{"Path", "BusyTimeout", "MaxBatch", "Readers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	// A file where the directory should be.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(filepath.Join(dir, "file", "ratchet.db")); err == nil {
		t.Errorf("Open under a file = nil error")
	}
}

func TestDefaultPath(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	tests := []struct {
		db, state, want string
	}{
		{"/x/my.db", "/state", "/x/my.db"},
		{"", "/state", "/state/ratchet/ratchet.db"},
		{"", "", filepath.Join(home, ".local/state/ratchet/ratchet.db")},
	}
	for _, tt := range tests {
		t.Setenv("RATCHET_DB", tt.db)
		t.Setenv("XDG_STATE_HOME", tt.state)
		if got, err := sqlite.DefaultPath(); err != nil || got != tt.want {
			t.Errorf("DefaultPath with RATCHET_DB=%q XDG_STATE_HOME=%q = %q, %v; want %q", tt.db, tt.state, got, err, tt.want)
		}
	}
}

// TestPerf logs the figures (see storetest.CheckPerf):
//
//	RATCHET_PERF=1 go test -run TestPerf -v ./store/sqlite
func TestPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("measures performance")
	}
	path := filepath.Join(t.TempDir(), "ratchet.db")
	t.Run("new file", func(t *testing.T) {
		s := open(t, path)
		defer s.Close()
		storetest.CheckPerf(t, s)
	})
	t.Run("reopened", func(t *testing.T) {
		s := open(t, path)
		defer s.Close()
		storetest.CheckPerf(t, s)
	})
}

// go test -run '^$' -bench . ./store/sqlite
func BenchmarkStep(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "ratchet.db"))
	defer s.Close()
	storetest.BenchmarkStep(b, s)
}

func BenchmarkLoops(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "ratchet.db"))
	defer s.Close()
	storetest.BenchmarkLoops(b, s)
}

// TestPaths checks that file names URI syntax would mangle land where they
// say.
func TestPaths(t *testing.T) {
	for _, name := range []string{"a b/x.db", "ü%20/y.db", "q?x=1#h/z.db", "relative.db"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		if name == "relative.db" {
			t.Chdir(dir)
			path = name
		}
		s := open(t, path)
		if err := s.CreateRun(ctx, newRun("r")); err != nil {
			t.Errorf("%s: CreateRun: %v", name, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: the database is not where it was asked to be: %v", name, err)
		}
	}
}

// TestConcurrentOpenOfANewFile: processes opening one new database file at
// once (ratchet run and a worker, say) all open it. Switching a new file
// to WAL does not wait in the busy handler, so without its retry one round
// in 15 to 50 failed with SQLITE_BUSY (seen in CI: a worker died at start).
func TestConcurrentOpenOfANewFile(t *testing.T) {
	for round := range 50 {
		path := filepath.Join(t.TempDir(), "runs.db")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				s, err := sqlite.Open(path)
				if err != nil {
					errs <- err
					return
				}
				s.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
	}
}
