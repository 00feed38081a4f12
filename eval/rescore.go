package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/verify"
)

// Rejected is the status of a rescored run that ended done but none of
// whose candidates passes the new checks: what the run would have done
// next needs the model, which a rescore never calls.
const Rejected loop.Status = "rejected"

// RescoreConfig says how to rescore a result set.
type RescoreConfig struct {
	// Checks returns the checks to judge rec's candidates with.
	Checks func(ctx context.Context, rec Record) (RescoreChecks, error)
	// Concurrency is how many records are judged at once (default
	// DefaultConcurrency).
	Concurrency int
}

// RescoreChecks are the checks one record's candidates are judged with.
type RescoreChecks struct {
	Tiers verify.Tiers
	// Keep carries the record over unchanged (a sim case, whose checks
	// are simulated with the run).
	Keep bool
	// LastOnly judges only the run's last attempt: the checks read a
	// workspace rebuilt as the run left it (an agent's, from its patch),
	// which is no earlier attempt's.
	LastOnly bool
	// Close, when set, releases what the checks hold (that workspace)
	// once the record is judged.
	Close func()
}

// RescoreOutcome is what Rescore did.
type RescoreOutcome struct {
	// Records are the rescored result set, in the order of the input.
	Records []Record
	// Rescored counts the records judged again, Kept those carried over,
	// Judged the candidates judged.
	Rescored, Kept, Judged int
	// Errors name the records that could not be rescored (no checks
	// found) and are not in Records.
	Errors []error
}

