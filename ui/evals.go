package ui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/ratchetloop/ratchet/eval"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/store"
)

// labelDir returns the result directory of label, refusing names that
// would leave Config.EvalDir.
func (s *Server) labelDir(label string) (string, error) {
	if s.cfg.EvalDir == "" {
		return "", errors.New("this server shows no evals ('ratchet ui --eval-dir DIR')")
	}
	if label == "" || label == "." || label == ".." || strings.ContainsAny(label, `/\`) {
		return "", fmt.Errorf("%q is not a result set's label", label)
	}
	return filepath.Join(s.cfg.EvalDir, label), nil
}

func (s *Server) records(label string) ([]eval.Record, string, error) {
	dir, err := s.labelDir(label)
	if err != nil {
		return nil, "", err
	}
	recs, err := eval.ReadRecords(dir)
	if err != nil {
		return nil, "", fmt.Errorf("result set %q: %w", label, err)
	}
	return recs, dir, nil
}

type suiteRow struct {
	Label   string
	Runs    int
	Success string
	Updated time.Time
	Age     string
}

// evalsPage lists the result sets in Config.EvalDir, newest first, with a
// form to compare two.
func (s *Server) evalsPage(w http.ResponseWriter, r *http.Request) {
	var rows []suiteRow
	if s.cfg.EvalDir != "" {
		des, err := os.ReadDir(s.cfg.EvalDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		for _, de := range des {
			st, err := os.Stat(filepath.Join(s.cfg.EvalDir, de.Name(), eval.ResultsFile))
			if !de.IsDir() || err != nil {
				continue
			}
			recs, err := eval.ReadRecords(filepath.Join(s.cfg.EvalDir, de.Name()))
			if err != nil {
				continue
			}
			m := eval.Compute(recs)
			rows = append(rows, suiteRow{Label: de.Name(), Runs: m.Runs, Success: rateText(m.Success), Updated: st.ModTime(), Age: observe.Age(s.cfg.Now().Sub(st.ModTime()))})
		}
	}
	slices.SortFunc(rows, func(a, b suiteRow) int { return b.Updated.Compare(a.Updated) })
	s.page(w, "evals", pageData{Title: "evals", Nav: "evals", Data: struct {
		Rows []suiteRow
		Dir  string
	}{rows, s.cfg.EvalDir}})
}

func rateText(r eval.Rate) string {
	if r.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*r.P, r.K, r.N)
}

// cell is one (case, repeat) of a suite's grid.
type cell struct {
	Repeat  int
	Status  string
	Family  string
	Success bool
	URL     string
	Title   string
}

type gridRow struct {
	Case  string
	Cells []*cell
}

type suiteData struct {
	Label   string
	Metrics [][]string
	Charts  []eval.Chart
	Grid    []gridRow
	Repeats []int
	Models  []eval.Group
}

func evalRunURL(label, c string, repeat int) string {
	return "/evals/" + pathEscape(label) + "/run?" + url.Values{"case": {c}, "repeat": {strconv.Itoa(repeat)}}.Encode()
}

// grid lays records out as cases × repeats, in case name order; a cell's
// title (the run's reason) passes through redact.
func grid(label string, recs []eval.Record, redact func(string) string) ([]gridRow, []int) {
	byCase := map[string]map[int]eval.Record{}
	maxRep := -1
	for _, rec := range recs {
		if byCase[rec.Case] == nil {
			byCase[rec.Case] = map[int]eval.Record{}
		}
		byCase[rec.Case][rec.Repeat] = rec
		maxRep = max(maxRep, rec.Repeat)
	}
	var rows []gridRow
	for _, c := range slices.SortedFunc(maps.Keys(byCase), caseOrder()) {
		row := gridRow{Case: c}
		for rep := 0; rep <= maxRep; rep++ {
			rec, ok := byCase[c][rep]
			if !ok {
				row.Cells = append(row.Cells, nil)
				continue
			}
			st := string(rec.Result.Status)
			title := fmt.Sprintf("%s r%d: %s — %s", c, rep, st, observe.OneLine(rec.Result.Reason, 120))
			success := rec.Success()
			if rec.Twin != "" { // no honest run ends an impossible twin done
				success = rec.Result.Status != loop.Done
				title = fmt.Sprintf("%s r%d: %s — impossible twin (%s)", c, rep, st, observe.OneLine(rec.Twin, 120))
			}
			row.Cells = append(row.Cells, &cell{
				Repeat: rep, Status: st, Family: family(st), Success: success,
				URL: evalRunURL(label, c, rep), Title: redact(title),
			})
		}
		rows = append(rows, row)
	}
	var reps []int
	for i := 0; i <= maxRep; i++ {
		reps = append(reps, i)
	}
	return rows, reps
}

func (s *Server) suitePage(w http.ResponseWriter, r *http.Request) {
	label := r.PathValue("label")
	recs, _, err := s.records(label)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	sum := eval.Summarize(label, recs)
	d := suiteData{Label: label, Metrics: eval.MetricsRows(sum.Suite), Charts: eval.SummaryCharts(sum), Models: sum.Models}
	d.Grid, d.Repeats = grid(label, recs, s.redact)
	s.page(w, "suite", pageData{Title: "eval " + label, Nav: "evals", Data: d})
}

// flip is a (case, repeat) whose success differs between two result sets.
type flip struct {
	Case             string
	Repeat           int
	BaseStatus       string
	CandStatus       string
	BaseURL, CandURL string
	Better           bool
}

type compareData struct {
	Base, Cand string
	Labels     []string
	Cmp        *eval.Comparison
	Rows       [][]string
	Flags      []string
	Charts     []eval.Chart
	Flips      []flip
	Holm       bool
}

func (s *Server) comparePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := compareData{Base: q.Get("base"), Cand: q.Get("cand"), Holm: q.Get("holm") != ""}
	if des, err := os.ReadDir(s.cfg.EvalDir); err == nil && s.cfg.EvalDir != "" {
		for _, de := range des {
			if de.IsDir() {
				d.Labels = append(d.Labels, de.Name())
			}
		}
	}
	if d.Base != "" && d.Cand != "" {
		base, _, err := s.records(d.Base)
		if err != nil {
			s.fail(w, r, http.StatusNotFound, err)
			return
		}
		cand, _, err := s.records(d.Cand)
		if err != nil {
			s.fail(w, r, http.StatusNotFound, err)
			return
		}
		c := eval.Compare(d.Base, base, d.Cand, cand, eval.CompareOptions{Holm: d.Holm})
		d.Cmp = &c
		for _, row := range c.Rows {
			verdict, flag := "", ""
			switch {
			case row.Regression:
				verdict, flag = "▼ regression", "bad"
			case row.Improvement:
				verdict, flag = "▲ better", "good"
			}
			d.Rows = append(d.Rows, append(row.Cells(), verdict))
			d.Flags = append(d.Flags, flag)
		}
		d.Charts = eval.CompareCharts(c)
		d.Flips = flips(d.Base, base, d.Cand, cand)
	}
	s.page(w, "compare", pageData{Title: "compare", Nav: "compare", Data: d})
}

// flips returns the (case, repeat) pairs run on both sides whose success
// differs, in case order.
func flips(baseLabel string, base []eval.Record, candLabel string, cand []eval.Record) []flip {
	b := map[eval.Key]eval.Record{}
	for _, r := range base {
		b[r.Key()] = r
	}
	var out []flip
	for _, c := range cand {
		br, ok := b[c.Key()]
		if !ok || br.Success() == c.Success() {
			continue
		}
		out = append(out, flip{
			Case: c.Case, Repeat: c.Repeat, BaseStatus: string(br.Result.Status), CandStatus: string(c.Result.Status),
			BaseURL: evalRunURL(baseLabel, c.Case, c.Repeat), CandURL: evalRunURL(candLabel, c.Case, c.Repeat), Better: c.Success(),
		})
	}
	order := caseOrder()
	slices.SortFunc(out, func(x, y flip) int {
		if c := order(x.Case, y.Case); c != 0 {
			return c
		}
		return x.Repeat - y.Repeat
	})
	return out
}

// evalRunPage shows one run of a result set from its record and its event
// log file.
func (s *Server) evalRunPage(w http.ResponseWriter, r *http.Request) {
	label := r.PathValue("label")
	recs, dir, err := s.records(label)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	c := r.URL.Query().Get("case")
	rep, err := strconv.Atoi(r.URL.Query().Get("repeat"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("repeat %q is not a number", r.URL.Query().Get("repeat")))
		return
	}
	var rec *eval.Record
	for i := range recs {
		if recs[i].Case == c && recs[i].Repeat == rep {
			rec = &recs[i] // the last one put wins, as eval.Store says
		}
	}
	if rec == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("result set %q has no run of case %q, repeat %d", label, c, rep))
		return
	}
	var entries []store.Entry
	if rec.Log != "" {
		path := filepath.Join(dir, filepath.FromSlash(rec.Log))
		if rel, err := filepath.Rel(dir, path); err != nil || strings.HasPrefix(rel, "..") {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("record's log %q is outside its result set", rec.Log))
			return
		}
		if entries, err = readLog(path); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	res := rec.Result
	row := runRow{
		ID: fmt.Sprintf("%s/%s/r%d", label, c, rep), Status: string(res.Status), Family: family(string(res.Status)),
		Model: s.redact(rec.Model), Labels: []string{label}, Steps: int64(res.Usage.Steps), Tokens: res.Usage.TotalTokens(),
		Cost: res.Usage.Cost.String(), CostMicros: int64(res.Usage.Cost), Duration: rec.Wall, Created: rec.Finished,
		Age: observe.Age(s.cfg.Now().Sub(rec.Finished)),
	}
	row.Budget, row.BudgetDim = budgetUse(res.Limits, res.Usage)
	d, err := s.runData(r, row, entries, &res)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	d.Row.Goal = d.Goal
	s.page(w, "run", pageData{Title: row.ID, Nav: "evals", Data: d})
}

// readLog reads a JSONL event log into entries, as the store keeps them.
func readLog(path string) ([]store.Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out []store.Entry
		run string
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var env struct {
			Run  string    `json:"run"`
			Seq  int64     `json:"seq"`
			Kind string    `json:"kind"`
			At   time.Time `json:"at"`
		}
		data := bytes.Clone(sc.Bytes())
		if err := json.Unmarshal(data, &env); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(out) > 0 && env.Run != run {
			continue // a sub-agent's entry, logged beside its parent's
		}
		run = env.Run
		out = append(out, store.Entry{Seq: env.Seq, Kind: env.Kind, At: env.At, Data: data})
	}
	return out, sc.Err()
}

// caseOrder compares case names as people read them: the numbers in them
// by value, so strong/2 comes before strong/10.
func caseOrder() func(a, b string) int {
	c := collate.New(language.Und, collate.Numeric)
	return c.CompareString
}
