package command_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ratchetloop/ratchet/patch"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool/command"
)

// TestLayerLinksOut: links in the original and links the command makes
// that point out of the workspace are never followed by the host: the
// patch names a new link with its target, never the content behind it,
// and a host file behind a link in the original is not written.
func TestLayerLinksOut(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	os.WriteFile(secret, []byte("HOST-SECRET\n"), 0o666)
	os.Chmod(secretDir, 0o777)
	orig := workspace(t, map[string]string{"a.txt": "a\n"})
	os.Symlink(secret, filepath.Join(orig, "out"))
	os.Symlink(secretDir, filepath.Join(orig, "outdir"))
	tl, s := layerTool(t, orig)
	out := call(t, context.Background(), tl, cmd{Command: "echo agent > out; echo agent > outdir/secret.txt; ln -s " + secret + " leak; ln -s " + secretDir + " leakdir; echo done"})
	if !strings.Contains(out.Output, "done") {
		t.Fatalf("output:\n%s", out.Output)
	}
	if data, _ := os.ReadFile(secret); string(data) != "HOST-SECRET\n" {
		t.Errorf("the host file behind a link was written: %q", data)
	}
	p := patch.Take(context.Background(), *s)
	if strings.Contains(p.Diff, "HOST-SECRET") || !strings.Contains(p.Diff, "b/leak") {
		t.Errorf("patch:\n%s\n%+v\noutput:\n%s", p.Diff, p, out.Output)
	}
}

// TestLayerDevices: a device node in the original (a hostile checkout
// unpacked as root) cannot be opened through the view, by the command or
// the host: the overlay is mounted nodev (and so is the sandbox's bind).
func TestLayerDevices(t *testing.T) {
	orig := workspace(t, map[string]string{"a.txt": "a\n"})
	// /dev/zero's numbers, 1:5.
	if err := syscall.Mknod(filepath.Join(orig, "zero"), syscall.S_IFCHR|0o666, 1<<8|5); err != nil {
		t.Fatal(err)
	}
	tl, s := layerTool(t, orig)
	out := call(t, context.Background(), tl, cmd{Command: "head -c 4 zero | od -An -tx1; echo status $?"})
	if strings.Contains(out.Output, "00 00 00 00") {
		t.Errorf("the device was read through the view:\n%s", out.Output)
	}
	if f, err := os.Open(filepath.Join(s.Copy, "zero")); err == nil {
		f.Close()
		t.Errorf("the host opened the device through the view")
	}
}

// TestLayerOriginalWhiteouts: whiteouts planted in the original (a 0:0
// character device, what overlayfs writes for a removal) hide their name
// in the view, and the patch, read from the upper layer only, names no
// removal the run did not make.
func TestLayerOriginalWhiteouts(t *testing.T) {
	orig := workspace(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	if err := syscall.Mknod(filepath.Join(orig, "ghost"), syscall.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	tl, s := layerTool(t, orig)
	out := call(t, context.Background(), tl, cmd{Command: "ls -A; cat a.txt"})
	if strings.Contains(out.Output, "ghost") || !strings.Contains(out.Output, "d\na") {
		t.Errorf("output:\n%s", out.Output)
	}
	if p := patch.Take(context.Background(), *s); p.Diff != "" || len(p.Files) != 0 || p.Problem != "" {
		t.Errorf("a run that changed nothing has a patch: %+v", p)
	}
}

// TestLayerControlNames: a file whose name holds a newline, a tab and a
// control character reaches the patch quoted, and the patch applies to the
// original with that exact name.
func TestLayerControlNames(t *testing.T) {
	orig := workspace(t, map[string]string{"a.txt": "a\n"})
	tl, s := layerTool(t, orig)
	name := "we\nird\tna\x01me.txt"
	out := call(t, context.Background(), tl, cmd{Command: `printf 'x\n' > "$(printf 'we\nird\tna\001me.txt')"; echo status $?`})
	if !strings.Contains(out.Output, "status 0") {
		t.Fatalf("output:\n%s", out.Output)
	}
	p := patch.Take(context.Background(), *s)
	if !strings.Contains(p.Diff, `"b/we\nird\tna\001me.txt"`) {
		t.Errorf("the name is not quoted:\n%q", p.Diff)
	}
	if err := patch.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(orig, name)); err != nil || string(data) != "x\n" {
		t.Errorf("applied: %q, %v", data, err)
	}
}

// TestLayerDiskCap: a command that writes past Limits.Disk into the
// layer is killed and told so; its writes stop near the cap (the upper
// layer is polled, so a fast writer overshoots by what it writes in two
// polls, and RLIMIT_FSIZE caps each file).
func TestLayerDiskCap(t *testing.T) {
	orig := workspace(t, map[string]string{"a.txt": "a\n"})
	r := sandboxRunner(t)
	s, err := patch.BeginLayer(context.Background(), orig, testUID, testUID)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { s.End(false) })
	tl := newTool(t, command.Config{Runner: r, Workspace: s.Copy, Layer: s.Layer, Limits: sandbox.Limits{Disk: 8 << 20, FileSize: 4 << 20}})
	out := call(t, context.Background(), tl, cmd{Command: "i=0; while true; do i=$((i+1)); head -c 4M /dev/zero > f$i || true; sleep 0.01; done", Timeout: 60})
	if !strings.Contains(out.Output, "disk limit") {
		t.Errorf("output:\n%s", out.Output)
	}
	var used int64
	filepath.WalkDir(s.Layer.Upper(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				used += fi.Size()
			}
		}
		return nil
	})
	if used > 64<<20 {
		t.Errorf("the layer grew to %d MiB under an 8 MiB cap", used>>20)
	}
}

// TestLayerShadows: on a layer, the tamper warning judges what the run
// wrote (the upper layer), not the user's own files: the original's
// conftest.py is no warning, removing it (a whiteout) is none either, and
// a conftest.py the command writes is one.
func TestLayerShadows(t *testing.T) {
	orig := workspace(t, map[string]string{"conftest.py": "# the user's\n", "calc.py": "x = 1\n"})
	testDir := t.TempDir()
	os.WriteFile(filepath.Join(testDir, "test_calc.py"), []byte("def test(): pass\n"), 0o644)
	tl, _ := layerTool(t, orig, sandbox.Mount{Source: filepath.Join(testDir, "test_calc.py"), Target: "test_calc.py"})
	ctx := context.Background()
	for _, c := range []struct {
		line string
		warn bool
	}{{"true", false}, {"rm conftest.py", false}, {"mkdir -p sub && echo > sub/conftest.py", true}} {
		out := call(t, ctx, tl, cmd{Command: c.line})
		if got := strings.Contains(out.Output, "warning: the exec checks would judge"); got != c.warn {
			t.Errorf("%s: warning %v, want %v:\n%s", c.line, got, c.warn, out.Output)
		}
	}
}
