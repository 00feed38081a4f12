package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/store"
)

// TestBatchWithAFailingOp: a batch runs its ops in one transaction
// without savepoints; when one fails, the batch runs again with each op
// isolated, so that the others commit and the failing one leaves nothing.
func TestBatchWithAFailingOp(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "ratchet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateRun(context.Background(), store.Run{ID: "r", Status: store.StatusRunning, Created: time.Now(), Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	label := func(name string, fail bool) *op {
		return &op{ctx: context.Background(), done: make(chan error, 1), fn: func(t tx) error {
			if _, err := t.exec(`INSERT INTO run_labels (label, run) VALUES (?, 'r')`, name); err != nil {
				return err
			}
			if fail {
				return errors.New(name + " failed")
			}
			return nil
		}}
	}
	batch := []*op{label("a", false), label("b", true), label("c", false)}
	s.w.commit(batch)
	for i, want := range []string{"", "b failed", ""} {
		err := <-batch[i].done
		if got := fmtErr(err); got != want {
			t.Errorf("op %d: error %q, want %q", i, got, want)
		}
	}
	rows, err := s.db.Query(`SELECT label FROM run_labels ORDER BY label`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Errorf("labels committed %q, want [a c]", got)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
