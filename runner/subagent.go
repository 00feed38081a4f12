package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
)

// Subagents lets the task's model start sub-agents with the
// spawn_subagent tool: child runs with their own goal, some of the task's
// tools and checks, and a budget carved from what the run has left (see
// loop.Subagents). A child is an ordinary run: its ID is the parent's ID,
// "/" and the RunChild command's ID ("c1", "c2"…), it is linked to the
// parent in the store (store.Run.Parent), and its usage is charged to the
// parent. Children of one turn run in parallel. A child has nobody to ask:
// a permission rule that says ask refuses its call, and a child that is
// stuck ends stalled.
type Subagents struct {
	// Tools names the task's tools a child may be given; nil means all of
	// them, an empty list none.
	Tools []string
	// TaskChecks names the task's own checks (as Task.Spec names them:
	// "equals", "exec#2"…) a child may be given.
	TaskChecks []string
	// Checks are checks only children use, such as a length or grader
	// check that fits the sub-goals. Named like the task's, with a "#n"
	// suffix where a name is taken.
	Checks verify.Tiers
	// Budget is each child's default budget and the most a spawn may ask
	// for; zero fields take budget.Defaults. The carving may give less.
	Budget budget.Limits
	// MaxChildren caps the sub-agents the run may start (default 8).
	MaxChildren int
}

// compileSubagents fills spec.Policy.Subagents from t.Subagents, adding
// the child-only verifiers to byName; and checks that every check a child
// may be given has a verifier.
func (t Task) compileSubagents(spec *loop.Spec, reg *tool.Registry, byName map[string]verify.Verifier) error {
	if s := t.Subagents; s != nil {
		sub := &loop.Subagents{Tools: s.Tools, Budget: s.Budget, MaxChildren: s.MaxChildren}
		if s.Tools == nil {
			for _, ts := range reg.Specs() {
				sub.Tools = append(sub.Tools, ts.Name)
			}
		}
		var errs []error
		for _, name := range s.TaskChecks {
			i := slices.IndexFunc(spec.Checks, func(c loop.Check) bool { return c.Name == name })
			if i < 0 {
				errs = append(errs, fmt.Errorf("subagents: task check %q is not one of the task's checks", name))
				continue
			}
			sub.Checks = append(sub.Checks, spec.Checks[i])
		}
		sub.Checks = nameChecks(sub.Checks, byName, s.Checks)
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		spec.Policy.Subagents = sub
	}
	if sub := spec.Policy.Subagents; sub != nil {
		for _, c := range sub.Checks {
			if byName[c.Name] == nil {
				return fmt.Errorf("policy.subagents: check %q has no verifier; give child-only checks in Task.Subagents.Checks", c.Name)
			}
		}
	}
	return nil
}

// runChild carries out a RunChild command: it runs the child, or carries
// on its run if a process before this one started it, and answers with the
// child's Result.
func (r *run) runChild(ctx context.Context, c *loop.Command) loop.Event {
	res := r.child(ctx, r.cfg.RunID+"/"+c.ID, *c.Child)
	// The parent needs the outcome, not the history: the child's own log
	// and row keep its attempts.
	res.Attempts = nil
	return loop.Event{Type: loop.EventChildResult, Call: c.ID, Child: &res}
}

