package limit_test

import (
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/model/limit"
	"github.com/ratchetloop/ratchet/model/limit/limittest"
)

func TestMemoryConformance(t *testing.T) {
	limittest.Run(t, limittest.Kit{Open: func(t *testing.T, n int) []limit.Ledger {
		l := limit.Memory(time.Now)
		ls := make([]limit.Ledger, n)
		for i := range ls {
			ls[i] = l
		}
		return ls
	}})
}

// go test -run '^$' -bench SharedLimiter ./model/limit ./store/sqlite ./store/postgres
func BenchmarkSharedLimiter(b *testing.B) { limittest.Bench(b, limit.Memory(time.Now)) }
