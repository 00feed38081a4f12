package sandbox

import (
	"encoding/binary"
	"os"
	"path"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// watcher records, with inotify, every name created in (or moved into)
// the directories that pytest searches, while the candidate runs: a
// conftest.py or a fake module that the candidate creates and removes again
// before it exits is reported all the same. Inotify sees the sandbox's
// writes because they go to the same inodes through the bind mount.
type watcher struct {
	f    *os.File
	dirs map[int32]string // watch descriptor -> directory, relative
	done chan struct{}

	mu       sync.Mutex
	created  map[string]bool // relative path -> is a directory
	lost     bool            // the event queue overflowed
	sentinel string          // see stopWatch
	synced   chan struct{}
}

// watch starts watching the directories rel of w; it returns nil when
// inotify is unavailable (then only what is left after the run is seen).
func (w *workspace) watch(rels []string) *watcher {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	wt := &watcher{
		f:       os.NewFile(uintptr(fd), "inotify"), // non-blocking: reads go through the poller
		dirs:    map[int32]string{},
		done:    make(chan struct{}),
		created: map[string]bool{},
	}
	for _, rel := range rels {
		wd, err := syscall.InotifyAddWatch(fd, w.abs(rel), syscall.IN_CREATE|syscall.IN_MOVED_TO|syscall.IN_ONLYDIR|syscall.IN_DONT_FOLLOW)
		if err == nil {
			wt.dirs[int32(wd)] = rel
		}
	}
	go wt.loop()
	return wt
}

func (wt *watcher) loop() {
	defer close(wt.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := wt.f.Read(buf)
		if err != nil {
			return
		}
		wt.mu.Lock()
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := buf[off+syscall.SizeofInotifyEvent : min(n, off+syscall.SizeofInotifyEvent+nameLen)]
			off += syscall.SizeofInotifyEvent + nameLen
			if mask&syscall.IN_Q_OVERFLOW != 0 {
				wt.lost = true
				continue
			}
			dir, ok := wt.dirs[wd]
			if !ok {
				continue
			}
			for i, c := range name { // NUL-padded
				if c == 0 {
					name = name[:i]
					break
				}
			}
			rel := path.Join(dir, string(name))
			if rel == wt.sentinel && wt.synced != nil {
				close(wt.synced)
				wt.synced = nil
				continue
			}
			wt.created[rel] = mask&syscall.IN_ISDIR != 0
		}
		wt.mu.Unlock()
	}
}

// stopWatch ends wt once every event of the run has been read: inotify
// queues events in order, so it creates a sentinel file in the workspace
// root and waits until the watcher has seen it.
func (w *workspace) stopWatch(wt *watcher) (map[string]bool, bool) {
	if wt == nil {
		return nil, false
	}
	synced := make(chan struct{})
	wt.mu.Lock()
	wt.sentinel = ".sandbox-sync-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	wt.synced = synced
	wt.mu.Unlock()
	p := w.abs(wt.sentinel)
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
		os.Remove(p)
		select {
		case <-synced:
		case <-time.After(2 * time.Second):
		}
	}
	wt.f.Close()
	<-wt.done
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.created, wt.lost
}
