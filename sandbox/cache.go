package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cacheLayer is the directory below Cache.Host that holds the cache's
// content for the sandbox uid: one per uid, since the files a run adds to
// the layer's directories (copied up, they keep their owner) must be its
// own. Host itself is 0700 and, as root, root's: no process of the sandbox
// uid reaches the content on the host, not even under the unsafe backend,
// which sees the host's files.
func cacheLayer(host string, uid int) string {
	return filepath.Join(host, "layer-"+strconv.Itoa(uid))
}

// boundCache is one Cache as a run sees it: src, a directory the backend
// binds (or, unsafe, links) at target.
type boundCache struct {
	src, target string
}

// bindCaches prepares each cache of a run in the run directory and returns
// what the backend mounts; see Spec.Caches. Everything it creates goes
// with the run: as root the mounts are below the run's tmpfs and detached
// with it, otherwise the copies are files of the run directory.
func (w *workspace) bindCaches(caches []Cache) ([]boundCache, error) {
	var out []boundCache
	for i, c := range caches {
		t := filepath.ToSlash(filepath.Clean(c.Target))
		if c.Target == "" || filepath.IsAbs(c.Target) || t == "." || strings.HasPrefix(t, "../") || t == ".." {
			return nil, fmt.Errorf("sandbox: cache target %q must be a path inside the workspace", c.Target)
		}
		if !filepath.IsAbs(c.Host) {
			return nil, fmt.Errorf("sandbox: cache %q must be an absolute host path", c.Host)
		}
		if w.layer != nil {
			// The mount point, made here to be removed after the run.
			if err := w.mkdirAll(t); err != nil {
				return nil, err
			}
		}
		layer, err := w.cacheLayer(c.Host)
		if err != nil {
			return nil, fmt.Errorf("sandbox: cache %s: %w", c.Host, err)
		}
		dir := filepath.Join(w.run, "cache-"+strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o711); err != nil {
			return nil, err
		}
		view := filepath.Join(dir, "view")
		switch {
		case c.Fill && !w.ids.root:
			view = layer // the caller is the sandbox uid and reaches it
		case c.Fill:
			// Host is closed to the sandbox uid (and to bwrap, which runs
			// as it): the layer is bound where the run can reach it.
			err = bindAt(layer, view, syscall.MS_BIND)
		case w.ids.root:
			err = w.overlay(layer, dir, view)
		default:
			// No overlayfs without privilege: a private copy.
			err = copyCache(layer, view)
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: cache %s: %w", c.Host, err)
		}
		out = append(out, boundCache{src: view, target: c.Target})
	}
	return out, nil
}

// cacheLayer creates Host (0700, as root owned by root) and the sandbox uid's
// layer directory in it (owned by that uid, which writes it when filling)
// and returns the layer.
func (w *workspace) cacheLayer(host string) (string, error) {
	if err := os.MkdirAll(host, 0o700); err != nil {
		return "", err
	}
	// A shared temp dir could hold a planted symlink by that name.
	if fi, err := os.Lstat(host); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a plain directory", host)
	}
	if w.ids.root {
		if err := os.Chown(host, 0, 0); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(host, 0o700); err != nil {
		return "", err
	}
	layer := cacheLayer(host, w.ids.uid)
	if err := os.Mkdir(layer, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if fi, err := os.Lstat(layer); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a plain directory", layer)
	}
	return layer, w.own(layer)
}

// overlay mounts, on view, layer as the read-only lower layer of an
// overlayfs whose upper layer is in dir, on the run's tmpfs: the run
// writes there, within Limits.Disk, and never to layer. The host mounts it
// (root, in its own mount namespace), so copy-up happens with root's
// credentials whoever owns the layer's files.
func (w *workspace) overlay(layer, dir, view string) error {
	if strings.ContainsAny(layer, ",:\\") {
		return fmt.Errorf("the path %s cannot be an overlayfs layer (it holds ',', ':' or '\\')", layer)
	}
	upper, work := filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	if err := w.mkdir(upper, 0o755); err != nil { // the root of what the run sees
		return err
	}
	for _, p := range []string{work, view} {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	}
	opts := "lowerdir=" + layer + ",upperdir=" + upper + ",workdir=" + work
	if err := syscall.Mount("overlay", view, "overlay", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("overlayfs on the cache: %w", err)
	}
	return nil
}

func bindAt(src, dst string, flags uintptr) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(src, dst, "", flags, ""); err != nil {
		return fmt.Errorf("binding %s: %w", src, err)
	}
	return nil
}

// copyCache copies the directories, regular files and symlinks of src to
// dst, a new directory.
func copyCache(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, out)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return copyPlain(p, out, fi.Mode().Perm())
		}
		return nil // nothing else belongs in a cache
	})
}

func copyPlain(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
