package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/replay"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// priced charges a fixed cost per reply, so that cost accounting shows; it
// keeps the scripted model's Seek, which Resume uses.
type priced struct {
	*scripted.Model
	cost budget.Micros
}

func (p priced) Generate(ctx context.Context, req model.Request) (model.Response, error) {
	r, err := p.Model.Generate(ctx, req)
	if err == nil {
		r.Usage.Cost, r.Usage.CostKnown = p.cost, true
	}
	return r, err
}

// children gives each sub-agent its own scripted model, chosen by its goal,
// so that a test is deterministic however the children interleave (one
// shared script would be played in call order across them all).
type children struct {
	mu     sync.Mutex
	byGoal map[string][]scripted.Turn
	made   map[string]int // models made, per goal
	cost   budget.Micros
}

func newChildren(cost budget.Micros, byGoal map[string][]scripted.Turn) *children {
	return &children{byGoal: byGoal, made: map[string]int{}, cost: cost}
}

func (c *children) model(id string, ch loop.Child) (model.Model, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	turns, ok := c.byGoal[ch.Goal]
	if !ok {
		return nil, fmt.Errorf("no script for goal %q", ch.Goal)
	}
	c.made[ch.Goal]++
	m, err := scripted.New(scripted.Script{Name: id, Turns: turns}, scripted.Config{Quiet: true})
	return priced{m, c.cost}, err
}

// meet is a tool whose calls return "together" once want calls are in
// flight at the same time: children that run in parallel meet, children
// that run one after another do not.
func meet(want int) tool.Tool {
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	return tool.Func("meet", "Wait for the other sub-agents.", func(ctx context.Context, _ struct{}) (string, error) {
		mu.Lock()
		if arrived++; arrived == want {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return "together", nil
		case <-time.After(5 * time.Second):
			return "alone", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}, tool.Idempotent())
}

func spawn(goal string, args map[string]any) scripted.ToolCall {
	a := map[string]any{"goal": goal}
	for k, v := range args {
		a[k] = v
	}
	return scripted.ToolCall{Name: loop.SpawnTool, Args: a}
}

func partTask(tools ...tool.Tool) runner.Task {
	part, err := check.Regex(`^part-\d$`)
	if err != nil {
		panic(err)
	}
	return runner.Task{
		Goal:   "Collect the parts from the sub-agents and finish with them in order.",
		Tools:  tools,
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("part-1 part-2")}},
		Budget: budget.Limits{Steps: 30, ModelCalls: 40, ToolCalls: 20, TotalTokens: 200_000, Cost: budget.USD(1), Time: time.Minute},
		Subagents: &runner.Subagents{
			Checks: verify.Tiers{Cheap: []verify.Verifier{part}},
			Budget: budget.Limits{Steps: 6, Cost: budget.USD(0.2)},
		},
	}
}

