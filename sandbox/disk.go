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
// when the caller is not root, and on the caches (host directories that
// persist, so only their growth during the run counts). Every interval it
// adds up what they hold and, past the limit, cancels the run, whose tree
// the backend then kills. A fast writer can overshoot by what it writes in
// one interval.
type diskWatch struct {
	dirs     []string
	base     int64 // what dirs held at the start
	limit    int64
	exceeded atomic.Bool
	done     chan struct{}
}

const diskInterval = 100 * time.Millisecond

// watchDisk starts watching dirs, or returns nil when there is nothing to
// watch. cancel is called when their growth passes limit.
func watchDisk(ctx context.Context, cancel context.CancelFunc, dirs []string, limit int64) *diskWatch {
	if len(dirs) == 0 {
		return nil
	}
	d := &diskWatch{dirs: dirs, limit: limit, done: make(chan struct{})}
	d.base = d.used()
	go func() {
		defer close(d.done)
		t := time.NewTicker(diskInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if d.used()-d.base > d.limit {
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
// without following links; a walk stops after maxWalk entries.
func (d *diskWatch) used() int64 {
	var total int64
	n := 0
	for _, dir := range d.dirs {
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if n++; n > maxWalk {
				return fs.SkipAll
			}
			var st syscall.Stat_t
			if err == nil && syscall.Lstat(p, &st) == nil {
				total += st.Blocks * 512
			}
			return nil
		})
	}
	return total
}
