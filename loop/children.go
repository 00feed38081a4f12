package loop

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
)

// children is the sub-agents' share of the state: how many the run has
// started. The ones running are the turn's spawn calls (pendingCall.Spawn).
type children struct {
	Started int `json:"started,omitempty"`
}

// share is what carving a child's budget reads of its parent: its limits,
// what it used, what it keeps for its next and closing turns, the closing
// time reserve, what its children in flight were given, and its costliest
// model call so far.
type share struct {
	limits      budget.Limits
	used        budget.Usage
	keep        budget.Usage
	reserveTime time.Duration
	committed   budget.Limits
	callCost    budget.Micros
}

// committed is how much of each dimension the children in flight among
// calls were given.
func committed(calls []pendingCall) budget.Limits {
	var l budget.Limits
	for _, c := range calls {
		if c.Spawn != nil && c.Result == nil {
			for _, d := range budget.Dimensions {
				l.Set(d, l.Limit(d)+max(c.Spawn.Child.Budget.Limit(d), 0))
			}
		}
	}
	return l
}

// carve gives a child that asked for r its limits, when n children of
// this turn (this one included) are still to be given theirs; or says why
// it cannot be started. def holds the default and most a child may get. On
// every dimension where the parent has a limit, the child gets at most an
// equal share of what is left: the limit less what the parent used, what
// the children in flight were given and what the parent keeps for its next
// and closing turns. Time is not shared (children run in parallel): a child
// gets at most the parent's time left before its closing reserve.
func carve(r spawnRequest, n int, def budget.Limits, p share) (budget.Limits, string) {
	var out budget.Limits
	for _, d := range budget.Dimensions {
		v := def.Limit(d)
		if asked := r.Budget.Limit(d); asked > 0 {
			v = capAt(v, asked)
		}
		part, shared := int64(0), false
		if lim := p.limits.Limit(d); lim >= 0 {
			if d == budget.Time {
				part = lim - int64(p.used.Time) - int64(p.reserveTime)
			} else {
				part = (lim - p.used.Get(d) - p.committed.Limit(d) - p.keep.Get(d)) / int64(n)
			}
			part, shared = max(part, 0), true
			v = capAt(v, part)
		}
		if d == budget.ToolCalls && len(r.Tools) == 0 {
			v = budget.Unlimited // it has no tools to call: nothing to carve
		}
		least := minChild(d)
		if d == budget.Cost && shared {
			// A child's first call is projected to cost nothing (it has made
			// none), so a share smaller than a turn and a closing turn at the
			// parent's costliest call would let each child of a fan-out
			// overrun it by a call, and the parent's cap by one per child.
			least = max(least, 2*int64(p.callCost))
		}
		if v != budget.Unlimited && v < least {
			if !shared {
				return out, fmt.Sprintf("its %s limit would be %s, below the minimum of %s", d, budget.Format(d, v), budget.Format(d, least))
			}
			return out, fmt.Sprintf("too little %s budget is left: its share would be %s (what this run has left beyond its own next and closing turns, shared among the %d sub-agents still to start this turn), below the minimum of %s",
				d, budget.Format(d, part), n, budget.Format(d, least))
		}
		out.Set(d, v)
	}
	return out, ""
}

// childPolicy is the policy a child with limits l runs under, from its
// parent's p.
func childPolicy(p Policy, l budget.Limits) Policy {
	p.Subagents, p.Plan, p.Escalate, p.Key = nil, false, false, nil
	p.Reserve = budget.Usage{} // derived from the child's own limits
	for _, t := range []int64{l.TotalTokens, l.OutputTokens} {
		if t > 0 {
			p.MaxOutputTokens = min(p.MaxOutputTokens, int(min(t/4, 1<<30)))
			p.ClosingOutputTokens = min(p.ClosingOutputTokens, int(min(t/8, 1<<30)))
		}
	}
	return p
}

