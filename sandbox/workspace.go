package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/ratchetloop/ratchet/internal/wsread"
	"github.com/ratchetloop/ratchet/layer"
)

// workspace is the host side of one run:
//
//	run/           0711, owned by the caller; as root, a tmpfs of
//	               Limits.Disk bytes, so that nothing the sandbox writes
//	               reaches the host's disk or outgrows the limit
//	run/ws/        the workspace, owned by the sandbox uid
//	run/home/      HOME: empty, owned by the sandbox uid
//	run/report-R/  the report directory (Spec.Report), R random
//	run/ro/N       staged, root-owned read-only copy of Mounts[N]
//	run/ro/empty   an empty directory mounted over __pycache__ guards
//	run/root/      mount point of the new root (namespaces backend)
type workspace struct {
	run, dir, staging string
	// view is the workspace's path inside the sandbox: View under bwrap
	// and namespaces, dir itself under unsafe (no mount namespace).
	view string
	home string
	// reportDir is the report directory, or "" without Spec.Report;
	// reportPath is the file in it that the command is told to write.
	reportDir, reportPath string
	// tmpfs is set when run is a mount point of its own.
	tmpfs  bool
	ids    ids
	unsafe bool // mounts are copied into dir, not bind-mounted
	mounts []*staged
	// guards are paths the candidate must leave alone: the mount points
	// of the staged copies, and an empty, read-only __pycache__ next to
	// every mounted Python file (so no bytecode can be planted for it).
	guards []guard
	// notes are problems found while preparing (a planted __pycache__).
	notes []string
	// layer is Spec.Layer, bound at dir; scaffold are the mount points
	// made in its view for the run, parents first, removed after it.
	layer    *layer.Layer
	scaffold []string
}

// staged is one Mount, copied and hashed.
type staged struct {
	target string // slash-separated, relative to the workspace
	source string
	copy   string // the staged copy (or, unsafe, the copy in the workspace)
	isDir  bool
	// sums maps each path below the mount ("." for a file mount) to its
	// digest, see digest.
	sums map[string]string
}

// guard is a path in the workspace whose inode must not change.
type guard struct {
	rel     string
	ino     uint64
	isDir   bool
	pycache bool // must also stay empty
}

