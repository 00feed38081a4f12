package runner_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model/provider"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/runner"
	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/check"
)

// Example is the README's Go snippet (TestReadmeSnippet keeps them alike),
// with the model made from a turns file played offline instead of
// "anthropic:claude-sonnet-4-5": it adds, answers 6 (rejected), then 5
// (accepted).
func Example() {
	ctx := context.Background()
	m, err := provider.Open("scripted:testdata/readme-turns.yaml", provider.Config{Notice: io.Discard})
	if err != nil {
		panic(err)
	}
	add := tool.Func("add", "Add two integers.", func(ctx context.Context, in struct{ A, B int }) (int, error) {
		return in.A + in.B, nil
	})
	res, err := runner.Run(ctx, runner.Task{
		Goal:   "What is 2+3? Use the add tool, then finish.",
		Tools:  []tool.Tool{add},
		Checks: verify.Tiers{Expensive: []verify.Verifier{check.Equals("5")}},
		Budget: budget.Limits{Steps: 10, Cost: budget.USD(0.25), Time: 2 * time.Minute},
	}, runner.Config{Model: m})
	if err != nil { // infrastructure only
		panic(err)
	}
	fmt.Println(res.Status, res.Best.Answer, res.Usage.Steps, len(res.Attempts))
	// Output: done 5 3 2
}

// TestReadmeSnippet: the README's Go snippet is Example's code, line for
// line from the tool on, and makes its model with provider.Open.
func TestReadmeSnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(readme), "\n```go\n")
	snippet, _, _ = strings.Cut(snippet, "\n```\n")
	if !ok || !strings.Contains(snippet, "m, err := provider.Open(\"") {
		t.Fatalf("README has no Go snippet making its model with provider.Open:\n%s", snippet)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	code := string(src)
	code = code[strings.Index(code, "\tadd := tool.Func("):]
	code = code[:strings.Index(code, "}, runner.Config{Model: m})")]
	_, tail, _ := strings.Cut(snippet, "add := tool.Func(")
	tail, _, _ = strings.Cut(tail, "}, runner.Config{Model: m})")
	code = strings.ReplaceAll(code, "\n\t", "\n") // Example's body is indented once
	if strings.TrimSpace(code) != strings.TrimSpace("add := tool.Func("+tail) {
		t.Errorf("the README's snippet and Example differ:\n--- README\nadd := tool.Func(%s\n--- Example\n%s", tail, code)
	}
}

// An order's lines, the typed answer of ExampleRunAs.
type order struct {
	Items []line `json:"items"`
}

type line struct {
	Name  string  `json:"name"`
	Price float64 `json:"price"`
}

// Validate is the answer type's own rule, applied after the schema: its
// error goes back to the model as it is.
func (o order) Validate() error {
	for i, it := range o.Items {
		if it.Price < 0 {
			return fmt.Errorf("$.items[%d].price: must be ≥ 0", i)
		}
	}
	return nil
}

// ExampleRunAs asks for a typed answer: the first answer breaks the type's
// rule, is fed back with the path, and the second is returned decoded.
func ExampleRunAs() {
	sure := 0.9
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Finish: &scripted.Finish{Answer: `{"items":[{"name":"tea","price":3},{"name":"cake","price":4},{"name":"refund","price":-1}]}`, Confidence: &sure}},
		{Expect: []string{"$.items[2].price: must be ≥ 0"}, Finish: &scripted.Finish{Answer: `{"items":[{"name":"tea","price":3},{"name":"cake","price":4}]}`, Confidence: &sure}},
	}}, scripted.Config{Quiet: true})
	if err != nil {
		panic(err)
	}
	o, res, err := runner.RunAs[order](context.Background(), runner.Task{
		Goal:   "List the order's lines with their prices.",
		Budget: budget.Limits{Steps: 5, Cost: budget.USD(0.10), Time: time.Minute},
	}, runner.Config{Model: m})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, len(res.Attempts), res.Attempts[0].Verdicts[0].Detail)
	fmt.Println(o.Items[1].Name, o.Items[1].Price)
	// Output:
	// done 2 $.items[2].price: must be ≥ 0
	// cake 4
}

// ExampleHooks masks what a tool returns before the model, the log or the
// store see it, and denies a call the caller does not allow.
func ExampleHooks() {
	sure := 0.9
	m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{Tools: []scripted.ToolCall{{Name: "lookup", Args: map[string]string{"who": "ada"}}, {Name: "lookup", Args: map[string]string{"who": "root"}}}},
		{Expect: []string{"[email]", "not run: root is off limits"}, Finish: &scripted.Finish{Answer: "found", Confidence: &sure}},
	}}, scripted.Config{Quiet: true})
	if err != nil {
		panic(err)
	}
	lookup := tool.Func("lookup", "Look a person up.", func(_ context.Context, in struct {
		Who string `json:"who"`
	}) (string, error) {
		return in.Who + " <" + in.Who + "@example.com>", nil
	})
	email := regexp.MustCompile(`\S+@\S+\.\w+`)
	hooks := runner.Hooks{
		BeforeTool: func(_ context.Context, c runner.ToolCall) (runner.ToolDecision, error) {
			if strings.Contains(string(c.Args), `"root"`) {
				return runner.ToolDecision{Deny: "root is off limits"}, nil
			}
			return runner.ToolDecision{}, nil
		},
		AfterTool: func(_ context.Context, _ runner.ToolCall, out runner.ToolOutput) (runner.ToolOutput, error) {
			out.Output = email.ReplaceAllString(out.Output, "[email]")
			return out, nil
		},
	}
	var hookEntries []string
	hooks.OnEntry = func(e observe.Entry) {
		if e.Kind == observe.KindHook {
			hookEntries = append(hookEntries, e.Note.Problem)
		}
	}
	res, err := runner.Run(context.Background(), runner.Task{
		Goal:   "Find Ada.",
		Tools:  []tool.Tool{lookup},
		Checks: verify.Tiers{Cheap: []verify.Verifier{check.Equals("found")}},
		Budget: budget.Limits{Steps: 5, Cost: budget.USD(0.10), Time: time.Minute},
	}, runner.Config{Model: m, Hooks: hooks})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, hookEntries)
	// Output: done [before_tool:deny after_tool:rewrite]
}
