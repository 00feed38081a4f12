package postgres_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/store"
)

// BenchmarkDurable is a command batch made durable (one Append of a
// step's entries: one statement, one round trip, one commit) against its
// floors, measured in the same run over the same connection kind, taking
// turns: `SELECT 1` (a round trip) and a one-row INSERT in its own
// transaction (a round trip and a commit's WAL flush, which every durable
// append needs at least). x-commit is the append's time over the commit
// floor's. runs=16 is sixteen runs appending at once, which the writer
// commits together.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkDurable -benchtime 400x -count 3
func BenchmarkDurable(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	for _, runs := range []int{1, 16} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			s := open(b)
			defer s.Close()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			table := "floor_" + strings.ReplaceAll(fmt.Sprint(time.Now().UnixNano()), "-", "")
			if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id bigserial PRIMARY KEY, data bytea)`); err != nil {
				b.Fatal(err)
			}
			defer conn.Exec(ctx, `DROP TABLE `+table)
			payload := make([]byte, 700)
			seqs := make([]int64, runs)
			for r := range runs {
				if err := s.CreateRun(ctx, store.Run{ID: fmt.Sprint("r", r), Status: store.StatusRunning, Created: when, Updated: when}); err != nil {
					b.Fatal(err)
				}
				seqs[r] = 1
			}
			var rt, commit, appends time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
					b.Fatal(err)
				}
				rt += time.Since(start)
				start = time.Now()
				if _, err := conn.Exec(ctx, `INSERT INTO `+table+` (data) VALUES ($1)`, payload); err != nil {
					b.Fatal(err)
				}
				commit += time.Since(start)
				start = time.Now()
				var wg sync.WaitGroup
				for r := range runs {
					wg.Go(func() {
						if err := s.Append(ctx, fmt.Sprint("r", r), stepEntries(seqs[r])); err != nil {
							b.Error(err)
						}
						seqs[r] += 3
					})
				}
				wg.Wait()
				appends += time.Since(start)
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64((rt / n).Microseconds()), "select1-µs")
			b.ReportMetric(float64((commit / n).Microseconds()), "commit-µs")
			b.ReportMetric(float64((appends / n).Microseconds()), "append-µs")
			b.ReportMetric(appends.Seconds()/commit.Seconds(), "x-commit")
			b.ReportMetric(appends.Seconds()/rt.Seconds(), "x-select1")
		})
	}
}

// stepEntries are about what a command batch of a step records: three
// entries of a few hundred bytes.
func stepEntries(seq int64) []store.Entry {
	data := []byte(`{"kind":"event","event":{"type":"tool_result","call":"c1","tool":{"output":"3","outcome":"ok"}},"pad":"` + strings.Repeat("x", 200) + `"}`)
	es := make([]store.Entry, 3)
	for i := range es {
		es[i] = store.Entry{Seq: seq + int64(i), Kind: "event", At: when, Data: data}
	}
	return es
}
