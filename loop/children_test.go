package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/verify"
)

// Children of one turn share what the parent has left equally; one that
// would get less than a working minimum, or one past MaxChildren, is
// refused with an observation.
func TestChildrenSpawn(t *testing.T) {
	spec := Spec{Goal: "g", Tools: []model.ToolSpec{{Name: "look"}}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}},
		Budget: budget.Limits{Steps: 20, ModelCalls: 30, ToolCalls: 12, TotalTokens: 100000, Cost: budget.USD(1), Time: time.Hour}.WithDefaults(),
		Policy: Policy{Subagents: &Subagents{Tools: []string{"look"}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}}, MaxChildren: 2}}}
	spec.Policy = spec.Policy.withDefaults(spec.Budget)
	call := func(id, args string) pendingCall {
		return pendingCall{ID: id, Name: SpawnTool, Args: json.RawMessage(args)}
	}
	calls := []pendingCall{
		call("a", `{"goal":"one","budget":{"steps":4}}`),
		call("b", `{"goal":"two"}`),
		call("c", `{"goal":"three"}`),
	}
	keep := budget.Usage{Steps: 2, ModelCalls: 2, ToolCalls: 1, InputTokens: 1000, OutputTokens: 5000, Cost: 50000}
	var ch children
	notes := ch.spawn(calls, []int{0, 1, 2}, &spec, budget.Usage{Steps: 1, ModelCalls: 1}, keep, 0, 1)
	if ch.Started != 2 || calls[0].Spawn == nil || calls[1].Spawn == nil || calls[2].Spawn != nil {
		t.Fatalf("started %d: %+v", ch.Started, calls)
	}
	if calls[2].Result == nil || calls[2].Result.Outcome != "spawn_limit" {
		t.Errorf("the third spawn: %+v", calls[2].Result)
	}
	if len(notes) != 3 || notes[0].Problem != "spawn_limit" || notes[1].Type != NoteSubagent {
		t.Errorf("notes %+v", notes)
	}
	a, b := calls[0].Spawn.Child.Budget, calls[1].Spawn.Child.Budget
	// Steps: the first asked for 4; the second gets what is left, 20 less
	// 1 used, 2 kept and the first's 4, below the default of 30.
	if a.Steps != 4 || b.Steps != 13 {
		t.Errorf("steps %d and %d: want 4 and 13", a.Steps, b.Steps)
	}
	// Tokens: (100000 - 6000 kept) / 2 for the first, then the rest less
	// what the first was given.
	if a.TotalTokens != 47000 || b.TotalTokens != 47000 {
		t.Errorf("tokens %d and %d, want an equal share of 94000", a.TotalTokens, b.TotalTokens)
	}
	if cmd := calls[0].Spawn.command(time.Time{}); cmd.Type != RunChild || cmd.ID != "c1" || cmd.Child.Goal != "one" {
		t.Errorf("command %+v", cmd)
	}
}

// Fan-out is one level deep and priced: a child is offered no
// spawn_subagent (it cannot start sub-agents of its own), and a child whose
// cost share is less than a turn and a closing turn at the parent's
// costliest call is not started.
func TestChildrenFanOut(t *testing.T) {
	spec := Spec{Goal: "g", Tools: []model.ToolSpec{{Name: "look"}}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}},
		Budget: budget.Limits{Steps: 50, Cost: 100_000}.WithDefaults(),
		Policy: Policy{Subagents: &Subagents{Tools: []string{"look"}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}}}}}
	spec.Policy = spec.Policy.withDefaults(spec.Budget)
	calls := []pendingCall{{ID: "a", Name: SpawnTool, Args: json.RawMessage(`{"goal":"one"}`)}, {ID: "b", Name: SpawnTool, Args: json.RawMessage(`{"goal":"two"}`)}}
	var ch children
	// A share of 100000: two calls of 40000 fit in it, two of 60000 do not.
	ch.spawn(calls[:1], []int{0}, &spec, budget.Usage{}, budget.Usage{}, 40_000, 1)
	if calls[0].Spawn == nil {
		t.Fatalf("a child with room for two calls was refused: %+v", calls[0].Result)
	}
	cm, err := New(calls[0].Spawn.Child.Spec(spec.Tools))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range cm.req.tools {
		if tool.Name == SpawnTool {
			t.Errorf("a child is offered %s: sub-agents could nest", SpawnTool)
		}
	}
	ch.spawn(calls[1:], []int{0}, &spec, budget.Usage{}, budget.Usage{}, 60_000, 1)
	if calls[1].Spawn != nil || calls[1].Result == nil || calls[1].Result.Outcome != "spawn_budget" || !strings.Contains(calls[1].Result.Output, "below the minimum of $0.12") {
		t.Errorf("a child with room for less than two calls: %+v %+v", calls[1].Spawn, calls[1].Result)
	}
}

// A child's usage is charged to its parent, time aside, and a child that
// did not end done is an error for the parent model.
func TestChildEnded(t *testing.T) {
	s := spawned{Cmd: "c1", Child: Child{Goal: "g", Budget: budget.Limits{Steps: 2, ModelCalls: 2, ToolCalls: -1, InputTokens: -1, OutputTokens: -1, TotalTokens: -1, Cost: -1, Time: -1}}}
	charged, note, out := s.ended(Result{Status: Exhausted(budget.Steps), Reason: "spent", Usage: budget.Usage{Steps: 3, ModelCalls: 2, Time: time.Minute}}, 4)
	if charged.Time != 0 || charged.Steps != 3 {
		t.Errorf("charged %+v", charged)
	}
	if note.Type != NoteSubagent || !strings.Contains(note.Text, "over its steps limit of 2") {
		t.Errorf("note %+v", note)
	}
	if !out.IsError || out.Outcome != "subagent_not_done" || !strings.Contains(out.Output, "It submitted no answer") {
		t.Errorf("outcome %+v", out)
	}
}

// A spec may not let a run start more than MaxChildrenCeiling sub-agents.
func TestMaxChildrenCeiling(t *testing.T) {
	for n, ok := range map[int]bool{MaxChildrenCeiling: true, MaxChildrenCeiling + 1: false} {
		spec := Spec{Goal: "g", Tools: []model.ToolSpec{{Name: "look", Description: "look", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Checks: []Check{{Name: "facts", Tier: verify.Cheap}}, Budget: budget.Limits{Steps: 5},
			Policy: Policy{Subagents: &Subagents{Tools: []string{"look"}, Checks: []Check{{Name: "facts", Tier: verify.Cheap}}, MaxChildren: n}}}
		_, err := New(spec)
		if ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "max_children: 65 is over the most a run may start (64)")) {
			t.Errorf("max_children %d: %v", n, err)
		}
	}
}
