package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/taskfile"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/strength"
)

// checkStrength measures how strong a task's checks are, on mutants of
// its reference solution: for verify --strength, min_strength and evals.
type checkStrength struct{ *Main }

// strengthCache is where measured check strengths are kept:
// $XDG_CACHE_HOME/ratchet/strength, XDG_CACHE_HOME defaulting to ~/.cache.
func (m checkStrength) strengthCache() (strength.Cache, error) {
	dir := m.Getenv("XDG_CACHE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return strength.Cache{}, fmt.Errorf("strength cache: %w (set XDG_CACHE_HOME)", err)
		}
		dir = filepath.Join(home, ".cache")
	}
	return strength.Cache{Dir: filepath.Join(dir, "ratchet", "strength")}, nil
}

// gateChecks are the checks that decide done, in the order they run.
func gateChecks(t verify.Tiers) []verify.Verifier {
	return append(slices.Clone(t.Cheap), t.Expensive...)
}

// measureStrength measures the strength of tf's gate checks with the
// reference at refPath and stores it in the cache. With useCache, a stored
// measurement under the same key is returned instead (cached true).
func (m checkStrength) measureStrength(ctx context.Context, tf *taskfile.File, tiers verify.Tiers, refPath string, parallel int, useCache bool) (rep strength.Report, cached bool, err error) {
	ref, err := os.ReadFile(refPath)
	if err != nil {
		return strength.Report{}, false, fmt.Errorf("reference: %w", err)
	}
	digest, err := tf.ChecksDigest()
	if err != nil {
		return strength.Report{}, false, err
	}
	key := strength.CacheKey(digest, ref)
	cache, cacheErr := m.strengthCache()
	if useCache && cacheErr == nil {
		if rep, ok, err := cache.Load(key); err == nil && ok {
			return rep, true, nil
		}
	}
	name := tf.Artifact
	if name == "" {
		name = filepath.Base(refPath)
	}
	rep, err = strength.Measure(ctx, strength.Config{Filename: name, Reference: ref, Checks: gateChecks(tiers), Parallel: parallel})
	if err != nil {
		return strength.Report{}, false, err
	}
	if rep.Errors == 0 && cacheErr == nil {
		// A measurement with errors is not kept: it would stand for good.
		if err := cache.Store(key, rep); err != nil {
			fmt.Fprintf(m.Stderr, "ratchet: could not cache the strength measurement: %v\n", err)
		}
	}
	return rep, false, nil
}

// requireStrength refuses a task whose checks are weaker than its
// min_strength, measuring them once (then from the cache).
func (m checkStrength) requireStrength(ctx context.Context, tf *taskfile.File, tiers verify.Tiers) error {
	cache, _ := m.strengthCache()
	fmt.Fprintf(m.Stderr, "ratchet: %s asks for min_strength %.2f; measuring the checks on mutants of %s (cached in %s)\n",
		tf.Path, tf.MinStrength, filepath.Base(tf.Reference), cache.Dir)
	rep, cached, err := m.measureStrength(ctx, tf, tiers, tf.Reference, 0, true)
	if err != nil {
		return fmt.Errorf("%s: min_strength: %w", tf.Path, err)
	}
	if rep.Errors > 0 {
		return fmt.Errorf("%s: min_strength: %d mutants could not be checked (ratchet verify --strength %s shows why)", tf.Path, rep.Errors, tf.Path)
	}
	if rep.Score >= tf.MinStrength {
		from := "measured in " + rep.Duration.Round(time.Millisecond).String()
		if cached {
			from = "from the cache"
		}
		fmt.Fprintf(m.Stderr, "ratchet: check strength %.3f ≥ %.2f (%d of %d mutants killed; %s)\n", rep.Score, tf.MinStrength, rep.Killed, rep.Killed+rep.Survived, from)
		return nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: the checks are weaker than min_strength %.2f: mutation score %.3f, %d of %d mutants of %s killed; these pass every gate check:\n",
		tf.Path, tf.MinStrength, rep.Score, rep.Killed, rep.Killed+rep.Survived, filepath.Base(tf.Reference))
	printSurvivors(&sb, rep, 5)
	fmt.Fprintf(&sb, "strengthen the tests until they reject these (ratchet verify --strength %s shows every one)", tf.Path)
	return fmt.Errorf("%s", sb.String())
}

