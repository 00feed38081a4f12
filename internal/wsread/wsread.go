// Package wsread reads a workspace that an agent, or a command it
// started, may be writing: the one bounded, link-refusing reader that the
// exec checks, run_command, the sandbox and the workspace layer's patch
// use. Every file is opened below an os.Root (no path leaves it, whatever
// links lie on the way), with O_NOFOLLOW and O_NONBLOCK (a final link is
// refused, a FIFO never blocks), and read only if fstat says it is a
// regular file, never more than the limit asked for.
package wsread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is returned for a name that is a link, a device, a FIFO,
// a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is returned when a read would pass its limit.
type TooLargeError struct {
	Name  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the workspace holds more than %d MiB", e.Name, e.Limit>>20)
}

// Open opens the regular file name below root for reading, returning it
// with what fstat says of it.
func Open(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	return open(func(flag int) (*os.File, error) { return root.OpenFile(filepath.FromSlash(name), flag, 0) })
}

// OpenPath is Open for a host path p: only its last element is refused
// when it is a link. For paths that only the host can have changed.
func OpenPath(p string) (*os.File, fs.FileInfo, error) {
	return open(func(flag int) (*os.File, error) { return os.OpenFile(p, flag, 0) })
}

func open(openFile func(flag int) (*os.File, error)) (*os.File, fs.FileInfo, error) {
	f, err := openFile(os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, ErrNotRegular
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, ErrNotRegular
	}
	return f, fi, nil
}

// File reads the regular file name below root, refusing more than limit
// bytes (a *TooLargeError), and returns its permissions.
func File(root *os.Root, name string, limit int64) ([]byte, fs.FileMode, error) {
	f, fi, err := Open(root, name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, 0, &TooLargeError{Name: name, Limit: limit}
	}
	// The file may grow after fstat: the read is bounded too.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, err
	}
	if int64(len(data)) > limit {
		return nil, 0, &TooLargeError{Name: name, Limit: limit}
	}
	return data, fi.Mode().Perm(), nil
}

// Files walks each of tops below root (all of it when tops is empty) and
// calls fn with every regular file's slash-separated path, content and
// permissions, refusing more than limit bytes in all. skip, when set,
// leaves out a path (a directory with all below it). Links, devices and
// FIFOs are left out, and so is a file replaced by one after it was
// listed.
func Files(root *os.Root, tops []string, skip func(rel string, d fs.DirEntry) bool, limit int64, fn func(rel string, data []byte, perm fs.FileMode)) error {
	if len(tops) == 0 {
		tops = []string{"."}
	}
	left := limit
	for _, top := range tops {
		err := fs.WalkDir(root.FS(), filepath.ToSlash(filepath.Clean(top)), func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if rel != "." && skip != nil && skip(rel, d) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			data, perm, err := File(root, rel, left)
			var tl *TooLargeError
			switch {
			case errors.Is(err, ErrNotRegular):
				return nil
			case errors.As(err, &tl):
				return &TooLargeError{Name: rel, Limit: limit}
			case err != nil:
				return err
			}
			left -= int64(len(data))
			fn(rel, data, perm)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
