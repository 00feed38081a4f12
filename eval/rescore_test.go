package eval

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/verify"
)

// equals is a check that passes exactly want and records the peers it
// was shown.
func equals(name, want string, seen *sync.Map) verify.Verifier {
	return verify.Func{CheckName: name, Prov: verify.Validation, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		if seen != nil {
			seen.Store(c.Attempt, slices.Clone(c.Peers))
		}
		return verify.Verdict{OK: c.Answer == want, Confidence: 1}, nil
	}}
}

// attempts: a first try at step 1, two alternatives sampled at step 2,
// a last try at step 3 that the old checks accepted.
func storedRun() Record {
	return Record{Case: "c", Repeat: 0, Model: "m", Run: "s/c/r0", Log: "logs/c.r0.jsonl", Result: loop.Result{
		Status: loop.Done, Reason: "old",
		Attempts: []loop.Attempt{
			{N: 1, Step: 1, Answer: "a"},
			{N: 2, Step: 2, Answer: "b", Sample: true},
			{N: 3, Step: 2, Answer: "c", Sample: true},
			{N: 4, Step: 3, Answer: "d", Accepted: true},
		},
	}}
}

func rescore(t *testing.T, rec Record, tiers verify.Tiers) Record {
	t.Helper()
	out, err := Rescore(context.Background(), []Record{rec}, RescoreConfig{Checks: func(context.Context, Record) (RescoreChecks, error) { return RescoreChecks{Tiers: tiers}, nil }})
	if err != nil || len(out.Records) != 1 || len(out.Errors) != 0 {
		t.Fatalf("Rescore: %+v, %v", out, err)
	}
	return out.Records[0]
}

// A looser check accepts an alternative of step 2: the run ends there,
// done, its later attempt dropped; each alternative was judged with the
// other as its peer; the holdout check runs on the winner only.
func TestRescoreAcceptsEarlier(t *testing.T) {
	var seen sync.Map
	holdouts := 0
	hold := verify.Func{CheckName: "hold", Prov: verify.Execution, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		holdouts++
		return verify.Verdict{OK: c.Answer == "c"}, nil
	}}
	got := rescore(t, storedRun(), verify.Tiers{Cheap: []verify.Verifier{equals("is-c", "c", &seen)}, Holdout: []verify.Verifier{hold}})
	res := got.Result
	if res.Status != loop.Done || res.Best == nil || res.Best.N != 3 || !res.Best.Accepted {
		t.Fatalf("rescored: %s, best %+v", res.Status, res.Best)
	}
	if len(res.Attempts) != 3 || !strings.Contains(res.Reason, "1 later attempts dropped") {
		t.Errorf("attempts %d, reason %q", len(res.Attempts), res.Reason)
	}
	if holdouts != 1 || len(res.Best.Holdout) != 1 || !res.Best.Holdout[0].OK {
		t.Errorf("holdouts run %d times: %+v", holdouts, res.Best.Holdout)
	}
	if p, _ := seen.Load(2); !slices.Equal(p.([]string), []string{"c"}) {
		t.Errorf("attempt 2's peers: %v", p)
	}
	if p, _ := seen.Load(1); len(p.([]string)) != 0 {
		t.Errorf("attempt 1's peers: %v", p)
	}
	if got.Tiers["is-c"] != verify.Cheap || got.Tiers["hold"] != verify.Holdout || got.Log != "" || got.Run != "s/c/r0" {
		t.Errorf("record: tiers %v, log %q, run %q", got.Tiers, got.Log, got.Run)
	}
}

