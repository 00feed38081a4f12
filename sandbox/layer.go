package sandbox

import (
	"errors"
	"os"
	"slices"
	"syscall"
)

// bindLayer binds the view of s.Layer at the workspace's path, after
// giving what the host wrote in it to the sandbox uid.
func (w *workspace) bindLayer(s Spec) error {
	l := s.Layer
	switch {
	case len(s.Files) > 0:
		return errors.New("sandbox: a run on a layer takes no Files")
	case s.Keep:
		return errors.New("sandbox: a run on a layer cannot Keep its workspace: it is the layer")
	case !w.ids.root:
		return errors.New("sandbox: a run on a layer needs root")
	case w.unsafe:
		return errors.New("sandbox: a run on a layer needs an isolating backend")
	case l.UID != w.ids.uid || l.GID != w.ids.gid:
		return errors.New("sandbox: the layer maps its owner to another uid than the sandbox's")
	}
	if err := l.Own(); err != nil {
		return err
	}
	if err := os.Mkdir(w.dir, 0o700); err != nil {
		return err
	}
	// Below the run's tmpfs: detached with it.
	if err := syscall.Mount(l.Merged(), w.dir, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	w.layer = l
	return nil
}

// scaffolded records p, just made in the workspace, as a mount point to
// remove after a run on a layer.
func (w *workspace) scaffolded(p string) {
	if w.layer != nil {
		w.scaffold = append(w.scaffold, p)
	}
}

// unscaffold removes from the layer's view the mount points made for the
// run, deepest first: each is only in the upper layer (the view had
// nothing there), so no whiteout is left. A directory the command put
// files in stays, with them.
func (w *workspace) unscaffold() {
	if w.layer == nil {
		return
	}
	for _, p := range slices.Backward(w.scaffold) {
		fi, err := os.Lstat(p)
		if err != nil || (fi.Mode().IsRegular() && fi.Size() > 0) {
			continue
		}
		os.Remove(p) // a directory that is not empty stays
	}
}

// LayerIDs reports the uid and gid a layer must show its owner as (see
// layer.New) for r to run commands on it (Spec.Layer), and false when r
// cannot: it is not root's, it is the unsafe backend, or it is not a
// Runner of this package.
func LayerIDs(r Runner) (uid, gid int, ok bool) {
	rr, isOurs := r.(*runner)
	if !isOurs || !rr.ids.root || rr.b.name() == IsolationUnsafe {
		return 0, 0, false
	}
	return rr.ids.uid, rr.ids.gid, true
}
