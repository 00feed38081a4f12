package execcheck

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxWorkspace bounds what is copied from an agent's workspace.
const maxWorkspace = 32 << 20

// copyTree reads dir (or the listed paths in it) into files, skipping .git
// and refusing more than maxWorkspace bytes. The agent could write there,
// and a command it started may still run: every file is opened below an
// os.Root of dir (no path leaves it, whatever links lie on the way), with
// O_NOFOLLOW and O_NONBLOCK, and read only if fstat says it is a regular
// file, at most as much as is left of the limit. Links, devices and FIFOs
// are skipped.
func copyTree(dir string, only []string, files map[string][]byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	roots := only
	if len(roots) == 0 {
		roots = []string{"."}
	}
	left := int64(maxWorkspace)
	for _, top := range roots {
		err := fs.WalkDir(root.FS(), filepath.ToSlash(filepath.Clean(top)), func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return fs.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			data, err := readRegular(root, rel, left)
			if errors.Is(err, errNotRegular) {
				return nil // replaced since it was listed
			}
			if err != nil {
				return err
			}
			left -= int64(len(data))
			files[rel] = data
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")

// readRegular reads the regular file rel below root, refusing more than
// limit bytes.
func readRegular(root *os.Root, rel string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errNotRegular
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the workspace is larger than %d MiB", maxWorkspace>>20)
	}
	return data, nil
}
