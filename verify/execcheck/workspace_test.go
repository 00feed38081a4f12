package execcheck

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCopyTreeHostile: an agent's workspace is copied without following a
// link or opening a device or FIFO (the reader itself is tested in
// internal/wsread).
func TestCopyTreeHostile(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600)
	os.WriteFile(filepath.Join(dir, "calc.py"), []byte("ok"), 0o644)
	for name, target := range map[string]string{
		"zero": "/dev/zero", "stdin": "/proc/self/fd/0", "secret": filepath.Join(outside, "secret"), "up": outside,
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	files := map[string][]byte{}
	go func() { done <- copyTree(dir, nil, files) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("copyTree hangs")
	}
	if len(files) != 1 || string(files["calc.py"]) != "ok" {
		t.Errorf("copied %v", files)
	}
}
