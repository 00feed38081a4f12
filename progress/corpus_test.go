package progress_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/progress"
)

// trajectory is one labelled entry of testdata/trajectories.yaml.
type trajectory struct {
	Name  string `yaml:"name"`
	Stall bool   `yaml:"stall"`
	Onset int    `yaml:"onset"`
	// KnownMiss says why the detector misses this stall.
	KnownMiss string `yaml:"known_miss"`
	Config    struct {
		Waits    []string `yaml:"waits"`
		MaxWaits int      `yaml:"max_waits"`
	} `yaml:"config"`
	Steps []struct {
		call    `yaml:",inline"`
		Calls   []call `yaml:"calls"`
		Attempt *struct {
			Failing   []string `yaml:"failing"`
			Candidate string   `yaml:"candidate"`
		} `yaml:"attempt"`
		Malformed string `yaml:"malformed"`
	} `yaml:"steps"`
}

type call struct {
	Tool   string         `yaml:"tool"`
	Args   map[string]any `yaml:"args"`
	Result string         `yaml:"result"`
}

func (c call) progress(t *testing.T) progress.Call {
	args, err := json.Marshal(c.Args)
	if err != nil {
		t.Fatal(err)
	}
	return progress.Call{Tool: c.Tool, Args: args, Result: c.Result}
}

// observations turns tr's steps into what the loop would observe.
func (tr trajectory) observations(t *testing.T) []progress.Observation {
	var out []progress.Observation
	for i, s := range tr.Steps {
		var o progress.Observation
		switch {
		case s.Attempt != nil:
			o = progress.Observation{Kind: progress.Attempt, Failing: s.Attempt.Failing, Candidate: s.Attempt.Candidate}
		case s.Malformed != "":
			o = progress.Observation{Kind: progress.Malformed, Problem: s.Malformed}
		case s.Tool != "":
			o = progress.Observation{Kind: progress.Action, Calls: []progress.Call{s.call.progress(t)}}
		case len(s.Calls) > 0:
			o = progress.Observation{Kind: progress.Action}
			for _, c := range s.Calls {
				o.Calls = append(o.Calls, c.progress(t))
			}
		default:
			t.Fatalf("%s: step %d is empty", tr.Name, i+1)
		}
		out = append(out, o)
	}
	return out
}

// fires runs tr through a monitor as the loop's ladder does (see
// loop/ladder.go: observe, and reset after every fire) and returns the steps,
// from 1, at which it fired.
func (tr trajectory) fires(t *testing.T) []int {
	m := progress.NewMonitor(progress.Config{Waits: tr.Config.Waits, MaxWaits: tr.Config.MaxWaits})
	var at []int
	for i, o := range tr.observations(t) {
		if m.See(progress.DefaultKey(o), o) != progress.None {
			at = append(at, i+1)
			m.Reset()
		}
	}
	return at
}

// score is the detector's record on a corpus.
type score struct {
	stalls, legit   int
	caught, early   int // stalls caught at or after their onset; fires before it
	falseStalls     int // legitimate trajectories that fired
	latency         int // steps from onset to the catch, summed over the caught
	missed, falseAt []string
}

func (s score) precision() float64 {
	if s.caught+s.early+s.falseStalls == 0 {
		return 1
	}
	return float64(s.caught) / float64(s.caught+s.early+s.falseStalls)
}

func (s score) recall() float64 { return float64(s.caught) / float64(s.stalls) }

// add scores one trajectory that fired at the steps in at.
func (s *score) add(tr trajectory, at []int) {
	if !tr.Stall {
		s.legit++
		if len(at) > 0 {
			s.falseStalls++
			s.falseAt = append(s.falseAt, fmt.Sprintf("%s (step %d)", tr.Name, at[0]))
		}
		return
	}
	s.stalls++
	for _, step := range at {
		if step >= tr.Onset {
			s.caught++
			s.latency += step - tr.Onset
			return
		}
		s.early++
	}
	s.missed = append(s.missed, tr.Name)
}

func TestScore(t *testing.T) {
	stall := trajectory{Name: "s", Stall: true, Onset: 3}
	legit := trajectory{Name: "l"}
	var s score
	s.add(stall, []int{3})    // caught at onset
	s.add(stall, []int{2, 5}) // one early fire, then caught 2 steps late
	s.add(stall, nil)         // missed
	s.add(stall, []int{1})    // only early: a false alarm and a miss
	s.add(legit, nil)
	s.add(legit, []int{4}) // a false stall
	if s.stalls != 4 || s.legit != 2 || s.caught != 2 || s.early != 2 || s.falseStalls != 1 || s.latency != 2 {
		t.Fatalf("score = %+v", s)
	}
	if got, want := s.recall(), 0.5; got != want {
		t.Errorf("recall = %v, want %v", got, want)
	}
	if got, want := s.precision(), 2.0/5; got != want {
		t.Errorf("precision = %v, want %v", got, want)
	}
}

// TestStallCorpus measures stall detection on a labelled corpus of genuine
// stalls and legitimate waiting, retrying and iterating (docs/progress.md
// quotes its figures): recall at least 0.95 and no false stall.
func TestStallCorpus(t *testing.T) {
	data, err := os.ReadFile("testdata/trajectories.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var corpus []trajectory
	if err := yaml.Unmarshal(data, &corpus); err != nil {
		t.Fatal(err)
	}
	var s score
	for _, tr := range corpus {
		if tr.Stall && tr.Onset < 1 {
			t.Fatalf("%s: a stall needs its onset", tr.Name)
		}
		at := tr.fires(t)
		s.add(tr, at)
		if caught := slices.ContainsFunc(at, func(step int) bool { return step >= tr.Onset }); tr.Stall && caught == (tr.KnownMiss != "") {
			t.Errorf("%s: caught %v, but known_miss is %q", tr.Name, caught, tr.KnownMiss)
		}
	}
	t.Logf("%d stalls, %d legitimate: recall %.2f, precision %.2f, %d false stalls, mean latency %.1f steps after onset",
		s.stalls, s.legit, s.recall(), s.precision(), s.falseStalls, float64(s.latency)/float64(max(s.caught, 1)))
	if s.recall() < 0.95 {
		t.Errorf("recall %.2f is below 0.95; missed:\n  %s", s.recall(), strings.Join(s.missed, "\n  "))
	}
	if s.falseStalls > 0 || s.early > 0 {
		t.Errorf("%d false stalls and %d fires before a stall's onset:\n  %s", s.falseStalls, s.early, strings.Join(s.falseAt, "\n  "))
	}
}
