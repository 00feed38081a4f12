package patch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ratchetloop/ratchet/internal/wsread"
	"github.com/ratchetloop/ratchet/layer"
)

// maxLayerRead bounds what a layer's diff reads of the original and the
// upper layer together: past it the patch is dropped (Take's Problem) and
// the changes stay in the upper layer.
const maxLayerRead = 64 << 20

// BeginLayer starts a run on a layer over original (see package layer):
// nothing is copied; the run works in the layer's view (Start.Copy) and
// its patch is read from the upper layer. uid and gid are the sandbox's
// (zero: 65534). The fingerprint is a stat of every entry of the original
// (path, kind, mode, size, modification time, link target), which reads
// no file. It wraps layer.ErrUnsupported where no layer can be mounted;
// the caller then copies with Begin.
func BeginLayer(ctx context.Context, original string, uid, gid int) (*Start, error) {
	original, err := filepath.Abs(original)
	if err != nil {
		return nil, err
	}
	return beginLayer(original, func(dir string) (*layer.Layer, error) { return layer.New(original, dir, uid, gid) })
}

// BeginFork is BeginLayer for a fork from the point snapshot of the run on
// layer from (layer.Snapshot): the new layer starts as from's was there,
// and its patch holds from's changes up to that point too.
func BeginFork(ctx context.Context, from *layer.Layer, snapshot string, uid, gid int) (*Start, error) {
	return beginLayer(from.Original, func(dir string) (*layer.Layer, error) { return layer.NewFrom(from, snapshot, dir, uid, gid) })
}

func beginLayer(original string, mount func(dir string) (*layer.Layer, error)) (*Start, error) {
	root, err := os.MkdirTemp("", "ratchet-workspace-")
	if err != nil {
		return nil, err
	}
	l, err := mount(filepath.Join(root, "layer"))
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	fp, err := statFingerprint(original)
	if err != nil {
		l.Remove()
		os.RemoveAll(root)
		return nil, err
	}
	return &Start{Original: original, Copy: l.Merged(), Git: isGit(original), Fingerprint: fp, Layer: l}, nil
}

// layerDiff diffs the view of l against its original, reading only what
// the upper layer names (see layer.Changes): the original's entries at
// each changed path against the upper layer's. Directories skipDir names
// are left out, as from a tree diff. For a git workspace (git) the diff
// has git's index lines and leaves out what the original's .gitignore
// files and info/exclude ignore, as git diff would (git check-ignore,
// with a private git directory: nothing of the workspace's configuration
// runs); a .gitignore the run changed does not count.
func layerDiff(ctx context.Context, l *layer.Layer, git bool) (diff, error) {
	changes, err := l.Changes()
	if err != nil {
		return diff{}, err
	}
	lower, err := os.OpenRoot(l.Original)
	if err != nil {
		return diff{}, err
	}
	defer lower.Close()
	upper, err := os.OpenRoot(l.Upper())
	if err != nil {
		return diff{}, err
	}
	defer upper.Close()
	r := &treeReader{left: maxLayerRead}
	var old, cur []entry
	for _, c := range changes {
		if skipped(c.Path) {
			continue
		}
		if old, err = r.subtree(lower, c.Path, old); err != nil {
			return diff{}, err
		}
		if c.Removed {
			continue
		}
		if cur, err = r.subtree(upper, c.Path, cur); err != nil {
			return diff{}, err
		}
	}
	if git {
		if old, cur, err = withoutIgnored(ctx, l.Original, old, cur); err != nil {
			return diff{}, err
		}
	}
	byPath := func(a, b entry) int { return strings.Compare(a.rel, b.rel) }
	slices.SortFunc(old, byPath)
	slices.SortFunc(cur, byPath)
	return entryDiff(old, cur, git), nil
}

// withoutIgnored drops the entries that the git work tree original
// ignores.
func withoutIgnored(ctx context.Context, original string, old, cur []entry) ([]entry, []entry, error) {
	tmp, err := os.MkdirTemp("", "ratchet-ignore-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	g, err := newGit(ctx, tmp, original)
	if err != nil {
		return nil, nil, err
	}
	var paths []string
	for _, e := range slices.Concat(old, cur) {
		paths = append(paths, e.rel)
	}
	ign, err := g.ignored(ctx, original, paths)
	if err != nil {
		return nil, nil, err
	}
	drop := func(e entry) bool { return ign[e.rel] }
	return slices.DeleteFunc(old, drop), slices.DeleteFunc(cur, drop), nil
}

// skipped says whether a directory on rel's way is one skipDir leaves out.
func skipped(rel string) bool {
	return slices.ContainsFunc(strings.Split(rel, "/"), skipDir)
}

// treeReader reads entries of a tree within a byte budget.
type treeReader struct{ left int64 }

// subtree appends the entries at rel below root (rel itself, or all below
// it when it is a directory) to out: files and links, never following a
// link; whiteouts and other special files have no content and are left
// out. Nothing at rel appends nothing.
func (r *treeReader) subtree(root *os.Root, rel string, out []entry) ([]entry, error) {
	fi, err := root.Lstat(filepath.FromSlash(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return out, nil
	case err != nil:
		return out, err
	case !fi.IsDir():
		// Not walked: fs.WalkDir stats (follows) the top of its walk.
		return r.add(root, rel, fi.Mode().Type(), out)
	}
	err = fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != rel && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		out, err = r.add(root, p, d.Type(), out)
		return err
	})
	return out, err
}

// add appends the entry rel of type t to out: a link with its target, a
// regular file with its content; anything else has none and is left out.
func (r *treeReader) add(root *os.Root, rel string, t fs.FileMode, out []entry) ([]entry, error) {
	e := entry{rel: rel}
	switch {
	case t&fs.ModeSymlink != 0:
		target, err := root.Readlink(filepath.FromSlash(rel))
		if err != nil {
			return out, err
		}
		e.mode, e.data = fs.ModeSymlink|0o777, []byte(target)
	case t.IsRegular():
		data, perm, err := wsread.File(root, rel, r.left)
		var tl *wsread.TooLargeError
		switch {
		case errors.Is(err, wsread.ErrNotRegular):
			return out, nil
		case errors.As(err, &tl):
			return out, fmt.Errorf("the changes hold more than %d MiB; they are in %s", maxLayerRead>>20, root.Name())
		case err != nil:
			return out, err
		}
		r.left -= int64(len(data))
		e.mode, e.data = perm, data
	default:
		return out, nil
	}
	return append(out, e), nil
}

// statFingerprint hashes what a stat of every entry of dir says (but what
// skipDir leaves out): path, kind and permissions, size, modification time
// and a link's target. It reads no file, so it costs the same for a
// workspace of a megabyte and of a gigabyte of the same file count.
func statFingerprint(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && skipDir(d.Name()) {
			return fs.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			link, _ = os.Readlink(p)
		}
		fmt.Fprintf(h, "%q %v %d %d %q\n", filepath.ToSlash(rel), fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), link)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "stat:" + hex.EncodeToString(h.Sum(nil)), nil
}
