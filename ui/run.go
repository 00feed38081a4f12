package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/verify"
)

// specInfo is what the run page reads from a log's first entry.
type specInfo struct {
	Goal   string `json:"goal"`
	Checks []struct {
		Name string      `json:"name"`
		Tier verify.Tier `json:"tier"`
	} `json:"checks"`
	Budget budget.Limits `json:"budget"`
}

func readSpec(entries []store.Entry) specInfo {
	var env struct {
		Spec specInfo `json:"spec"`
	}
	if len(entries) > 0 && entries[0].Kind == "run" {
		json.Unmarshal(entries[0].Data, &env)
	}
	return env.Spec
}

func (sp specInfo) tier(check string) string {
	for _, c := range sp.Checks {
		if c.Name == check {
			return string(c.Tier)
		}
	}
	return ""
}

type tierView struct {
	Name     string
	Verdicts []verify.Verdict
}

type attemptView struct {
	N          int
	Answer     string
	Confidence float64
	Accepted   bool
	Tiers      []tierView
}

type gauge struct {
	Dim, Used, Limit string
	Frac             float64
}

// Pct is Frac as a whole percentage.
func (g gauge) Pct() int { return int(g.Frac*100 + 0.5) }

type askView struct {
	Question  string
	Approval  *loop.ToolCall
	CSRF      string
	CanAnswer bool
	Resuming  bool
	Error     string
}

type pageLink struct {
	N       int
	URL     string
	Current bool
}

type runData struct {
	Row       runRow
	Goal      string
	Result    *loop.Result
	Best      *attemptView
	Gauges    []gauge
	Steps     []*step
	Waterfall template.HTML
	Pages     []pageLink
	StepCount int
	Children  []runRow
	Ask       *askView
	// Live stream: the URL to open, when the run may still change.
	LiveURL  string
	Download string
	// EventsURL gives a step's raw events; "" for eval logs (the download
	// holds them).
	EventsURL string
	// Fork is each step's "fork from here" form; nil offers none.
	Fork *forkView
}

// runPath is the URL path of a run under prefix; an ID's slashes (a
// sub-agent's run) stay path separators.
func runPath(prefix, id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = pathEscape(p)
	}
	return prefix + strings.Join(parts, "/")
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	row, err := s.cfg.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no run %q", id))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	entries, err := s.cfg.Store.Entries(r.Context(), id, 0)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var res *loop.Result
	if row.Result != nil {
		res = new(loop.Result)
		if err := json.Unmarshal(row.Result, res); err != nil {
			s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("run %s: stored result: %w", id, err))
			return
		}
	}
	d, err := s.runData(r, s.row(row), entries, res)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	d.Download = runPath("/events/", id)
	d.EventsURL = d.Download
	d.Fork = s.forkForm(id)
	children, err := s.cfg.Store.ListRuns(r.Context(), store.Filter{Parent: id})
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	for _, c := range children {
		d.Children = append(d.Children, s.row(c))
	}
	if row.Status == store.StatusAwaitingInput || s.isResuming(id) {
		d.Ask = s.ask(id, row, entries)
	}
	if d.Row.Live || s.isResuming(id) {
		last := &step{}
		if n := len(d.Steps); n > 0 && d.Pages[len(d.Pages)-1].Current {
			last = d.Steps[n-1]
		}
		after := int64(0)
		if n := len(entries); n > 0 {
			after = entries[n-1].Seq
		}
		d.LiveURL = fmt.Sprintf("%s?step=%d&seq=%d&after=%d&status=%s", runPath("/live/", id), last.N, last.FirstSeq, after, row.Status)
	}
	s.page(w, "run", pageData{Title: observe.OneLine(row.Goal, 60), Nav: "runs", Data: d})
}

