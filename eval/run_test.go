package eval

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/observe"
)

const simSuite = `label: sim500
concurrency: 8
sim:
  - name: weak
    cases: 250
    p: 0.3
    recall: 0.8
    retries: 1
    policy: fixed-retries
  - name: strong
    cases: 250
    p: 0.9
    recall: 0.9
`

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Test500Sim runs a 500-case suite over the simulated models and checks the
// whole suite finishes in at most 60 s, is stored, and reads back.
//
//	go test -run Test500Sim -v ./eval/
func Test500Sim(t *testing.T) {
	dir := t.TempDir()
	s, err := ParseSuite([]byte(simSuite), filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Runs() != 500 {
		t.Fatalf("suite has %d runs, want 500", s.Runs())
	}
	st, err := OpenDir(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var progress bytes.Buffer
	start := time.Now()
	out, err := Run(context.Background(), s, Config{Store: st, Progress: &progress})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("500 sim runs, concurrency 8: %s", elapsed)
	if elapsed > 60*time.Second {
		t.Errorf("500 runs took %s, want at most 60s", elapsed)
	}
	if out.Ran != 500 || len(out.Records) != 500 || len(out.LoadErrors) != 0 {
		t.Fatalf("ran %d, records %d, load errors %v", out.Ran, len(out.Records), out.LoadErrors)
	}
	stored, err := ReadRecords(st.Path)
	if err != nil || len(stored) != 500 {
		t.Fatalf("stored %d records, err %v", len(stored), err)
	}
	sum := Summarize("sim500", stored)
	// The strong model must beat the weak one; both models are listed.
	if len(sum.Models) != 2 || sum.Models[0].Name != "sim:strong" ||
		sum.Models[0].Metrics.Success.P <= sum.Models[1].Metrics.Success.P {
		for _, g := range sum.Models {
			t.Errorf("model %s: success %+v", g.Name, g.Metrics.Success)
		}
	}
	if e := sum.Suite.Exhausted["steps"]; e.K == 0 {
		t.Errorf("no run of the weak model ran out of steps: %+v", sum.Suite.Exhausted)
	}
	if h := sum.Suite.HoldoutPass; h.N == 0 || h.P == 1 {
		// Recall < 1 lets some wrong answers through: the truthful holdout
		// must catch some of them.
		t.Errorf("holdout pass %+v: want some accepted answers and some overfit", h)
	}
	if !strings.Contains(progress.String(), "500/500 runs") {
		t.Errorf("progress lacks the final count:\n%s", progress.String())
	}
	// Every record's log replays as a log: it opens with the run's spec.
	f, err := os.Open(filepath.Join(st.Path, stored[0].Log))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := observe.ReadJSONL(f)
	if err != nil || len(recs) == 0 || recs[0].Kind != observe.KindRun {
		t.Errorf("log %s: %d records, err %v", stored[0].Log, len(recs), err)
	}
}

// TestResume stops a suite part-way and checks that a second run does only
// the rest, and that the records match an uninterrupted run's.
func TestResume(t *testing.T) {
	suite := "label: r\nrepeats: 2\nconcurrency: 3\nsim:\n  - name: s\n    cases: 20\n    p: 0.7\n"
	dir := t.TempDir()
	s, err := ParseSuite([]byte(suite), filepath.Join(dir, "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Interrupt after 15 stored runs.
	st, err := OpenDir(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopper := &stopAfter{Store: st, n: 15, cancel: cancel}
	out1, err := Run(ctx, s, Config{Store: stopper})
	if err == nil {
		t.Fatal("interrupted run returned no error")
	}
	st.Close()
	if out1.Ran < 15 || out1.Ran >= 40 {
		t.Fatalf("first run made %d runs", out1.Ran)
	}
	// A cut-short line must not count: append half a record.
	rf, _ := os.OpenFile(filepath.Join(dir, "a", ResultsFile), os.O_APPEND|os.O_WRONLY, 0)
	rf.WriteString(`{"case":"s/1","repeat":1,"result":{"sta`)
	rf.Close()

	st2, err := OpenDir(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	out2, err := Run(context.Background(), s, Config{Store: st2})
	if err != nil {
		t.Fatal(err)
	}
	if out2.Resumed != out1.Ran || out2.Ran != 40-out1.Ran || len(out2.Records) != 40 {
		t.Errorf("resume: resumed %d (want %d), ran %d (want %d), records %d", out2.Resumed, out1.Ran, out2.Ran, 40-out1.Ran, len(out2.Records))
	}
	// A pair written twice reads back once, as the later record.
	dup := resumed(t, filepath.Join(dir, "a"))[0]
	dup.Wall = 42
	if err := st2.Put(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	if rs := resumed(t, filepath.Join(dir, "a")); len(rs) != 40 || rs[0].Wall != 42 {
		t.Errorf("after a duplicate: %d records, first wall %v", len(rs), rs[0].Wall)
	}
	// A third run has nothing to do.
	out3, err := Run(context.Background(), s, Config{Store: st2})
	if err != nil || out3.Ran != 0 || out3.Resumed != 40 {
		t.Errorf("third run: ran %d, resumed %d, err %v", out3.Ran, out3.Resumed, err)
	}

	// The same suite uninterrupted gives the same outcomes per (case,
	// repeat): seeds depend on the pair only.
	st3, err := OpenDir(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer st3.Close()
	full, err := Run(context.Background(), s, Config{Store: st3})
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(rs []Record) map[Key]string {
		m := map[Key]string{}
		for _, r := range rs {
			m[r.Key()] = string(r.Result.Status) + " " + r.Result.Best.Answer
		}
		return m
	}
	if diff := cmp.Diff(outcome(full.Records), outcome(resumed(t, filepath.Join(dir, "a")))); diff != "" {
		t.Errorf("resumed outcomes differ from an uninterrupted run (-full +resumed):\n%s", diff)
	}
}

func resumed(t *testing.T, dir string) []Record {
	t.Helper()
	rs, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// stopAfter cancels after n records are stored.
type stopAfter struct {
	Store
	n      int
	cancel func()
	mu     sync.Mutex
	put    int
}

func (s *stopAfter) Put(ctx context.Context, r Record) error {
	if err := s.Store.Put(ctx, r); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put++
	if s.put == s.n {
		s.cancel()
	}
	return nil
}

// BenchmarkSuite500 runs the 500-case sim suite (event logs and fsynced
// records included), one suite per iteration:
//
//	go test -run '^$' -bench Suite500 -benchtime 5x ./eval/
func BenchmarkSuite500(b *testing.B) {
	s, err := ParseSuite([]byte(simSuite), "suite.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		st, err := OpenDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out, err := Run(context.Background(), s, Config{Store: st})
		if err != nil || out.Ran != 500 {
			b.Fatalf("ran %d: %v", out.Ran, err)
		}
		st.Close()
	}
}
