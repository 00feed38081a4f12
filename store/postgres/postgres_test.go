package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/postgres"
	"github.com/ratchetloop/ratchet/store/storetest"
)

var schemas atomic.Int64

// newSchema returns a schema name no other test uses and drops the schema
// when the test ends.
func newSchema(t testing.TB, dsn string) string {
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), schemas.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// open opens a store in a new schema of the test database.
func open(t testing.TB) *postgres.Store {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	s, err := postgres.New(context.Background(), postgres.Config{DSN: dsn, Schema: newSchema(t, dsn)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

var (
	ctx  = context.Background()
	when = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
)

// TestTwoProcesses has two Stores on one schema (as two processes would)
// race to append to the same run: exactly one wins each seq.
func TestTwoProcesses(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		defer s.Close()
		stores[i] = s
	}
	storetest.TwoWriters(t, stores[0], stores[1])
}

// TestBadAppendInBatch checks that an append the server refuses (a kind
// with a NUL byte is no PostgreSQL text) fails alone, not the appends
// committed with it.
func TestBadAppendInBatch(t *testing.T) {
	s := open(t)
	defer s.Close()
	const runs = 20
	for i := range runs {
		if err := s.CreateRun(ctx, store.Run{ID: fmt.Sprint("r", i), Created: when, Updated: when}); err != nil {
			t.Fatal(err)
		}
	}
	for round := int64(1); round <= 5; round++ {
		var wg sync.WaitGroup
		errs := make([]error, runs)
		for i := range runs {
			e := store.Entry{Seq: round, Kind: "k", At: when}
			if i == 0 {
				// r0's log never moves, so its append is always seq 1.
				e = store.Entry{Seq: 1, Kind: "bad\x00kind", At: when}
			}
			wg.Go(func() {
				errs[i] = s.Append(ctx, fmt.Sprint("r", i), []store.Entry{e})
			})
		}
		wg.Wait()
		if errs[0] == nil || errors.Is(errs[0], store.ErrConflict) {
			t.Errorf("round %d: bad append = %v, want the server's error", round, errs[0])
		}
		for i, err := range errs[1:] {
			if err != nil {
				t.Errorf("round %d: good append r%d = %v", round, i+1, err)
			}
		}
	}
	if last, err := s.LastSeq(ctx, "r0"); err != nil || last != 0 {
		t.Errorf("LastSeq of the bad run = %d, %v; want 0", last, err)
	}
}

func TestConfig(t *testing.T) {
	_, err := postgres.New(ctx, postgres.Config{MaxConns: -1, Writers: -1, MaxBatch: -1})
	if err == nil {
		t.Fatal("New of an invalid config = nil error")
	}
	for _, want := range []string{"DSN", "MaxConns", "Writers", "MaxBatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	const secret = "s3cr3t-pa55"
	_, err = postgres.New(ctx, postgres.Config{DSN: "postgres://u:" + secret + "@host:notaport/db"})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("New of a bad DSN = %v, want an error without the password", err)
	}
}

// TestMigrateConcurrently opens several stores on a new schema at once:
// the advisory lock makes one migrate and the rest find it done.
func TestMigrateConcurrently(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("New: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, `SELECT version FROM `+pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&v); err != nil || v != 4 {
		t.Errorf("schema_version = %d, %v; want 4", v, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "schema_version"}.Sanitize()+` SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("New on a newer schema = %v, want an error saying it is newer", err)
		if s != nil {
			s.Close()
		}
	}
}

// TestPerf logs the figures (see storetest.CheckPerf):
//
//	RATCHET_PERF=1 go test -run TestPerf -v ./store/postgres
func TestPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("measures performance")
	}
	s := open(t)
	defer s.Close()
	storetest.CheckPerf(t, s)
}

// go test -run '^$' -bench . ./store/postgres
func BenchmarkStep(b *testing.B) {
	s := open(b)
	defer s.Close()
	storetest.BenchmarkStep(b, s)
}

func BenchmarkLoops(b *testing.B) {
	s := open(b)
	defer s.Close()
	storetest.BenchmarkLoops(b, s)
}