// strengthMemo measures each eval case's check strength once per suite run
// (its repeats load concurrently), through the cache.
type strengthMemo struct {
	m      checkStrength
	mu     sync.Mutex
	byCase map[string]*strengthOnce
}

type strengthOnce struct {
	once  sync.Once
	score *float64
	err   error
}

// get returns the case's check strength, nil when its task names no
// reference; an error when the reference fails its checks, or the checks
// are weaker than the task's min_strength.
func (s *strengthMemo) get(ctx context.Context, name string, tf *taskfile.File, tiers verify.Tiers) (*float64, error) {
	if tf.Reference == "" {
		return nil, nil
	}
	s.mu.Lock()
	o := s.byCase[name]
	if o == nil {
		o = &strengthOnce{}
		s.byCase[name] = o
	}
	s.mu.Unlock()
	o.once.Do(func() {
		if tf.MinStrength > 0 {
			o.err = s.m.requireStrength(ctx, tf, tiers)
		}
		if o.err != nil {
			return
		}
		rep, _, err := s.m.measureStrength(ctx, tf, tiers, tf.Reference, 0, true)
		if err != nil {
			o.err = fmt.Errorf("check strength: %w", err)
			return
		}
		o.score = &rep.Score
	})
	return o.score, o.err
}

// printSurvivors prints up to limit surviving mutants as diffs (0: all).
func printSurvivors(w io.Writer, rep strength.Report, limit int) {
	s := rep.Surviving()
	for i, r := range s {
		if limit > 0 && i == limit {
			fmt.Fprintf(w, "  … and %d more\n", len(s)-limit)
			break
		}
		fmt.Fprintf(w, "  #%d line %d, %s (%s):\n", r.ID, r.Line, r.Kind, r.Description)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(r.Diff, "\n"), "\n") {
			fmt.Fprintf(w, "    %s", strings.TrimSuffix(l, "\n")+"\n")
		}
	}
}

func (m checkStrength) printStrength(tf *taskfile.File, refPath string, rep strength.Report) {
	w := m.Stdout
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, refPath); err == nil && !strings.HasPrefix(rel, "..") {
			refPath = rel
		}
	}
	fmt.Fprintf(w, "check strength of %s on mutants of %s (%s):\n", tf.Path, refPath, rep.Language)
	fmt.Fprintf(w, "  mutation score %.3f: %d of %d mutants killed, %d survived\n", rep.Score, rep.Killed, rep.Killed+rep.Survived, rep.Survived)
	fmt.Fprintf(w, "  %d equivalent (not scored); dropped before running: %d stillborn (do not compile), %d duplicates\n", rep.Equivalent, rep.Stillborn, rep.Duplicates)
	if rep.Errors > 0 {
		fmt.Fprintf(w, "  %d mutants could not be checked (not scored)\n", rep.Errors)
	}
	fmt.Fprintf(w, "  took %s, %d at once (the reference's checks: %s)\n", rep.Duration.Round(time.Millisecond), rep.Parallel, rep.Reference.Round(time.Millisecond))
	if rep.Survived > 0 {
		fmt.Fprintln(w, "surviving mutants (bugs every gate check accepts):")
		printSurvivors(w, rep, 0)
	}
	var eq, errs []string
	for _, r := range rep.Results {
		switch r.Status {
		case strength.Equivalent:
			eq = append(eq, fmt.Sprintf("  #%d line %d, %s (%s)", r.ID, r.Line, r.Kind, r.Description))
		case strength.Errored:
			errs = append(errs, fmt.Sprintf("  #%d line %d: %s", r.ID, r.Line, oneLineDetail(r.Error)))
		}
	}
	if len(eq) > 0 {
		fmt.Fprintf(w, "equivalent mutants (behave as the reference: %s):\n%s\n", equivalentWhy(rep.Language), strings.Join(eq, "\n"))
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "mutants that could not be checked:\n%s\n", strings.Join(errs, "\n"))
	}
}

func equivalentWhy(lang string) string {
	if lang == "go" {
		return "the printed source is unchanged"
	}
	return "identical bytecode"
}