// spawn answers the turn's spawn_subagent calls (indices into calls, in
// call order) at step: each is refused with an observation or given its
// limits and a child, which the caller issues as a RunChild command.
// keep is what the parent keeps for itself, callCost its costliest model
// call so far; spec is the parent's.
func (ch *children) spawn(calls []pendingCall, idx []int, spec *Spec, used, keep budget.Usage, callCost budget.Micros, step int) []Note {
	sub := spec.Policy.Subagents
	maxChildren := sub.MaxChildren
	if maxChildren == 0 {
		maxChildren = defaultMaxChildren
	}
	var notes []Note
	refuse := func(c *pendingCall, problem, why string) {
		text := "sub-agent not started: " + why
		c.Result = &ToolOutcome{Output: text, IsError: true, Outcome: problem}
		notes = append(notes, Note{Type: NoteObservation, Step: step, Problem: problem, Text: text})
	}
	type request struct {
		call int
		r    spawnRequest
	}
	var valid []request
	for _, i := range idx {
		c := &calls[i]
		r, err := parseSpawn(c.Args, sub.Tools, sub.Checks)
		switch {
		case err != nil:
			refuse(c, "bad_spawn", err.Error())
		case ch.Started+len(valid) >= maxChildren:
			refuse(c, "spawn_limit", fmt.Sprintf("this run may start at most %d sub-agents in all (max_children); do the rest yourself", maxChildren))
		default:
			valid = append(valid, request{i, r})
		}
	}
	def := sub.Budget.WithDefaults()
	for k, v := range valid {
		c := &calls[v.call]
		p := share{limits: spec.Budget, used: used, keep: keep, reserveTime: spec.Policy.Reserve.Time, committed: committed(calls), callCost: callCost}
		limits, why := carve(v.r, len(valid)-k, def, p)
		if why != "" {
			refuse(c, "spawn_budget", why)
			continue
		}
		child := Child{Goal: v.r.Goal, Instructions: strings.TrimSpace(subagentPrompt), Tools: v.r.Tools, Checks: v.r.Checks,
			Permissions: spec.Permissions, Budget: limits, Policy: childPolicy(spec.Policy, limits)}
		if err := child.Spec(spec.Tools).Validate(); err != nil {
			refuse(c, "spawn_budget", strings.ReplaceAll(err.Error(), "\n", "; "))
			continue
		}
		ch.Started++
		c.Spawn = &spawned{Cmd: "c" + strconv.Itoa(ch.Started), Child: child}
		notes = append(notes, Note{Type: NoteSubagent, Step: step, Text: fmt.Sprintf("%s started for call %s: %q; carved %s", c.Spawn.Cmd, c.ID, clip(child.Goal, 80), limitsText(limits))})
	}
	return notes
}

// command is the RunChild command for s.
func (s *spawned) command(deadline time.Time) Command {
	child := s.Child
	return Command{Type: RunChild, ID: s.Cmd, Deadline: deadline, Child: &child}
}

// childIndex returns the index of the call among calls whose child cmd is
// running, or -1.
func childIndex(calls []pendingCall, cmd string) int {
	for i, c := range calls {
		if c.Spawn != nil && c.Spawn.Cmd == cmd {
			return i
		}
	}
	return -1
}

// ended reads the Result of the child s at step: the usage to charge the
// parent (which releases the rest of its carve), the note saying so, and
// the spawn call's tool result.
func (s *spawned) ended(res Result, step int) (budget.Usage, Note, *ToolOutcome) {
	charged := childUsage(res.Usage)
	text := fmt.Sprintf("%s ended %s; charged %s", s.Cmd, res.Status, usageText(charged))
	if d, over := budget.Exceeds(s.Child.Budget, budget.Usage{}, charged); over {
		// The loop keeps a run's counts within its limits, but tokens and
		// cost are projected, so a reply can overshoot them; the parent pays
		// what was spent.
		text += fmt.Sprintf(" (over its %s limit of %s)", d, budget.Format(d, s.Child.Budget.Limit(d)))
	}
	out := &ToolOutcome{Output: renderChild(s.Cmd, s.Child, res), Outcome: "ok"}
	if res.Status != Done {
		out.IsError, out.Outcome = true, "subagent_not_done"
	}
	return charged, Note{Type: NoteSubagent, Step: step, Text: text}, out
}

// childUsage is what a child's usage charges to its parent: everything but
// time, which the parent spends alongside.
func childUsage(u budget.Usage) budget.Usage {
	u.Time = 0
	return u
}
