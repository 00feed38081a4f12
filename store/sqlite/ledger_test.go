package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/limit/limittest"
	"github.com/ratchetloop/ratchet/store/sqlite"
)

const lease = 300 * time.Millisecond

// Each ledger is a store of its own on one file, as each process opens
// it.
func TestLedgerConformance(t *testing.T) {
	limittest.Run(t, limittest.Kit{
		Open: func(t *testing.T, n int) []limit.Ledger {
			path := filepath.Join(t.TempDir(), "ratchet.db")
			ls := make([]limit.Ledger, n)
			for i := range ls {
				s := open(t, path)
				t.Cleanup(func() { s.Close() })
				l, err := s.NewLedger(sqlite.LedgerConfig{Lease: lease, Poll: 10 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(l.Stop)
				ls[i] = l
			}
			return ls
		},
		Abandon: func(l limit.Ledger) { l.(*sqlite.Ledger).Stop() },
		Lease:   lease,
	})
}

// go test -run '^$' -bench SharedLimiter ./model/limit ./store/sqlite ./store/postgres
func BenchmarkSharedLimiter(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "ratchet.db"))
	defer s.Close()
	l, err := s.Ledger()
	if err != nil {
		b.Fatal(err)
	}
	limittest.Bench(b, l)
}