// prepare builds the workspace for s.
func prepare(s Spec, id ids, unsafe bool, disk int64) (_ *workspace, err error) {
	files, mounts, err := validate(s)
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { Sweep() }) // best effort: what it cannot remove stays for gc
	run, err := os.MkdirTemp("", "ratchet-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	w := &workspace{run: run, dir: filepath.Join(run, "ws"), staging: filepath.Join(run, "ro"), home: filepath.Join(run, "home"), ids: id, unsafe: unsafe}
	w.view = View
	if unsafe {
		w.view = w.dir
	}
	defer func() {
		if err != nil {
			w.remove()
		}
	}()
	if id.root {
		// Everything of the run lives on this tmpfs: a candidate that
		// fills its workspace gets ENOSPC at the limit, and the host's
		// disk is never touched.
		opts := fmt.Sprintf("mode=0711,size=%d", disk)
		if err := syscall.Mount("tmpfs", run, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return nil, fmt.Errorf("sandbox: workspace tmpfs: %w", err)
		}
		w.tmpfs = true
	}
	if err := os.Chmod(run, 0o711); err != nil {
		return nil, err
	}
	if err := own(run); err != nil {
		return nil, fmt.Errorf("sandbox: workspace owner lock: %w", err)
	}
	if s.Layer != nil {
		err = w.bindLayer(s)
	} else {
		err = w.mkdir(w.dir, 0o700)
	}
	if err != nil {
		return nil, err
	}
	if err := w.mkdir(w.home, 0o700); err != nil {
		return nil, err
	}
	if s.Report {
		w.reportDir = filepath.Join(run, "report-"+rand.Text())
		w.reportPath = filepath.Join(w.reportDir, "report")
		if err := w.mkdir(w.reportDir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(w.staging, 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(w.staging, "empty"), 0o555); err != nil {
		return nil, err
	}
	if err := w.writeFiles(files, s); err != nil {
		return nil, err
	}
	pyDirs := map[string]bool{}
	for i, m := range mounts {
		st := &staged{target: m.Target, source: m.Source}
		if err := w.mkdirAll(path.Dir(m.Target)); err != nil {
			return nil, err
		}
		st.copy = filepath.Join(w.staging, strconv.Itoa(i))
		if unsafe {
			st.copy = w.abs(m.Target)
		}
		if st.sums, st.isDir, err = copyTree(m.Source, st.copy); err != nil {
			return nil, fmt.Errorf("sandbox: mount %s: %w", m.Source, err)
		}
		// A file the layer has at the target is mounted over, never
		// truncated to make a mount point.
		_, lerr := os.Lstat(w.abs(m.Target))
		if !unsafe && (w.layer == nil || lerr != nil) {
			// The mount point: an empty file or directory.
			if st.isDir {
				err = w.mkdir(w.abs(m.Target), 0o755)
			} else {
				err = w.writeFile(m.Target, nil, false)
			}
			if err != nil {
				return nil, err
			}
		}
		if err := w.addGuard(m.Target, st.isDir, false); err != nil {
			return nil, err
		}
		if !st.isDir && strings.HasSuffix(m.Target, ".py") {
			pyDirs[path.Dir(m.Target)] = true
		}
		w.mounts = append(w.mounts, st)
	}
	for _, d := range sortedKeys(pyDirs) {
		rel := path.Join(d, "__pycache__")
		if _, err := os.Lstat(w.abs(rel)); err == nil {
			// Only Spec.Files can have put it there.
			w.notes = append(w.notes, rel+": bytecode cache supplied next to mounted tests (removed)")
			if err := os.RemoveAll(w.abs(rel)); err != nil {
				return nil, err
			}
		}
		// Owned by root when we are root: the candidate cannot fill it
		// even where it is not mounted over (unsafe backend).
		if err := os.Mkdir(w.abs(rel), 0o555); err != nil {
			return nil, err
		}
		w.scaffolded(w.abs(rel))
		if err := w.addGuard(rel, true, true); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// writeFiles writes the candidate files names of s.
func (w *workspace) writeFiles(names []string, s Spec) error {
	for _, name := range names {
		if err := w.writeFile(name, s.Files[name], s.Executable[name]); err != nil {
			return err
		}
	}
	return nil
}

// validate checks the paths of s and returns the file names and the mounts
// with cleaned targets, sorted.
func validate(s Spec) ([]string, []Mount, error) {
	var files []string
	for name := range s.Files {
		if !localPath(name) {
			return nil, nil, fmt.Errorf("sandbox: file %q: not a clean relative path", name)
		}
		files = append(files, name)
	}
	sort.Strings(files)
	mounts := append([]Mount(nil), s.Mounts...)
	for i, m := range mounts {
		if !localPath(m.Target) {
			return nil, nil, fmt.Errorf("sandbox: mount target %q: not a clean relative path", m.Target)
		}
		if m.Source == "" {
			return nil, nil, fmt.Errorf("sandbox: mount target %q: empty source", m.Target)
		}
		src, err := filepath.Abs(m.Source)
		if err != nil {
			return nil, nil, err
		}
		mounts[i].Source = src
	}
	overlap := func(a, b string) bool { return a == b || strings.HasPrefix(b, a+"/") || strings.HasPrefix(a, b+"/") }
	for i, m := range mounts {
		for _, f := range files {
			if overlap(m.Target, f) {
				return nil, nil, fmt.Errorf("sandbox: file %q overlaps mount target %q", f, m.Target)
			}
		}
		for _, o := range mounts[:i] {
			if overlap(m.Target, o.Target) {
				return nil, nil, fmt.Errorf("sandbox: mount targets %q and %q overlap", o.Target, m.Target)
			}
		}
	}
	return files, mounts, nil
}

// localPath reports whether p is a clean, slash-separated relative path
// inside the workspace, other than the workspace itself.
func localPath(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && filepath.IsLocal(p) && !strings.ContainsRune(p, 0)
}

func (w *workspace) abs(rel string) string { return filepath.Join(w.dir, filepath.FromSlash(rel)) }

// inside is the path of the workspace file rel as the sandbox sees it.
func (w *workspace) inside(rel string) string {
	return filepath.Join(w.view, filepath.FromSlash(rel))
}

// own gives p to the sandbox uid, if we can.
func (w *workspace) own(p string) error {
	if !w.ids.root {
		return nil
	}
	return os.Lchown(p, w.ids.uid, w.ids.gid)
}

func (w *workspace) mkdir(p string, mode os.FileMode) error {
	if err := os.Mkdir(p, mode); err != nil {
		return err
	}
	w.scaffolded(p)
	if err := os.Chmod(p, mode); err != nil { // past the umask
		return err
	}
	return w.own(p)
}

// mkdirAll creates the workspace directory rel and its parents.
func (w *workspace) mkdirAll(rel string) error {
	if rel == "." {
		return nil
	}
	if err := w.mkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	p := w.abs(rel)
	fi, err := os.Lstat(p)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("sandbox: %s: not a directory", rel)
		}
		return nil
	}
	return w.mkdir(p, 0o755)
}

// writeFile writes a candidate file; one starting with "#!" is executable,
// and so is one marked exec.
func (w *workspace) writeFile(rel string, data []byte, exec bool) error {
	if err := w.mkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if exec || strings.HasPrefix(string(data), "#!") {
		mode = 0o755
	}
	p := w.abs(rel)
	if err := os.WriteFile(p, data, mode); err != nil {
		return fmt.Errorf("sandbox: file %s: %w", rel, err)
	}
	w.scaffolded(p)
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	return w.own(p)
}

func (w *workspace) addGuard(rel string, isDir, pycache bool) error {
	fi, err := os.Lstat(w.abs(rel))
	if err != nil {
		return err
	}
	w.guards = append(w.guards, guard{rel: rel, ino: inode(fi), isDir: isDir, pycache: pycache})
	return nil
}

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// remove deletes everything of the run. It never follows symlinks the
// candidate left.
func (w *workspace) remove() {
	if w.run != "" {
		removeRun(w.run, w.ids.root)
	}
}

// removeRun deletes the run directory run: its tmpfs, when it is one, is
// detached, which frees it at once.
func removeRun(run string, root bool) error {
	defer disown(run)
	if root {
		syscall.Unmount(run, syscall.MNT_DETACH) // EINVAL when it is no mount point
	} else {
		writable(run)
	}
	return os.RemoveAll(run)
}

// Remove deletes a workspace that Spec.Keep left behind, with everything
// else of its run.
func Remove(workspace string) error {
	run := filepath.Dir(workspace)
	if !strings.HasPrefix(filepath.Base(run), "ratchet-sandbox-") || filepath.Base(workspace) != "ws" {
		return fmt.Errorf("sandbox: %s is not a sandbox workspace", workspace)
	}
	return removeRun(run, os.Geteuid() == 0)
}

// removeStaging deletes all but the workspace (Spec.Keep).
func (w *workspace) removeStaging() {
	if !w.ids.root {
		writable(w.staging)
	}
	os.RemoveAll(w.staging)
	os.RemoveAll(filepath.Join(w.run, "root"))
}

// writable makes the read-only directories of the staged copies removable
// for a caller that is not root.
func writable(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

// copyTree copies src (a file, a directory tree, symlinks as symlinks) to
// dst, root-owned and read-only, and returns the digests of what it copied.
// __pycache__ directories are left out.
func copyTree(src, dst string) (map[string]string, bool, error) {
	sums := map[string]string{}
	root, err := os.Stat(src) // the mount itself may be given through a symlink
	if err != nil {
		return nil, false, err
	}
	if !root.IsDir() {
		sum, err := copyFile(src, dst, root.Mode())
		if err != nil {
			return nil, false, err
		}
		sums["."] = sum
		return sums, false, nil
	}
	var dirs []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
			if d.Name() == "__pycache__" && p != src {
				return fs.SkipDir
			}
			dirs = append(dirs, out)
			sums[filepath.ToSlash(rel)] = "dir"
			return os.Mkdir(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			sums[filepath.ToSlash(rel)] = "symlink:" + link
			return os.Symlink(link, out)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			sum, err := copyFile(p, out, fi.Mode())
			sums[filepath.ToSlash(rel)] = sum
			return err
		default:
			return fmt.Errorf("%s: not a regular file, directory or symlink", p)
		}
	})
	if err != nil {
		return nil, true, err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return nil, true, err
		}
	}
	return sums, true, nil
}

