package limit

import (
	"context"
	"crypto/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Renewer keeps the leases of the slots a shared ledger's process holds
// alive: while it holds any, it calls renew every interval. A process
// that dies stops renewing, and the slots it held come back to the others
// when their leases end.
type Renewer struct {
	held  atomic.Int64
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	renew func(context.Context) error
}

// NewRenewer starts renewing every interval; Stop ends it.
func NewRenewer(interval time.Duration, renew func(context.Context) error) *Renewer {
	r := &Renewer{stop: make(chan struct{}), done: make(chan struct{}), renew: renew}
	go r.loop(interval)
	return r
}

func (r *Renewer) loop(interval time.Duration) {
	defer close(r.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if r.held.Load() > 0 {
			// A renewal that fails is tried again at the next tick; the
			// lease is several intervals long.
			_ = r.renew(context.Background())
		}
	}
}

// Hold counts a slot taken; Drop one closed.
func (r *Renewer) Hold() { r.held.Add(1) }

// Drop counts a slot closed.
func (r *Renewer) Drop() { r.held.Add(-1) }

// Stop stops renewing and waits for a renewal under way.
func (r *Renewer) Stop() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// Owner names this process's slots in a shared ledger: PID@HOST, and a
// random part so that two ledgers of one process are told apart.
func Owner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return strconv.Itoa(os.Getpid()) + "@" + host + "/" + rand.Text()[:8]
}
