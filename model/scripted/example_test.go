package scripted_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ratchetloop/ratchet/model"
	"github.com/ratchetloop/ratchet/model/scripted"
)

func ExampleLoad() {
	m, err := scripted.Load("testdata/demo.yaml", scripted.Config{Notice: os.Stdout})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := model.Request{Messages: []model.Message{{Role: model.User, Content: []model.Block{model.TextBlock("What is 2+3+1?")}}}}
	for range 3 {
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		for _, b := range resp.Content {
			switch b.Type {
			case model.Text:
				fmt.Printf("text: %s\n", b.Text)
			case model.ToolUse:
				fmt.Printf("%s: %s(%s)\n", b.ID, b.Name, b.Input)
			}
		}
	}
	// Output:
	// ratchet: scripted model "demo" (testdata/demo.yaml) is playing recorded turns; it is a test double, not a real model
	// text: I'll add the numbers first.
	// call_1_1: add({"a":2,"b":3})
	// call_1_2: add({"a": 2,)
	// call_2_1: finish({"answer":"6","confidence":0.9})
	// error: scripted: expectation not met: turn 3 (testdata/demo.yaml:11): the latest user message does not contain "expected \"5\""; it was "What is 2+3+1?"
}

func ExampleRepeat() {
	s := scripted.Repeat(2,
		scripted.Turn{Tools: []scripted.ToolCall{{Name: "step", Args: map[string]int{"n": 1}}}},
		scripted.Turn{Finish: &scripted.Finish{Answer: "done", Confidence: new(0.8)}},
	)
	m, err := scripted.New(s, scripted.Config{Quiet: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range m.Turns() {
		resp, _ := m.Generate(context.Background(), model.Request{})
		b := resp.Content[0]
		fmt.Println(b.ID, b.Name, string(b.Input), resp.StopReason)
	}
	// Output:
	// call_1_1 step {"n":1} tool_use
	// call_2_1 step {"n":1} tool_use
	// call_3_1 finish {"answer":"done","confidence":0.8} tool_use
}
