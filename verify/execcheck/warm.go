package execcheck

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/judge"
)

// A pytest check of `python -m pytest` starts its runs ahead of its
// candidates (when its Runner is a sandbox.Starter): each warm run is a
// fresh sandbox whose launcher has imported pytest and its plugins, while
// the workspace held only the tests, the sentinel and the launcher, and
// waits at its gate. A candidate takes one, the sandbox writes its files
// and opens the gate, and the tests run: starting Python and importing
// pytest (most of a check's time) are off the candidate's path. A warm run
// serves exactly one candidate, as a cold run does: its own sandbox,
// process tree, workspace, sentinel nonce and outcome stream; what the
// candidate's run leaves behind goes with it. In judge isolation the
// tests' line to the judge is made with the warm run and handed to the
// candidate's session (judge.Config.Channel), and the candidate's server
// is started ahead as well (judge.PythonWarm): a fresh sandbox waiting for
// the module it will import, the candidate's alone.

const (
	// warmAhead is how many runs a check keeps started ahead: when
	// candidates come back to back, one run starting while another is
	// taken does not finish importing in the time a check takes, two do.
	warmAhead = 2
	// warmIdle is how long a warm run waits for a candidate before it is
	// stopped, so that a check no longer used keeps no process.
	warmIdle = 2 * time.Minute
)

// warmSlots bounds the warm runs waiting in all the checks of this
// process: each keeps a process of the sandbox uid, which under the
// namespaces and unsafe backends counts against every run's Limits.Procs.
// A check that finds none free stops the one that has waited longest in
// another check (one no longer used, most likely).
var warmSlots = make(chan struct{}, 4)

// waiting are the warm runs waiting in any check, oldest first.
var waiting struct {
	mu   sync.Mutex
	runs []*warmRun
}

// claim makes the caller the owner of a waiting run, or says that its
// idle timer (which then owns it) or another claim came first; the owner
// uses or stops it and frees its slot.
func (w *warmRun) claim() bool {
	if !w.idle.Stop() {
		return false
	}
	waiting.mu.Lock()
	waiting.runs = slices.DeleteFunc(waiting.runs, func(o *warmRun) bool { return o == w })
	waiting.mu.Unlock()
	<-warmSlots
	return true
}

// evict stops the longest waiting run of a check other than p's, and
// says whether it freed a slot.
func evict(p *warmPool) bool {
	waiting.mu.Lock()
	var oldest *warmRun
	for _, w := range waiting.runs {
		if w.pool != p {
			oldest = w
			break
		}
	}
	waiting.mu.Unlock()
	if oldest == nil || !oldest.claim() {
		return false
	}
	go oldest.close()
	return true
}

// warmRun is one run started ahead.
type warmRun struct {
	st     *sandbox.Started
	plan   *plan
	stream *outcomeStream
	// In judge isolation: the tests' line to the judge (their descriptor
	// 3), and the candidate's server, started ahead too.
	channel *judge.Channel
	server  *judge.Warm
	// idle stops it when no candidate took it in warmIdle; pool is the
	// pool it waits in.
	idle *time.Timer
	pool *warmPool
}

// close releases what a candidate's check did not take over; the
// sentinel's and launcher's sources stay until the run is over, when the
// sandbox compares them with what ran.
func (w *warmRun) close() {
	w.st.Close()
	os.RemoveAll(w.plan.dir)
	w.stream.close()
	if w.channel != nil {
		w.channel.Close()
	}
	if w.server != nil {
		w.server.Close()
	}
}

type warmResult struct {
	run *warmRun
	err error
}

// warmPool keeps up to warmAhead warm runs ready (or starting).
type warmPool struct {
	c       *checker
	starter sandbox.Starter
	// ready holds started runs and failed starts, in the order they ended.
	ready    chan warmResult
	mu       sync.Mutex
	starting int // starts under way
}

