package loop

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// Sub-agents (Policy.Subagents). The spawn_subagent tool starts a child
// run with its own goal, a subset of the tools and checks the policy
// allows, and a budget carved out of what the parent has left. The core
// answers the call itself: it validates the request, carves the child's
// limits, and issues a RunChild command; the shell runs the child and
// answers with a child_result event carrying the child's Result, whose
// usage the core charges to the parent. The parent model sees only a
// compact rendering of that Result as the call's tool_result. The carving
// is the guarantee: a child's limits are at most an equal share of what the
// parent has left beyond its own next turn and closing reserve, less what
// the other children in flight were given, so children together can never
// be given more than the parent has left.

//go:embed prompts/subagent.txt
var subagentPrompt string

// SpawnTool is the name of the tool that starts a sub-agent; the core
// answers it with a RunChild command.
const SpawnTool = "spawn_subagent"

// Subagents lets a run start sub-agents: child runs with their own goal,
// tools, checks and a budget carved from the parent's.
type Subagents struct {
	// Tools names the parent's tools a child may be given (a spawn that
	// names none gets them all); empty: children have no tools.
	Tools []string `json:"tools,omitempty"`
	// Checks are the checks a child may be given, by name and tier (a spawn
	// that names none gets them all). A name that is one of the parent's
	// checks is that check; other names are checks only children use,
	// which the shell supplies. At least one must be cheap or expensive.
	Checks []Check `json:"checks"`
	// Budget is each child's default budget and the most a spawn may ask
	// for; zero fields take budget.Defaults. The carving may give less.
	Budget budget.Limits `json:"budget"`
	// MaxChildren caps the sub-agents one run may start (default 8, at
	// most MaxChildrenCeiling).
	MaxChildren int `json:"max_children,omitempty"`
}

// defaultMaxChildren is MaxChildren's default.
const defaultMaxChildren = 8

// MaxChildrenCeiling is the most sub-agents any run may start: fan-outs of
// hundreds of agents are what a cap must prevent, and sub-agents cannot
// start their own (a fan-out is one level deep), so this bounds the whole
// tree.
const MaxChildrenCeiling = 64

// maxChildGoal bounds a spawn's goal.
const maxChildGoal = 8000

// maxChildAnswer bounds the child's answer shown to the parent.
const maxChildAnswer = 8000

// minChildTokens is the fewest tokens a child may be given on a finite
// token dimension: enough for a short turn and a closing turn.
const minChildTokens = 2000

// Child is the run a RunChild command asks the shell to carry out: its
// goal, the parent's tools and checks it may use (by name), the parent's
// permissions, and the budget and policy the core gave it.
type Child struct {
	Goal         string `json:"goal"`
	Instructions string `json:"instructions,omitempty"`
	// Tools are names of the parent's tools.
	Tools []string `json:"tools,omitempty"`
	// Checks are from the parent's Subagents.Checks.
	Checks      []Check       `json:"checks"`
	Permissions []Permission  `json:"permissions,omitempty"`
	Budget      budget.Limits `json:"budget"`
	// Policy is the parent's, less sub-agents, plan mode and escalation
	// (a child has nobody to ask), with output caps that fit its budget.
	// Its Key is nil: the shell passes the parent's key function.
	Policy Policy `json:"policy"`
}

// Spec is the child's spec, given the parent's tools.
func (c Child) Spec(parentTools []model.ToolSpec) Spec {
	s := Spec{Mode: ModeAgent, Goal: c.Goal, Instructions: c.Instructions, Checks: c.Checks, Permissions: c.Permissions, Budget: c.Budget, Policy: c.Policy}
	for _, name := range c.Tools {
		if i := slices.IndexFunc(parentTools, func(t model.ToolSpec) bool { return t.Name == name }); i >= 0 {
			s.Tools = append(s.Tools, parentTools[i])
		}
	}
	return s
}

// spawned is a spawn_subagent call whose child is running: the RunChild
// command's ID and the child it was given.
type spawned struct {
	Cmd   string `json:"cmd"`
	Child Child  `json:"child"`
}

