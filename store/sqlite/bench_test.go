package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/store"
)

// stepEntries are about what a command batch of a step records: three
// entries of a few hundred bytes (a command, its event, a note).
func stepEntries(seq int64) []store.Entry {
	data := []byte(`{"kind":"event","event":{"type":"tool_result","call":"c1","tool":{"output":"3","outcome":"ok"}},"pad":"` + strings.Repeat("x", 200) + `"}`)
	es := make([]store.Entry, 3)
	for i := range es {
		es[i] = store.Entry{Seq: seq + int64(i), Kind: "event", At: when, Data: data}
	}
	return es
}

// BenchmarkDurable is a command batch made durable (one Append of a
// step's entries: one transaction, one commit) against its floor, measured
// in the same run on the same disk: writing the same bytes to a file and
// one fdatasync, which every durable commit needs at least. x-floor is
// the append's time over the floor's, the two taking turns so that both
// see the same disk. runs=16 is sixteen runs of one process
// appending at once: group commit shares one commit among them, so the
// time an append waits stays near one commit's while the commits a second
// (commits/s) stay about what one run gets.
//
//	go test ./store/sqlite -run '^$' -bench BenchmarkDurable -benchtime 400x -count 3
func BenchmarkDurable(b *testing.B) {
	for _, runs := range []int{1, 16} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			dir := b.TempDir()
			s := open(b, filepath.Join(dir, "ratchet.db"))
			defer s.Close()
			f, err := os.OpenFile(filepath.Join(dir, "floor"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			payload := 0
			for _, e := range stepEntries(1) {
				payload += len(e.Data)
			}
			buf := make([]byte, payload)
			seqs := make([]int64, runs)
			for r := range runs {
				if err := s.CreateRun(ctx, newRun(fmt.Sprint("r", r))); err != nil {
					b.Fatal(err)
				}
				seqs[r] = 1
			}
			var floor, appends time.Duration
			for b.Loop() {
				// The floor and the append take turns, so that both see
				// the disk as it is at that moment.
				start := time.Now()
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Fatal(err)
				}
				floor += time.Since(start)
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
			perFloor := floor / time.Duration(b.N)
			perAppend := appends / time.Duration(b.N)
			b.ReportMetric(float64(perFloor.Microseconds()), "floor-µs")
			b.ReportMetric(float64(perAppend.Microseconds()), "append-µs")
			b.ReportMetric(perAppend.Seconds()/perFloor.Seconds(), "x-floor")
		})
	}
}
