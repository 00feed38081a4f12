package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A run directory is its process's while the process holds an exclusive
// flock on the run's ownerFile. The kernel releases the lock when the
// process dies, however it dies (SIGKILL, the OOM killer), so Sweep can
// tell what a dead process left from what a live one uses, with no PID
// that could be reused.
const ownerFile = ".owner"

// owners holds the lock of each run directory this process owns, by
// directory: a workspace kept after Run (Spec.Keep) stays owned until
// Remove.
var owners sync.Map // string → *os.File

// own takes the lock on run for this process.
func own(run string) error {
	f, err := os.OpenFile(filepath.Join(run, ownerFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return err
	}
	owners.Store(run, f)
	return nil
}

// disown releases run's lock, once run is gone.
func disown(run string) {
	if f, ok := owners.LoadAndDelete(run); ok {
		f.(*os.File).Close()
	}
}

// Swept is what Sweep removed: run directories and the bytes they held.
type Swept struct {
	Runs  int
	Bytes int64
}

// Sweep removes what dead processes left of their sandboxes: every run
// directory in the temporary directory whose owner no longer holds its
// lock, its tmpfs detached first (as root, which frees the memory a killed
// command's files held). A directory without the lock file is left: it is
// being made, or was not made by this version. Every Runner sweeps once,
// as the process first prepares a sandbox; `ratchet gc` sweeps too.
func Sweep() (Swept, error) {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return Swept{}, err
	}
	var out Swept
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "ratchet-sandbox-") {
			continue
		}
		run := filepath.Join(tmp, e.Name())
		if _, mine := owners.Load(run); mine {
			continue
		}
		f, err := os.OpenFile(filepath.Join(run, ownerFile), os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue // no lock file, or not ours to open
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil || young(f) {
			f.Close() // its owner is alive, or is between creating the file and locking it
			continue
		}
		size := usage(run)
		err = removeRun(run, os.Geteuid() == 0)
		f.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		out.Runs++
		out.Bytes += size
	}
	return out, errors.Join(errs...)
}

// young reports whether the lock file was made in the last minute: its
// owner may not have locked it yet.
func young(f *os.File) bool {
	fi, err := f.Stat()
	return err != nil || time.Since(fi.ModTime()) < time.Minute
}

// usage is what run's files take, as statfs counts a tmpfs's used blocks
// when run is one, else the sum of its regular files' sizes.
func usage(run string) int64 {
	var st, parent syscall.Statfs_t
	if syscall.Statfs(run, &st) == nil && syscall.Statfs(filepath.Dir(run), &parent) == nil && st.Fsid != parent.Fsid {
		return int64(st.Blocks-st.Bfree) * st.Bsize
	}
	var n int64
	filepath.WalkDir(run, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// sweepOnce sweeps the first time this process prepares a sandbox.
var sweepOnce sync.Once
