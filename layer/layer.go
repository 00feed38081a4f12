// Package layer gives a run a writable view of its workspace that copies
// nothing: an overlayfs whose read-only lower layer is the original
// workspace and whose upper layer, kept in the run's directory, receives
// everything the run writes. The upper layer is the run's change set
// (Changes), so the patch is read from it; the original is never written,
// its .git included.
//
// Mounting needs root (CAP_SYS_ADMIN in the host's mount namespace): the
// host's tools and the sandboxed commands must see the same view, and a
// non-root process can mount overlayfs only inside a user namespace of its
// own, which the host's tools do not share. Mount says ErrUnsupported
// then, and callers fall back to a copy of the workspace.
//
// Ownership: the sandboxed command runs as an unprivileged uid (65534 by
// default), not as the workspace's owner. The lower layer is an idmapped,
// read-only mount of the original that shows the owner of the workspace
// root (and its group) as that uid, so the command may change what the
// owner may; files of any other owner keep an unmapped owner and stay
// read-only to it. Files in the upper layer belong to that uid on disk;
// what the host writes as root is given to it by Own before a command
// runs.
//
// Layout of Dir (0700, the caller's):
//
//	upper/   the upper layer: the change set, kept
//	work/    overlayfs's work directory
//	merged/  the mount point of the view (Merged)
//	lower/   where the idmapped original is attached while mounting
package layer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by Mount's error when this process cannot
// mount a layer (not root, or no overlayfs or idmapped mounts here).
var ErrUnsupported = errors.New("layer: a workspace layer needs root and overlayfs with idmapped layers")

// Layer is one run's view of a workspace. It is plain data: a resumed run
// mounts the same Dir again and finds its changes.
type Layer struct {
	// Original is the workspace, the read-only lower layer.
	Original string `json:"original"`
	// Dir holds the upper layer and the mount point.
	Dir string `json:"dir"`
	// UID and GID are the ids the original's owner appears as in the
	// view, and own every file of the upper layer.
	UID int `json:"uid"`
	GID int `json:"gid"`

	// over, for a scratch layer, is the layer whose view is Original: it
	// shows the owner as UID:GID already, so it is the lower layer as is.
	over *Layer
}

// Merged is the directory where the view is mounted.
func (l *Layer) Merged() string { return filepath.Join(l.Dir, "merged") }

// Upper is the upper layer: the files the run created or changed, and a
// whiteout for each it removed.
func (l *Layer) Upper() string { return filepath.Join(l.Dir, "upper") }

// Uppers are the upper layers of the view, topmost first: Upper, and for a
// scratch layer the Uppers of the layer it is over. Everything in the view
// that is not the original's is in one of them.
func (l *Layer) Uppers() []string {
	out := []string{l.Upper()}
	if l.over != nil {
		out = append(out, l.over.Uppers()...)
	}
	return out
}

func (l *Layer) work() string  { return filepath.Join(l.Dir, "work") }
func (l *Layer) lower() string { return filepath.Join(l.Dir, "lower") }

// New makes a layer over original in dir, which must not exist or be
// empty, for a sandbox running as uid and gid (zero: 65534), and mounts it.
func New(original, dir string, uid, gid int) (*Layer, error) {
	original, err := filepath.Abs(original)
	if err != nil {
		return nil, err
	}
	if uid == 0 {
		uid = 65534
	}
	if gid == 0 {
		gid = 65534
	}
	l := &Layer{Original: original, Dir: dir, UID: uid, GID: gid}
	if err := l.prepare(); err != nil {
		return nil, err
	}
	if err := l.Mount(); err != nil {
		return nil, err
	}
	return l, nil
}

// prepare makes Dir's directories, the upper layer's root looking like the
// original's.
func (l *Layer) prepare() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w (running as uid %d)", ErrUnsupported, os.Geteuid())
	}
	fi, err := os.Stat(l.Original)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("layer: %s is not a directory", l.Original)
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return err
	}
	for _, p := range []string{l.work(), l.Merged(), l.lower()} {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	}
	if err := os.Mkdir(l.Upper(), fi.Mode().Perm()); err != nil {
		return err
	}
	if err := os.Chmod(l.Upper(), fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Chown(l.Upper(), l.UID, l.GID)
}

// Scratch mounts in dir, which must not exist or be empty, a throwaway
// layer over l's view as it is now: an agent's exec check judges the
// workspace as the run left it without copying it, and what the check
// writes lands in the scratch layer, which Remove deletes, never in l's
// change set. l's view must stay unchanged while the scratch is mounted
// (overlayfs does not allow a lower layer to change under it).
func (l *Layer) Scratch(dir string) (*Layer, error) {
	s := &Layer{Original: l.Merged(), Dir: dir, UID: l.UID, GID: l.GID, over: l}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if err := s.Mount(); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

// Mount mounts the view at Merged, over the upper layer as it is (a new
// one, or one a run left). Unmount it when the run is over.
func (l *Layer) Mount() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w (running as uid %d)", ErrUnsupported, os.Geteuid())
	}
	for _, p := range []string{l.Original, l.Dir} {
		// overlayfs options are separated by commas, layers by colons.
		if strings.ContainsAny(p, ",:\\") {
			return fmt.Errorf("layer: the path %s cannot be an overlayfs layer (it holds ',', ':' or '\\')", p)
		}
	}
	lower := l.Original
	if l.over == nil {
		fi, err := os.Stat(l.Original)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if err := l.attachLower(int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		// overlayfs keeps a private clone of its layers: the attachment is
		// only needed while mounting, and none is left where a path reaches it.
		defer unix.Unmount(l.lower(), unix.MNT_DETACH)
		lower = l.lower()
	}
	// Renamed directories (redirect_dir) and metadata-only copy-ups
	// (metacopy) would make the upper layer mean more than its files say:
	// off, so that Changes reads it as it is. index and xino are not
	// needed for one mount at a time.
	opts := "lowerdir=" + lower + ",upperdir=" + l.Upper() + ",workdir=" + l.work() +
		",redirect_dir=off,metacopy=off,index=off,xino=off"
	if err := unix.Mount("overlay", l.Merged(), "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("%w: overlayfs: %v", ErrUnsupported, err)
	}
	return nil
}

