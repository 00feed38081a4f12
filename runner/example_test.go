package runner_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/budget"
	"github.com/ratchetloop/ratchet/model/provider"
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