// runData is the page of a run from its row (or eval record), entries and
// Result, for the steps that r's ?page= selects.
func (s *Server) runData(r *http.Request, row runRow, entries []store.Entry, res *loop.Result) (runData, error) {
	spec := readSpec(entries)
	d := runData{Row: row, Goal: s.redact(spec.Goal)}
	if d.Goal == "" {
		d.Goal = row.Goal
	}
	idx := stepIndex(entries)
	d.StepCount = len(idx) - 1
	size := s.cfg.PageSize
	pages := max(1, (d.StepCount+size-1)/size)
	page := 1
	switch p := r.URL.Query().Get("page"); p {
	case "":
	case "last":
		page = pages
	default:
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > pages {
			return d, fmt.Errorf("page %q: the run has pages 1 to %d", p, pages)
		}
		page = n
	}
	if pages > 1 {
		for i := 1; i <= pages; i++ {
			d.Pages = append(d.Pages, pageLink{N: i, URL: "?page=" + strconv.Itoa(i), Current: i == page})
		}
	} else {
		d.Pages = []pageLink{{N: 1, Current: true}}
	}
	firstStep := (page-1)*size + 1
	lastStep := min(page*size, d.StepCount)
	from, to := 0, len(entries)
	if page > 1 {
		from = idx[firstStep]
	}
	if lastStep+1 < len(idx) {
		to = idx[lastStep+1]
	}
	start := firstStep
	if page == 1 {
		start = 0
	}
	t, err := buildTranscript(row.ID, entries[from:to], start, s.redact)
	if err != nil {
		return d, fmt.Errorf("run %s: %w", row.ID, err)
	}
	d.Steps = t.Steps
	d.Waterfall = waterfall(t.Spans)

	limits, used := spec.Budget, budget.Usage{Steps: int(row.Steps)}
	if res != nil {
		r := *res
		r.Reason, r.Question = s.redact(r.Reason), s.redact(r.Question)
		if r.Patch != nil {
			p := *r.Patch
			p.Diff = s.redact(p.Diff)
			r.Patch = &p
		}
		d.Result = &r
		limits, used = res.Limits, res.Usage
		if res.Best != nil {
			d.Best = s.attempt(*res.Best, spec)
		}
	} else {
		// A live run's row is brought up to date when it stops; its log
		// says how far it has got.
		used.Cost = budget.Micros(row.CostMicros)
		used.Steps = max(used.Steps, d.StepCount)
		if n := len(entries); n > 0 {
			used.Time = entries[n-1].At.Sub(entries[0].At)
			d.Row.Duration = used.Time
		}
		d.Row.Steps = int64(used.Steps)
	}
	for _, dim := range budget.Dimensions {
		lim := limits.Limit(dim)
		if lim <= 0 {
			continue
		}
		if res == nil && dim != budget.Steps && dim != budget.Cost && dim != budget.Time {
			continue // a running run's row keeps only these
		}
		v := used.Get(dim)
		d.Gauges = append(d.Gauges, gauge{Dim: string(dim), Used: budget.Format(dim, v), Limit: budget.Format(dim, lim), Frac: min(1, float64(v)/float64(lim))})
	}
	return d, nil
}

func (s *Server) attempt(a loop.Attempt, spec specInfo) *attemptView {
	v := &attemptView{N: a.N, Answer: s.redact(a.Answer), Confidence: a.Confidence, Accepted: a.Accepted}
	add := func(tier string, vd verify.Verdict) {
		vd.Detail, vd.Where = s.redact(vd.Detail), s.redact(vd.Where)
		for i := range v.Tiers {
			if v.Tiers[i].Name == tier {
				v.Tiers[i].Verdicts = append(v.Tiers[i].Verdicts, vd)
				return
			}
		}
		v.Tiers = append(v.Tiers, tierView{Name: tier, Verdicts: []verify.Verdict{vd}})
	}
	for _, vd := range a.Verdicts {
		t := spec.tier(vd.Check)
		if t == "" {
			t = "checks"
		}
		add(t, vd)
	}
	for _, vd := range a.Holdout {
		add("holdout", vd)
	}
	return v
}

// ask is the waiting run's question, from its row and its last ask_human
// command.
func (s *Server) ask(id string, row store.Run, entries []store.Entry) *askView {
	a := &askView{Question: s.redact(row.Question), CSRF: s.csrf(id), CanAnswer: s.cfg.Resume != nil, Resuming: s.isResuming(id)}
	s.mu.Lock()
	if err := s.resumeErr[id]; err != nil {
		a.Error = s.redact(err.Error())
	}
	s.mu.Unlock()
	for i := len(entries) - 1; i >= 0; i-- {
		if !bytes.Contains(entries[i].Data, []byte(`"command":{"type":"ask_human"`)) {
			continue
		}
		var c loggedCommand
		if json.Unmarshal(commandJSON(entries[i].Data), &c) == nil {
			if a.Question == "" {
				a.Question = s.redact(c.Question)
			}
			a.Approval = redactCall(c.Approval, s.redact)
		}
		break
	}
	return a
}

func (s *Server) isResuming(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resuming[id]
}

