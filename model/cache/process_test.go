package cache_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/ratchetloop/ratchet/model/cache"
)

// childDir, when set, makes the test binary a second process writing to
// the cache in that directory (TestTwoProcesses).
const childDir = "RATCHET_CACHE_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDir); dir != "" {
		os.Exit(child(dir))
	}
	os.Exit(m.Run())
}

// child answers 200 requests of its own and 200 the parent also answers,
// from 20 goroutines, through its own handle on the file.
func child(dir string) int {
	c, err := cache.Open(cache.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	generate(c, &counting{}, "child")
	if s := c.Stats(); s.Failures > 0 {
		fmt.Fprintf(os.Stderr, "%d failures; the last: %v\n", s.Failures, s.Last)
		return 1
	}
	return 0
}

func generate(c *cache.Cache, inner *counting, who string) {
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := range 10 {
				c.Wrap(inner, "", who).Generate(context.Background(), req(fmt.Sprint(g, "/", i)))
				c.Wrap(inner, "", "shared").Generate(context.Background(), req(fmt.Sprint(g, "/", i)))
			}
		})
	}
	wg.Wait()
}

// Two processes writing one cache file at once both succeed, and what
// each stored answers the other.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), childDir+"="+dir)
	out := make(chan error, 1)
	var stderr []byte
	go func() {
		b, err := cmd.CombinedOutput()
		stderr = b
		out <- err
	}()
	c := open(t, dir, nil)
	generate(c, &counting{}, "parent")
	if err := <-out; err != nil {
		t.Fatalf("the child: %v\n%s", err, stderr)
	}
	if s := c.Stats(); s.Failures > 0 {
		t.Fatalf("%d failures; the last: %v", s.Failures, s.Last)
	}
	inner := &counting{}
	for _, who := range []string{"parent", "child", "shared"} {
		for g := range 20 {
			for i := range 10 {
				if r, _ := c.Wrap(inner, "", who).Generate(context.Background(), req(fmt.Sprint(g, "/", i))); !r.Cached {
					t.Fatalf("%s %d/%d is not in the cache", who, g, i)
				}
			}
		}
	}
	// WAL: readers (lookups) never wait for the writer.
	var ok, mode string
	if err := rawCheck(dir, &ok, &mode); err != nil || ok != "ok" || mode != "wal" {
		t.Errorf("integrity check: %q, journal mode %q, %v", ok, mode, err)
	}
}
