package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
)

// renderHTML writes a comparison and a summary report of synthetic runs.
func renderHTML(t *testing.T, dir string) (compare, summary string) {
	t.Helper()
	base := append(synth(60, 54, 1, 1000), fixture()...)
	cand := append(synth(60, 30, 3, 3000), fixture()...)
	var b bytes.Buffer
	if err := HTMLCompare(&b, Compare("base", base, "cand", cand, CompareOptions{})); err != nil {
		t.Fatal(err)
	}
	compare = filepath.Join(dir, "compare.html")
	if err := os.WriteFile(compare, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := HTMLSummary(&b, Summarize("base", base)); err != nil {
		t.Fatal(err)
	}
	summary = filepath.Join(dir, "summary.html")
	if err := os.WriteFile(summary, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return compare, summary
}

// TestHTMLSelfContained checks the reports reference nothing outside
// themselves and that html/template rejected no value.
func TestHTMLSelfContained(t *testing.T) {
	compare, summary := renderHTML(t, t.TempDir())
	for _, path := range []string{compare, summary} {
		data, _ := os.ReadFile(path)
		s := string(data)
		for _, bad := range []string{"http://", "https://", "<script src", "<link", "@import", "url(", "ZgotmplZ"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", filepath.Base(path), bad)
			}
		}
	}
}

func chromium(t *testing.T) string {
	t.Helper()
	const bin = "/usr/bin/chromium"
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, fmt.Sprintf("chromium: %v (apt-get install chromium; ./test.sh installs it)", err))
	}
	return bin
}

// headless runs chromium on file with extra flags and returns stdout. It
// may run on another goroutine than the test's, so it returns its error.
func headless(bin, profile, file string, extra ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile,
	}, extra...)
	args = append(args, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// TestHTMLInChromium renders the comparison report in headless Chromium:
// the DOM after rendering holds every chart with its marks, and a
// screenshot shows more than a blank page.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	compare, summary := renderHTML(t, dir)
	shot := filepath.Join(dir, "shot.png")

	// The renderings run at once: each spends most of its ~10 s waiting on
	// timeouts, not working.
	type out struct {
		dom []byte
		err error
	}
	cmpDOM, sumDOM := make(chan out), make(chan out)
	p1, p2, p3 := t.TempDir(), t.TempDir(), t.TempDir()
	go func() {
		dom, err := headless(bin, p1, compare, "--dump-dom")
		cmpDOM <- out{dom, err}
	}()
	go func() {
		dom, err := headless(bin, p3, summary, "--dump-dom")
		sumDOM <- out{dom, err}
	}()
	_, shotErr := headless(bin, p2, compare, "--screenshot="+shot, "--window-size=1200,1600")
	got, gotSum := <-cmpDOM, <-sumDOM
	if err := errors.Join(got.err, gotSum.err, shotErr); err != nil {
		t.Fatal(err)
	}
	dom := string(got.dom)
	// The summary has the same charts but the deltas, and its tables.
	for _, want := range []string{`<svg id="chart-iterations"`, `<svg id="chart-reliability"`, `<svg id="chart-exhaustion"`, "<h2>Per case</h2>", "<td>success rate</td>"} {
		if !strings.Contains(string(gotSum.dom), want) {
			t.Errorf("rendered summary lacks %s", want)
		}
	}

	for _, id := range []string{"chart-deltas", "chart-iterations", "chart-reliability", "chart-exhaustion"} {
		if !regexp.MustCompile(`<svg id="` + id + `"[^>]*class="chart"`).MatchString(dom) {
			t.Errorf("rendered DOM lacks the svg #%s", id)
		}
	}
	for mark, min := range map[string]int{
		`<rect class="bar"`:                4, // iteration bars and exhaustion bars
		`<circle class="calpoint"`:         2,
		`<circle class="delta regression"`: 1,
		`<line class="diagonal"`:           1,
	} {
		if n := strings.Count(dom, mark); n < min {
			t.Errorf("rendered DOM has %d %s, want at least %d", n, mark, min)
		}
	}
	for _, bad := range []string{"ZgotmplZ", "template:", "<nil>", "NaN", "%!"} {
		if strings.Contains(dom, bad) {
			t.Errorf("rendered DOM contains %q", bad)
		}
	}
	if !strings.Contains(dom, "▼ regression") {
		t.Error("rendered DOM lacks the regression flag")
	}

	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if n := colours(img); n < 8 {
		t.Errorf("screenshot has %d distinct colours: blank?", n)
	}
	if !hasColour(img, 0x44, 0x77, 0xaa) || !hasColour(img, 0xee, 0x77, 0x33) {
		t.Error("screenshot lacks a series colour: charts not drawn?")
	}
}

