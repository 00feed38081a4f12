package ui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
)

// families are the status families a list can be filtered by, with the
// store statuses each stands for.
var families = []struct{ Name, Status string }{
	{"running", store.StatusRunning},
	{"waiting", store.StatusAwaitingInput},
	{"done", string(loop.Done)},
	{"exhausted", "exhausted:"},
	{"stalled", "stalled:"},
	{"guardrail", "guardrail:"},
	{"escalated", string(loop.Escalated)},
	{"cancelled", string(loop.Cancelled)},
	{"failed", string(loop.Failed)},
}

// family names a status's family: "waiting" for awaiting_input, the part
// before a colon otherwise.
func family(status string) string {
	if status == store.StatusAwaitingInput {
		return "waiting"
	}
	k, _, _ := strings.Cut(status, ":")
	return k
}

// live reports whether a run with status may still change.
func live(status string) bool {
	return status == store.StatusRunning || status == store.StatusAwaitingInput
}

// runRow is one run as the list shows it.
type runRow struct {
	ID, Parent, Status, Family, Goal, Model, Question string
	Labels                                            []string
	Steps                                             int64
	// Tokens is -1 while the run has no Result.
	Tokens     int64
	Cost       string
	CostMicros int64
	Duration   time.Duration
	// Budget is the largest share of a limit used, 0..1, with its
	// dimension; -1 while unknown.
	Budget    float64
	BudgetDim string
	Age       string
	Created   time.Time
	Live      bool
}

// BudgetPct is Budget as a whole percentage.
func (r runRow) BudgetPct() int { return int(r.Budget*100 + 0.5) }

// taskModel reads the model a run was started with from its task info
// ("ran_model", as ratchet run records it, else the "model" override of
// runs recorded before it did); "" when it is not there.
func taskModel(task []byte) string {
	var t struct {
		Ran   string `json:"ran_model"`
		Model string `json:"model"`
	}
	if len(task) > 0 && json.Unmarshal(task, &t) == nil {
		return cmp.Or(t.Ran, t.Model)
	}
	return ""
}

func (s *Server) row(r store.Run) runRow {
	now := s.cfg.Now()
	row := runRow{
		ID: r.ID, Parent: r.Parent, Status: r.Status, Family: family(r.Status), Goal: s.redact(observe.OneLine(r.Goal, 140)),
		Model: s.redact(taskModel(r.Task)), Question: s.redact(observe.OneLine(r.Question, 200)), Labels: r.Labels,
		Steps: r.Steps, Tokens: -1, Cost: budget.Micros(r.CostMicros).String(), CostMicros: r.CostMicros, Budget: -1,
		Duration: r.Updated.Sub(r.Created), Age: observe.Age(now.Sub(r.Created)), Created: r.Created, Live: live(r.Status),
	}
	if live, _ := runner.LeaseState(r, now); r.Status == store.StatusRunning && !live {
		// It says running, but no live process carries it out.
		row.Status, row.Family, row.Live = "interrupted", "interrupted", false
	}
	if r.Result != nil {
		var res loop.Result
		if json.Unmarshal(r.Result, &res) == nil {
			row.Tokens = res.Usage.TotalTokens()
			row.Duration = res.Usage.Time
			row.Budget, row.BudgetDim = budgetUse(res.Limits, res.Usage)
		}
	}
	return row
}

// budgetUse returns the largest share of a limit that used spends.
func budgetUse(l budget.Limits, used budget.Usage) (float64, string) {
	best, dim := -1.0, ""
	for _, d := range budget.Dimensions {
		lim := l.Limit(d)
		if lim <= 0 {
			continue
		}
		if f := float64(used.Get(d)) / float64(lim); f > best {
			best, dim = f, string(d)
		}
	}
	if best > 1 {
		best = 1
	}
	return best, dim
}

// listQuery is the list's filters, sort and page, as the URL holds them.
type listQuery struct {
	Status []string // families
	Label  string
	Model  string
	Text   string
	Sort   string
	Page   int
}

