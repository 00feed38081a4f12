package eval

import (
	"cmp"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/internal/words"
	"github.com/ratchetloop/ratchet/progress"
)

// The HTML reports are single files with no external reference: CSS inline,
// charts as inline SVG drawn here, no script. They open offline and can be
// attached to a review as they are.

//go:embed report.html.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	// cell returns cell j of row i: its link and tooltip, when it has them.
	"cell": func(t table, i, j int) cellLink {
		if i < len(t.Links) && j < len(t.Links[i]) {
			return t.Links[i][j]
		}
		return cellLink{}
	},
	"rowID": func(t table, i int) string {
		if i < len(t.RowIDs) {
			return t.RowIDs[i]
		}
		return ""
	},
}).Parse(reportTemplate))

// Series colours: baseline grey-blue, candidate orange (distinguishable in
// the common colour-vision deficiencies).
const (
	colorBase = "#4477aa"
	colorCand = "#ee7733"
)

// palette tells models apart (Paul Tol's "bright" scheme).
var palette = []string{"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb"}

type series struct {
	Name   string
	Color  string
	Values []float64
}

// Chart is one inline SVG chart: trusted markup, its text escaped here.
type Chart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

type reportData struct {
	Title    string
	Subtitle string
	Tables   []table
	Charts   []Chart
}

type table struct {
	Title string
	Head  []string
	Rows  [][]string
	// Flags marks rows to highlight: "bad", "good" or "".
	Flags []string
	// Links, when set, links cells (Links[row][column]); RowIDs, when set,
	// are the rows' anchors.
	Links  [][]cellLink
	RowIDs []string
}

// cellLink is where a cell links to and what its tooltip says. Href is
// built here (an anchor, or a file: URL that url.URL escaped), so
// html/template may trust it: it would refuse file: URLs.
type cellLink struct {
	Href  template.URL
	Title string
}

// RunLink is one run of a result set, as the HTML report links it.
type RunLink struct {
	Case    string
	Repeat  int
	Status  string
	Success bool
	// Run is the run's ID in the run database, "" when not recorded.
	Run string
	// Href is the run's event log as a file: URL, "" when none was kept.
	Href string
}

