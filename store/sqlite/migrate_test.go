package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMigrateFromVersion1: a database made before leases existed opens,
// and its runs come back with no holder.
func TestMigrateFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		migrations[0],
		`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO schema_version (version) VALUES (1)`,
		`INSERT INTO runs (id, parent, goal, labels, status, question, steps, cost_micros, created, updated)
			VALUES ('old', '', 'g', '[]', 'running', '', 0, 0, 1, 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Run(context.Background(), "old")
	if err != nil || r.Holder != "" || !r.Heartbeat.IsZero() || r.Status != "running" {
		t.Fatalf("old run after migration = %+v, %v; want it running with no holder", r, err)
	}
}
