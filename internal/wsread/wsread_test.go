package wsread

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFileHostile: File never follows a link (to a device, to /proc's fd
// 0, to a host secret, through a linked directory), never opens a FIFO and
// never reads past its limit, as if each name had been a regular file when
// a walk listed it.
func TestFileHostile(t *testing.T) {
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
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"zero", "stdin", "secret", "fifo", "up/secret"} {
		type result struct {
			data []byte
			err  error
		}
		got := make(chan result, 1)
		go func() {
			data, _, err := File(root, name, 1<<20)
			got <- result{data, err}
		}()
		select {
		case r := <-got:
			if r.err == nil || len(r.data) != 0 {
				t.Errorf("%s: read %q, err %v", name, r.data, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: File hangs", name)
		}
	}
	var tl *TooLargeError
	if _, _, err := File(root, "calc.py", 1); !errors.As(err, &tl) {
		t.Errorf("over the limit: %v", err)
	}
	data, perm, err := File(root, "calc.py", 2)
	if err != nil || string(data) != "ok" || perm != 0o644 {
		t.Errorf("calc.py: %q %v %v", data, perm, err)
	}
}

// TestFilesLimit: the limit bounds the walk's total, not each file.
func TestFilesLimit(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(dir, n), []byte("12345"), 0o644)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var tl *TooLargeError
	err = Files(root, nil, nil, 12, func(string, []byte, os.FileMode) {})
	if !errors.As(err, &tl) || tl.Name != "c" {
		t.Errorf("15 bytes under a 12-byte limit: %v", err)
	}
	if err := Files(root, nil, nil, 15, func(string, []byte, os.FileMode) {}); err != nil {
		t.Errorf("15 bytes under a 15-byte limit: %v", err)
	}
}