// copyFile copies a regular file to a new read-only file and returns its
// digest.
func copyFile(src, dst string, mode fs.FileMode) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	perm := fs.FileMode(0o444)
	if mode&0o111 != 0 {
		perm = 0o555
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst, perm)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), err
}

// digest describes what is at p now, without following symlinks or
// blocking on FIFOs: "sha256:..." for a regular file, "dir",
// "symlink:target", "special", or "" when it does not exist.
func digest(p string) string {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return "error: " + err.Error()
	case fi.IsDir():
		return "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		link, _ := os.Readlink(p)
		return "symlink:" + link
	case !fi.Mode().IsRegular():
		return "special"
	}
	f, _, err := wsread.OpenPath(p)
	if err != nil {
		return "error: " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxDigest+1))
	switch {
	case err != nil:
		return "error: " + err.Error()
	case n > maxDigest:
		return "error: larger than " + strconv.Itoa(maxDigest>>20) + " MiB"
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// full reports whether the run's tmpfs has (next to) no room left.
func (w *workspace) full() bool {
	var st syscall.Statfs_t
	if !w.tmpfs || syscall.Statfs(w.run, &st) != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < 64<<10
}

// maxDigest bounds how much of one file is hashed.
const maxDigest = 256 << 20

// MaxReport is the largest report file (Spec.Report) that is read.
const MaxReport = 32 << 20

// readReport reads the report the command wrote. The directory is opened
// without following a link, the file in it with openat and O_NOFOLLOW, and
// only a regular file with one link, of at most MaxReport bytes, is read:
// never a device, a FIFO, a link to a host file or an endless stream.
// problem says why nothing was read.
func (w *workspace) readReport() (data []byte, problem string) {
	dir, err := syscall.Open(w.reportDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "the report directory was replaced (" + err.Error() + ")"
	}
	defer syscall.Close(dir)
	name := filepath.Base(w.reportPath)
	fd, err := syscall.Openat(dir, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return nil, "not written"
	case errors.Is(err, syscall.ELOOP):
		return nil, "a symbolic link, not a file the test runner wrote (not followed)"
	case err != nil:
		return nil, "unreadable: " + err.Error()
	}
	f := os.NewFile(uintptr(fd), w.reportPath)
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, "unreadable: " + err.Error()
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, "not a regular file (not read)"
	case st.Nlink != 1:
		return nil, "a hard link to another file (not read)"
	case st.Size > MaxReport:
		return nil, fmt.Sprintf("%d bytes, larger than the %d MiB limit (not read)", st.Size, MaxReport>>20)
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxReport+1))
	switch {
	case err != nil:
		return nil, "unreadable: " + err.Error()
	case len(data) > MaxReport:
		return nil, fmt.Sprintf("larger than the %d MiB limit (not read)", MaxReport>>20)
	}
	return data, ""
}

