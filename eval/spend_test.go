package eval

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
)

func TestPurse(t *testing.T) {
	p := &purse{cap: 120, slots: 3}
	steps := []struct {
		own, want budget.Micros
		fails     bool
	}{
		{30, 30, false},               // its own limit, under its share (40)
		{budget.Unlimited, 45, false}, // its share: 90 left, two slots free
		{50, 45, false},               // the last slot: the rest
		{10, 0, true},                 // nothing left in flight
	}
	var granted []budget.Micros
	for i, s := range steps {
		g, err := p.grant(s.own)
		if (err != nil) != s.fails || g != s.want {
			t.Fatalf("grant %d (own %d) = %d, %v; want %d, fails %v", i, s.own, g, err, s.want, s.fails)
		}
		granted = append(granted, g)
	}
	p.settle(granted[0], 25) // spent 25 of its 30: 5 comes back
	if g, err := p.grant(50); err != nil || g != 5 {
		t.Errorf("after settling: grant = %d, %v; want 5", g, err)
	}
}

// TestSuiteCostCap runs 500 simulated cases under a cap a few dozen runs
// can spend, 8 at once: the suite spends at most the cap plus one call per
// run in flight, and the runs left without a grant are named, not run.
func TestSuiteCostCap(t *testing.T) {
	dir := t.TempDir()
	s, err := ParseSuite([]byte(simSuite+"budget: {cost: 0.25}\n"), filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Cost != budget.USD(0.25) {
		t.Fatalf("suite cost cap %d", s.Cost)
	}
	st, err := OpenDir(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out, err := Run(context.Background(), s, Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	var spent budget.Micros
	for _, r := range out.Records {
		spent += r.Result.Usage.Cost
	}
	// One generator call and one check, the most a run spends past its grant.
	const oneCall = 3000 + 1000
	t.Logf("ran %d, not started %d, spent %s of %s", out.Ran, len(out.NotStarted), spent, s.Cost)
	if limit := s.Cost + 8*oneCall; spent > limit {
		t.Errorf("spent %s, more than the cap plus one call per run in flight (%s)", spent, limit)
	}
	if out.Ran+len(out.NotStarted) != 500 || len(out.NotStarted) == 0 || out.Ran < 10 {
		t.Fatalf("ran %d and did not start %d of 500", out.Ran, len(out.NotStarted))
	}
	if !errors.Is(out.NotStarted[0], errNotStarted) {
		t.Errorf("not started: %v", out.NotStarted[0])
	}
	// Resumed, the spent cap starts nothing more.
	again, err := Run(context.Background(), s, Config{Store: st})
	if err != nil || again.Ran != 0 || again.Resumed != out.Ran {
		t.Errorf("resumed: ran %d, resumed %d, err %v", again.Ran, again.Resumed, err)
	}
}

// A suite's budget takes only cost, read as a task file's is.
func TestSuiteBudgetProblems(t *testing.T) {
	for data, want := range map[string]string{
		"budget: {steps: 3}\n":   `unknown field "steps" in suite budget`,
		"budget: {cost: lots}\n": "budget.cost must be an amount in US dollars",
		"budget: {cost: -5}\n":   "budget.cost must be an amount in US dollars",
	} {
		_, err := ParseSuite([]byte(simSuite+data), "suite.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", data, err, want)
		}
	}
	s, err := ParseSuite([]byte(simSuite+"budget: {cost: unlimited}\n"), "suite.yaml")
	if err != nil || s.Cost != 0 {
		t.Errorf("unlimited: cap %d, %v", s.Cost, err)
	}
}

// The report's spend names the runs past their own cost limit and by how
// much at most; an unlimited run is past nothing.
func TestOverLimit(t *testing.T) {
	limited := func(limit, spent budget.Micros) Record {
		r := run("c", "m", loop.Done, spent, 1, 1, 0)
		r.Result.Limits.Cost = limit
		return r
	}
	m := Compute([]Record{limited(100, 130), limited(100, 90), limited(200, 212), limited(budget.Unlimited, 500)})
	if m.Spend.OverLimit != 2 || m.Spend.MaxOverrun != 30 || m.Spend.Cost != 932 {
		t.Errorf("over %d by at most %d, spend %d; want 2, 30, 932", m.Spend.OverLimit, m.Spend.MaxOverrun, m.Spend.Cost)
	}
	var b strings.Builder
	Summarize("x", []Record{limited(100, 130)}).Markdown(&b, 0)
	if !strings.Contains(b.String(), "| runs past their cost limit | 1 run, by at most $0.000030 (the bound is one call's projected cost) |") {
		t.Errorf("report:\n%s", b.String())
	}
}
