package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/store"
)

// TwoWriters has two Stores on one database (as two processes would) create
// the same run, then race to append to it: the second CreateRun must fail
// with ErrExists, and for each seq exactly one Append must win, the other
// failing with ErrConflict.
func TwoWriters(t *testing.T, a, b store.Store) {
	ctx := context.Background()
	when := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if err := a.CreateRun(ctx, store.Run{ID: "r", Created: when, Updated: when}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateRun(ctx, store.Run{ID: "r", Created: when, Updated: when}); !errors.Is(err, store.ErrExists) {
		t.Errorf("second process CreateRun of the same ID = %v, want ErrExists", err)
	}
	const rounds = 50
	var wins [2]int
	stores := []store.Store{a, b}
	for seq := int64(1); seq <= rounds; seq++ {
		var (
			wg   sync.WaitGroup
			errs [2]error
		)
		for i, s := range stores {
			wg.Go(func() {
				errs[i] = s.Append(ctx, "r", []store.Entry{{Seq: seq, Kind: "k", At: when, Data: []byte{byte(i)}}})
			})
		}
		wg.Wait()
		switch {
		case errs[0] == nil && errs[1] == nil:
			t.Fatalf("seq %d: both stores appended", seq)
		case errs[0] == nil && errors.Is(errs[1], store.ErrConflict):
			wins[0]++
		case errs[1] == nil && errors.Is(errs[0], store.ErrConflict):
			wins[1]++
		default:
			t.Fatalf("seq %d: errors %v, want one nil and one ErrConflict", seq, errs)
		}
	}
	for _, s := range stores {
		if last, err := s.LastSeq(ctx, "r"); err != nil || last != rounds {
			t.Errorf("LastSeq = %d, %v; want %d", last, err, rounds)
		}
	}
	t.Logf("wins: %v", wins)
}
