package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/sim"
)

func TestSimJSON(t *testing.T) {
	args := []string{"sim", "--json", "--trials", "60", "--n", "3,1", "--p", "0.9", "--recall", "1", "--retries", "2", "--k", "1", "--seed", "4"}
	c := run(t, nil, args...)
	c.wantCode(t, exitDone)
	var got struct {
		sim.Report
		Reading string `json:"reading"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON report: %v\n%v", err, c)
	}
	cfg := got.Config
	if cfg.P != 0.9 || cfg.Recall != 1 || cfg.Retries != 2 || cfg.K != 1 || cfg.Trials != 60 || cfg.Seed != 4 {
		t.Errorf("flags not applied: %+v", cfg)
	}
	if len(got.Rows) != 2 || got.Rows[0].N != 1 || got.Rows[1].N != 3 {
		t.Fatalf("rows %+v, want n = 1 then 3", got.Rows)
	}
	for _, row := range got.Rows {
		if len(row.Stats) != len(sim.Policies) {
			t.Fatalf("n=%d: %d policies, want %d", row.N, len(row.Stats), len(sim.Policies))
		}
		for _, s := range row.Stats {
			if s.Successes+s.Silent+s.Halted != 60 {
				t.Errorf("n=%d %s: %+v does not add up to 60 trials", row.N, s.Policy, s)
			}
		}
	}
	if !strings.Contains(got.Reading, "n=3") {
		t.Errorf("reading %q does not speak of the longest chain", got.Reading)
	}
	// The CLI is the library: the same config gives the same report.
	want, err := sim.Run(t.Context(), got.Config)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Report); diff != "" {
		t.Errorf("CLI report differs from sim.Run (-run +cli):\n%s", diff)
	}
	if again := run(t, nil, args...); again.stdout != c.stdout {
		t.Error("the same flags printed a different report")
	}
}

func TestSimTable(t *testing.T) {
	c := run(t, nil, "sim", "--trials", "40", "--n", "2,5")
	c.wantCode(t, exitDone)
	for _, want := range []string{"p^n", "unchecked", "fixed-retries(R=3)", "always-sample(k=2)", "confidence<0.8(k=2)", "cost/success", "With nothing checking"} {
		if !strings.Contains(c.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, c.stdout)
		}
	}
	for line := range strings.SplitSeq(c.stdout, "\n") {
		if len([]rune(line)) > 120 {
			t.Errorf("line of %d columns: %q", len([]rune(line)), line)
		}
	}
}

func TestSimUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--p", "1.5"},
		{"sim", "--n", "5,x"},
		{"sim", "--n", "0"},
		{"sim", "--k", "0"},
		{"sim", "--retries", "-1"},
		{"sim", "--call-cost", "-1"},
		{"sim", "extra"},
		{"sim", "--nope"},
	} {
		c := run(t, nil, args...)
		c.wantCode(t, exitUsage)
		if c.stdout != "" || c.stderr == "" {
			t.Errorf("%v: want a message on stderr only, got %v", args, c)
		}
	}
	run(t, nil, "sim", "-h").wantCode(t, exitDone)
}