func parseListQuery(v url.Values) (listQuery, error) {
	q := listQuery{Status: v["status"], Label: v.Get("label"), Model: v.Get("model"), Text: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort"), Page: 1}
	var problems []string
	for _, f := range q.Status {
		if !slices.ContainsFunc(families, func(x struct{ Name, Status string }) bool { return x.Name == f }) {
			problems = append(problems, fmt.Sprintf("status %q is not a status family", f))
		}
	}
	switch q.Sort {
	case "", "newest", "oldest", "cost", "steps":
	default:
		problems = append(problems, fmt.Sprintf("sort %q is not one of newest, oldest, cost, steps", q.Sort))
	}
	if p := v.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			problems = append(problems, fmt.Sprintf("page %q is not a page number", p))
		}
		q.Page = n
	}
	if len(problems) > 0 {
		return q, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return q, nil
}

func (q listQuery) filter() store.Filter {
	f := store.Filter{Label: q.Label, Text: q.Text}
	for _, fam := range families {
		if slices.Contains(q.Status, fam.Name) {
			f.Status = append(f.Status, fam.Status)
		}
	}
	if q.Sort != "newest" {
		f.Order = store.Order(q.Sort)
	}
	return f
}

// URL is the list's URL with the query changed by set (key, value pairs;
// an empty value removes the key).
func (q listQuery) URL(set ...string) string {
	v := url.Values{}
	for _, s := range q.Status {
		v.Add("status", s)
	}
	for k, val := range map[string]string{"label": q.Label, "model": q.Model, "q": q.Text, "sort": q.Sort} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			v.Del(set[i])
		} else {
			v.Set(set[i], set[i+1])
		}
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// HasStatus reports whether the family is filtered on.
func (q listQuery) HasStatus(f string) bool { return slices.Contains(q.Status, f) }

type listData struct {
	Query     listQuery
	Rows      []runRow
	Families  []string
	Prev      string
	Next      string
	From, To  int
	LiveCount int
}

// modelScan is how many runs one store query reads while filtering by
// model, which the store does not index: the list pages through the runs
// matching the other filters until it has a page of matches.
const modelScan = 500

// runs returns a page of the runs q selects, and whether there are more.
func (s *Server) runs(r *http.Request, q listQuery) ([]store.Run, bool, error) {
	f := q.filter()
	size := s.cfg.PageSize
	skip := (q.Page - 1) * size
	if q.Model == "" {
		f.Offset, f.Limit = skip, size+1
		rs, err := s.cfg.Store.ListRuns(r.Context(), f)
		if err != nil {
			return nil, false, err
		}
		more := len(rs) > size
		return rs[:min(len(rs), size)], more, nil
	}
	var out []store.Run
	for f.Limit = modelScan; ; f.Offset += modelScan {
		rs, err := s.cfg.Store.ListRuns(r.Context(), f)
		if err != nil {
			return nil, false, err
		}
		for _, run := range rs {
			if taskModel(run.Task) != q.Model {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if len(out) == size {
				return out, true, nil
			}
			out = append(out, run)
		}
		if len(rs) < modelScan {
			return out, false, nil
		}
	}
}

func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseListQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	rs, more, err := s.runs(r, q)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := listData{Query: q}
	for _, f := range families {
		d.Families = append(d.Families, f.Name)
	}
	for _, run := range rs {
		row := s.row(run)
		if row.Live {
			d.LiveCount++
		}
		d.Rows = append(d.Rows, row)
	}
	if q.Page > 1 {
		d.Prev = q.URL("page", strconv.Itoa(q.Page-1))
		if q.Page == 2 {
			d.Prev = q.URL("page", "")
		}
	}
	if more {
		d.Next = q.URL("page", strconv.Itoa(q.Page+1))
	}
	d.From = (q.Page-1)*s.cfg.PageSize + 1
	d.To = d.From + len(rs) - 1
	s.page(w, "list", pageData{Title: "runs", Nav: "runs", Data: d})
}

// rowFragment is one row of the list, which a live row polls for.
func (s *Server) rowFragment(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.render(w, "row", s.row(run))
}
