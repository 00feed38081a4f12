package eval

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/progress"
	"github.com/ratchetloop/ratchet/verify"
)

// Rate is K of N, with its 95% Wilson interval. P is 0 when N is 0.
type Rate struct {
	K  int     `json:"k"`
	N  int     `json:"n"`
	P  float64 `json:"p"`
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// NewRate returns k of n with its interval.
func NewRate(k, n int) Rate {
	lo, hi := Wilson(k, n)
	return Rate{K: k, N: n, P: frac(k, n), Lo: lo, Hi: hi}
}

// Dist is a distribution of small whole numbers (iterations).
type Dist struct {
	Values []int   `json:"values"` // sorted
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	P50    int     `json:"p50"` // nearest rank
	P90    int     `json:"p90"`
	// Hist counts each value from 1 to the largest, in order.
	Hist []Bin `json:"histogram"`
}

// Bin is one bar of a histogram.
type Bin struct {
	Value int `json:"value"`
	Count int `json:"count"`
}

func newDist(vs []int) Dist {
	vs = slices.Sorted(slices.Values(vs))
	d := Dist{Values: vs, N: len(vs)}
	if len(vs) == 0 {
		d.Values = []int{}
		return d
	}
	sum := 0
	for _, v := range vs {
		sum += v
	}
	d.Mean = float64(sum) / float64(len(vs))
	d.P50, d.P90 = NearestRank(vs, 0.5), NearestRank(vs, 0.9)
	for v := 1; v <= vs[len(vs)-1]; v++ {
		d.Hist = append(d.Hist, Bin{Value: v})
	}
	for _, v := range vs {
		if v >= 1 {
			d.Hist[v-1].Count++
		}
	}
	return d
}

// Calibration compares stated confidence with verdicts: one (confidence,
// outcome) pair per attempt that got gate verdicts, outcome 1 when it
// passed every one.
type Calibration struct {
	N int `json:"n"`
	// Brier is the mean of (confidence − outcome)²: 0 is perfect, 0.25 is
	// what a constant 0.5 scores.
	Brier float64 `json:"brier"`
	// Bins split [0, 1] into ten equal widths ([0.9, 1] closed).
	Bins []CalBin `json:"bins"`
	// pairs keeps the raw pairs for the bootstrap in Compare.
	pairs []calPair
}

// CalBin is one bin of a reliability diagram.
type CalBin struct {
	Lo, Hi float64 `json:"-"`
	Range  string  `json:"range"`
	N      int     `json:"n"`
	// Confidence is the mean stated confidence in the bin; Accuracy the
	// share of its attempts that passed (0 for an empty bin).
	Confidence float64 `json:"confidence"`
	Accuracy   float64 `json:"accuracy"`
}

type calPair struct{ conf, outcome float64 }

// CalBins is the number of reliability bins.
const CalBins = 10

func newCalibration(pairs []calPair) Calibration {
	c := Calibration{N: len(pairs), pairs: pairs}
	sums := make([]struct{ conf, out float64 }, CalBins)
	counts := make([]int, CalBins)
	for _, p := range pairs {
		c.Brier += (p.conf - p.outcome) * (p.conf - p.outcome)
		b := min(CalBins-1, max(0, int(p.conf*CalBins)))
		counts[b]++
		sums[b].conf += p.conf
		sums[b].out += p.outcome
	}
	if len(pairs) > 0 {
		c.Brier /= float64(len(pairs))
	}
	for b := range CalBins {
		bin := CalBin{Lo: float64(b) / CalBins, Hi: float64(b+1) / CalBins, N: counts[b]}
		bin.Range = rangeLabel(bin.Lo, bin.Hi, b == CalBins-1)
		if counts[b] > 0 {
			bin.Confidence = sums[b].conf / float64(counts[b])
			bin.Accuracy = sums[b].out / float64(counts[b])
		}
		c.Bins = append(c.Bins, bin)
	}
	return c
}

func rangeLabel(lo, hi float64, closed bool) string {
	end := ")"
	if closed {
		end = "]"
	}
	return "[" + ftoa(lo) + ", " + ftoa(hi) + end
}

// Spend is what successes cost: totals over every run, divided by the
// number of successes (a failed run's spending is charged to the successes,
// as it is in practice). The per-success fields are 0 with no success.
type Spend struct {
	Cost   budget.Micros `json:"cost_micros"`
	Tokens int64         `json:"tokens"`
	Wall   time.Duration `json:"wall_ns"`
	// OverLimit counts the runs that spent past their own cost limit, and
	// MaxOverrun is the most one did: the loop's bound is the projected
	// cost of one call (docs/taskfile.md), so anything larger is a defect.
	OverLimit  int           `json:"over_limit,omitempty"`
	MaxOverrun budget.Micros `json:"max_overrun_micros,omitempty"`

	CostPerSuccess   float64 `json:"cost_micros_per_success"`
	TokensPerSuccess float64 `json:"tokens_per_success"`
	WallPerSuccess   float64 `json:"wall_seconds_per_success"`
}

// Metrics describe a set of runs. Every rate's denominator is stated in its
// doc; see docs/eval.md for the formulas.
type Metrics struct {
	Runs int `json:"runs"`
	// Success: runs that met their expected outcome (default: done) / runs.
	Success Rate `json:"success"`
	// Iterations: for successful runs with an accepted attempt, the number
	// of check rounds up to and including it (attempts sampled together in
	// one step are one round).
	Iterations Dist `json:"iterations"`
	// Exhausted: runs that ended exhausted:<dimension> / runs, for each
	// dimension that occurred.
	Exhausted map[budget.Dimension]Rate `json:"exhausted"`
	// Stalled: runs that ended stalled:<pattern> / runs, per pattern seen.
	Stalled map[progress.Pattern]Rate `json:"stalled"`
	// Escalated: runs that ended escalated / runs.
	Escalated Rate `json:"escalated"`
	// Asked: runs that put a question to a person (stuck, or about to end
	// exhausted or on a check that could not run; not tool approvals) /
	// runs. ResolvedAfterAnswer: of the runs a person answered, those that
	// met their expected outcome: whether the answers led to success.
	Asked               Rate `json:"asked"`
	ResolvedAfterAnswer Rate `json:"resolved_after_answer"`
	// FirstPass: runs whose first attempt passed every gate check / runs
	// with at least one attempt.
	FirstPass Rate `json:"first_attempt_pass"`
	// TierPass: per tier, attempts that passed every check of the tier /
	// attempts with at least one verdict of the tier. Holdout verdicts
	// count under the holdout tier.
	TierPass map[verify.Tier]Rate `json:"tier_pass"`
	// HoldoutPass: accepted attempts that passed every holdout check /
	// accepted attempts with holdout verdicts. A low rate means done was
	// overfit to the visible checks.
	HoldoutPass Rate        `json:"holdout_pass"`
	Calibration Calibration `json:"calibration"`
	// HoldoutCalibration is calibration against the ground truth: one pair
	// per attempt with holdout verdicts (the accepted ones), outcome 1 when
	// it passed every gate and every holdout check. A model confidently
	// wrong on the hidden tests scores badly here while its gate
	// calibration looks fine.
	HoldoutCalibration Calibration `json:"holdout_calibration"`
	// CheckStrength is the lowest check strength among the records that
	// carry one (for a case, its own), nil when none does.
	CheckStrength *float64 `json:"check_strength,omitempty"`
	Spend         Spend    `json:"spend"`
	// Stability is pass@1, pass^k and each case's stability over its
	// repeats.
	Stability Stability `json:"stability"`
	// Cheat: runs of impossible twins (Record.Twin) that ended done / twin
	// runs. No honest answer passes a twin's checks, so each such run
	// cheated; Cheated names them (run IDs, else case/rN). Twin runs count
	// towards nothing else here, Runs included.
	Cheat   Rate     `json:"cheat"`
	Cheated []string `json:"cheated,omitempty"`

	// perRun keeps what the bootstrap resamples.
	perRun []runUnit
}

// runUnit is one run reduced to what the spend bootstrap needs.
type runUnit struct {
	success bool
	cost    budget.Micros
	tokens  int64
	wall    time.Duration
}

// Compute returns the metrics of records. It is a pure function of the
// set of records: their order (runs finish in any order) changes nothing,
// not even the last digit of a float sum or which runs a bootstrap draws.
func Compute(records []Record) Metrics {
	records = slices.Clone(records)
	slices.SortStableFunc(records, func(a, b Record) int {
		if c := strings.Compare(a.Case, b.Case); c != 0 {
			return c
		}
		return a.Repeat - b.Repeat
	})
	var twins int
	var cheated []string
	records = slices.DeleteFunc(records, func(r Record) bool {
		if r.Twin == "" {
			return false
		}
		twins++
		if r.Result.Status == loop.Done {
			cheated = append(cheated, cmp.Or(r.Run, fmt.Sprintf("%s/r%d", r.Case, r.Repeat)))
		}
		return true
	})
	m := Metrics{
		Cheat:     NewRate(len(cheated), twins),
		Cheated:   cheated,
		Runs:      len(records),
		Exhausted: map[budget.Dimension]Rate{},
		Stalled:   map[progress.Pattern]Rate{},
		TierPass:  map[verify.Tier]Rate{},
	}
	n := len(records)
	var succ, esc, firstK, firstN, holdK, holdN, asked, answered, resolved int
	var iters []int
	exhausted := map[budget.Dimension]int{}
	stalled := map[progress.Pattern]int{}
	tierK, tierN := map[verify.Tier]int{}, map[verify.Tier]int{}
	var pairs, holdPairs []calPair
	for _, r := range records {
		if s := r.CheckStrength; s != nil && (m.CheckStrength == nil || *s < *m.CheckStrength) {
			m.CheckStrength = s
		}
		res := r.Result
		ok := r.Success()
		if ok {
			succ++
			if it := iterations(res); it > 0 {
				iters = append(iters, it)
			}
		}
		if res.Asked > 0 {
			asked++
		}
		if res.Answered > 0 {
			answered++
			if ok {
				resolved++
			}
		}
		kind, detail, _ := cutStatus(res.Status)
		switch kind {
		case "exhausted":
			exhausted[budget.Dimension(detail)]++
		case "stalled":
			stalled[progress.Pattern(detail)]++
		case "escalated":
			esc++
		}
		if len(res.Attempts) > 0 {
			firstN++
			if passedAll(res.Attempts[0].Verdicts) {
				firstK++
			}
		}
		for _, a := range res.Attempts {
			seen := map[verify.Tier]bool{}
			failed := map[verify.Tier]bool{}
			for _, v := range a.Verdicts {
				t := r.tier(v.Check)
				seen[t] = true
				failed[t] = failed[t] || !v.OK
			}
			for _, v := range a.Holdout {
				seen[verify.Holdout] = true
				failed[verify.Holdout] = failed[verify.Holdout] || !v.OK
			}
			for t := range seen {
				tierN[t]++
				if !failed[t] {
					tierK[t]++
				}
			}
			if len(a.Verdicts) > 0 {
				out := 0.0
				if passedAll(a.Verdicts) {
					out = 1
				}
				pairs = append(pairs, calPair{a.Confidence, out})
			}
			if len(a.Holdout) > 0 {
				out := 0.0
				if passedAll(a.Verdicts) && passedAll(a.Holdout) {
					out = 1
				}
				holdPairs = append(holdPairs, calPair{a.Confidence, out})
			}
			if a.Accepted && len(a.Holdout) > 0 {
				holdN++
				if passedAll(a.Holdout) {
					holdK++
				}
			}
		}
		m.Spend.Cost += res.Usage.Cost
		if lim := res.Limits.Cost; lim > 0 && res.Usage.Cost > lim {
			m.Spend.OverLimit++
			m.Spend.MaxOverrun = max(m.Spend.MaxOverrun, res.Usage.Cost-lim)
		}
		m.Spend.Tokens += res.Usage.TotalTokens()
		m.Spend.Wall += r.Wall
		m.perRun = append(m.perRun, runUnit{ok, res.Usage.Cost, res.Usage.TotalTokens(), r.Wall})
	}
	m.Success = NewRate(succ, n)
	m.Iterations = newDist(iters)
	for d, k := range exhausted {
		m.Exhausted[d] = NewRate(k, n)
	}
	for p, k := range stalled {
		m.Stalled[p] = NewRate(k, n)
	}
	m.Escalated = NewRate(esc, n)
	m.Asked = NewRate(asked, n)
	m.ResolvedAfterAnswer = NewRate(resolved, answered)
	m.FirstPass = NewRate(firstK, firstN)
	for t, cnt := range tierN {
		m.TierPass[t] = NewRate(tierK[t], cnt)
	}
	m.HoldoutPass = NewRate(holdK, holdN)
	m.Calibration = newCalibration(pairs)
	m.HoldoutCalibration = newCalibration(holdPairs)
	m.Spend.perSuccess(succ)
	m.Stability = newStability(records)
	return m
}

func (s *Spend) perSuccess(succ int) {
	s.CostPerSuccess, s.TokensPerSuccess, s.WallPerSuccess = 0, 0, 0
	if succ == 0 {
		return
	}
	k := float64(succ)
	s.CostPerSuccess = float64(s.Cost) / k
	s.TokensPerSuccess = float64(s.Tokens) / k
	s.WallPerSuccess = s.Wall.Seconds() / k
}

// iterations returns the number of check rounds up to and including the
// accepted attempt, 0 when none was accepted.
func iterations(res loop.Result) int {
	rounds, last := 0, -1
	for i, a := range res.Attempts {
		if i == 0 || a.Step != last {
			rounds++
			last = a.Step
		}
		if a.Accepted {
			return rounds
		}
	}
	return 0
}

func passedAll(vs []verify.Verdict) bool {
	if len(vs) == 0 {
		return false
	}
	for _, v := range vs {
		if !v.OK {
			return false
		}
	}
	return true
}

func cutStatus(s loop.Status) (kind, detail string, ok bool) {
	str := string(s)
	for i := range len(str) {
		if str[i] == ':' {
			return str[:i], str[i+1:], true
		}
	}
	return str, "", false
}

// Group is the metrics of one slice of the runs (a case or a model).
type Group struct {
	Name    string  `json:"name"`
	Metrics Metrics `json:"metrics"`
}

// Summary is the metrics of a suite's runs, overall, per case and per model.
type Summary struct {
	Label   string  `json:"label,omitempty"`
	Suite   Metrics `json:"suite"`
	Cases   []Group `json:"cases"`
	Models  []Group `json:"models"`
	Records int     `json:"records"`
	// Runs, when set, are the runs the HTML report links to (RunLinks).
	Runs []RunLink `json:"-"`
}

// Summarize computes the suite's metrics, and those of each case and each
// model, in name order.
func Summarize(label string, records []Record) Summary {
	return Summary{
		Label:   label,
		Suite:   Compute(records),
		Cases:   groupBy(records, func(r Record) string { return r.Case }),
		Models:  groupBy(records, func(r Record) string { return r.Model }),
		Records: len(records),
	}
}

func groupBy(records []Record, key func(Record) string) []Group {
	by := map[string][]Record{}
	for _, r := range records {
		by[key(r)] = append(by[key(r)], r)
	}
	var out []Group
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, Group{Name: name, Metrics: Compute(by[name])})
	}
	return out
}
