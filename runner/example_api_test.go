package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/store/memory"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// play is a scripted model: the recorded test double that examples and
// tests use in place of a real provider (which provider.Open makes).
func play(turns ...scripted.Turn) *scripted.Model {
	m, err := scripted.New(scripted.Script{Turns: turns}, scripted.Config{Quiet: true})
	if err != nil {
		panic(err)
	}
	return m
}

func finish(answer string) scripted.Turn {
	sure := 0.9
	return scripted.Turn{Finish: &scripted.Finish{Answer: answer, Confidence: &sure}}
}

// ExampleRun runs a generate-and-check loop: no tools, each reply is a
// candidate, and only one that passes the check ends the run done.
func ExampleRun() {
	m := play(
		scripted.Turn{Text: "```\nhello world\n```\nCONFIDENCE: 0.9"},
		scripted.Turn{Text: "```\nHello, World!\n```\nCONFIDENCE: 0.95"},
	)
	res, err := runner.Run(context.Background(), runner.Task{
		Mode:   loop.ModeGenerate,
		Goal:   "Write the classic greeting, capitalised, with a comma and an exclamation mark.",
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("Hello, World!")}},
	}, runner.Config{Model: m})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Best.Answer, len(res.Attempts))
	// Output: done Hello, World! 2
}

// lookup is a Tool written by hand rather than with tool.Func: its own
// schema, its own decoding, and it says it is safe to call again after a
// crash (Idempotent), so a resumed run may retry an unfinished call.
type lookup struct{ prices map[string]int }

func (l lookup) Info() tool.Info {
	return tool.Info{
		Name:        "price",
		Description: "The price of an item in cents.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}},"required":["item"],"additionalProperties":false}`),
		Idempotent:  true,
	}
}

func (l lookup) Run(_ context.Context, args json.RawMessage) (string, error) {
	var in struct{ Item string }
	if err := json.Unmarshal(args, &in); err != nil {
		return "", fmt.Errorf("%w: %v", tool.ErrInvalidArgs, err)
	}
	p, ok := l.prices[in.Item]
	if !ok {
		// A tool error is shown to the model, which can try another item.
		return "", fmt.Errorf("no item %q", in.Item)
	}
	return fmt.Sprint(p), nil
}

// ExampleRun_customTool gives the model a hand-written Tool. Its error
// reaches the model as an observation, not the caller as a Go error.
func ExampleRun_customTool() {
	m := play(
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "price", Args: map[string]string{"item": "pear"}}}},
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "price", Args: map[string]string{"item": "apple"}}}},
		finish("30"),
	)
	res, err := runner.Run(context.Background(), runner.Task{
		Goal:   "What does an apple cost, in cents?",
		Tools:  []tool.Tool{lookup{prices: map[string]int{"apple": 30}}},
		Checks: verify.Tiers{Expensive: []verify.Verifier{check.Equals("30")}},
	}, runner.Config{Model: m})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Best.Answer, res.Usage.ToolCalls)
	// Output: done 30 2
}

// even is a Verifier written by hand: a cheap, grounded check that says
// what failed, which the loop feeds back to the model.
type even struct{}

func (even) Name() string                  { return "even" }
func (even) Provenance() verify.Provenance { return verify.Validation }

func (even) Check(_ context.Context, c verify.Candidate) (verify.Verdict, error) {
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(c.Answer), &n); err != nil {
		return verify.Verdict{Detail: "the answer is not a whole number"}, nil
	}
	if n%2 != 0 {
		return verify.Verdict{Detail: fmt.Sprintf("%d is odd", n)}, nil
	}
	return verify.Verdict{OK: true, Confidence: 1, Detail: "even"}, nil
}

// ExampleRun_customVerifier gates done on a hand-written Verifier: the
// first answer fails it, and its detail goes back to the model.
func ExampleRun_customVerifier() {
	m := play(finish("7"), finish("8"))
	res, err := runner.Run(context.Background(), runner.Task{
		Goal:   "Name an even number.",
		Checks: verify.Tiers{Cheap: []verify.Verifier{even{}}},
	}, runner.Config{Model: m})
	if err != nil {
		panic(err)
	}
	first := res.Attempts[0].Verdicts[0]
	fmt.Println(res.Status, res.Best.Answer, "after", first.Detail)
	// Output: done 8 after 7 is odd
}

// ExampleResume leaves a run waiting for a person's approval of a tool
// call (a permission rule says ask), then carries it on, approved, as
// 'ratchet approve' does: in another process, it would need only the
// store.
func ExampleResume() {
	ctx := context.Background()
	db := memory.New()
	var deleted atomic.Int32
	rm := tool.Func("delete_file", "Delete a file.", func(_ context.Context, in struct{ Path string }) (string, error) {
		deleted.Add(1)
		return "deleted " + in.Path, nil
	})
	task := runner.Task{
		Goal:        "Delete old.txt, then answer done.",
		Tools:       []tool.Tool{rm},
		Checks:      verify.Tiers{Cheap: []verify.Verifier{check.Equals("done")}},
		Permissions: []loop.Permission{{Tool: "delete_file", Action: loop.Ask}},
	}
	turns := []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "delete_file", Args: map[string]string{"Path": "old.txt"}}}},
		finish("done"),
	}
	cfg := runner.Config{Model: play(turns...), Store: db, RunID: "cleanup", Human: runner.Later}
	_, err := runner.Run(ctx, task, cfg)
	var waiting *runner.AwaitingError
	fmt.Println(errors.As(err, &waiting), deleted.Load())

	cfg.Model = play(turns...) // a new process: the model carries on from the store's count
	yes := true
	res, err := runner.Resume(ctx, task, cfg, runner.ResumeOptions{Approved: &yes})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, deleted.Load())
	// Output:
	// true 0
	// done 1
}

// ExampleFork forks a finished run from step 2's model call with another
// model and a message: step 1's tool call is copied, not run again, and
// the parent is left as it was.
func ExampleFork() {
	ctx := context.Background()
	db := memory.New()
	var calls atomic.Int32
	add := tool.Func("add", "Add two integers.", func(_ context.Context, in struct{ A, B int }) (int, error) {
		calls.Add(1)
		return in.A + in.B, nil
	})
	task := runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("5")}},
	}
	parent := play(scripted.Turn{Tools: []scripted.ToolCall{{Name: "add", Args: map[string]int{"A": 2, "B": 3}}}}, finish("6"), finish("5"))
	if _, err := runner.Run(ctx, task, runner.Config{Model: parent, Store: db, RunID: "parent"}); err != nil {
		panic(err)
	}
	log, err := runner.LoadLog(ctx, db, "parent")
	if err != nil {
		panic(err)
	}
	points := runner.ForkPoints(log) // one per step's model call
	res, err := runner.Fork(ctx, task, runner.Config{Store: db, RunID: "child"}, runner.ForkOptions{
		From: "parent", At: points[1].Seq,
		Model:   play(finish("5")),
		Message: "The tool said 5.",
	})
	if err != nil {
		panic(err)
	}
	row, _ := db.Run(ctx, "child")
	fmt.Println(res.Status, res.Usage.Steps, calls.Load(), row.ForkOf)
	// Output: done 2 1 parent
}
