package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

var (
	fuzzSubTools  = []string{"look", "grep"}
	fuzzSubChecks = []Check{{Name: "facts", Tier: verify.Cheap}, {Name: "tests", Tier: verify.Expensive}, {Name: "secret", Tier: verify.Holdout}}
)

func FuzzParseSpawn(f *testing.F) {
	for _, s := range []string{
		`{"goal":"x"}`, `{"goal":"x","tools":["look"],"checks":["facts"]}`, `{"goal":"x","tools":[]}`,
		`{"goal":"x","checks":["secret"]}`, `{"goal":"x","checks":["facts","facts"]}`, `{"goal":"x","tools":["rm"]}`,
		`{"goal":"x","budget":{"steps":3,"model_calls":4,"tool_calls":5,"total_tokens":9000,"cost_usd":0.5,"time_seconds":30}}`,
		`{"goal":"x","budget":{"steps":1}}`, `{"goal":"x","budget":{"steps":2.5}}`, `{"goal":"x","budget":{"cost_usd":0}}`,
		`{"goal":"x","budget":{"time_seconds":1e300}}`, `{"goal":"x","extra":1}`, `{"goal":7}`, `{"goal":"  "}`, `[]`, ``, `{"goal":"x"} {}`,
		`{"goal":"x","budget":{"steps":99999999999999999999}}`, `{"goal":"x","tools":null}`, `{"goal":"x","budget":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := parseSpawn(raw, fuzzSubTools, fuzzSubChecks)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		var back struct {
			Goal   string
			Tools  *[]string
			Checks *[]string
		}
		if !isObject(raw) || json.Unmarshal(raw, &back) != nil {
			t.Fatalf("accepted %q, which is not a JSON object", raw)
		}
		if r.Goal == "" || len(r.Goal) > maxChildGoal || r.Goal != strings.TrimSpace(back.Goal) {
			t.Fatalf("goal %q accepted from %q", r.Goal, raw)
		}
		for i, name := range r.Tools {
			if !slices.Contains(fuzzSubTools, name) || slices.Index(r.Tools, name) != i {
				t.Fatalf("tools %v accepted", r.Tools)
			}
		}
		if back.Tools != nil && !slices.Equal(*back.Tools, r.Tools) {
			t.Fatalf("tools %v sent, %v accepted", *back.Tools, r.Tools)
		}
		if !slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Tier != verify.Holdout }) {
			t.Fatalf("checks %v has no gate check", r.Checks)
		}
		for i, c := range r.Checks {
			if !slices.Contains(fuzzSubChecks, c) || slices.Index(r.Checks, c) != i {
				t.Fatalf("checks %v accepted", r.Checks)
			}
		}
		for _, d := range budget.Dimensions {
			if v := r.Budget.Limit(d); v != 0 && v < minChild(d) {
				t.Fatalf("budget %s=%d accepted, below the minimum %d", d, v, minChild(d))
			}
		}
	})
}

// FuzzCarve spawns children of one turn under random limits and requests
// and checks the guarantee: on every dimension the parent limits, the
// children are given together no more than it has left beyond its own next
// and closing turns; a started child gets at least the minimum on every
// finite dimension and never more than it asked for.
func FuzzCarve(f *testing.F) {
	f.Add(uint16(20), uint16(30), uint32(100000), uint32(1000000), uint8(2), uint8(4), uint8(0), uint32(0))
	f.Add(uint16(6), uint16(60), uint32(0), uint32(0), uint8(3), uint8(100), uint8(2), uint32(5000))
	f.Add(uint16(500), uint16(9), uint32(8000), uint32(7), uint8(8), uint8(0), uint8(0), uint32(0))
	f.Fuzz(func(t *testing.T, steps, calls uint16, tokens, cost uint32, n, askSteps, askCalls uint8, askTokens uint32) {
		lim := budget.Limits{Steps: int(steps%1000) + 3, ModelCalls: int(calls%1000) + 3, TotalTokens: int64(tokens%10_000_000) + 3000, Cost: budget.Micros(cost%10_000_000) + 1, Time: time.Minute}
		if tokens%7 == 0 {
			lim.TotalTokens = budget.Unlimited
		}
		spec := Spec{Goal: "g", Tools: []model.ToolSpec{{Name: "look"}}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}}, Budget: lim,
			Policy: Policy{Samples: -1, Subagents: &Subagents{Tools: []string{"look"}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}}}}}
		if spec.Validate() != nil {
			return
		}
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Unix(0, 0)
		if err := m.Step(Event{Type: EventStart, At: at}); err != nil {
			t.Fatal(err)
		}
		m.Advance()
		raw := spawnArgsFor(askSteps, askCalls, askTokens)
		reply := model.Response{Usage: model.Usage{InputTokens: 100, OutputTokens: 10, Cost: 3, CostKnown: true}}
		for i := range int(n%9) + 1 {
			reply.Content = append(reply.Content, model.Block{Type: model.ToolUse, ID: fmt.Sprintf("s%d", i), Name: SpawnTool, Input: raw})
		}
		before := m.Usage()
		keep := turnNeedAfter(m, reply)
		if err := m.Step(Event{Type: EventModelReply, At: at, Call: "m1", Reply: &reply}); err != nil {
			t.Fatal(err)
		}
		rd := m.Ready()
		m.Advance()
		used := m.Usage()
		var given budget.Usage
		var givenTotal int64
		for _, c := range rd.Commands {
			if c.Type != RunChild {
				continue
			}
			l := c.Child.Budget
			if err := c.Child.Spec(spec.Tools).Validate(); err != nil {
				t.Fatalf("child spec invalid: %v", err)
			}
			for _, d := range budget.Dimensions {
				v := l.Limit(d)
				if d == budget.ToolCalls && v == budget.Unlimited {
					continue
				}
				if spec.Budget.WithDefaults().Limit(d) >= 0 && (v < minChild(d)) {
					t.Fatalf("child %s given %s=%d, below the minimum", c.ID, d, v)
				}
			}
			if askSteps > 0 && l.Steps > max(int(askSteps), 2) {
				t.Fatalf("child %s given %d steps, asked for %d", c.ID, l.Steps, askSteps)
			}
			given.Steps += l.Steps
			given.ModelCalls += l.ModelCalls
			given.ToolCalls += max(l.ToolCalls, 0)
			given.Cost += l.Cost
			givenTotal += l.TotalTokens
		}
		full := spec.Budget.WithDefaults()
		for _, d := range []budget.Dimension{budget.Steps, budget.ModelCalls, budget.ToolCalls, budget.Cost} {
			if lim := full.Limit(d); lim >= 0 && given.Get(d) > 0 && used.Get(d)+given.Get(d)+keep.Get(d) > lim {
				t.Fatalf("%s: used %d + given %d + kept %d > limit %d (before %d)", d, used.Get(d), given.Get(d), keep.Get(d), lim, before.Get(d))
			}
		}
		if lim := full.TotalTokens; lim >= 0 && givenTotal > 0 && used.TotalTokens()+givenTotal+keep.TotalTokens() > lim {
			t.Fatalf("total_tokens: used %d + given %d + kept %d > limit %d", used.TotalTokens(), givenTotal, keep.TotalTokens(), lim)
		}
	})
}

// turnNeedAfter is turnNeed as it will be once reply is in the history.
func turnNeedAfter(m *Machine, reply model.Response) budget.Usage {
	st := m.st
	st.MaxCallCost = max(st.MaxCallCost, reply.Usage.Cost)
	st.History.Bytes += model.MessageWeight(model.Message{Role: model.Assistant, Content: reply.Content})
	return m.req.turnNeed(&st)
}

// FuzzSubagentTurns drives turns mixing spawn_subagent and ordinary calls,
// answered in an order and with child usage chosen by the input, through a
// snapshot and restore while the children run. It checks that spawns never
// reach the shell as tool calls, that Pending rebuilds exactly the
// commands in flight, and that every child's usage (time aside) is added to
// the parent's.
func FuzzSubagentTurns(f *testing.F) {
	f.Add(`{"goal":"a"}`, `{"goal":"b","budget":{"steps":3}}`, uint8(2), uint16(500), true)
	f.Add(`{"goal":"a","tools":[]}`, `{"goal":""}`, uint8(9), uint16(0), false)
	f.Add(`{"goal":"a","checks":["facts"]}`, `{}`, uint8(1), uint16(60000), true)
	f.Fuzz(func(t *testing.T, args1, args2 string, childSteps uint8, childTokens uint16, reverse bool) {
		spec := Spec{
			Goal:   "fuzz",
			Tools:  []model.ToolSpec{{Name: "look", Description: "look", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Checks: []Check{{Name: "equals", Tier: verify.Cheap}},
			Budget: budget.Limits{Steps: 40, TotalTokens: 400000},
			Policy: Policy{Samples: -1, Subagents: &Subagents{Tools: []string{"look"}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}}}},
		}
		m, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		step := stepper(t, m)
		rd := step(Event{Type: EventStart})
		for turn := 0; turn < 2 && m.Phase() == PhaseModel; turn++ {
			content := []model.Block{
				{Type: model.ToolUse, ID: "a", Name: SpawnTool, Input: json.RawMessage(args1)},
				{Type: model.ToolUse, ID: "b", Name: "look", Input: json.RawMessage(`{}`)},
				{Type: model.ToolUse, ID: "c", Name: SpawnTool, Input: json.RawMessage(args2)},
			}
			rd = step(Event{Type: EventModelReply, Call: rd.Commands[0].ID, Reply: &model.Response{Content: content}})
			if m.Phase() != PhaseTools {
				t.Fatalf("phase %s after a turn with a tool call", m.Phase())
			}
			pending, _ := json.Marshal(m.Pending())
			issued, _ := json.Marshal(rd.Commands)
			if string(pending) != string(issued) {
				t.Fatalf("Pending rebuilds\n%s\nbut the machine issued\n%s", pending, issued)
			}
			data, err := m.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if m, err = Restore(data, nil); err != nil {
				t.Fatal(err)
			}
			step = stepper(t, m)
			cmds := rd.Commands
			if reverse {
				slices.Reverse(cmds)
			}
			for _, c := range cmds {
				switch c.Type {
				case RunTools:
					for _, tc := range c.Calls {
						if tc.Name == SpawnTool {
							t.Fatal("spawn_subagent was sent to the shell as a tool call")
						}
						rd = step(Event{Type: EventToolResult, Call: tc.ID, Tool: &ToolOutcome{Output: "ok"}})
					}
				case RunChild:
					u := budget.Usage{Steps: int(childSteps%5) + 1, ModelCalls: int(childSteps%5) + 1, InputTokens: int64(childTokens), Time: time.Hour}
					before := m.Usage()
					rd = step(Event{Type: EventChildResult, Call: c.ID, Child: &Result{Status: Done, Usage: u}})
					after := m.Usage()
					for _, c := range rd.Commands {
						if c.Type == CallModel { // the next turn began: one step of the parent's own
							after.Steps--
						}
					}
					if after.Steps-before.Steps != u.Steps || after.InputTokens-before.InputTokens != u.InputTokens {
						t.Fatalf("child usage %+v charged as %+v → %+v", u, before, after)
					}
				default:
					t.Fatalf("unexpected command %s", c.Type)
				}
			}
			if m.Phase() != PhaseModel && m.Phase() != PhaseStopped {
				t.Fatalf("phase %s after every command was answered", m.Phase())
			}
		}
	})
}

// spawnArgsFor is a spawn_subagent call asking for the given limits (0:
// none asked).
func spawnArgsFor(askSteps, askCalls uint8, askTokens uint32) json.RawMessage {
	args := map[string]any{"goal": "sub"}
	ask := map[string]any{}
	if askSteps > 0 {
		ask["steps"] = max(int(askSteps), 2)
	}
	if askCalls > 0 {
		ask["model_calls"] = max(int(askCalls), 2)
	}
	if askTokens > 0 {
		ask["total_tokens"] = max(int(askTokens), minChildTokens)
	}
	if len(ask) > 0 {
		args["budget"] = ask
	}
	raw, _ := json.Marshal(args)
	return raw
}