// Of two alternatives passing in one round, the first is accepted.
func TestRescoreAcceptsOne(t *testing.T) {
	either := verify.Func{CheckName: "b-or-c", Prov: verify.Validation, Fn: func(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
		return verify.Verdict{OK: c.Answer == "b" || c.Answer == "c"}, nil
	}}
	res := rescore(t, storedRun(), verify.Tiers{Cheap: []verify.Verifier{either}}).Result
	var accepted []int
	for _, a := range res.Attempts {
		if a.Accepted {
			accepted = append(accepted, a.N)
		}
	}
	if !slices.Equal(accepted, []int{2}) || res.Best.N != 2 {
		t.Errorf("accepted %v, best %d", accepted, res.Best.N)
	}
}

// A stricter check rejects every candidate of a done run: rejected. A run
// that was not done keeps its status. The expensive tier runs only on
// candidates passing every cheap check.
func TestRescoreRejects(t *testing.T) {
	expensive := 0
	exp := verify.Func{CheckName: "exp", Prov: verify.Execution, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
		expensive++
		return verify.Verdict{OK: false, Detail: "no"}, nil
	}}
	tiers := verify.Tiers{Cheap: []verify.Verifier{equals("not-a", "b", nil)}, Expensive: []verify.Verifier{exp}}
	got := rescore(t, storedRun(), tiers).Result
	if got.Status != Rejected || len(got.Attempts) != 4 || got.Best == nil || got.Best.N != 2 {
		t.Errorf("rescored: %s, %d attempts, best %+v", got.Status, len(got.Attempts), got.Best)
	}
	if expensive != 1 {
		t.Errorf("the expensive check ran %d times, want 1 (only b passes the cheap one)", expensive)
	}
	if slices.ContainsFunc(got.Attempts, func(a loop.Attempt) bool { return a.Accepted }) {
		t.Error("an attempt is accepted")
	}
	stalled := storedRun()
	stalled.Result.Status = loop.Stalled("repeating")
	if got := rescore(t, stalled, tiers).Result; got.Status != stalled.Result.Status {
		t.Errorf("a stalled run rescored %s", got.Status)
	}
}

// A check that cannot run fails the record, naming it; a record whose
// checks cannot be found is an error and not in the set; a kept record is
// as it was.
func TestRescoreErrors(t *testing.T) {
	broken := verify.Func{CheckName: "broken", Prov: verify.Execution, Fn: func(context.Context, verify.Candidate) (verify.Verdict, error) {
		return verify.Verdict{}, errors.New("no sandbox")
	}}
	recs := []Record{storedRun(), storedRun(), storedRun()}
	recs[1].Case, recs[2].Case = "lost", "sim"
	out, err := Rescore(context.Background(), recs, RescoreConfig{Checks: func(_ context.Context, r Record) (RescoreChecks, error) {
		switch r.Case {
		case "lost":
			return RescoreChecks{}, errors.New("no task")
		case "sim":
			return RescoreChecks{Keep: true}, nil
		}
		return RescoreChecks{Tiers: verify.Tiers{Cheap: []verify.Verifier{broken}}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0].Error(), "lost#0: no task") {
		t.Errorf("errors: %v", out.Errors)
	}
	if len(out.Records) != 2 || out.Kept != 1 || out.Rescored != 1 {
		t.Fatalf("outcome: %+v", out)
	}
	if r := out.Records[0]; r.Result.Status != loop.Failed || !strings.Contains(r.Error, "check broken could not run on attempt 1: no sandbox") {
		t.Errorf("broken: %s %q", r.Result.Status, r.Error)
	}
	if r := out.Records[1]; r.Case != "sim" || r.Result.Reason != "old" || r.Log == "" {
		t.Errorf("kept: %+v", r)
	}
}

// WriteRecords replaces a result set whole.
func TestWriteRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "set")
	a, b := storedRun(), storedRun()
	b.Case = "other"
	if err := WriteRecords(dir, []Record{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecords(dir, []Record{b}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecords(dir)
	if err != nil || len(got) != 1 || got[0].Case != "other" {
		t.Errorf("read back %+v, %v", got, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ResultsFile+".*")); len(m) != 0 {
		t.Errorf("left behind %v", m)
	}
}