// validateSubagents adds the policy's problems to add.
func (s Spec) validateSubagents(add func(string, ...any)) {
	sub := s.Policy.Subagents
	if sub == nil {
		return
	}
	if s.Mode == ModeGenerate {
		add("policy.subagents: sub-agents need tools; generate mode has none")
	}
	for i, name := range sub.Tools {
		switch {
		case !slices.ContainsFunc(s.Tools, func(t model.ToolSpec) bool { return t.Name == name }):
			add("policy.subagents.tools[%d]: %q is not one of the run's tools", i, name)
		case slices.Index(sub.Tools, name) < i:
			add("policy.subagents.tools[%d]: %q is listed twice", i, name)
		}
	}
	gates := 0
	for i, c := range sub.Checks {
		switch {
		case c.Name == "":
			add("policy.subagents.checks[%d]: name is empty", i)
		case slices.IndexFunc(sub.Checks, func(o Check) bool { return o.Name == c.Name }) < i:
			add("policy.subagents.checks[%d]: %q is listed twice", i, c.Name)
		}
		if c.Tier != verify.Cheap && c.Tier != verify.Expensive && c.Tier != verify.Holdout {
			add("policy.subagents.checks[%d] %q: tier %q is not cheap, expensive or holdout", i, c.Name, c.Tier)
		}
		if j := slices.IndexFunc(s.Checks, func(o Check) bool { return o.Name == c.Name }); j >= 0 && s.Checks[j].Tier != c.Tier {
			add("policy.subagents.checks[%d] %q: it is the run's %s check; give it the same tier", i, c.Name, s.Checks[j].Tier)
		}
		if c.Tier != verify.Holdout {
			gates++
		}
	}
	if gates == 0 {
		add("policy.subagents.checks: no cheap or expensive check; a sub-agent's answer must be checked like any other")
	}
	if err := sub.Budget.Validate(budget.Usage{Steps: 1, ModelCalls: 1}); err != nil {
		add("policy.subagents.%v", err)
	}
	if sub.MaxChildren < 0 {
		add("policy.subagents.max_children: %d is negative", sub.MaxChildren)
	}
	if sub.MaxChildren > MaxChildrenCeiling {
		add("policy.subagents.max_children: %d is over the most a run may start (%d)", sub.MaxChildren, MaxChildrenCeiling)
	}
}

// spawnSpec is the spawn_subagent tool as offered to the model.
func spawnSpec(sub *Subagents) model.ToolSpec {
	def := sub.Budget.WithDefaults()
	checks := make([]string, len(sub.Checks))
	for i, c := range sub.Checks {
		checks[i] = c.Name
	}
	props := []string{`"goal":{"type":"string","description":"What the sub-agent must achieve, with everything it needs to know: it sees nothing of your conversation."}`}
	desc := "Start a sub-agent: a separate agent with its own goal, tools, checks and budget, carved out of yours. You see only its result (status, answer, usage). Sub-agents started in the same turn run in parallel."
	if len(sub.Tools) > 0 {
		list, _ := json.Marshal(sub.Tools)
		props = append(props, `"tools":{"type":"array","items":{"type":"string","enum":`+string(list)+`},"uniqueItems":true,"description":"The tools it may use (default: all of these)."}`)
		desc += " Tools it may be given: " + strings.Join(sub.Tools, ", ") + "."
	} else {
		desc += " It has no tools."
	}
	list, _ := json.Marshal(checks)
	props = append(props, `"checks":{"type":"array","items":{"type":"string","enum":`+string(list)+`},"uniqueItems":true,"minItems":1,"description":"The checks its answer must pass (default: all of these)."}`)
	props = append(props, `"budget":{"type":"object","properties":{"steps":{"type":"integer","minimum":2},"model_calls":{"type":"integer","minimum":2},"tool_calls":{"type":"integer","minimum":1},"total_tokens":{"type":"integer","minimum":`+strconv.Itoa(minChildTokens)+`},"cost_usd":{"type":"number","exclusiveMinimum":0},"time_seconds":{"type":"number","minimum":1}},"additionalProperties":false,"description":"Limits to ask for; they are capped by the default and by your share of what you have left."}`)
	desc += fmt.Sprintf(" Checks: %s. Default budget per sub-agent: %d steps, %s.", strings.Join(checks, ", "), def.Steps, budget.Format(budget.Cost, int64(def.Cost)))
	return model.ToolSpec{
		Name:        SpawnTool,
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":["goal"],"additionalProperties":false}`),
	}
}

