package postgres_test

import (
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/limit/limittest"
	"github.com/ratchetloop/ratchet/store/postgres"
)

const lease = 300 * time.Millisecond

// Each ledger is a store of its own on one schema, as each machine
// connects.
func TestLedgerConformance(t *testing.T) {
	limittest.Run(t, limittest.Kit{
		Open: func(t *testing.T, n int) []limit.Ledger {
			dsn := testenv.PostgresDSN(t)
			schema := newSchema(t, dsn)
			ls := make([]limit.Ledger, n)
			for i := range ls {
				s, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				l, err := s.NewLedger(postgres.LedgerConfig{Lease: lease, Poll: 10 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(l.Stop)
				ls[i] = l
			}
			return ls
		},
		Abandon: func(l limit.Ledger) { l.(*postgres.Ledger).Stop() },
		Lease:   lease,
	})
}

// go test -run '^$' -bench SharedLimiter ./model/limit ./store/sqlite ./store/postgres
func BenchmarkSharedLimiter(b *testing.B) {
	s := open(b)
	defer s.Close()
	l, err := s.Ledger()
	if err != nil {
		b.Fatal(err)
	}
	limittest.Bench(b, l)
}
