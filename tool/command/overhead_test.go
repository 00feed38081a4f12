package command_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/tool/command"
)

// TestOverhead measures what run_command adds to the sandbox: a call of
// /bin/true, through the executor on a small workspace, against a bare
// sandbox run of /bin/true, alternately, 20 times each. It prints both
// medians and fails when the call adds more than 30 ms:
//
//	go test ./tool/command -run TestOverhead -v -count=1
func TestOverhead(t *testing.T) {
	r := sandboxRunner(t)
	files := map[string]string{"go.mod": "module x\n", "README.md": "# x\n"}
	for _, pkg := range []string{"a", "b", "c"} {
		files[pkg+"/"+pkg+".go"] = "package " + pkg + "\n\nfunc F() int { return 1 }\n"
		files[pkg+"/"+pkg+"_test.go"] = "package " + pkg + "\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) {}\n"
	}
	tl := newTool(t, command.Config{Workspace: workspace(t, files)})
	ctx := context.Background()
	bare := func() time.Duration {
		start := time.Now()
		res, err := r.Run(ctx, sandbox.Spec{Command: []string{"/bin/true"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("bare run: %v %+v", err, res)
		}
		return time.Since(start)
	}
	viaTool := func() time.Duration {
		start := time.Now()
		out := call(t, ctx, tl, cmd{Command: "/bin/true"})
		took := time.Since(start)
		if out.IsError || !strings.Contains(out.Output, "exit status 0") {
			t.Fatalf("run_command: %s", out.Output)
		}
		return took
	}
	bare()
	viaTool() // warm up
	const n = 20
	var b, c []time.Duration
	for range n {
		b = append(b, bare())
		c = append(c, viaTool())
	}
	mb, mc := median(b), median(c)
	t.Logf("median of %d: bare sandbox run of /bin/true %v, run_command of /bin/true %v: %v added", n, mb.Round(10*time.Microsecond), mc.Round(10*time.Microsecond), (mc - mb).Round(10*time.Microsecond))
	if added := mc - mb; added > 30*time.Millisecond {
		t.Errorf("run_command adds %v over a bare sandbox run, more than 30 ms", added)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