// treeDigests returns the digests of everything below root, keyed like
// staged.sums; root itself is "." when it is a file.
func treeDigests(root string) map[string]string {
	got := map[string]string{}
	fi, err := os.Lstat(root)
	if err != nil {
		return got
	}
	if !fi.IsDir() {
		got["."] = digest(root)
		return got
	}
	n := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if n++; n > maxWalk {
			return fs.SkipAll
		}
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d != nil && d.IsDir() && d.Name() == "__pycache__" && rel != "." {
			return fs.SkipDir
		}
		got[rel] = digest(p)
		return nil
	})
	return got
}

// maxWalk bounds how many entries are inspected after a run.
const maxWalk = 200000

// check returns the Tampered list after the run; created are the names
// the watcher saw created in the watched directories.
func (w *workspace) check(r *shadowRules, created map[string]bool) []string {
	out := append([]string(nil), w.notes...)
	for _, g := range w.guards {
		fi, err := os.Lstat(w.abs(g.rel))
		switch {
		case err != nil:
			out = append(out, g.rel+": missing (removed or renamed away)")
			continue
		case inode(fi) != g.ino || fi.IsDir() != g.isDir:
			out = append(out, g.rel+": replaced (no longer the mounted file; a parent directory was renamed or it was recreated)")
			continue
		}
		if g.pycache {
			if ents, _ := os.ReadDir(w.abs(g.rel)); len(ents) > 0 {
				out = append(out, g.rel+": bytecode planted next to mounted tests")
			}
		}
	}
	for _, m := range w.mounts {
		out = append(out, compareSums(m.target, m.sums, treeDigests(m.copy), "")...)
		src := treeDigests(m.source)
		out = append(out, compareSums(m.target, m.sums, src, " at its source "+m.source)...)
	}
	return append(out, w.shadows(r, created)...)
}

// compareSums names the differences between the digests want and got of
// the mount at target.
func compareSums(target string, want, got map[string]string, where string) []string {
	var out []string
	name := func(rel string) string {
		if rel == "." {
			return target
		}
		return target + "/" + rel
	}
	for _, rel := range sortedKeys(want) {
		switch g := got[rel]; {
		case g == "":
			out = append(out, name(rel)+": deleted"+where)
		case g != want[rel]:
			out = append(out, name(rel)+": modified"+where)
		}
	}
	for _, rel := range sortedKeys(got) {
		if _, ok := want[rel]; !ok {
			out = append(out, name(rel)+": added"+where)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