// take returns a warm run for one candidate: a ready one, one still
// starting, or (when none is under way, or they failed) one started now.
func (p *warmPool) take(ctx context.Context) (*warmRun, error) {
	for {
		var r warmResult
		select {
		case r = <-p.ready:
		default:
			p.mu.Lock()
			waiting := p.starting > 0
			p.mu.Unlock()
			if !waiting {
				return p.c.startWarm(p.starter)
			}
			select {
			case r = <-p.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		switch {
		case r.err != nil:
			// An earlier start failed: start again, reporting its own
			// error if it fails too.
			return p.c.startWarm(p.starter)
		case r.run.claim():
			return r.run, nil
		}
		// It waited too long, or another check needed its slot, and was
		// stopped: the next.
	}
}

// fill starts runs until warmAhead are ready or starting, as far as
// warmSlots allows.
func (p *warmPool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.starting+len(p.ready) < warmAhead {
		select {
		case warmSlots <- struct{}{}:
		default:
			if !evict(p) {
				return
			}
			continue
		}
		p.starting++
		go func() {
			r, err := p.c.startWarm(p.starter)
			if err == nil {
				r.pool = p
				waiting.mu.Lock()
				r.idle = time.AfterFunc(warmIdle, func() {
					waiting.mu.Lock()
					waiting.runs = slices.DeleteFunc(waiting.runs, func(o *warmRun) bool { return o == r })
					waiting.mu.Unlock()
					r.close()
					<-warmSlots
				})
				waiting.runs = append(waiting.runs, r)
				waiting.mu.Unlock()
			} else {
				<-warmSlots
			}
			p.mu.Lock()
			p.starting--
			p.mu.Unlock()
			p.ready <- warmResult{r, err}
		}()
	}
}

// startWarm starts one run of the check ahead of its candidate.
func (c *checker) startWarm(st sandbox.Starter) (_ *warmRun, err error) {
	p, err := c.newPlan(true)
	if err != nil {
		return nil, err
	}
	w := &warmRun{plan: p}
	defer func() {
		if err != nil {
			os.RemoveAll(p.dir)
			if w.stream != nil {
				w.stream.close()
			}
			if w.channel != nil {
				w.channel.Close()
			}
			if w.server != nil {
				w.server.Close()
			}
		}
	}()
	if w.stream, err = newOutcomeStream(); err != nil {
		return nil, err
	}
	var extra []*os.File
	if c.cfg.Isolation == Judge {
		if w.channel, err = judge.NewChannel(); err != nil {
			return nil, err
		}
		extra = append(extra, w.channel.TestEnd())
		module := strings.TrimSuffix(c.cfg.Artifact, ".py")
		if w.server, err = judge.PythonWarm(st, module, c.python(), c.cfg.Env, c.cfg.Limits); err != nil {
			return nil, err
		}
	}
	extra = append(extra, w.stream.w)
	// The command lives as long as the warm run: not bound to the
	// candidate that had it started.
	w.st, err = st.Start(context.Background(), sandbox.Spec{
		Mounts: append(slices.Clone(c.cfg.Tests), p.mounts...), Command: c.command(p, len(extra), true),
		Env: c.cfg.Env, Limits: c.cfg.Limits, Report: true, ExtraFiles: extra,
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// checkWarm checks the candidate whose files are files in a warm run,
// with limits (of which only Wall may differ from the check's: the run's
// deadline).
func (c *checker) checkWarm(ctx context.Context, cand verify.Candidate, files map[string][]byte, limits sandbox.Limits) (verify.Verdict, error) {
	// The pool is topped up once the candidate is judged, not while its
	// tests run: starting a run ahead takes a core for 0.2 s.
	defer c.pool.fill()
	w, err := c.pool.take(ctx)
	if err != nil {
		return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
	}
	defer w.close()
	if c.cfg.Isolation == Judge {
		module := strings.TrimSuffix(c.cfg.Artifact, ".py")
		files[c.cfg.Artifact] = judge.Proxy(module)
		s, err := judge.Start(ctx, judge.Config{
			Runner: c.cfg.Runner, CallTimeout: c.cfg.CallTimeout, Channel: w.channel, Warm: w.server,
			Spec: judge.PythonSpec(module, []byte(cand.Answer), c.python(), c.cfg.Env, limits),
		})
		if err != nil {
			return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
		}
		w.channel, w.server = nil, nil // the session's now
		// The verdict is the tests' alone: the candidate's sandbox is
		// stopped, and its end awaited, off the candidate's path (10–20
		// ms, and more while other runs start).
		defer func() { go s.Close() }()
	}
	res, err := w.st.Run(ctx, files, limits.Wall)
	if err != nil {
		return verify.Verdict{}, fmt.Errorf("exec check %s: %w", c.cfg.Name, err)
	}
	return c.verdict(res, w.plan, w.stream)
}

// StopWarm stops every warm run waiting in this process's checks, so that
// a process about to exit leaves no sandbox behind (those of a process
// that was killed are swept by the next one). Runs still starting are not
// waited for.
func StopWarm() {
	waiting.mu.Lock()
	runs := slices.Clone(waiting.runs)
	waiting.mu.Unlock()
	for _, w := range runs {
		if w.claim() {
			w.close()
		}
	}
}