// spawnRequest is a validated spawn_subagent call.
type spawnRequest struct {
	Goal   string
	Tools  []string // resolved: the allowed tools when none were named
	Checks []Check  // resolved: the whole catalogue when none were named
	// Budget holds what was asked for; zero fields were not.
	Budget budget.Limits
}

// spawnArgs are spawn_subagent's arguments as decoded, absent ones nil.
type spawnArgs struct {
	Goal   *string     `json:"goal"`
	Tools  *[]string   `json:"tools"`
	Checks *[]string   `json:"checks"`
	Budget *spawnLimit `json:"budget"`
}

type spawnLimit struct {
	Steps       *int64   `json:"steps"`
	ModelCalls  *int64   `json:"model_calls"`
	ToolCalls   *int64   `json:"tool_calls"`
	TotalTokens *int64   `json:"total_tokens"`
	CostUSD     *float64 `json:"cost_usd"`
	TimeSeconds *float64 `json:"time_seconds"`
}

// parseSpawn validates spawn_subagent arguments against the tools and
// checks a child may be given; the error is for the model.
func parseSpawn(raw json.RawMessage, tools []string, checks []Check) (spawnRequest, error) {
	const form = `arguments must be {"goal": string, "tools": [string], "checks": [string], "budget": {"steps": integer, "model_calls": integer, "tool_calls": integer, "total_tokens": integer, "cost_usd": number, "time_seconds": number}}; only goal is required`
	if !isObject(raw) {
		return spawnRequest{}, errors.New(form)
	}
	var f spawnArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		switch name, unknown := strings.CutPrefix(err.Error(), "json: unknown field "); {
		case unknown:
			return spawnRequest{}, fmt.Errorf("unexpected argument %s; %s", name, form)
		case errors.As(err, &te) && te.Field != "":
			return spawnRequest{}, fmt.Errorf("%q must be %s; %s", te.Field, wantType(te.Field), form)
		}
		return spawnRequest{}, errors.New(form)
	}
	var r spawnRequest
	var err error
	if f.Goal == nil || strings.TrimSpace(*f.Goal) == "" {
		return r, errors.New(`"goal" is missing or empty: say what the sub-agent must achieve`)
	}
	if r.Goal = strings.TrimSpace(*f.Goal); len(r.Goal) > maxChildGoal {
		return r, fmt.Errorf(`"goal" is %d bytes, over the limit of %d`, len(r.Goal), maxChildGoal)
	}
	if r.Tools, err = spawnTools(f.Tools, tools); err != nil {
		return r, err
	}
	if r.Checks, err = spawnChecks(f.Checks, checks); err != nil {
		return r, err
	}
	if f.Budget != nil {
		r.Budget, err = f.Budget.limits()
	}
	return r, err
}