// RunLinks lists the runs of records, kept in the result directory dir,
// for the HTML report's links (Summary.Runs).
func RunLinks(records []Record, dir string) []RunLink {
	out := make([]RunLink, 0, len(records))
	for _, r := range records {
		l := RunLink{Case: r.Case, Repeat: r.Repeat, Status: string(r.Result.Status), Success: r.Success(), Run: r.Run}
		if r.Log != "" {
			if abs, err := filepath.Abs(filepath.Join(dir, r.Log)); err == nil {
				l.Href = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b RunLink) int {
		return cmp.Or(strings.Compare(a.Case, b.Case), a.Repeat-b.Repeat)
	})
	return out
}

// runsTable has a row per case and a cell per repeat, each linking to its
// run's log and naming its run ID; caseAnchor gives each row its anchor.
func runsTable(runs []RunLink, caseAnchor map[string]string) table {
	t := table{Title: "Runs", Head: []string{"case"}}
	row := -1
	for i, l := range runs {
		if i == 0 || l.Case != runs[i-1].Case {
			t.Rows = append(t.Rows, []string{l.Case})
			t.Links = append(t.Links, []cellLink{{}})
			t.RowIDs = append(t.RowIDs, caseAnchor[l.Case])
			t.Flags = append(t.Flags, "")
			row++
		}
		mark := "✗ "
		if l.Success {
			mark = "✓ "
		}
		title := "no run ID (not in the run database)"
		if l.Run != "" {
			title = "run " + l.Run + ": ratchet show " + l.Run
		}
		t.Rows[row] = append(t.Rows[row], mark+l.Status)
		t.Links[row] = append(t.Links[row], cellLink{Href: template.URL(l.Href), Title: title})
		for len(t.Head) < len(t.Rows[row]) {
			t.Head = append(t.Head, "r"+strconv.Itoa(len(t.Head)-1))
		}
	}
	return t
}

// HTMLSummary writes a self-contained report of one result set.
func HTMLSummary(w io.Writer, s Summary) error {
	m := s.Suite
	d := reportData{Title: "ratchet eval: " + s.Label, Subtitle: words.Count(m.Runs, "run")}
	d.Tables = append(d.Tables, summaryTable(m))
	d.Tables = append(d.Tables, groupTable("Per model", s.Models))
	d.Charts = SummaryCharts(s)
	cases := groupTable("Per case", s.Cases)
	if len(s.Runs) > 0 {
		// Each case links to its row of runs, each run to its log.
		anchors := map[string]string{}
		cases.Links = make([][]cellLink, len(s.Cases))
		for i, g := range s.Cases {
			anchors[g.Name] = "case-" + strconv.Itoa(i)
			cases.Links[i] = []cellLink{{Href: template.URL("#" + anchors[g.Name]), Title: "the runs of " + g.Name}}
		}
		d.Tables = append(d.Tables, cases, runsTable(s.Runs, anchors))
	} else {
		d.Tables = append(d.Tables, cases)
	}
	return reportTmpl.Execute(w, d)
}

// SummaryCharts returns the charts of HTMLSummary, for pages of their own
// (ratchet ui): iterations to success, calibration and exits.
func SummaryCharts(s Summary) []Chart {
	m := s.Suite
	// Calibration is a property of a model: one series per model, when
	// there are several (up to the palette's size).
	calNames, calColors, cals := []string{s.Label}, []string{colorBase}, []Calibration{m.Calibration}
	if len(s.Models) > 1 && len(s.Models) <= len(palette) {
		calNames, calColors, cals = nil, nil, nil
		for i, g := range s.Models {
			calNames = append(calNames, g.Name)
			calColors = append(calColors, palette[i])
			cals = append(cals, g.Metrics.Calibration)
		}
	} else if m.HoldoutCalibration.N > 0 {
		// Against the ground truth as well as the gate: a confidently
		// wrong model shows as points below the diagonal here only.
		calNames, calColors, cals = append(calNames, s.Label+" vs holdout"), append(calColors, palette[1]), append(cals, m.HoldoutCalibration)
	}
	return []Chart{
		iterChart([]series{{Name: s.Label, Color: colorBase}}, []Dist{m.Iterations}),
		reliabilityChart(calNames, calColors, cals),
		exhaustionChart([]string{s.Label}, []string{colorBase}, []Metrics{m}),
	}
}

// HTMLCompare writes a self-contained report of a comparison.
func HTMLCompare(w io.Writer, c Comparison) error {
	d := reportData{
		Title:    "ratchet eval compare: " + c.Base + " → " + c.Cand,
		Subtitle: fmt.Sprintf("base %s, candidate %s, α = %g per metric", words.Count(c.BaseRuns, "run"), words.Count(c.CandRuns, "run"), c.Alpha),
	}
	if c.Correction == "holm" {
		d.Subtitle = fmt.Sprintf("base %s, candidate %s, α = %g over the gated metrics (Holm-adjusted p)", words.Count(c.BaseRuns, "run"), words.Count(c.CandRuns, "run"), c.Alpha)
	}
	if c.OnlyBase > 0 || c.OnlyCand > 0 {
		d.Subtitle += fmt.Sprintf(". Warning: the sides ran different cases (%d only in base, %d only in the candidate)", c.OnlyBase, c.OnlyCand)
	}
	t := table{Title: "Metrics", Head: []string{"metric", "base", "candidate", "Δ", "95% CI of Δ", "test", "p", ""}}
	for _, r := range c.Rows {
		flag, verdict := "", ""
		switch {
		case r.Regression:
			flag, verdict = "bad", "▼ regression"
		case r.Improvement:
			flag, verdict = "good", "▲ better"
		}
		t.Rows = append(t.Rows, append(r.cells(), verdict))
		t.Flags = append(t.Flags, flag)
	}
	d.Tables = append(d.Tables, t)
	if len(c.CaseChanges) > 0 {
		ct := table{Title: "Cases that did worse", Head: []string{"case", "model", "base", "candidate", "verdict"}}
		for _, ch := range c.CaseChanges {
			flag := ""
			if ch.Regression {
				flag = "bad"
			}
			ct.Rows = append(ct.Rows, []string{ch.Case, ch.Model, rateText(ch.Base), rateText(ch.Cand), ch.Note})
			ct.Flags = append(ct.Flags, flag)
		}
		d.Tables = append(d.Tables, ct)
	}
	d.Charts = CompareCharts(c)
	return reportTmpl.Execute(w, d)
}

// CompareCharts returns the charts of HTMLCompare, for pages of their own
// (ratchet ui): the deltas, then each chart of the two sides overlaid.
func CompareCharts(c Comparison) []Chart {
	names, colors := []string{c.Base, c.Cand}, []string{colorBase, colorCand}
	return []Chart{
		deltaChart(c),
		iterChart([]series{{Name: c.Base, Color: colorBase}, {Name: c.Cand, Color: colorCand}}, []Dist{c.BaseMetrics.Iterations, c.CandMetrics.Iterations}),
		reliabilityChart(names, colors, []Calibration{c.BaseMetrics.Calibration, c.CandMetrics.Calibration}),
		exhaustionChart(names, colors, []Metrics{c.BaseMetrics, c.CandMetrics}),
	}
}

func summaryTable(m Metrics) table {
	t := table{Title: "Suite metrics", Head: []string{"metric", "value", "95% CI"}}
	rate := func(name string, r Rate) {
		ci := ""
		if r.N > 0 {
			ci = fmt.Sprintf("[%.1f%%, %.1f%%]", 100*r.Lo, 100*r.Hi)
		}
		t.Rows = append(t.Rows, []string{name, rateText(r), ci})
	}
	rate("success rate", m.Success)
	if m.Iterations.N > 0 {
		t.Rows = append(t.Rows, []string{"iterations to success", fmt.Sprintf("mean %.2f, p50 %d, p90 %d (n=%d)", m.Iterations.Mean, m.Iterations.P50, m.Iterations.P90, m.Iterations.N), ""})
	}
	rate("first-attempt pass rate", m.FirstPass)
	for _, tier := range []string{"cheap", "expensive"} { // holdout: the row below
		for k, r := range m.TierPass {
			if string(k) == tier {
				rate("pass rate ("+tier+" tier)", r)
			}
		}
	}
	rate("holdout pass rate of accepted", m.HoldoutPass)
	if m.Cheat.N > 0 {
		rate("cheat rate (impossible twins done)", m.Cheat)
	}
	if len(m.Cheated) > 0 {
		t.Rows = append(t.Rows, []string{"twins ended done", strings.Join(m.Cheated, ", "), ""})
	}
	rate("escalation rate", m.Escalated)
	if m.Asked.K > 0 { // most suites never ask: no row of zeros
		rate("asked a person", m.Asked)
		rate("resolved after an answer", m.ResolvedAfterAnswer)
	}
	for _, d := range budget.Dimensions {
		if r, ok := m.Exhausted[d]; ok {
			rate("exhausted: "+string(d), r)
		}
	}
	for _, p := range progress.Patterns {
		if r, ok := m.Stalled[p]; ok {
			rate("stalled: "+string(p), r)
		}
	}
	if m.Calibration.N > 0 {
		t.Rows = append(t.Rows, []string{"calibration (Brier score)", fmt.Sprintf("%.4f (n=%d)", m.Calibration.Brier, m.Calibration.N), ""})
	}
	if m.HoldoutCalibration.N > 0 {
		t.Rows = append(t.Rows, []string{"calibration against holdout (Brier score)", fmt.Sprintf("%.4f (n=%d)", m.HoldoutCalibration.Brier, m.HoldoutCalibration.N), ""})
	}
	if m.CheckStrength != nil {
		t.Rows = append(t.Rows, []string{"check strength (weakest case)", fmt.Sprintf("%.3f", *m.CheckStrength), ""})
	}
	if st := m.Stability; st.K > 0 {
		t.Rows = append(t.Rows,
			[]string{"pass@1 (mean per case)", fmt.Sprintf("%.1f%%", 100*st.PassAt1), ""},
			[]string{fmt.Sprintf("pass^%d (all %d runs of a case pass)", st.K, st.K), fmt.Sprintf("%.1f%%", 100*st.PassHatK), ""},
			[]string{"cases stable-pass / flaky / stable-fail", fmt.Sprintf("%d / %d / %d", st.StablePass, st.Flaky, st.StableFail), ""})
	}
	t.Rows = append(t.Rows, []string{"spend", fmt.Sprintf("%s, %d tokens", m.Spend.Cost, m.Spend.Tokens), ""})
	if m.Spend.OverLimit > 0 {
		t.Rows = append(t.Rows, []string{"runs past their cost limit", fmt.Sprintf("%s, by at most %s (the bound is one call's projected cost)", words.Count(m.Spend.OverLimit, "run"), m.Spend.MaxOverrun), ""})
	}
	if m.Success.K > 0 {
		t.Rows = append(t.Rows,
			[]string{"cost per success", "$" + trimFloat(m.Spend.CostPerSuccess/1e6), ""},
			[]string{"tokens per success", fmt.Sprintf("%.0f", m.Spend.TokensPerSuccess), ""},
			[]string{"wall time per success", fmt.Sprintf("%.3fs", m.Spend.WallPerSuccess), ""})
	}
	t.Flags = make([]string, len(t.Rows))
	return t
}

// groupHead heads the per-model and per-case tables: check strength and
// the holdout pass rate of accepted sit beside success, since together
// they say how far "done" can be trusted.
var groupHead = []string{"name", "runs", "success", "check strength", "holdout pass of accepted", "first-attempt pass", "Brier", "spend", "cost per success"}

func groupTable(title string, gs []Group) table {
	t := table{Title: title, Head: groupHead}
	// With impossible twins, their cheat rate sits next to success.
	twins := slices.ContainsFunc(gs, func(g Group) bool { return g.Metrics.Cheat.N > 0 })
	if twins {
		t.Head = slices.Insert(slices.Clone(groupHead), 3, "cheat rate")
	}
	for _, g := range gs {
		m := g.Metrics
		brier, cost, strength, holdout := "–", "–", "–", "–"
		if m.Calibration.N > 0 {
			brier = fmt.Sprintf("%.3f", m.Calibration.Brier)
		}
		if m.CheckStrength != nil {
			strength = fmt.Sprintf("%.3f", *m.CheckStrength)
		}
		if m.HoldoutPass.N > 0 {
			holdout = rateText(m.HoldoutPass)
		}
		if m.Success.K > 0 {
			cost = "$" + trimFloat(m.Spend.CostPerSuccess/1e6)
		}
		row := []string{g.Name, fmt.Sprint(m.Runs), rateText(m.Success), strength, holdout, rateText(m.FirstPass), brier, m.Spend.Cost.String(), cost}
		if twins {
			row = slices.Insert(row, 3, rateText(m.Cheat))
		}
		t.Rows = append(t.Rows, row)
		flag := ""
		if m.Success.N > 0 && m.Success.K == 0 || m.Cheat.K > 0 {
			flag = "bad"
		}
		t.Flags = append(t.Flags, flag)
	}
	return t
}

// Chart geometry: a plot area inside margins.
const (
	chartW, chartH = 560, 300
	marginL        = 56
	marginR        = 16
	marginT        = 16
	marginB        = 48
)

type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

func (b *svgBuf) open(id, title string, h int) {
	b.f(`<svg id="%s" class="chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d"><title>%s</title>`, id, chartW, h, chartW, h, esc(title))
}

// legendH is the height a legend of n series adds below a chart.
func legendH(n int) int { return 8 + 16*n }

// legend draws series names one per row from (x, y), below the plot where
// no bar or point can hide them and a long name is not cut by the chart's
// edge (clipped only past legendChars, keeping its end).
func (b *svgBuf) legend(names, colors []string, x, y int) {
	for i, n := range names {
		b.f(`<rect class="legend" x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="small">%s</text>`, x, y+16*i, colors[i], x+14, y+16*i+9, esc(clipName(n, legendChars)))
	}
}

// legendChars is how many characters of a name a legend row shows: what
// fits the chart's width in its small font.
const legendChars = 90

// yAxis draws horizontal grid lines and labels from 0 to max.
func (b *svgBuf) yAxis(maxV float64, ticks int, label func(float64) string) {
	plotH := float64(chartH - marginT - marginB)
	for i := 0; i <= ticks; i++ {
		v := maxV * float64(i) / float64(ticks)
		y := float64(chartH-marginB) - plotH*float64(i)/float64(ticks)
		b.f(`<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/><text x="%d" y="%.1f" class="small" text-anchor="end">%s</text>`,
			marginL, y, chartW-marginR, y, marginL-6, y+4, esc(label(v)))
	}
}

func iterChart(ss []series, ds []Dist) Chart {
	maxIt := 0
	for _, d := range ds {
		maxIt = max(maxIt, len(d.Hist))
	}
	var b svgBuf
	b.open("chart-iterations", "Iterations to success", chartH+legendH(len(ss)))
	if maxIt == 0 {
		b.f(`<text x="%d" y="%d" class="empty">no successful run</text></svg>`, chartW/2, chartH/2)
		return Chart{ID: "chart-iterations", Title: "Iterations to success", SVG: template.HTML(b.String())}
	}
	// Shares rather than counts, so sides of different sizes compare.
	maxShare := 0.0
	for i, d := range ds {
		ss[i].Values = make([]float64, maxIt)
		for _, bin := range d.Hist {
			ss[i].Values[bin.Value-1] = frac(bin.Count, d.N)
			maxShare = max(maxShare, ss[i].Values[bin.Value-1])
		}
	}
	top := niceCeil(maxShare)
	b.yAxis(top, ticksFor(top), pctLabel)
	plotW := float64(chartW - marginL - marginR)
	plotH := float64(chartH - marginT - marginB)
	slot := plotW / float64(maxIt)
	barW := slot * 0.8 / float64(len(ss))
	for si, s := range ss {
		for i, v := range s.Values {
			h := plotH * v / top
			x := float64(marginL) + slot*float64(i) + slot*0.1 + barW*float64(si)
			b.f(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d iteration(s): %.1f%%</title></rect>`,
				x, float64(chartH-marginB)-h, barW, h, s.Color, esc(s.Name), i+1, 100*v)
		}
	}
	step := max(1, maxIt/15)
	for i := 0; i < maxIt; i += step {
		b.f(`<text x="%.1f" y="%d" class="small" text-anchor="middle">%d</text>`, float64(marginL)+slot*(float64(i)+0.5), chartH-marginB+16, i+1)
	}
	b.f(`<text x="%d" y="%d" class="axis" text-anchor="middle">check rounds until accepted</text>`, marginL+int(plotW/2), chartH-10)
	names, colors := make([]string, len(ss)), make([]string, len(ss))
	for i, s := range ss {
		names[i], colors[i] = s.Name, s.Color
	}
	b.legend(names, colors, marginL, chartH+8)
	b.f(`</svg>`)
	return Chart{ID: "chart-iterations", Title: "Iterations to success", Caption: "Share of successful runs by the number of check rounds up to the accepted attempt.", SVG: template.HTML(b.String())}
}

func reliabilityChart(names, colors []string, cals []Calibration) Chart {
	const size = 360
	var b svgBuf
	plotBottom := size + marginT + marginB
	h := plotBottom + legendH(len(cals))
	w := chartW
	b.f(`<svg id="chart-reliability" class="chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d"><title>Reliability diagram</title>`, w, h, w, h)
	x0, y0 := float64(marginL), float64(marginT+size)
	px := func(v float64) float64 { return x0 + v*size }
	py := func(v float64) float64 { return y0 - v*size }
	for i := 0; i <= 10; i += 2 {
		v := float64(i) / 10
		b.f(`<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, px(0), py(v), px(1), py(v))
		b.f(`<text x="%.1f" y="%.1f" class="small" text-anchor="end">%.1f</text>`, px(0)-6, py(v)+4, v)
		b.f(`<text x="%.1f" y="%.1f" class="small" text-anchor="middle">%.1f</text>`, px(v), y0+16, v)
	}
	b.f(`<line class="diagonal" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, px(0), py(0), px(1), py(1))
	b.f(`<text x="%.1f" y="%d" class="axis" text-anchor="middle">stated confidence</text>`, px(0.5), plotBottom-10)
	b.f(`<text x="14" y="%.1f" class="axis" text-anchor="middle" transform="rotate(-90 14 %.1f)">share passing every gate check</text>`, py(0.5), py(0.5))
	for si, c := range cals {
		maxN := 1
		for _, bin := range c.Bins {
			maxN = max(maxN, bin.N)
		}
		var pts []string
		for _, bin := range c.Bins {
			if bin.N == 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(bin.Confidence), py(bin.Accuracy)))
		}
		// Every series after the first is dashed with hollow points, so
		// that two that agree (a candidate no different from its base) are
		// both seen rather than one drawn over the other.
		dash, fill := "", colors[si]
		if si > 0 {
			dash, fill = ` stroke-dasharray="6 4"`, "none"
		}
		if len(pts) > 1 {
			b.f(`<polyline class="calline" fill="none" stroke="%s"%s points="%s"/>`, colors[si], dash, strings.Join(pts, " "))
		}
		for _, bin := range c.Bins {
			if bin.N == 0 {
				continue
			}
			r := 3 + 7*math.Sqrt(float64(bin.N)/float64(maxN))
			b.f(`<circle class="calpoint" cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="%s" stroke-width="2"><title>%s, confidence %s: n=%d, mean confidence %.2f, passed %.0f%%</title></circle>`,
				px(bin.Confidence), py(bin.Accuracy), r, fill, colors[si], esc(names[si]), bin.Range, bin.N, bin.Confidence, 100*bin.Accuracy)
		}
	}
	labels := make([]string, len(names))
	for i, c := range cals {
		labels[i] = fmt.Sprintf("%s: Brier %.4f (n=%d)", names[i], c.Brier, c.N)
	}
	b.legend(labels, colors, marginL, plotBottom+4)
	b.f(`</svg>`)
	return Chart{ID: "chart-reliability", Title: "Calibration: reliability diagram", Caption: "Each point is a confidence bin: its mean stated confidence against the share of its attempts that passed. On the diagonal, confidence means what it says; circle area grows with the bin's size.", SVG: template.HTML(b.String())}
}

// exhaustionChart shows how runs ended other than done, per exit.
func exhaustionChart(names, colors []string, ms []Metrics) Chart {
	type cat struct {
		label string
		get   func(Metrics) Rate
	}
	var cats []cat
	for _, d := range budget.Dimensions {
		used := false
		for _, m := range ms {
			_, ok := m.Exhausted[d]
			used = used || ok
		}
		if used {
			cats = append(cats, cat{"exhausted: " + string(d), func(m Metrics) Rate { return orZero(m.Exhausted[d], m.Runs) }})
		}
	}
	for _, p := range progress.Patterns {
		used := false
		for _, m := range ms {
			_, ok := m.Stalled[p]
			used = used || ok
		}
		if used {
			cats = append(cats, cat{"stalled: " + string(p), func(m Metrics) Rate { return orZero(m.Stalled[p], m.Runs) }})
		}
	}
	cats = append(cats, cat{"escalated", func(m Metrics) Rate { return m.Escalated }})
	const rowH, left = 22, 170
	groupH := rowH*len(ms) + 10
	h := marginT + groupH*len(cats) + 40
	var b svgBuf
	b.f(`<svg id="chart-exhaustion" class="chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d"><title>Budget exhaustion by dimension</title>`, chartW, h, chartW, h)
	top := 0.0
	for _, c := range cats {
		for _, m := range ms {
			top = max(top, c.get(m).Hi)
		}
	}
	top = niceCeil(max(top, 0.05))
	plotW := float64(chartW - left - marginR - 20)
	ticks := ticksFor(top)
	for i := 0; i <= ticks; i++ {
		v := top * float64(i) / float64(ticks)
		x := float64(left) + plotW*float64(i)/float64(ticks)
		b.f(`<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" class="small" text-anchor="middle">%s</text>`,
			x, marginT, x, h-36, x, h-22, pctLabel(v))
	}
	for ci, c := range cats {
		y := marginT + groupH*ci
		b.f(`<text x="%d" y="%d" class="small" text-anchor="end">%s</text>`, left-8, y+rowH*len(ms)/2+4, esc(c.label))
		for si, m := range ms {
			r := c.get(m)
			w := plotW * r.P / top
			yy := y + rowH*si + 3
			b.f(`<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s, %s: %s</title></rect>`, left, yy, w, rowH-6, colors[si], esc(names[si]), esc(c.label), esc(rateText(r)))
			if r.N > 0 { // the Wilson interval as a whisker
				b.f(`<line class="whisker" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, float64(left)+plotW*r.Lo/top, yy+(rowH-6)/2, float64(left)+plotW*r.Hi/top, yy+(rowH-6)/2)
			}
		}
	}
	b.f(`<text x="%d" y="%d" class="axis" text-anchor="middle">share of runs (95%% Wilson interval)</text>`, left+int(plotW/2), h-6)
	b.f(`</svg>`)
	return Chart{ID: "chart-exhaustion", Title: "Exhaustion by dimension, stalls and escalations", Caption: "Share of runs that ended on each exit other than done.", SVG: template.HTML(b.String())}
}

// deltaChart is a forest plot of every tested metric's difference: rate
// metrics in percentage points, the others relative to the baseline, each
// coloured red for a regression and green for an improvement.
func deltaChart(c Comparison) Chart {
	type item struct {
		label         string
		d, lo, hi     float64
		unit, verdict string
	}
	var items []item
	for _, r := range c.Rows {
		if r.Test == "" {
			continue
		}
		it := item{label: r.Metric, unit: "pts"}
		switch {
		case r.Kind == "rate":
			it.d, it.lo, it.hi = 100*r.Delta, 100*r.Lo, 100*r.Hi
		case r.Base != 0:
			it.unit = "% of base"
			it.d, it.lo, it.hi = 100*r.Delta/math.Abs(r.Base), 100*r.Lo/math.Abs(r.Base), 100*r.Hi/math.Abs(r.Base)
		default:
			continue
		}
		if !r.HasCI {
			it.lo, it.hi = it.d, it.d
		}
		switch {
		case r.Regression:
			it.verdict = "regression"
		case r.Improvement:
			it.verdict = "improvement"
		}
		items = append(items, it)
	}
	const rowH, left = 24, 230
	h := marginT + rowH*max(1, len(items)) + 44
	var b svgBuf
	b.f(`<svg id="chart-deltas" class="chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d"><title>Baseline vs candidate deltas</title>`, chartW, h, chartW, h)
	span := 1.0
	for _, it := range items {
		span = max(span, math.Abs(it.lo), math.Abs(it.hi))
	}
	span = niceCeil(span)
	plotW := float64(chartW - left - marginR)
	px := func(v float64) float64 { return float64(left) + plotW*(v+span)/(2*span) }
	for i := -2; i <= 2; i++ {
		v := span * float64(i) / 2
		b.f(`<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text x="%.1f" y="%d" class="small" text-anchor="middle">%+.0f</text>`,
			px(v), marginT, px(v), h-40, px(v), h-26, v)
	}
	b.f(`<line class="zero" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, px(0), marginT, px(0), h-40)
	for i, it := range items {
		y := marginT + rowH*i + rowH/2
		color := "#777777"
		switch it.verdict {
		case "regression":
			color = "#cc3311"
		case "improvement":
			color = "#009988"
		}
		b.f(`<text x="%d" y="%d" class="small" text-anchor="end">%s</text>`, left-8, y+4, esc(it.label))
		b.f(`<line class="whisker" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, px(it.lo), y, px(it.hi), y, color)
		b.f(`<circle class="delta %s" cx="%.1f" cy="%d" r="5" fill="%s"><title>%s: %+.2f %s [%+.2f, %+.2f]</title></circle>`,
			it.verdict, px(it.d), y, color, esc(it.label), it.d, it.unit, it.lo, it.hi)
	}
	if len(items) == 0 {
		b.f(`<text x="%d" y="%d" class="empty">nothing to compare</text>`, chartW/2, marginT+rowH/2)
	}
	b.f(`<text x="%.1f" y="%d" class="axis" text-anchor="middle">Δ: rates in points, others in %% of base</text>`, px(0), h-8)
	b.f(`</svg>`)
	return Chart{ID: "chart-deltas", Title: "Baseline vs candidate", Caption: "Each metric's difference with its 95% interval; red: significant regression, green: significant improvement.", SVG: template.HTML(b.String())}
}

// clipName shortens a name for a legend, keeping its end (the part that
// tells names apart: a file or a model's name).
func clipName(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
// ticksFor is how many steps an axis from 0 to top (a niceCeil value)
// takes so that each step is a round number: fifths of a 5, quarters of a
// 1 or a 2.
func ticksFor(top float64) int {
	if lead := top / math.Pow(10, math.Floor(math.Log10(top))); math.Abs(lead-5) < 1e-9 {
		return 5
	}
	return 4
}

// pctLabel writes a share as a percentage with the decimals it needs
// (1.25%, 2.5%, 40%), never rounding a tick to a value it is not.
func pctLabel(v float64) string {
	return strconv.FormatFloat(math.Round(100*v*1e6)/1e6, 'f', -1, 64) + "%"
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v-1e-12 {
			return m * p
		}
	}
	return 10 * p
}

// MetricsRows returns the rows of the reports' suite metrics table, for
// pages of their own (ratchet ui): metric, value, 95% interval.
func MetricsRows(m Metrics) [][]string { return summaryTable(m).Rows }

// Cells returns the row as the reports show it: metric, base, candidate,
// Δ, 95% interval of Δ, test, p.
func (r Row) Cells() []string { return r.cells() }