// Rescore judges every stored candidate of recs again with the checks
// cfg.Checks gives, as a run would have judged it, and returns the
// result set those checks would have made of the same candidates. No
// model is called (a grader's model is whatever cfg.Checks built it
// with).
//
// A run's attempts are taken in order, the alternatives sampled in one
// step as one round (each judged with the others as its peers): the cheap
// checks, then the expensive ones if every cheap check passed. The first
// round with a candidate passing every gate check ends the run done (the
// first such candidate accepted, its holdout checks run); later attempts
// are dropped, since the run would have stopped there. A run none of whose
// candidates passes keeps its status, unless it was done: then it is
// Rejected. Usage and limits are the run's as it ran. A check that could
// not run ends the record failed, naming it.
func Rescore(ctx context.Context, recs []Record, cfg RescoreConfig) (RescoreOutcome, error) {
	if cfg.Checks == nil {
		return RescoreOutcome{}, errors.New("eval: RescoreConfig.Checks is required")
	}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	out := make([]*Record, len(recs))
	errs := make([]error, len(recs))
	var kept, judged atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(conc, len(recs)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(recs) || ctx.Err() != nil {
					return
				}
				checks, err := cfg.Checks(ctx, recs[i])
				switch {
				case err != nil:
					errs[i] = fmt.Errorf("%s#%d: %w", recs[i].Case, recs[i].Repeat, err)
				case checks.Keep:
					r := recs[i]
					out[i] = &r
					kept.Add(1)
				default:
					r, n := rescoreOne(ctx, recs[i], checks.Tiers, checks.LastOnly)
					out[i] = &r
					judged.Add(int64(n))
				}
				if checks.Close != nil {
					checks.Close()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return RescoreOutcome{}, err
	}
	res := RescoreOutcome{Kept: int(kept.Load()), Judged: int(judged.Load())}
	for i := range recs {
		if errs[i] != nil {
			res.Errors = append(res.Errors, errs[i])
			continue
		}
		res.Records = append(res.Records, *out[i])
	}
	res.Rescored = len(res.Records) - res.Kept
	return res, nil
}

// rescoreOne judges rec's attempts with tiers; n counts the candidates
// judged.
func rescoreOne(ctx context.Context, rec Record, tiers verify.Tiers, lastOnly bool) (_ Record, n int) {
	old := rec.Result
	skipped := 0
	if lastOnly && len(old.Attempts) > 1 {
		skipped = len(old.Attempts) - 1
		old.Attempts = old.Attempts[skipped:]
	}
	res := loop.Result{Usage: old.Usage, Limits: old.Limits, Question: old.Question, Asked: old.Asked, Answered: old.Answered}
	rec.Tiers = map[string]verify.Tier{}
	for _, g := range []struct {
		t  verify.Tier
		vs []verify.Verifier
	}{{verify.Cheap, tiers.Cheap}, {verify.Expensive, tiers.Expensive}, {verify.Holdout, tiers.Holdout}} {
		for _, v := range g.vs {
			rec.Tiers[v.Name()] = g.t
		}
	}
	rec.Log, rec.Error = "", "" // the log is of the run, not of these verdicts
	winner := -1
	for start := 0; start < len(old.Attempts) && winner < 0; {
		end := start + 1
		for end < len(old.Attempts) && old.Attempts[end].Step == old.Attempts[start].Step {
			end++
		}
		round := old.Attempts[start:end]
		for i, a := range round {
			var peers []string
			for j, p := range round {
				if j != i {
					peers = append(peers, p.Answer)
				}
			}
			cand := verify.Candidate{Answer: a.Answer, Confidence: a.Confidence, Attempt: a.N, Peers: peers}
			got := loop.Attempt{N: a.N, Step: a.Step, Answer: a.Answer, Confidence: a.Confidence, Sample: a.Sample}
			n++
			ok, err := judge(ctx, tiers, cand, &got.Verdicts, verify.Cheap, verify.Expensive)
			if err != nil {
				return failed(rec, res, err), n
			}
			if ok && winner < 0 {
				winner = len(res.Attempts)
				if _, err := judge(ctx, tiers, cand, &got.Holdout, verify.Holdout); err != nil {
					return failed(rec, res, err), n
				}
				got.Accepted = true
			}
			got.Summary = rescoredSummary(got)
			res.Attempts = append(res.Attempts, got)
		}
		start = end
	}
	switch {
	case winner >= 0:
		res.Status, res.Best = loop.Done, &res.Attempts[winner]
		res.Reason = fmt.Sprintf("rescored: attempt %d passed every check", res.Best.N)
		res.SelfJudged = selfJudged(res.Best.Verdicts)
		if dropped := len(old.Attempts) - len(res.Attempts); dropped > 0 {
			res.Reason += fmt.Sprintf(" (the %d later attempts dropped: the run would have stopped there)", dropped)
		}
	case old.Status.IsDone():
		res.Status, res.Reason = Rejected, "rescored: no candidate passes the checks now; what the run would have done next needs the model"
		res.Best = furthest(res.Attempts)
	default:
		res.Status, res.Reason = old.Status, "rescored: no candidate passes the checks; the run ended as it did: "+old.Reason
		res.Best = furthest(res.Attempts)
	}
	if skipped > 0 {
		res.Reason += fmt.Sprintf(" (the %d earlier attempts not judged: only the workspace the run ended with is kept)", skipped)
	}
	rec.Result = res
	return rec, n
}

// judge runs the checks of the tiers in order, each tier only if every
// check of the ones before passed, appending the verdicts to *into; ok
// says at least one check ran and every one passed.
func judge(ctx context.Context, tiers verify.Tiers, cand verify.Candidate, into *[]verify.Verdict, order ...verify.Tier) (ok bool, err error) {
	byTier := map[verify.Tier][]verify.Verifier{verify.Cheap: tiers.Cheap, verify.Expensive: tiers.Expensive, verify.Holdout: tiers.Holdout}
	for _, t := range order {
		for _, v := range byTier[t] {
			verdict, err := v.Check(ctx, cand)
			if err != nil {
				return false, fmt.Errorf("check %s could not run on attempt %d: %w", v.Name(), cand.Attempt, err)
			}
			verdict.Check = v.Name()
			*into = append(*into, verdict)
		}
		if slices.ContainsFunc(*into, func(v verify.Verdict) bool { return !v.OK }) {
			return false, nil
		}
	}
	return len(*into) > 0, nil
}

func failed(rec Record, res loop.Result, err error) Record {
	res.Status, res.Reason = loop.Failed, "rescore: "+err.Error()
	rec.Result, rec.Error = res, err.Error()
	return rec
}

func selfJudged(vs []verify.Verdict) bool {
	for _, v := range vs {
		if v.Provenance != verify.Self {
			return false
		}
	}
	return len(vs) > 0
}

// furthest is the attempt with the most passing verdicts, the earliest
// on ties; nil when there is none.
func furthest(as []loop.Attempt) *loop.Attempt {
	best, most := -1, -1
	for i, a := range as {
		n := 0
		for _, v := range a.Verdicts {
			if v.OK {
				n++
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	if best < 0 {
		return nil
	}
	return &as[best]
}

func rescoredSummary(a loop.Attempt) string {
	if failing := a.Failing(); len(failing) > 0 {
		return fmt.Sprintf("attempt %d (rescored): failed %s", a.N, strings.Join(failing, ", "))
	}
	return fmt.Sprintf("attempt %d (rescored): passed every check", a.N)
}

// WriteRecords makes dir a result directory holding exactly recs,
// replacing its results.jsonl whole (a reader sees the old set or the
// new, never part of one).
func WriteRecords(dir string, recs []Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ResultsFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	d := &Dir{Path: dir, f: tmp}
	for _, r := range recs {
		if err := d.Put(context.Background(), r); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, ResultsFile))
}