// attachLower attaches at lower() a read-only, nosuid, nodev mount of the
// original in which its owner uid:gid appears as l.UID:l.GID.
func (l *Layer) attachLower(uid, gid int) error {
	userns, err := idmap(uid, gid, l.UID, l.GID)
	if err != nil {
		return fmt.Errorf("%w: a user namespace for the idmapping: %v", ErrUnsupported, err)
	}
	defer userns.Close()
	fd, err := unix.OpenTree(unix.AT_FDCWD, l.Original, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("%w: open_tree %s: %v", ErrUnsupported, l.Original, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(userns.Fd()),
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("%w: idmapping %s: %v", ErrUnsupported, l.Original, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, l.lower(), unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("%w: attaching %s: %v", ErrUnsupported, l.Original, err)
	}
	return nil
}

// idmap returns a user namespace that maps uid to asUID and gid to asGID:
// through an idmapped mount, a file owned by uid on disk appears as asUID.
// The namespace is made by a short-lived child (cat, waiting on a pipe),
// since a Go process cannot unshare one for itself.
func idmap(uid, gid, asUID, asGID int) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command("cat")
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: asUID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: asGID, Size: 1}},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	w.Close()
	cmd.Wait()
	return ns, err
}

// Unmount detaches the view; the upper layer stays in Dir.
func (l *Layer) Unmount() error {
	if err := unix.Unmount(l.Merged(), unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("layer: unmounting %s: %w", l.Merged(), err)
	}
	return nil
}

// Remove unmounts the view and deletes Dir, the change set with it.
func (l *Layer) Remove() error {
	if err := l.Unmount(); err != nil {
		return err
	}
	return os.RemoveAll(l.Dir)
}

// Own gives every entry of the upper layer that the host wrote (as root,
// through the view) to UID:GID, so that the sandboxed command may change
// it as it may change the original's files. It never follows a link.
// The view is mounted and no command runs. It finds them in the upper
// layer, so it costs the size of the change set, not of the workspace,
// and changes them through the view (overlayfs keeps the attributes of
// what it looked up, and would not see a change made below it).
func (l *Layer) Own() error {
	return filepath.WalkDir(l.Upper(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(l.Upper(), p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) == l.UID && int(st.Gid) == l.GID {
			return nil
		}
		if isWhiteout(fi) {
			return nil // overlayfs's own, root's
		}
		return unix.Lchown(filepath.Join(l.Merged(), rel), l.UID, l.GID)
	})
}

// isWhiteout says whether fi is an overlayfs whiteout: a character device
// 0/0 in the upper layer, which hides the lower layer's entry by that name.
func isWhiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

// opaque says whether the upper layer's directory p hides the lower
// layer's directory by its name entirely (it replaced a removed one).
func opaque(p string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(p, "trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

// Change is a path whose state in the view is the upper layer's, not the
// original's.
type Change struct {
	// Path is slash-separated, relative to the workspace.
	Path string
	// Removed says the view has nothing at Path: the run removed it.
	// Otherwise the upper layer's entry at Path, with everything below it
	// when it is a directory, replaces the original's entry, with
	// everything below that.
	Removed bool
}

// Changes lists what the run changed, from the upper layer alone, sorted
// by path: a whiteout is a removal; a directory that is opaque, or stands
// where the original has none, is a change of its whole tree; any other
// directory is looked into; every other entry is a change. It reads the
// upper layer and the original without following a link, and needs no
// mount, so a run's changes can be read after it ended.
func (l *Layer) Changes() ([]Change, error) {
	lower, err := os.OpenRoot(l.Original)
	if err != nil {
		return nil, err
	}
	defer lower.Close()
	upper, err := os.OpenRoot(l.Upper())
	if err != nil {
		return nil, err
	}
	defer upper.Close()
	var out []Change
	err = fs.WalkDir(upper.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if isWhiteout(fi) {
			out = append(out, Change{Path: rel, Removed: true})
			return nil
		}
		if d.IsDir() {
			// A link on the way in the original makes Lstat fail: a
			// directory of the view is never one the original reaches
			// through a link.
			if was, err := lower.Lstat(rel); err == nil && was.IsDir() && !opaque(filepath.Join(l.Upper(), rel)) {
				return nil
			}
			out = append(out, Change{Path: rel})
			return fs.SkipDir
		}
		out = append(out, Change{Path: rel})
		return nil
	})
	return out, err
}

// Mounted says whether the view is mounted at Merged.
func (l *Layer) Mounted() bool {
	var m, d unix.Stat_t
	return unix.Stat(l.Merged(), &m) == nil && unix.Stat(l.Dir, &d) == nil && m.Dev != d.Dev
}
