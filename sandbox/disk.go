package sandbox

import (
	"context"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// diskWatch enforces Limits.Disk where no tmpfs does: on the run directory
// when the caller is not root (a private copy of a cache included), and on
// the caches a Cache.Fill run writes (host directories that persist, so
// only their growth during the run counts). Every interval it
// adds up what they hold and, past the limit, cancels the run, whose tree
// the backend then kills.
type diskWatch struct {
	dirs     []string
	limit    int64
	exceeded atomic.Bool
	done     chan struct{}
}

const diskInterval = 100 * time.Millisecond

// watchDisk starts watching dirs, or returns nil when there is nothing to
// watch. cancel is called when their growth passes limit. What they hold
// at the start is measured at the first tick, not before the command
// starts: a walk of a large cache (a Go build cache holds thousands of
// files) would add its time to every run, most of which end sooner. What
// the command writes before that first walk is not counted: a fast writer
// can overshoot by what it writes in two intervals.
func watchDisk(ctx context.Context, cancel context.CancelFunc, dirs []string, limit int64) *diskWatch {
	if len(dirs) == 0 {
		return nil
	}
	d := &diskWatch{dirs: dirs, limit: limit, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		t := time.NewTicker(diskInterval)
		defer t.Stop()
		base := int64(-1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				used, ok := d.used(ctx)
				switch {
				case !ok:
					return
				case base < 0:
					base = used
				case used-base > d.limit:
					d.exceeded.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	return d
}

// stop ends the watch and reports whether the limit was passed.
func (d *diskWatch) stop() bool {
	if d == nil {
		return false
	}
	<-d.done
	return d.exceeded.Load()
}

// used is the disk space of everything below dirs, by allocated blocks,
// without following links; a walk stops after maxWalk entries. It gives
// up, reporting false, once ctx is done.
func (d *diskWatch) used(ctx context.Context) (int64, bool) {
	var total int64
	n := 0
	for _, dir := range d.dirs {
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if n++; n > maxWalk || ctx.Err() != nil {
				return fs.SkipAll
			}
			var st syscall.Stat_t
			if err == nil && syscall.Lstat(p, &st) == nil {
				total += st.Blocks * 512
			}
			return nil
		})
	}
	return total, ctx.Err() == nil
}
