package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/layer"
)

// TestLayerSpec: a run on a layer takes no Files and no Keep, needs a
// runner whose uid the layer maps to, and LayerIDs says which runners can
// run on one (root's isolating backends, not unsafe).
func TestLayerSpec(t *testing.T) {
	r := runnerFor(t, IsolationBwrap)
	uid, gid, ok := LayerIDs(r)
	if ok != (os.Geteuid() == 0) || (ok && (uid != testUID || gid != testUID)) {
		t.Fatalf("LayerIDs = %d, %d, %v as uid %d", uid, gid, ok, os.Geteuid())
	}
	if _, _, ok := LayerIDs(runnerFor(t, IsolationUnsafe)); ok {
		t.Error("the unsafe backend claims it can run on a layer")
	}
	if !ok {
		return
	}
	l, err := layer.New(t.TempDir(), filepath.Join(t.TempDir(), "l"), testUID, testUID)
	if errors.Is(err, layer.ErrUnsupported) {
		need(t, false, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Remove()
	other, err := layer.New(t.TempDir(), filepath.Join(t.TempDir(), "l"), testUID+1, testUID+1)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Remove()
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Layer: l, Files: map[string][]byte{"a": nil}}, "takes no Files"},
		{Spec{Layer: l, Keep: true}, "cannot Keep"},
		{Spec{Layer: other}, "another uid"},
	} {
		c.spec.Command = []string{"true"}
		if _, err := r.Run(context.Background(), c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	if res, err := r.Run(context.Background(), Spec{Layer: l, Command: []string{"sh", "-c", "echo x > made && test -O made"}}); err != nil || res.ExitCode != 0 {
		t.Errorf("a run on the layer: %v %+v", err, res)
	}
	if data, err := os.ReadFile(filepath.Join(l.Upper(), "made")); err != nil || string(data) != "x\n" {
		t.Errorf("the upper layer: %q, %v", data, err)
	}
}