func childRuns(t *testing.T, db store.Store, parent string) map[string]store.Run {
	t.Helper()
	runs, err := db.ListRuns(context.Background(), store.Filter{Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Run{}
	for _, r := range runs {
		out[r.ID] = r
	}
	return out
}

func storedResult(t *testing.T, r store.Run) loop.Result {
	t.Helper()
	var res loop.Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("run %s: result: %v", r.ID, err)
	}
	return res
}

// TestSubagents runs two children in one turn and one that fails in the
// next: the children meet (they ran in parallel), are stored as runs of the
// parent, and their usage is the parent's usage less its own; a failed
// child is an observation for the parent, not its failure.
func TestSubagents(t *testing.T) {
	parent := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{spawn("Fetch part one.", map[string]any{"tools": []string{"meet"}}), spawn("Fetch part two.", nil)}},
		scripted.Turn{Expect: []string{"Sub-agent c1 ended done", "part-1", "Sub-agent c2 ended done", "part-2"},
			Tools: []scripted.ToolCall{spawn("Fetch part three.", map[string]any{"tools": []string{}})}},
		scripted.Turn{Expect: []string{"Sub-agent c3 ended failed", "It submitted no answer"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	)
	kids := newChildren(1000, map[string][]scripted.Turn{
		"Fetch part one.":   {{Tools: []scripted.ToolCall{{Name: "meet"}}}, {Expect: []string{"together"}, Finish: &scripted.Finish{Answer: "part-1", Confidence: conf(0.9)}}},
		"Fetch part two.":   {{Tools: []scripted.ToolCall{{Name: "meet"}}}, {Expect: []string{"together"}, Finish: &scripted.Finish{Answer: "part-2", Confidence: conf(0.9)}}},
		"Fetch part three.": {{Error: "overloaded"}},
	})
	db := memory.New()
	var childLog observe.Memory
	var mu sync.Mutex
	res, err := runner.Run(context.Background(), partTask(meet(2)), runner.Config{
		Model: priced{parent, 2000}, RunID: "p", Store: db, ChildModel: kids.model,
		ChildObservers: []observe.Observer{observe.Func(func(e observe.Entry) { mu.Lock(); defer mu.Unlock(); childLog.Observe(e) })},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != loop.Done {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	runs := childRuns(t, db, "p")
	if len(runs) != 3 {
		t.Fatalf("child runs: %v", runs)
	}
	own := budget.Usage{Steps: 3, ModelCalls: 3, Cost: 3 * 2000} // the failed child's call has no usage
	sum := own
	for id, want := range map[string]loop.Status{"p/c1": loop.Done, "p/c2": loop.Done, "p/c3": loop.Failed} {
		row, ok := runs[id]
		if !ok || row.Parent != "p" || row.Status != string(want) {
			t.Fatalf("child %s: %+v, want status %s", id, row, want)
		}
		cr := storedResult(t, row)
		sum = sum.Add(cr.Usage)
		for _, d := range budget.Dimensions {
			if lim := cr.Limits.Limit(d); lim >= 0 && cr.Usage.Get(d) > lim {
				t.Errorf("child %s spent %s=%d over its limit %d", id, d, cr.Usage.Get(d), lim)
			}
		}
	}
	// Tokens are estimated from the requests (the parent's own are on top
	// of the children's); the counts and cost are exact.
	if got := res.Usage; got.Steps != sum.Steps || got.ModelCalls != sum.ModelCalls || got.ToolCalls != sum.ToolCalls || got.Cost != sum.Cost ||
		got.InputTokens <= sum.InputTokens || got.Steps != 3+2+2+1 || got.Cost != 3*2000+4*1000 {
		t.Errorf("parent usage %+v; children and parent's own sum to %+v", got, sum)
	}
	// The parent's log, child results included, and each child's replay.
	for _, id := range []string{"p", "p/c1", "p/c2", "p/c3"} {
		recs, err := runner.LoadLog(context.Background(), db, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := replay.Run(recs); err != nil {
			t.Errorf("replay %s: %v", id, err)
		}
	}
	// The children's entries reached the child observers, tagged with their runs.
	seen := map[string]bool{}
	for _, e := range childLog.Entries() {
		seen[e.Run] = true
	}
	if !seen["p/c1"] || !seen["p/c2"] || !seen["p/c3"] || len(seen) != 3 {
		t.Errorf("child observers saw runs %v", seen)
	}
}

// TestSubagentSharedModel: without ChildModel a child uses the parent's
// model; a scripted one then plays its turns in call order across both.
func TestSubagentSharedModel(t *testing.T) {
	m := newModel(t,
		scripted.Turn{Tools: []scripted.ToolCall{spawn("Fetch part one.", nil)}},
		scripted.Turn{Expect: []string{"Fetch part one."}, Finish: &scripted.Finish{Answer: "part-1", Confidence: conf(0.9)}},
		scripted.Turn{Expect: []string{"part-1"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	)
	res, err := runner.Run(context.Background(), partTask(), runner.Config{Model: m, RunID: "p"})
	if err != nil || res.Status != loop.Done || res.Usage.Steps != 3 {
		t.Fatalf("%s %v: %s; usage %+v", res.Status, err, res.Reason, res.Usage)
	}
}

// TestSubagentCancelResume cancels the parent while its children run: the
// children end cancelled with it, and resuming the parent carries on the
// same children rather than starting others.
func TestSubagentCancelResume(t *testing.T) {
	parentTurns := []scripted.Turn{
		{Tools: []scripted.ToolCall{spawn("Fetch part one.", nil), spawn("Fetch part two.", nil)}},
		{Expect: []string{"part-1", "part-2"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	}
	slow := func(answer string) []scripted.Turn {
		return []scripted.Turn{{Delay: 300 * time.Millisecond, Finish: &scripted.Finish{Answer: answer, Confidence: conf(0.9)}}}
	}
	byGoal := map[string][]scripted.Turn{"Fetch part one.": slow("part-1"), "Fetch part two.": slow("part-2")}
	db := memory.New()
	kids := newChildren(0, byGoal)
	ctx, cancel := context.WithCancel(context.Background())
	started := 0
	var mu sync.Mutex
	cfg := runner.Config{Model: newModel(t, parentTurns...), RunID: "p", Store: db, ChildModel: kids.model,
		ChildObservers: []observe.Observer{observe.Func(func(e observe.Entry) {
			mu.Lock()
			defer mu.Unlock()
			if e.Command != nil && e.Command.Type == loop.CallModel {
				if started++; started == 2 { // both children are waiting on their models
					cancel()
				}
			}
		})}}
	res, err := runner.Run(ctx, partTask(), cfg)
	if err != nil || res.Status != loop.Cancelled {
		t.Fatalf("first process: %s %v", res.Status, err)
	}
	for id, row := range childRuns(t, db, "p") {
		if row.Status != string(loop.Cancelled) {
			t.Fatalf("child %s is %s after its parent was cancelled", id, row.Status)
		}
	}

	cfg.Model, cfg.ChildObservers = newModel(t, parentTurns...), nil
	res, err = runner.Resume(context.Background(), partTask(), cfg, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resumed: %s %v: %s", res.Status, err, res.Reason)
	}
	runs := childRuns(t, db, "p")
	if len(runs) != 2 || runs["p/c1"].Status != "done" || runs["p/c2"].Status != "done" {
		t.Fatalf("children after resume: %+v", runs)
	}
	for _, id := range []string{"p/c1", "p/c2"} {
		recs, err := runner.LoadLog(context.Background(), db, id)
		if err != nil {
			t.Fatal(err)
		}
		starts, resumes := 0, 0
		for _, r := range recs {
			if r.Event != nil && r.Event.Type == loop.EventStart {
				starts++
			}
			if r.Event != nil && r.Event.Type == loop.EventResume {
				resumes++
			}
		}
		if starts != 1 || resumes != 1 {
			t.Errorf("child %s: %d starts and %d resumes in its log, want one of each", id, starts, resumes)
		}
	}
}

// TestSubagentFinishedBeforeCrash: a child finished, but its parent's
// process stopped before the parent logged the result. Resuming the parent
// takes the child's stored result; the child does not run again.
func TestSubagentFinishedBeforeCrash(t *testing.T) {
	parentTurns := []scripted.Turn{
		{Tools: []scripted.ToolCall{spawn("Fetch part one.", nil)}},
		{Expect: []string{"Sub-agent c1 ended done", "part-1"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	}
	kids := newChildren(0, map[string][]scripted.Turn{"Fetch part one.": {{Finish: &scripted.Finish{Answer: "part-1", Confidence: conf(0.9)}}}})
	db := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := runner.Config{Model: newModel(t, parentTurns...), RunID: "p", Store: db, ChildModel: kids.model,
		ChildObservers: []observe.Observer{observe.Func(func(e observe.Entry) {
			if e.Command != nil && e.Command.Type == loop.Finish {
				cancel() // the parent stops before it logs the child's result
			}
		})}}
	if res, _ := runner.Run(ctx, partTask(), cfg); res.Status != loop.Cancelled {
		t.Fatalf("first process: %s", res.Status)
	}
	if row := childRuns(t, db, "p")["p/c1"]; row.Status != "done" {
		t.Fatalf("child: %+v", row)
	}
	cfg.Model, cfg.ChildObservers = newModel(t, parentTurns...), nil
	res, err := runner.Resume(context.Background(), partTask(), cfg, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resumed: %s %v: %s", res.Status, err, res.Reason)
	}
	if n := kids.made["Fetch part one."]; n != 1 {
		t.Errorf("the child's model was made %d times; it must run once", n)
	}
}

// TestSubagentConfig: the runner refuses sub-agent settings that cannot
// work, naming them.
func TestSubagentConfig(t *testing.T) {
	task := partTask()
	task.Subagents.TaskChecks = []string{"nope"}
	if _, _, err := task.Spec(); err == nil || !strings.Contains(err.Error(), `task check "nope"`) {
		t.Errorf("unknown task check: %v", err)
	}
	task = partTask()
	task.Subagents = nil
	task.Policy.Subagents = &loop.Subagents{Checks: []loop.Check{{Name: "grader", Tier: verify.Cheap}}}
	if _, _, err := task.Spec(); err == nil || !strings.Contains(err.Error(), `check "grader" has no verifier`) {
		t.Errorf("child check without a verifier: %v", err)
	}
	task = partTask(add)
	task.Subagents.TaskChecks = []string{"equals"}
	spec, checks, err := task.Spec()
	if err != nil {
		t.Fatal(err)
	}
	sub := spec.Policy.Subagents
	if !slices.Equal(sub.Tools, []string{"add"}) || len(sub.Checks) != 2 || sub.Checks[0].Name != "equals" || sub.Checks[1].Name != "regex" || checks["regex"] == nil {
		t.Errorf("compiled sub-agents %+v", sub)
	}
	if len(spec.Checks) != 1 {
		t.Errorf("child-only checks gate the parent: %+v", spec.Checks)
	}
}

// TestSubagentsWallTime is the measurement of issue 7: a parent with four
// sub-agents, each making two model calls of 100 ms, started in one turn
// (parallel) or one per turn (sequential). It reports the wall times and
// the budget accounting. Run: go test ./runner -run TestSubagentsWallTime -v
func TestSubagentsWallTime(t *testing.T) {
	if testing.Short() {
		t.Skip("measures wall time")
	}
	const n, delay = 4, 100 * time.Millisecond
	goal := func(i int) string { return fmt.Sprintf("Fetch part %d.", i) }
	byGoal := map[string][]scripted.Turn{}
	for i := 1; i <= n; i++ {
		byGoal[goal(i)] = []scripted.Turn{
			{Delay: delay, Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"a": i, "b": 0}}}},
			{Delay: delay, Finish: &scripted.Finish{Answer: fmt.Sprintf("part-%d", i), Confidence: conf(0.9)}},
		}
	}
	final := scripted.Turn{Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}}
	parallel := []scripted.Turn{{}, final}
	var sequential []scripted.Turn
	for i := 1; i <= n; i++ {
		parallel[0].Tools = append(parallel[0].Tools, spawn(goal(i), nil))
		sequential = append(sequential, scripted.Turn{Tools: []scripted.ToolCall{spawn(goal(i), nil)}})
	}
	sequential = append(sequential, final)

	type outcome struct {
		wall   time.Duration
		res    loop.Result
		limits []budget.Limits
		usage  []budget.Usage
	}
	measure := func(turns []scripted.Turn) outcome {
		task := partTask(add)
		task.Subagents.Budget = budget.Limits{Steps: 4, Cost: budget.USD(0.05)}
		db := memory.New()
		start := time.Now()
		res, err := runner.Run(context.Background(), task, runner.Config{Model: priced{newModel(t, turns...), 2000}, RunID: "p", Store: db, ChildModel: newChildren(1000, byGoal).model})
		o := outcome{wall: time.Since(start), res: res}
		if err != nil || res.Status != loop.Done {
			t.Fatalf("%s %v: %s", res.Status, err, res.Reason)
		}
		var sum budget.Usage
		for i := 1; i <= n; i++ {
			cr := storedResult(t, childRuns(t, db, "p")[fmt.Sprintf("p/c%d", i)])
			if cr.Status != loop.Done {
				t.Fatalf("child %d: %s", i, cr.Status)
			}
			for _, d := range budget.Dimensions {
				if lim := cr.Limits.Limit(d); lim >= 0 && cr.Usage.Get(d) > lim {
					t.Fatalf("child %d spent %s=%d over its limit %d", i, d, cr.Usage.Get(d), lim)
				}
			}
			o.limits, o.usage = append(o.limits, cr.Limits), append(o.usage, cr.Usage)
			sum = sum.Add(cr.Usage)
		}
		parentOwn := len(turns)
		if got := res.Usage; got.Steps != parentOwn+sum.Steps || got.ModelCalls != parentOwn+sum.ModelCalls || got.ToolCalls != sum.ToolCalls ||
			got.Cost != budget.Micros(parentOwn)*2000+sum.Cost {
			t.Fatalf("parent usage %+v does not include the children's %+v", got, sum)
		}
		if d, over := budget.Exceeds(res.Limits, res.Usage, budget.Usage{}); over {
			t.Fatalf("parent over budget on %s: %s", d, budget.Report(res.Limits, res.Usage))
		}
		return o
	}
	par, seq := measure(parallel), measure(sequential)
	t.Logf("4 sub-agents x 2 model calls of %v: parallel (one turn) %v, sequential (one per turn) %v, ratio %.2f",
		delay, par.wall.Round(time.Millisecond), seq.wall.Round(time.Millisecond), float64(par.wall)/float64(seq.wall))
	for _, run := range []struct {
		name string
		o    outcome
	}{{"parallel", par}, {"sequential", seq}} {
		name, o := run.name, run.o
		t.Logf("%s: parent %s", name, budget.Report(o.res.Limits, o.res.Usage))
		for i := range o.limits {
			t.Logf("%s:   child c%d used %s", name, i+1, budget.Report(o.limits[i], o.usage[i]))
		}
	}
	if par.wall*2 > seq.wall {
		t.Errorf("parallel %v is not under half of sequential %v", par.wall, seq.wall)
	}
}

// breaking is a store whose writes start failing on demand, as if the
// process died: what was written stays, nothing more is.
type breaking struct {
	store.Store
	mu     sync.Mutex
	broken bool
}

func (b *breaking) set(v bool) { b.mu.Lock(); b.broken = v; b.mu.Unlock() }

func (b *breaking) Append(ctx context.Context, run string, entries []store.Entry) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken {
		return errors.New("disk gone")
	}
	return b.Store.Append(ctx, run, entries)
}

func (b *breaking) UpdateRun(ctx context.Context, id string, u store.Update) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken {
		return errors.New("disk gone")
	}
	return b.Store.UpdateRun(ctx, id, u)
}

// TestSubagentCrash: the store stops taking writes while two children are
// mid-way (a crash, as far as the log can tell): parent and children are
// left running with partial logs. Resuming the parent resumes each child
// from its log; none is started twice.
func TestSubagentCrash(t *testing.T) {
	parentTurns := []scripted.Turn{
		{Tools: []scripted.ToolCall{spawn("Fetch part one.", nil), spawn("Fetch part two.", nil)}},
		{Expect: []string{"part-1", "part-2"}, Finish: &scripted.Finish{Answer: "part-1 part-2", Confidence: conf(0.9)}},
	}
	// Both children have logged their first turn before either records its
	// second call (they meet), so both are mid-way when the store breaks.
	child := func(i int) []scripted.Turn {
		return []scripted.Turn{
			{Tools: []scripted.ToolCall{{Name: "meet"}}},
			{Expect: []string{"together"}, Finish: &scripted.Finish{Answer: fmt.Sprintf("part-%d", i), Confidence: conf(0.9)}},
		}
	}
	kids := newChildren(0, map[string][]scripted.Turn{"Fetch part one.": child(1), "Fetch part two.": child(2)})
	db := &breaking{Store: memory.New()}
	var mu sync.Mutex
	second := map[string]int{}
	cfg := runner.Config{Model: newModel(t, parentTurns...), RunID: "p", Store: db, ChildModel: kids.model,
		ChildObservers: []observe.Observer{observe.Func(func(e observe.Entry) {
			mu.Lock()
			defer mu.Unlock()
			if e.Command != nil && e.Command.Type == loop.CallModel {
				if second[e.Run]++; second[e.Run] == 2 {
					db.set(true) // a child is about to make its second call
				}
			}
		})}}
	if _, err := runner.Run(context.Background(), partTask(meet(2)), cfg); err == nil {
		t.Fatal("the run survived its store breaking")
	}
	db.set(false)
	for id, row := range childRuns(t, db, "p") {
		if row.Status != store.StatusRunning {
			t.Fatalf("child %s is %s; a crash leaves it running", id, row.Status)
		}
	}
	cfg.Model, cfg.ChildObservers = newModel(t, parentTurns...), nil
	res, err := runner.Resume(context.Background(), partTask(meet(2)), cfg, runner.ResumeOptions{})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("resumed: %s %v: %s", res.Status, err, res.Reason)
	}
	runs := childRuns(t, db, "p")
	if len(runs) != 2 {
		t.Fatalf("children after resume: %+v", runs)
	}
	var sum budget.Usage
	for _, id := range []string{"p/c1", "p/c2"} {
		if runs[id].Status != "done" {
			t.Errorf("child %s: %s", id, runs[id].Status)
		}
		sum = sum.Add(storedResult(t, runs[id]).Usage)
		recs, err := runner.LoadLog(context.Background(), db, id)
		if err != nil {
			t.Fatal(err)
		}
		starts, resumes := 0, 0
		for _, r := range recs {
			if r.Event != nil && r.Event.Type == loop.EventStart {
				starts++
			}
			if r.Event != nil && r.Event.Type == loop.EventResume {
				resumes++
			}
		}
		if starts != 1 || resumes != 1 {
			t.Errorf("child %s: %d starts and %d resumes in its log, want one of each", id, starts, resumes)
		}
		if _, err := replay.Run(recs); err != nil {
			t.Errorf("replay %s: %v", id, err)
		}
	}
	if res.Usage.Steps != 2+sum.Steps || res.Usage.ToolCalls != sum.ToolCalls {
		t.Errorf("parent usage %+v; children's %+v", res.Usage, sum)
	}
}
