package execcheck

import (
	"io/fs"
	"os"

	"github.com/ratchetloop/ratchet/internal/wsread"
)

// maxWorkspace bounds what is copied from an agent's workspace.
const maxWorkspace = 32 << 20

// copyTree reads dir (or the listed paths in it) into files, skipping .git
// and refusing more than maxWorkspace bytes. The agent could write there,
// and a command it started may still run: it is read with wsread, which
// never follows a link nor opens anything but a regular file.
func copyTree(dir string, only []string, files map[string][]byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	skipGit := func(_ string, d fs.DirEntry) bool { return d.IsDir() && d.Name() == ".git" }
	return wsread.Files(root, only, skipGit, maxWorkspace, func(rel string, data []byte, _ fs.FileMode) {
		files[rel] = data
	})
}