func (r *run) child(ctx context.Context, id string, ch loop.Child) loop.Result {
	failed := func(err error) loop.Result {
		return loop.Result{Status: loop.Failed, Reason: "the sub-agent could not run: " + err.Error(), Limits: ch.Budget}
	}
	task, err := r.childTask(ch)
	if err != nil {
		return failed(err)
	}
	cfg := Config{Model: r.cfg.Model, RunID: id, Parent: r.cfg.RunID, Exec: r.cfg.Exec, Now: r.cfg.Now,
		Store: r.cfg.Store, SnapshotEvery: r.cfg.SnapshotEvery, telemetry: r.cfg.telemetry, Redactor: r.cfg.Redactor,
		Hooks: r.cfg.Hooks, Guardrails: r.cfg.Guardrails}
	if _, ok := cfg.Model.(Seeker); ok {
		// A resumed child must not move the parent's script.
		cfg.Model = unseekable{cfg.Model}
	}
	if len(r.cfg.ChildObservers) > 0 {
		cfg.Observers = []observe.Observer{&r.childLog}
	}
	resume := false
	if r.cfg.Store != nil {
		row, err := r.cfg.Store.Run(context.WithoutCancel(ctx), id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return failed(err)
		case row.Status == store.StatusRunning || row.Status == store.StatusAwaitingInput || row.Status == string(loop.Cancelled):
			resume = true // a process before this one started it: carry it on
		default:
			// It finished, but the parent's log missed its result.
			var res loop.Result
			if err := json.Unmarshal(row.Result, &res); err != nil || res.Status == "" {
				return UnknownChildOutcome(ch, fmt.Errorf("its stored result is unreadable (%v)", err))
			}
			return res
		}
	}
	if r.cfg.ChildModel != nil {
		if cfg.Model, err = r.cfg.ChildModel(id, ch); err != nil {
			return failed(fmt.Errorf("its model: %w", err))
		}
	}
	if resume {
		res, err := Resume(ctx, task, cfg, ResumeOptions{})
		if res.Status == "" {
			return UnknownChildOutcome(ch, fmt.Errorf("resuming it: %w", err))
		}
		return res
	}
	res, err := Run(ctx, task, cfg)
	if res.Status == "" {
		return failed(err)
	}
	return res
}

// UnknownChildOutcome is the Result of a child that may have run but whose
// outcome cannot be known: it is charged its whole budget, the most it
// could have spent, so that the parent never overspends.
func UnknownChildOutcome(ch loop.Child, err error) loop.Result {
	l := ch.Budget
	spent := budget.Usage{Steps: max(l.Steps, 0), ModelCalls: max(l.ModelCalls, 0), ToolCalls: max(l.ToolCalls, 0),
		InputTokens: max(l.InputTokens, 0), OutputTokens: max(l.OutputTokens, 0), Cost: max(l.Cost, 0)}
	if spent.InputTokens+spent.OutputTokens == 0 {
		spent.InputTokens = max(l.TotalTokens, 0)
	}
	return loop.Result{Status: loop.Failed, Reason: "the outcome of the sub-agent is unknown: " + err.Error() + "; its whole budget is charged", Usage: spent, Limits: l}
}

// childTask builds a child's Task from the parent's live tools and
// verifiers.
func (r *run) childTask(ch loop.Child) (Task, error) {
	t, err := r.x.ChildTask(ch)
	t.Policy.Key = r.m.Spec().Policy.Key
	return t, err
}

// ChildTask builds the Task of a sub-agent that a RunChild command starts
// from its parent's live tools and verifiers, which it takes by name. A
// driver other than this runner (Temporal's workflow) runs the child with
// it as this runner does.
func ChildTask(ch loop.Child, tools *tool.Registry, checks map[string]verify.Verifier) (Task, error) {
	t := Task{Mode: loop.ModeAgent, Goal: ch.Goal, Instructions: ch.Instructions, Permissions: ch.Permissions, Budget: ch.Budget, Policy: ch.Policy}
	for _, name := range ch.Tools {
		tl, ok := tools.Lookup(name)
		if !ok {
			return Task{}, fmt.Errorf("tool %q is not one of the run's tools", name)
		}
		t.Tools = append(t.Tools, tl)
	}
	for _, c := range ch.Checks {
		v := checks[c.Name]
		if v == nil {
			return Task{}, fmt.Errorf("check %q is not one of the run's checks", c.Name)
		}
		switch c.Tier {
		case verify.Cheap:
			t.Checks.Cheap = append(t.Checks.Cheap, v)
		case verify.Expensive:
			t.Checks.Expensive = append(t.Checks.Expensive, v)
		default:
			t.Checks.Holdout = append(t.Checks.Holdout, v)
		}
	}
	return t, nil
}

// childLog hands the entries of a run's children, which run in parallel,
// to Config.ChildObservers one at a time.
type childLog struct {
	mu  sync.Mutex
	obs []observe.Observer
}

func (l *childLog) Observe(e observe.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.obs {
		o.Observe(e)
	}
}

// unseekable is the parent's model as a child uses it: Resume does not
// move it, since the parent's calls share it.
type unseekable struct{ model.Model }

func (u unseekable) Name() string {
	if n, ok := u.Model.(model.Named); ok {
		return n.Name()
	}
	return ""
}
