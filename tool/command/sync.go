package command

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ratchetloop/ratchet/internal/wsread"
	"github.com/ratchetloop/ratchet/sandbox/gocache"
)

const (
	// maxWorkspace bounds what is copied into the sandbox, as for exec
	// checks.
	maxWorkspace = 32 << 20
	// maxCarry and maxCarryFiles bound what is carried back: a command
	// that leaves more has none of its changes applied.
	maxCarry      = 64 << 20
	maxCarryFiles = 20000
)

// state is the workspace as copied into the sandbox.
type state struct {
	files map[string][]byte
	modes map[string]fs.FileMode // each file's permissions on the host
	// dirs are the directories the sandbox's workspace has: those on the
	// way to a copied file (an empty directory is not copied).
	dirs map[string]bool
}

// snapshot reads the regular files of the workspace below root, except
// the reserved paths, refusing more than limit bytes, with wsread: links,
// devices and FIFOs are left out.
func snapshot(root *os.Root, res *reserved, limit int64) (*state, error) {
	st := &state{files: map[string][]byte{}, modes: map[string]fs.FileMode{}, dirs: map[string]bool{}}
	skip := func(rel string, _ fs.DirEntry) bool { return res.covers(rel) }
	err := wsread.Files(root, nil, skip, limit, func(rel string, data []byte, perm fs.FileMode) {
		st.files[rel], st.modes[rel] = data, perm
		for p := path.Dir(rel); p != "."; p = path.Dir(p) {
			st.dirs[p] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// executable names the files executable on the host, which the sandbox
// makes executable too.
func (st *state) executable() map[string]bool {
	out := map[string]bool{}
	for rel, mode := range st.modes {
		if mode&0o111 != 0 {
			out[rel] = true
		}
	}
	return out
}

// sandboxExec reports whether the sandbox made the copied file rel
// executable: when it is on the host, or starts with "#!".
func (st *state) sandboxExec(rel string) bool {
	return st.modes[rel]&0o111 != 0 || strings.HasPrefix(string(st.files[rel]), "#!")
}

// changes are what carryBack did to the workspace.
type changes struct {
	written, removed []string
	// left are paths the command made that are not carried back: links and
	// special files, with what they are.
	left []string
}

// after is the sandbox's workspace once the command ended.
type after struct {
	files map[string]fs.FileMode // regular files, with their permissions
	dirs  map[string]bool
	left  []string
}

// carryBack applies to the workspace below root what the command did in
// the sandbox's workspace sbox: files created or changed are written,
// files and directories removed are removed. It reads sbox only through
// an os.Root, never following a link, and applies nothing when the command
// left more than maxCarry bytes or maxCarryFiles files. It reports every
// path it could not apply.
func carryBack(root *os.Root, sbox string, before *state, res *reserved) (changes, error) {
	var ch changes
	sr, err := os.OpenRoot(sbox)
	if err != nil {
		return ch, fmt.Errorf("the sandbox's workspace cannot be read: %w", err)
	}
	defer sr.Close()
	now, err := survey(sr, res)
	if err != nil {
		return ch, err
	}
	ch.left = now.left
	var errs []error
	fail := func(rel string, err error) {
		errs = append(errs, fmt.Errorf("%s: %v", rel, unwrapPath(err)))
	}
	// Removals first: a file may have become a directory, or the reverse.
	for _, rel := range sortedKeys(before.files) {
		if _, ok := now.files[rel]; ok {
			continue
		}
		if err := root.Remove(filepath.FromSlash(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(rel, err)
			continue
		}
		ch.removed = append(ch.removed, rel)
	}
	gone := sortedKeys(before.dirs)
	slices.Reverse(gone) // deepest first
	for _, rel := range gone {
		if now.dirs[rel] {
			continue
		}
		if err := root.Remove(filepath.FromSlash(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(rel, err)
			continue
		}
		ch.removed = append(ch.removed, rel+"/")
	}
	for _, rel := range sortedKeys(now.dirs) {
		if before.dirs[rel] {
			continue
		}
		if err := root.MkdirAll(filepath.FromSlash(rel), 0o755); err != nil {
			fail(rel, err)
		}
	}
	for _, rel := range sortedKeys(now.files) {
		if err := writeBack(root, sr, rel, now.files[rel], before); err != nil {
			if !errors.Is(err, errUnchanged) {
				fail(rel, err)
			}
			continue
		}
		ch.written = append(ch.written, rel)
	}
	return ch, errors.Join(errs...)
}

var errUnchanged = errors.New("unchanged")

// writeBack writes the sandbox's file rel into the workspace if the command
// created or changed it (its content or its executable bit).
func writeBack(root, sr *os.Root, rel string, mode fs.FileMode, before *state) error {
	data, _, err := wsread.File(sr, rel, maxCarry)
	if err != nil {
		return err
	}
	old, existed := before.files[rel]
	wasExec := existed && before.sandboxExec(rel)
	isExec := mode&0o111 != 0
	if existed && wasExec == isExec && string(old) == string(data) {
		return errUnchanged
	}
	perm := fs.FileMode(0o644)
	if existed {
		perm = before.modes[rel]
	}
	switch {
	case !existed && isExec:
		perm = 0o755
	case wasExec != isExec && isExec:
		perm |= (perm & 0o444) >> 2 // executable by whoever may read it
	case wasExec != isExec:
		perm &^= 0o111
	}
	if err := root.MkdirAll(filepath.FromSlash(path.Dir(rel)), 0o755); err != nil {
		return err
	}
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(filepath.FromSlash(rel), perm)
	}
	return err
}

// survey lists what the sandbox's workspace holds, checking the bounds
// before anything is applied.
func survey(sr *os.Root, res *reserved) (*after, error) {
	now := &after{files: map[string]fs.FileMode{}, dirs: map[string]bool{}}
	var total int64
	count := 0
	err := fs.WalkDir(sr.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == "." {
				return err
			}
			now.left = append(now.left, rel+" (unreadable)")
			return nil
		}
		if rel == "." {
			return nil
		}
		if res.covers(rel) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if count++; count > maxCarryFiles {
			return fmt.Errorf("the command left more than %d files in the workspace; none of its changes were carried back", maxCarryFiles)
		}
		switch t := d.Type(); {
		case t.IsDir():
			now.dirs[rel] = true
		case t.IsRegular():
			fi, err := d.Info()
			if err != nil {
				now.left = append(now.left, rel+" (unreadable)")
				return nil
			}
			if total += fi.Size(); total > maxCarry {
				return fmt.Errorf("the command left more than %d MiB in the workspace; none of its changes were carried back", maxCarry>>20)
			}
			now.files[rel] = fi.Mode().Perm()
		case t&fs.ModeSymlink != 0:
			now.left = append(now.left, rel+" (a symbolic link)")
		default:
			now.left = append(now.left, rel+" (a special file)")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A directory the sandbox made only to hold a mount point is its own.
	for rel := range now.dirs {
		if res.above(rel) && !holdsOwn(rel, now, res) {
			delete(now.dirs, rel)
		}
	}
	return now, nil
}

// holdsOwn reports whether the directory rel holds a file, or a directory
// that is not the parent of a reserved path.
func holdsOwn(rel string, now *after, res *reserved) bool {
	for p := range now.files {
		if strings.HasPrefix(p, rel+"/") {
			return true
		}
	}
	for p := range now.dirs {
		if strings.HasPrefix(p, rel+"/") && !res.above(p) {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// reserved are the workspace paths that are the sandbox's, not the
// workspace's: the test mounts (and the bytecode guards beside mounted
// Python files), the Go build cache and .git. They are neither copied in
// nor carried back.
type reserved struct{ paths map[string]bool }

func newReserved(tests []string) *reserved {
	r := &reserved{paths: map[string]bool{gocache.Target: true, ".git": true}}
	for _, t := range tests {
		r.paths[t] = true
		if strings.HasSuffix(t, ".py") {
			r.paths[path.Join(path.Dir(t), "__pycache__")] = true
		}
	}
	return r
}

// covers reports whether rel is a reserved path or lies below one; any
// directory named .git is reserved.
func (r *reserved) covers(rel string) bool {
	for p := rel; p != "."; p = path.Dir(p) {
		if r.paths[p] || path.Base(p) == ".git" {
			return true
		}
	}
	return false
}

// above reports whether a reserved path lies below the directory rel.
func (r *reserved) above(rel string) bool {
	for p := range r.paths {
		if strings.HasPrefix(p, rel+"/") {
			return true
		}
	}
	return false
}

// localPath reports whether p is a clean, slash-separated relative path
// inside the workspace, other than the workspace itself.
func localPath(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && filepath.IsLocal(p) && !strings.ContainsRune(p, 0)
}
