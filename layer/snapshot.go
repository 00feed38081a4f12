package layer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ratchetloop/ratchet/internal/wsread"
	"golang.org/x/sys/unix"
)

// maxSnapshot bounds one snapshot: a larger change set is not kept (a
// fork from that point then starts from the original).
const maxSnapshot = 256 << 20

// Snapshot keeps the upper layer as it is now under Dir/steps/name, for a
// layer started from it later (NewFrom): a fork from the point name
// stands for. It copies the change set, not the workspace: files with
// their content, modes and owner, links, directories with their opaque
// mark, whiteouts. An existing snapshot of that name is kept. Take it
// while no command and no tool writes.
func (l *Layer) Snapshot(name string) error {
	if !filepath.IsLocal(name) || filepath.Base(name) != name {
		return fmt.Errorf("layer: snapshot name %q", name)
	}
	dst := l.snapshot(name)
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+name+"-")
	if err != nil {
		return err
	}
	if err := copyUpper(l.Upper(), filepath.Join(tmp, "upper"), maxSnapshot); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return os.Rename(filepath.Join(tmp, "upper"), dst)
}

func (l *Layer) snapshot(name string) string { return filepath.Join(l.Dir, "steps", name) }

// HasSnapshot says whether Snapshot kept name.
func (l *Layer) HasSnapshot(name string) bool {
	fi, err := os.Lstat(l.snapshot(name))
	return err == nil && fi.IsDir()
}

// NewFrom is New, with the upper layer started from from's snapshot name:
// the view is the original as from's run had changed it at that point.
func NewFrom(from *Layer, name, dir string, uid, gid int) (*Layer, error) {
	if !from.HasSnapshot(name) {
		return nil, fmt.Errorf("layer: %s keeps no snapshot %s", from.Dir, name)
	}
	l, err := New(from.Original, dir, uid, gid)
	if err != nil {
		return nil, err
	}
	if err := l.Unmount(); err != nil {
		return nil, err
	}
	// The new upper layer is empty: its root takes the snapshot's.
	if err := os.Remove(l.Upper()); err != nil {
		return nil, err
	}
	if err := copyUpper(from.snapshot(name), l.Upper(), maxSnapshot); err != nil {
		l.Remove()
		return nil, err
	}
	if err := l.Mount(); err != nil {
		l.Remove()
		return nil, err
	}
	return l, nil
}

// copyUpper copies the upper layer src to dst, a new directory, within
// limit bytes of file content. It never follows a link: entries are
// lstat'ed, links read, files opened below an os.Root with wsread.
func copyUpper(src, dst string, limit int64) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	left := limit
	return fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := root.Lstat(rel)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		out := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			if err := os.Mkdir(out, fi.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(out, fi.Mode().Perm()); err != nil {
				return err
			}
			if opaque(filepath.Join(src, rel)) {
				if err := unix.Lsetxattr(out, "trusted.overlay.opaque", []byte("y"), 0); err != nil {
					return err
				}
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, out); err != nil {
				return err
			}
		case isWhiteout(fi):
			if err := unix.Mknod(out, unix.S_IFCHR, 0); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyRegular(root, rel, out, &left); err != nil {
				return err
			}
		default:
			return nil // FIFOs, sockets: nothing a change set needs
		}
		return unix.Lchown(out, int(st.Uid), int(st.Gid))
	})
}

func copyRegular(root *os.Root, rel, out string, left *int64) error {
	f, fi, err := wsread.Open(root, rel)
	if errors.Is(err, wsread.ErrNotRegular) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi.Size() > *left {
		return &wsread.TooLargeError{Name: rel, Limit: maxSnapshot}
	}
	w, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	n, err := io.Copy(w, io.LimitReader(f, *left+1))
	*left -= n
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && *left < 0 {
		err = &wsread.TooLargeError{Name: rel, Limit: maxSnapshot}
	}
	if err == nil {
		err = os.Chmod(out, fi.Mode().Perm())
	}
	return err
}
