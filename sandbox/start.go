package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// Starter is a Runner that can start a run's command before its files are
// known, so that what the command does before it needs them (starting an
// interpreter, importing a test framework) is off the critical path of the
// candidate it will serve. The Runner that New returns is one.
type Starter interface {
	Runner
	// Start prepares the sandbox of s (its workspace, staged Mounts,
	// HOME, report directory, Caches) and starts its command at once.
	// s.Files must be empty (they come with Started.Run), and s.Layer and
	// s.Keep unset. The command gets one more descriptor after
	// s.ExtraFiles (3+len(s.ExtraFiles)), the gate: it must read one byte
	// from it before it reads the workspace, which until then holds only
	// the Mounts; end of file there means it is not needed and must exit.
	// The command lives until its Run ends, Close, or ctx is done. Start
	// returns once the command's process holds its descriptors: the
	// caller may close its copies of s.ExtraFiles then.
	Start(ctx context.Context, s Spec) (*Started, error)
}

// Started is a run whose command is waiting at its gate. It serves exactly
// one Run: one sandbox, one process tree, one workspace, never shared.
type Started struct {
	rn   *pending
	mu   sync.Mutex
	used bool
}

// Start implements Starter.
func (r *runner) Start(ctx context.Context, s Spec) (*Started, error) {
	switch {
	case len(s.Files) > 0:
		return nil, errors.New("sandbox: Start takes no files: they are written by Started.Run")
	case s.Layer != nil || s.Keep:
		return nil, errors.New("sandbox: Start does not take Layer or Keep")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rn, err := r.prepareRun(ctx, s, true)
	if err != nil {
		return nil, err
	}
	rn.launch()
	// The caller may close its copies of s.ExtraFiles once the command
	// holds them; a backend that failed before it did has returned.
	select {
	case <-rn.j.forked:
	case <-rn.done:
		select {
		case <-rn.j.forked: // it started, and ended already: Run says how
		default:
			rn.cleanup()
			return nil, cmp.Or(rn.err, errors.New("sandbox: the command ended before it started"))
		}
	}
	return &Started{rn: rn}, nil
}

// Run writes files into the workspace, opens the gate and waits for the
// command, whose wall-clock limit (wall, or the Spec's when zero) counts
// from now; it returns what Runner.Run would have for the Spec with these
// Files. Everything Runner.Run checks is checked from the gate on: the
// files are judged for shadowing before it opens, names created after it
// are watched, the disk limit holds from it. The CPU time the command
// spent before the gate counts against Limits.CPU. A Started runs once.
func (st *Started) Run(ctx context.Context, files map[string][]byte, wall time.Duration) (Result, error) {
	st.mu.Lock()
	used := st.used
	st.used = true
	st.mu.Unlock()
	if used {
		return Result{}, errors.New("sandbox: a Started run serves one Run")
	}
	rn := st.rn
	defer rn.cleanup()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	s := rn.s
	s.Files = files
	names, _, err := validate(s)
	if err != nil {
		return Result{}, err
	}
	names = rn.ws.unguarded(names)
	if err := rn.ws.writeFiles(names, s); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	rn.s = s
	if wall <= 0 {
		wall = rn.lim.Wall
	}
	rn.begin(ctx, wall)
	// A command that died before its gate gets the byte into a pipe no
	// one reads; finish reads how it ended.
	rn.gate.Write([]byte{1})
	rn.gate.Close()
	return rn.finish(ctx)
}

// Close ends a Started that was not Run: its command sees end of file at
// the gate and is killed, and its files are removed. After Run it does
// nothing.
func (st *Started) Close() {
	st.mu.Lock()
	used := st.used
	st.used = true
	st.mu.Unlock()
	if used {
		return
	}
	st.rn.gate.Close()
	st.rn.cancel()
	<-st.rn.done
	st.rn.cleanup()
}

// unguarded drops the names that lie in an empty __pycache__ guard (the
// mount points are refused by validate): prepare's rule, that no bytecode
// is supplied next to mounted tests, for files written after it.
func (w *workspace) unguarded(names []string) []string {
	out := names[:0:0]
	for _, name := range names {
		guarded := false
		for _, g := range w.guards {
			if g.pycache && (name == g.rel || strings.HasPrefix(name, g.rel+"/")) {
				guarded = true
				w.notes = append(w.notes, path.Clean(g.rel)+": bytecode cache supplied next to mounted tests (removed)")
				break
			}
		}
		if !guarded {
			out = append(out, name)
		}
	}
	return out
}

var _ Starter = (*runner)(nil)
