package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/loop"
	"github.com/ratchetloop/ratchet/model/scripted"
	"github.com/ratchetloop/ratchet/runner"
)

type basket struct {
	Items []struct {
		Name  string `json:"name"`
		Price int8   `json:"price"`
	} `json:"items"`
}

func (b *basket) Validate() error {
	for i, it := range b.Items {
		if it.Price < 0 {
			return fmt.Errorf("$.items[%d].price: must be ≥ 0", i)
		}
	}
	return nil
}

func finishRaw(args string) scripted.Turn {
	return scripted.Turn{Tools: []scripted.ToolCall{{Name: "finish", RawArgs: &args}}}
}

// TestRunAs: the schema's failures (a Go type's bounds included) and the
// type's own rule each go back to the model with the path;
// the value returned is the accepted answer, decoded.
func TestRunAs(t *testing.T) {
	m := newModel(t,
		finishRaw(`{"answer":{"items":[{"name":"a"}]},"confidence":0.9}`),
		scripted.Turn{Expect: []string{`output_schema failed at $.items[0]: is missing the required property "price"`},
			Finish: &scripted.Finish{Answer: `{"items":[{"name":"a","price":300}]}`, Confidence: conf(0.9)}},
		scripted.Turn{Expect: []string{"output_schema failed at $.items[0].price: is 300, above the maximum 127"},
			Finish: &scripted.Finish{Answer: `{"items":[{"name":"a","price":1},{"name":"b","price":-2}]}`, Confidence: conf(0.9)}},
		scripted.Turn{Expect: []string{"$.items[1].price: must be ≥ 0"}, Tools: []scripted.ToolCall{{Name: "finish", Args: map[string]any{
			"answer": map[string]any{"items": []map[string]any{{"name": "a", "price": 1}, {"name": "b", "price": 2}}}, "confidence": 0.9}}}},
	)
	task := runner.Task{Goal: "Fill the basket.", Budget: addTask().Budget}
	b, res, err := runner.RunAs[basket](context.Background(), task, runner.Config{Model: m})
	if err != nil || res.Status != loop.Done {
		t.Fatalf("%v %s: %s", err, res.Status, res.Reason)
	}
	if len(b.Items) != 2 || b.Items[1].Name != "b" || b.Items[1].Price != 2 || len(res.Attempts) != 4 {
		t.Errorf("got %+v after %d attempts", b, len(res.Attempts))
	}
}

// TestRunAsTaskSchema: the task's own schema, when given, is the one the
// model is held to, and the answer must still decode into T: a value that
// does not fit is fed back with its path.
func TestRunAsTaskSchema(t *testing.T) {
	m := newModel(t,
		scripted.Turn{Finish: &scripted.Finish{Answer: `{"items":[{"name":"","price":1}]}`, Confidence: conf(0.9)}},
		scripted.Turn{Expect: []string{"output_schema failed at $.items[0].name: has 0 characters, fewer than the minimum 1"},
			Finish: &scripted.Finish{Answer: `{"items":[{"name":"x","price":300}]}`, Confidence: conf(0.9)}},
		scripted.Turn{Expect: []string{"output_schema failed: $.items.price: is a JSON number 300, which does not fit the answer's Go type int8"},
			Finish: &scripted.Finish{Answer: `{"items":[{"name":"x","price":1}]}`, Confidence: conf(0.9)}},
	)
	task := runner.Task{Goal: "Fill the basket.", Budget: addTask().Budget,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","minLength":1}}}}}}`)}
	b, res, err := runner.RunAs[basket](context.Background(), task, runner.Config{Model: m})
	if err != nil || res.Status != loop.Done || b.Items[0].Name != "x" {
		t.Fatalf("%v %s: %s; %+v", err, res.Status, res.Reason, b)
	}
}

// TestRunAsNoSchema: a type JSON cannot represent is refused before the
// run starts; a run that does not end done returns the zero value.
func TestRunAsNoSchema(t *testing.T) {
	_, _, err := runner.RunAs[func()](context.Background(), addTask(), runner.Config{Model: newModel(t)})
	if err == nil || !strings.Contains(err.Error(), "no JSON Schema for the answer type func()") {
		t.Errorf("func(): %v", err)
	}
	m := newModel(t, scripted.Turn{Finish: &scripted.Finish{Answer: `{"items":[{"name":"a","price":-1}]}`, Confidence: conf(0.9)}})
	task := runner.Task{Goal: "Fill the basket.", Budget: addTask().Budget}
	task.Budget.Steps = 1
	b, res, _ := runner.RunAs[basket](context.Background(), task, runner.Config{Model: m})
	if res.Status.IsDone() || b.Items != nil {
		t.Errorf("%s: %+v", res.Status, b)
	}
}

// FuzzRunAs: whatever a model gives as finish's arguments, RunAs never
// panics, and a done run's value keeps the type's rule.
func FuzzRunAs(f *testing.F) {
	for _, s := range []string{
		`{"answer":{"items":[{"name":"a","price":1}]},"confidence":0.9}`, `{"answer":"{\"items\":[]}","confidence":1}`,
		`{"answer":{"items":[{"name":"a","price":-1}]},"confidence":0.9}`, `{"answer":{"items":[{"price":1e400}]},"confidence":1}`,
		`{"answer":[1],"confidence":1}`, `{"answer":`, `{"answer":"\u0000","confidence":0.5}`,
	} {
		f.Add(s)
	}
	budget := addTask().Budget
	budget.Steps = 1
	f.Fuzz(func(t *testing.T, args string) {
		m, err := scripted.New(scripted.Script{Turns: []scripted.Turn{finishRaw(args)}}, scripted.Config{Quiet: true})
		if err != nil {
			t.Skip()
		}
		b, res, _ := runner.RunAs[basket](context.Background(), runner.Task{Goal: "g", Budget: budget}, runner.Config{Model: m})
		if res.Status.IsDone() {
			if err := b.Validate(); err != nil {
				t.Errorf("done with an answer that breaks the rule: %v", err)
			}
		}
	})
}