func colours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}

func hasColour(img image.Image, r, g, b uint32) bool {
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr>>8 == r && cg>>8 == g && cb>>8 == b {
				return true
			}
		}
	}
	return false
}

func TestSummaryShowsAskedOnlyWhenAsked(t *testing.T) {
	has := func(m Metrics, name string) bool {
		for _, r := range MetricsRows(m) {
			if r[0] == name {
				return true
			}
		}
		return false
	}
	if has(Metrics{Runs: 2}, "asked a person") {
		t.Error("a suite where nobody was asked shows an asked row")
	}
	m := Metrics{Runs: 2, Asked: NewRate(1, 2), ResolvedAfterAnswer: NewRate(1, 1)}
	if !has(m, "asked a person") || !has(m, "resolved after an answer") {
		t.Errorf("asked and resolved rows missing: %v", MetricsRows(m))
	}
}

// TestAxisTicks: an axis's labels say the values its lines are at.
func TestAxisTicks(t *testing.T) {
	for _, tc := range []struct {
		top  float64
		want []string
	}{
		{0.05, []string{"0%", "1%", "2%", "3%", "4%", "5%"}},
		{0.1, []string{"0%", "2.5%", "5%", "7.5%", "10%"}},
		{0.02, []string{"0%", "0.5%", "1%", "1.5%", "2%"}},
		{1, []string{"0%", "25%", "50%", "75%", "100%"}},
	} {
		n := ticksFor(tc.top)
		var got []string
		for i := 0; i <= n; i++ {
			got = append(got, pctLabel(tc.top*float64(i)/float64(n)))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("top %g: %v, want %v", tc.top, got, tc.want)
		}
	}
}

// TestLegends: a legend shows a long series name whole, below the plot and
// inside the chart, and a calibration series after the first is hollow and
// dashed, so one that agrees with the first does not hide it.
func TestLegends(t *testing.T) {
	names := []string{"examples-baseline-long-label-name", "examples-candidate-long-label-name"}
	colors := []string{"#111", "#222"}
	cal := Calibration{N: 2, Brier: 0.1, Bins: []CalBin{{N: 1, Confidence: 0.5, Accuracy: 0.5}, {N: 1, Confidence: 0.9, Accuracy: 1}}}
	rel := string(reliabilityChart(names, colors, []Calibration{cal, cal}).SVG)
	for _, n := range names {
		if !strings.Contains(rel, ">"+n+": Brier 0.1000 (n=2)<") {
			t.Errorf("reliability legend lacks %q", n)
		}
	}
	if strings.Count(rel, `fill="none" stroke="#222" stroke-width="2"`) != 2 || !strings.Contains(rel, `stroke="#222" stroke-dasharray`) {
		t.Errorf("the second series is not hollow and dashed:\n%s", rel)
	}
	it := string(iterChart([]series{{Name: names[0], Color: colors[0]}, {Name: names[1], Color: colors[1]}}, []Dist{newDist([]int{1, 2}), newDist([]int{1})}).SVG)
	for _, n := range names {
		if !strings.Contains(it, ">"+n+"<") {
			t.Errorf("iterations legend lacks %q", n)
		}
	}
	var h int
	fmt.Sscanf(it[strings.Index(it, `height="`)+len(`height="`):], "%d", &h)
	if y := strings.LastIndex(it, `class="legend" x="`); y < 0 || h < chartH+legendH(2) {
		t.Errorf("chart height %d leaves no room for the legend below it", h)
	}
}
