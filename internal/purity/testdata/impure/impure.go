// Package impure breaks every rule purity checks, so that its test can fail.
package impure

import (
	"math/rand"
	"os"
	"time"

	"github.com/ratchetloop/ratchet/budget" // on the allow-list
	"github.com/ratchetloop/ratchet/store"  // not: the shell
)

func Bad(m map[string]int, _ store.Run, _ budget.Limits) (int, time.Duration) {
	n := rand.Intn(3) + len(os.Args)
	for k := range m {
		n += len(k)
	}
	ch := make(chan int)
	go func() { ch <- 1 }()
	select {
	case v := <-ch:
		n += v
	}
	start := time.Now()
	return n, time.Since(start) + 2*time.Second
}

// Fine compares times it was given: time's methods read no clock.
func Fine(a, b time.Time) bool { return a.After(b) || a.Before(b.Add(time.Second)) }