// spawnTools resolves the tools a spawn names among those allowed: all of
// them when it names none.
func spawnTools(named *[]string, allowed []string) ([]string, error) {
	if named == nil {
		return slices.Clone(allowed), nil
	}
	out := []string{}
	for i, name := range *named {
		switch {
		case !slices.Contains(allowed, name):
			return nil, fmt.Errorf("tools[%d]: %q is not a tool a sub-agent may be given (%s)", i, clip(name, 60), orNone(allowed))
		case slices.Contains(out, name):
			return nil, fmt.Errorf("tools[%d]: %q is listed twice", i, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// spawnChecks resolves the checks a spawn names among those allowed: all
// of them when it names none.
func spawnChecks(named *[]string, allowed []Check) ([]Check, error) {
	if named == nil {
		return slices.Clone(allowed), nil
	}
	names := make([]string, len(allowed))
	for i, c := range allowed {
		names[i] = c.Name
	}
	out := []Check{}
	for i, name := range *named {
		j := slices.Index(names, name)
		switch {
		case j < 0:
			return nil, fmt.Errorf("checks[%d]: %q is not a check a sub-agent may be given (%s)", i, clip(name, 60), orNone(names))
		case slices.Contains(out, allowed[j]):
			return nil, fmt.Errorf("checks[%d]: %q is listed twice", i, name)
		}
		out = append(out, allowed[j])
	}
	if !slices.ContainsFunc(out, func(c Check) bool { return c.Tier != verify.Holdout }) {
		return nil, errors.New(`"checks" names no cheap or expensive check; a sub-agent's answer must be checked`)
	}
	return out, nil
}

// limits validates the limits a spawn asks for; zero fields were not.
func (b *spawnLimit) limits() (budget.Limits, error) {
	var l budget.Limits
	for _, n := range []struct {
		name string
		v    *int64
		min  int64
		d    budget.Dimension
	}{
		{"steps", b.Steps, 2, budget.Steps},
		{"model_calls", b.ModelCalls, 2, budget.ModelCalls},
		{"tool_calls", b.ToolCalls, 1, budget.ToolCalls},
		{"total_tokens", b.TotalTokens, minChildTokens, budget.TotalTokens},
	} {
		switch {
		case n.v == nil:
		case *n.v < n.min:
			return l, fmt.Errorf(`"budget.%s" is %d; a sub-agent needs at least %d`, n.name, *n.v, n.min)
		case *n.v > 1<<40:
			return l, fmt.Errorf(`"budget.%s" is %d, more than any budget`, n.name, *n.v)
		default:
			l.Set(n.d, *n.v)
		}
	}
	if c := b.CostUSD; c != nil {
		if !(*c > 0 && *c <= 1e6) || budget.USD(*c) < 1 {
			return l, fmt.Errorf(`"budget.cost_usd" is %v; give an amount in US dollars from 0.000001 to 1000000`, *c)
		}
		l.Cost = budget.USD(*c)
	}
	if s := b.TimeSeconds; s != nil {
		if !(*s >= 1 && *s <= 1e6) {
			return l, fmt.Errorf(`"budget.time_seconds" is %v; give from 1 to 1000000 seconds`, *s)
		}
		l.Time = time.Duration(*s * float64(time.Second))
	}
	return l, nil
}

// wantType names the type a spawn argument must have.
func wantType(field string) string {
	switch field {
	case "goal":
		return "a string"
	case "tools", "checks":
		return "a list of strings"
	case "budget":
		return "an object"
	case "budget.cost_usd", "budget.time_seconds":
		return "a number"
	}
	if strings.HasPrefix(field, "budget.") {
		return "a whole number"
	}
	return "of another type"
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// minChild is the least a child may be given on a finite dimension d.
func minChild(d budget.Dimension) int64 {
	switch d {
	case budget.Steps, budget.ModelCalls:
		return 2 // a turn and the closing turn
	case budget.InputTokens, budget.OutputTokens, budget.TotalTokens:
		return minChildTokens
	case budget.Time:
		return int64(time.Second)
	}
	return 1
}

// capAt is v capped at c, where v may be unlimited.
func capAt(v, c int64) int64 {
	if v == budget.Unlimited {
		return c
	}
	return min(v, c)
}

// renderChild is what the parent model sees of a child's result.
func renderChild(cmd string, c Child, res Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Sub-agent %s ended %s: %s\n", cmd, res.Status, clip(strings.TrimSpace(res.Reason), 400))
	switch best := res.Best; {
	case best == nil:
		b.WriteString("It submitted no answer.\n")
	case best.Accepted:
		fmt.Fprintf(&b, "Its answer, which passed its checks (%s):\n%s\n", checkNames(c.Checks), headTail(best.Answer, maxChildAnswer))
	default:
		fmt.Fprintf(&b, "Its best answer, NOT accepted (%s):\n%s\n", clip(best.Summary, 300), headTail(best.Answer, maxChildAnswer))
	}
	if res.Question != "" {
		fmt.Fprintf(&b, "Its open question: %s\n", clip(res.Question, 400))
	}
	fmt.Fprintf(&b, "Its usage, charged to you: %s", usageText(childUsage(res.Usage)))
	return b.String()
}

func checkNames(cs []Check) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// limitsText lists l's finite limits.
func limitsText(l budget.Limits) string {
	var parts []string
	for _, d := range budget.Dimensions {
		if v := l.Limit(d); v >= 0 {
			parts = append(parts, string(d)+"="+budget.Format(d, v))
		}
	}
	return strings.Join(parts, " ")
}

// usageText lists u's non-zero dimensions, time aside.
func usageText(u budget.Usage) string {
	var parts []string
	for _, d := range budget.Dimensions {
		if v := u.Get(d); v != 0 && d != budget.Time && d != budget.TotalTokens {
			parts = append(parts, string(d)+"="+budget.Format(d, v))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	if u.CostUnknown {
		parts = append(parts, "(cost incomplete)")
	}
	return strings.Join(parts, " ")
}
