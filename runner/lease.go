package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ratchetloop/ratchet/store"
)

// A running run in a Store holds a lease: its row names the process
// carrying it out (Holder, "PID@HOST") and that process renews Heartbeat
// every LeaseInterval. When the process dies without finishing the run
// (SIGKILL, a closed terminal, a crashed machine), the row still says
// running; the lease tells such a run from a live one.
const (
	// LeaseInterval is how often a holder renews its heartbeat.
	LeaseInterval = 5 * time.Second
	// LeaseExpiry is how old a heartbeat may be before the holder counts
	// as gone, on a host where its process cannot be looked up.
	LeaseExpiry = 3 * LeaseInterval
)

// ErrHeld is wrapped by Resume's error when another live process is
// carrying the run out.
var ErrHeld = errors.New("the run is held by another process")

// thisHolder names this process as a lease holder.
var thisHolder = func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return strconv.Itoa(os.Getpid()) + "@" + host
}()

// LeaseState says whether a run's lease is held by a live process at now,
// and in words who holds it. A run nobody holds, or whose holder is gone,
// is not live. On the holder's own host its process is looked up, so a
// killed holder is seen at once; elsewhere a heartbeat older than
// LeaseExpiry means gone.
func LeaseState(r store.Run, now time.Time) (live bool, holder string) {
	if r.Holder == "" {
		return false, "no process"
	}
	pidText, host, _ := strings.Cut(r.Holder, "@")
	pid, _ := strconv.Atoi(pidText)
	ago := now.Sub(r.Heartbeat).Round(time.Second)
	holder = fmt.Sprintf("process %s on %s (heartbeat %s ago)", pidText, host, ago)
	if ago > LeaseExpiry {
		return false, holder
	}
	if _, thisHost, _ := strings.Cut(thisHolder, "@"); host == thisHost && pid > 0 {
		// Signal 0 checks that the process exists without touching it.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return false, holder
		}
	}
	return true, holder
}

// holdLease makes this process the run's holder and renews the heartbeat
// until the returned function is called, which stops renewing and gives
// the lease up (a run that waits for a person or has finished is held by
// nobody). Heartbeats are wall-clock time, not Config.Now: they are read
// against the clock of whoever looks. Renewals that fail are retried at the
// next tick: a store that is down fails the run's own writes, which say so.
func (r *run) holdLease(ctx context.Context) (release func(), err error) {
	if r.cfg.Store == nil {
		return func() {}, nil
	}
	s, id := r.cfg.Store, r.cfg.RunID
	holder := thisHolder
	if err := s.UpdateRun(ctx, id, store.Update{Holder: &holder, Heartbeat: time.Now()}); err != nil {
		return nil, fmt.Errorf("runner: lease: %w", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(LeaseInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				s.UpdateRun(context.WithoutCancel(ctx), id, store.Update{Heartbeat: time.Now()})
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		none := ""
		s.UpdateRun(context.WithoutCancel(ctx), id, store.Update{Holder: &none})
	}, nil
}
