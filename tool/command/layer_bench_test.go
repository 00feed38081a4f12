package command_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
)

// BenchmarkLayerCommand measures the per-call overhead of run_command
// (true) on a layer over generated workspaces of 1 MB, 100 MB and 1 GB,
// the biggest with 50,000 files and a node_modules tree of 5,000 links,
// beside two floors measured in the same run: a bare sandbox run of true
// (sandbox.Runner.Run, no workspace) and bwrap true alone. It reports the
// medians in ms and ratchet's resident memory (VmRSS, VmHWM) after the
// calls; see docs/performance.md:
//
//	flock /tmp/ratchet-sandbox.lock go test ./tool/command -run '^$' -bench BenchmarkLayerCommand -benchtime 30x
func BenchmarkLayerCommand(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bwrap")
	}
	for _, size := range []struct {
		name         string
		files, bytes int
		links        int
	}{
		{"1MB", 100, 10 << 10, 0},
		{"100MB", 10000, 10 << 10, 1000},
		{"1GB", 50000, 20 << 10, 5000},
	} {
		b.Run(size.name, func(b *testing.B) {
			orig := generate(b, size.files, size.bytes, size.links)
			tl, _ := layerTool(b, orig)
			r := sandboxRunner(b)
			ctx := context.Background()
			viaTool := func() time.Duration {
				start := time.Now()
				out := call(b, ctx, tl, cmd{Command: "true"})
				if !strings.Contains(out.Output, "exit status 0") {
					b.Fatalf("run_command: %s", out.Output)
				}
				return time.Since(start)
			}
			bare := func() time.Duration {
				start := time.Now()
				if res, err := r.Run(ctx, sandbox.Spec{Command: []string{"true"}}); err != nil || res.ExitCode != 0 {
					b.Fatalf("bare run: %v %+v", err, res)
				}
				return time.Since(start)
			}
			raw := func() time.Duration {
				start := time.Now()
				if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true").CombinedOutput(); err != nil {
					b.Fatalf("bwrap true: %v: %s", err, out)
				}
				return time.Since(start)
			}
			viaTool() // warm up
			var tools, bares, raws []time.Duration
			b.ResetTimer()
			for b.Loop() {
				tools = append(tools, viaTool())
				b.StopTimer()
				bares = append(bares, bare())
				raws = append(raws, raw())
				b.StartTimer()
			}
			b.ReportMetric(ms(medianOf(tools)), "run_command-ms")
			b.ReportMetric(ms(medianOf(bares)), "sandbox-true-ms")
			b.ReportMetric(ms(medianOf(raws)), "bwrap-true-ms")
			b.ReportMetric(procStatus(b, "VmRSS")/1024, "rss-MiB")
			b.ReportMetric(procStatus(b, "VmHWM")/1024, "hwm-MiB")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// procStatus reads a kB field of /proc/self/status.
func procStatus(b *testing.B, field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// generate writes a workspace of n files of size bytes each, 100 to a
// directory, and a node_modules tree of links packages, each a directory
// with an index.js linked from node_modules/.bin.
func generate(b *testing.B, n, size, links int) string {
	b.Helper()
	dir := b.TempDir()
	data := []byte(strings.Repeat("x", size-1) + "\n")
	for i := range n {
		d := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if links > 0 {
		bin := filepath.Join(dir, "node_modules", ".bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range links {
			pkg := fmt.Sprintf("pkg%04d", i)
			if err := os.MkdirAll(filepath.Join(dir, "node_modules", pkg), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "node_modules", pkg, "index.js"), []byte("module.exports = 1\n"), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.Symlink("../"+pkg+"/index.js", filepath.Join(bin, pkg)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}