// answer carries on a waiting run with the form's reply, through
// Config.Resume: the same path as ratchet answer, approve and deny.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if !s.csrfOK(id, r.PostForm.Get("csrf")) {
		s.fail(w, r, http.StatusForbidden, errors.New("the form's CSRF token is missing or wrong: reload the page and answer again"))
		return
	}
	if s.cfg.Resume == nil {
		s.fail(w, r, http.StatusForbidden, errors.New("this server is read-only: answer with ratchet answer, approve or deny"))
		return
	}
	row, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	if row.Status != store.StatusAwaitingInput {
		s.fail(w, r, http.StatusConflict, fmt.Errorf("run %s is %s, not waiting for a person", id, row.Status))
		return
	}
	var opts runner.ResumeOptions
	text := strings.TrimSpace(r.PostForm.Get("text"))
	switch action := r.PostForm.Get("action"); action {
	case "answer":
		if text == "" {
			s.fail(w, r, http.StatusBadRequest, errors.New("the answer is empty"))
			return
		}
		opts.Answer = &text
	case "approve", "deny":
		yes := action == "approve"
		opts.Approved = &yes
		if text != "" {
			opts.Answer = &text
		}
	default:
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("action %q is not answer, approve or deny", action))
		return
	}
	s.mu.Lock()
	if s.resuming[id] {
		s.mu.Unlock()
		s.fail(w, r, http.StatusConflict, fmt.Errorf("run %s is already being carried on", id))
		return
	}
	s.resuming[id] = true
	delete(s.resumeErr, id)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.cfg.Resume(s.ctx, id, opts)
		s.mu.Lock()
		delete(s.resuming, id)
		if err != nil {
			s.resumeErr[id] = err
		}
		s.mu.Unlock()
		if err != nil {
			s.cfg.Log.Error("ui: carrying on run", "run", id, "err", s.redact(err.Error()))
		}
	}()
	http.Redirect(w, r, runPath("/runs/", id), http.StatusSeeOther)
}

// events serves a run's log as JSON Lines: all of it as a download, or the
// entries from..to (a step's) to read.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	q := r.URL.Query()
	from, _ := strconv.ParseInt(q.Get("from"), 10, 64)
	to, err := strconv.ParseInt(q.Get("to"), 10, 64)
	if err != nil {
		to = -1
	}
	entries, err := s.cfg.Store.Entries(r.Context(), id, max(from-1, 0))
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if q.Get("from") == "" {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", strings.ReplaceAll(id, "/", "_")+".jsonl"))
	}
	for _, e := range entries {
		if to >= 0 && e.Seq > to {
			break
		}
		w.Write(s.cfg.Redactor.Bytes(e.Data))
		w.Write([]byte("\n"))
	}
}

// waterfall draws spans as an SVG: one bar per span, from the first span's
// start, labelled and coloured by kind. Labels are escaped here: the SVG
// is trusted markup.
func waterfall(spans []*span) template.HTML {
	if len(spans) == 0 {
		return ""
	}
	const maxBars = 300
	t0, t1 := spans[0].Start, spans[0].Start
	for _, sp := range spans {
		if sp.Start.Before(t0) {
			t0 = sp.Start
		}
		end := sp.End
		if end.IsZero() {
			end = sp.Start
		}
		if end.After(t1) {
			t1 = end
		}
	}
	total := t1.Sub(t0)
	if total <= 0 {
		total = time.Millisecond
	}
	shown := spans
	if len(shown) > maxBars {
		shown = shown[:maxBars]
	}
	const labelW, barW, rowH = 170, 620, 14
	width := labelW + barW + 70
	h := rowH*len(shown) + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="waterfall" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="timeline of model calls, tools and checks">`, width, h, width, h)
	for i, sp := range shown {
		y := i*rowH + 4
		end := sp.End
		open := end.IsZero()
		if open {
			end = t1
		}
		x := labelW + int(float64(barW)*float64(sp.Start.Sub(t0))/float64(total))
		w := max(2, int(float64(barW)*float64(end.Sub(sp.Start))/float64(total)))
		durText := fmtDur(end.Sub(sp.Start))
		if open {
			durText = "in flight"
		}
		fmt.Fprintf(&b, `<g class="span %s"><title>step %d: %s, %s</title><text x="%d" y="%d" class="lbl">%s</text><rect x="%d" y="%d" width="%d" height="%d" rx="2"></rect><text x="%d" y="%d" class="dur">%s</text></g>`,
			sp.Kind, sp.Step, html.EscapeString(sp.Label), durText,
			labelW-6, y+10, html.EscapeString(clip(fmt.Sprintf("%d· %s", sp.Step, sp.Label), 26)),
			x, y, w, rowH-3, min(x+w+4, width-66), y+10, durText)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="axis">0</text><text x="%d" y="%d" class="axis end">%s</text>`, labelW, h-4, labelW+barW, h-4, fmtDur(total))
	if len(spans) > maxBars {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="axis">first %d of %d spans</text>`, labelW+barW/3, h-4, maxBars, len(spans))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
