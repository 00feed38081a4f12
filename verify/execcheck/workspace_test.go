package execcheck

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCopyTreeHostile: an agent's workspace is copied without following a
// link, opening a device or FIFO, or reading past the size limit, also when
// a file is swapped for a link after it was listed (readRegular).
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
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	// As if each had been a regular file when the walk listed it.
	for _, name := range []string{"zero", "stdin", "secret", "fifo", "up/secret"} {
		type result struct {
			data []byte
			err  error
		}
		got := make(chan result, 1)
		go func() {
			data, err := readRegular(root, name, 1<<20)
			got <- result{data, err}
		}()
		select {
		case r := <-got:
			if r.err == nil || len(r.data) != 0 {
				t.Errorf("%s: read %q, err %v", name, r.data, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: readRegular hangs", name)
		}
	}
	if _, err := readRegular(root, "calc.py", 1); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("over the limit: %v", err)
	}
}
