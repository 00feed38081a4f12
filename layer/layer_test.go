package layer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ratchetloop/ratchet/internal/testenv"
)

// testUID is the uid the layer maps the original's owner to: none of the
// uids other packages' tests run sandboxes as (their tests count its
// processes).
const testUID = 61997

// newLayer mounts a layer over a fresh original holding files, or ends the
// test with testenv.Missing where none can be mounted.
func newLayer(t *testing.T, files map[string]string) *Layer {
	t.Helper()
	orig := t.TempDir()
	for rel, data := range files {
		p := filepath.Join(orig, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	reachable(t, dir)
	l, err := New(orig, filepath.Join(dir, "layer"), testUID, testUID)
	if errors.Is(err, ErrUnsupported) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unmount() })
	// The sandbox reaches the view through a bind mount; this test's
	// commands through its path.
	os.Chmod(l.Dir, 0o711)
	return l
}

// reachable lets the sandbox uid walk down to dir.
func reachable(t *testing.T, dir string) {
	for p := dir; p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(p, fi.Mode().Perm()|0o011)
		}
	}
}

// asSandbox runs sh -c script in the view as the sandbox uid.
func asSandbox(t *testing.T, l *Layer, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = l.Merged()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testUID, Gid: testUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
}

// TestLayerChanges: the sandbox uid changes the original's files through
// the view (the idmapped lower layer shows them as its own), the original
// stays as it was, and Changes names each path the upper layer holds:
// writes, a removal (whiteout), a removed directory recreated (opaque),
// a chmod, and nothing for a directory only looked into.
func TestLayerChanges(t *testing.T) {
	l := newLayer(t, map[string]string{
		"a.txt": "a\n", "keep.txt": "k\n", "gone.txt": "g\n", "x.sh": "echo\n",
		"d/old.txt": "o\n", "d/also.txt": "o\n", "sub/deep/f.txt": "f\n",
	})
	asSandbox(t, l, `echo more >> a.txt && echo new > new.txt && rm gone.txt && chmod +x x.sh &&
		rm -r d && mkdir d && echo n > d/n.txt && echo s > sub/deep/g.txt && ls sub/deep >/dev/null`)
	got, err := l.Changes()
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{Path: "a.txt"}, {Path: "d"}, {Path: "gone.txt", Removed: true}, {Path: "new.txt"}, {Path: "sub/deep/g.txt"}, {Path: "x.sh"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
	if data, _ := os.ReadFile(filepath.Join(l.Original, "a.txt")); string(data) != "a\n" {
		t.Errorf("the original changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(l.Original, "gone.txt")); err != nil {
		t.Errorf("the original lost gone.txt: %v", err)
	}
	// The changes outlive the mount, and a new mount shows them.
	if err := l.Unmount(); err != nil {
		t.Fatal(err)
	}
	if again, err := l.Changes(); err != nil || !cmp.Equal(again, got) {
		t.Errorf("after unmounting: %v, %v", again, err)
	}
	if err := l.Mount(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(l.Merged(), "a.txt")); string(data) != "a\nmore\n" {
		t.Errorf("remounted view: %q", data)
	}
}

// TestLayerOwn: a file the host (root) wrote through the view is the
// sandbox uid's once Own ran; without Own the sandbox cannot change it.
func TestLayerOwn(t *testing.T) {
	l := newLayer(t, nil)
	if err := os.WriteFile(filepath.Join(l.Merged(), "host.txt"), []byte("h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(l.Merged(), "hostdir"), 0o755)
	if err := l.Own(); err != nil {
		t.Fatal(err)
	}
	asSandbox(t, l, "echo s >> host.txt && echo s > hostdir/s.txt")
}

// TestLayerReadOnlyOriginal: nothing the sandbox uid does reaches the
// original: the lower layer is read-only, and a hard link in the original
// to a file outside it is broken by copy-up instead of written through.
func TestLayerReadOnlyOriginal(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("host\n"), 0o666)
	l := newLayer(t, nil)
	if err := os.Link(outside, filepath.Join(l.Original, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	// The new name is seen by a fresh mount.
	l.Unmount()
	if err := l.Mount(); err != nil {
		t.Fatal(err)
	}
	asSandbox(t, l, "echo agent > hard.txt")
	if data, _ := os.ReadFile(outside); string(data) != "host\n" {
		t.Errorf("the hard link's other name was written: %q", data)
	}
	if m, _ := filepath.Glob(filepath.Join(l.Dir, "lower", "*")); len(m) != 0 {
		t.Errorf("the idmapped original is still attached: %v", m)
	}
}

// TestLayerNotRoot: without root no layer is mounted, and the error says
// ErrUnsupported, on which callers copy the workspace instead. The test
// binary runs itself again as the sandbox uid.
func TestLayerNotRoot(t *testing.T) {
	if os.Getenv("LAYER_TEST_CHILD") == "1" {
		_, err := New(os.Getenv("LAYER_TEST_DIR"), filepath.Join(os.Getenv("LAYER_TEST_DIR"), "l"), 0, 0)
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("as uid %d: %v", os.Geteuid(), err)
		}
		return
	}
	if os.Geteuid() != 0 {
		_, err := New(t.TempDir(), filepath.Join(t.TempDir(), "l"), 0, 0)
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("as uid %d: %v", os.Geteuid(), err)
		}
		return
	}
	dir := t.TempDir()
	reachable(t, dir)
	os.Chown(dir, testUID, testUID)
	exe, _ := os.Executable()
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "layer.test")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestLayerNotRoot$")
	cmd.Env = append(os.Environ(), "LAYER_TEST_CHILD=1", "LAYER_TEST_DIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testUID, Gid: testUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestLayerSnapshot: a layer started from a snapshot (NewFrom) shows the
// workspace as it was when the snapshot was taken, not as it is later:
// removals (whiteouts), a recreated directory (opaque), a link, a mode.
func TestLayerSnapshot(t *testing.T) {
	l := newLayer(t, map[string]string{"a.txt": "a\n", "gone.txt": "g\n", "x.sh": "echo\n", "d/old.txt": "o\n"})
	asSandbox(t, l, `echo more >> a.txt && rm gone.txt && chmod +x x.sh && rm -r d && mkdir d && echo n > d/n.txt && ln -s a.txt link`)
	want, err := l.Changes()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Snapshot("7"); err != nil {
		t.Fatal(err)
	}
	asSandbox(t, l, `echo later > later.txt && echo later >> a.txt`)
	dir := t.TempDir()
	reachable(t, dir)
	f, err := NewFrom(l, "7", filepath.Join(dir, "fork"), testUID, testUID)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Remove()
	got, err := f.Changes()
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("the fork's changes %v (%v), want %v", got, err, want)
	}
	for rel, wantData := range map[string]string{"a.txt": "a\nmore\n", "d/n.txt": "n\n", "link": "a\nmore\n"} {
		if data, err := os.ReadFile(filepath.Join(f.Merged(), rel)); string(data) != wantData {
			t.Errorf("%s in the fork: %q, %v", rel, data, err)
		}
	}
	for _, rel := range []string{"gone.txt", "d/old.txt", "later.txt"} {
		if _, err := os.Lstat(filepath.Join(f.Merged(), rel)); err == nil {
			t.Errorf("%s is in the fork's view", rel)
		}
	}
	if fi, err := os.Stat(filepath.Join(f.Merged(), "x.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("x.sh in the fork: %v, %v", fi, err)
	}
	// The fork's commands may change what it got from the snapshot.
	os.Chmod(f.Dir, 0o711)
	asSandbox(t, f, "echo f >> a.txt")
}

// TestLayerScratch: a scratch layer shows the run's view as it is (its
// writes and removals over the original), the sandbox uid may change it,
// and what it writes reaches neither the run's view nor its change set;
// Remove leaves nothing mounted.
func TestLayerScratch(t *testing.T) {
	l := newLayer(t, map[string]string{"a.txt": "a\n", "gone.txt": "g\n"})
	asSandbox(t, l, `echo run >> a.txt && rm gone.txt && echo new > new.txt`)
	before, err := l.Changes()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "scratch")
	s, err := l.Scratch(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.Dir, 0o711)
	for rel, want := range map[string]string{"a.txt": "a\nrun\n", "new.txt": "new\n"} {
		if data, err := os.ReadFile(filepath.Join(s.Merged(), rel)); string(data) != want {
			t.Errorf("scratch %s = %q, %v; want %q", rel, data, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.Merged(), "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the scratch shows a file the run removed: %v", err)
	}
	asSandbox(t, s, `echo check >> a.txt && rm new.txt && mkdir cache && echo c > cache/c`)
	if data, _ := os.ReadFile(filepath.Join(l.Merged(), "a.txt")); string(data) != "a\nrun\n" {
		t.Errorf("the check's write reached the run's view: %q", data)
	}
	if _, err := os.Stat(filepath.Join(l.Merged(), "new.txt")); err != nil {
		t.Errorf("the check's removal reached the run's view: %v", err)
	}
	if after, err := l.Changes(); err != nil || !cmp.Equal(after, before) {
		t.Errorf("the run's change set moved: %v, %v; was %v", after, err, before)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if s.Mounted() {
		t.Error("the scratch is still mounted")
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left %s: %v", dir, err)
	}
}
