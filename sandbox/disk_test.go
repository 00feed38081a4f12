package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchDisk: what no tmpfs bounds (a cache, a non-root run) is polled,
// and only its growth during the run counts against the limit.
func TestWatchDisk(t *testing.T) {
	dir := t.TempDir()
	before := make([]byte, 4<<20)
	if err := os.WriteFile(filepath.Join(dir, "before"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := watchDisk(ctx, cancel, []string{dir}, 1<<20)
	time.Sleep(3 * diskInterval)
	if ctx.Err() != nil {
		t.Fatal("cancelled for what was there before the run")
	}
	if err := os.WriteFile(filepath.Join(dir, "grown"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("growth past the limit not noticed")
	}
	if !d.stop() {
		t.Error("stop does not report the limit passed")
	}
	if watchDisk(ctx, cancel, nil, 1) != nil {
		t.Error("a watch with nothing to watch")
	}
}
