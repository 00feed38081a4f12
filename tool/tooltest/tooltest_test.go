package tooltest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/tool"
	"github.com/ratchetloop/ratchet/tool/tooltest"
)

// broken passes the registry but breaks the rest of the contract.
type broken struct{ infos atomic.Int64 }

func (b *broken) Info() tool.Info {
	return tool.Info{
		Name:        "broken",
		Description: fmt.Sprintf("call %d", b.infos.Add(1)),
		Schema:      json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`),
		Idempotent:  true,
	}
}

func (b *broken) Run(ctx context.Context, args json.RawMessage) (string, error) {
	if !strings.HasPrefix(string(args), "{") {
		panic("not an object")
	}
	if ctx.Err() != nil {
		time.Sleep(200 * time.Millisecond) // ignores the cancellation
	}
	if string(args) == `{"n":13}` {
		panic("unlucky")
	}
	return "ok", nil
}

func TestCheckFindsEveryViolation(t *testing.T) {
	err := tooltest.Check(&broken{}, tooltest.Config{
		Valid:   []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":"one"}`), json.RawMessage(`{"n":13}`)},
		Timeout: 50 * time.Millisecond,
	})
	if err == nil {
		t.Fatal("Check passed a tool that breaks the contract")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`Info changed between calls: {name "broken", description "call 1", schema {"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}, idempotent true, timeout 0s, max output 0 bytes 0 lines, more hint "", inline false}, then {name "broken", description "call 2", schema {"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}, idempotent true, timeout 0s, max output 0 bytes 0 lines, more hint "", inline false}`,
		`Info.Idempotent is true, but the tool is declared not idempotent`,
		`Config.Valid[1] {"n":"one"} does not match the tool's schema`,
		`valid arguments {"n":13}: outcome panic: tool "broken" panicked: unlucky`,
		`Run accepted arguments that are not JSON {"unclosed: it must reject them with an error, an observation for the model`,
		`Run panicked on arguments that are not an object []: not an object`,
		`Run panicked on arguments that are not an object "args": not an object`,
		`Run panicked on arguments that are not an object 7: not an object`,
		`Run accepted a property of the wrong type {"n": "not a number"}: it must reject them with an error, an observation for the model`,
		`Run on a cancelled context with {"n":1} did not return within 50ms`,
		`Run on a cancelled context with {"n":"one"} did not return within 50ms`,
		`Run on a cancelled context with {"n":13} did not return within 50ms`,
		`concurrent call with {"n":13} panicked: tool "broken" panicked: unlucky`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// unregistrable fails tool.NewRegistry: the suite stops there.
type unregistrable struct{}

func (unregistrable) Info() tool.Info {
	return tool.Info{Name: "finish", Schema: json.RawMessage(`{"type":"array"}`)}
}
func (unregistrable) Run(context.Context, json.RawMessage) (string, error) { return "", nil }

func TestCheckFindsABadInfo(t *testing.T) {
	err := tooltest.Check(unregistrable{}, tooltest.Config{})
	want := "tool.NewRegistry refuses the tool: " + strings.Join([]string{
		`tool[0] "finish": name is reserved for the loop's own tool`,
		`tool[0] "finish": description is empty`,
		`tool[0] "finish": schema must have "type": "object"`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Check = %v\nwant %s", err, want)
	}
}

// TestFunc: a typed tool keeps the contract.
func TestFunc(t *testing.T) {
	add := tool.Func("add", "Adds two integers.", func(ctx context.Context, in struct{ A, B int }) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return in.A + in.B, nil
	}, tool.Idempotent())
	tooltest.Run(t, add, tooltest.Config{Valid: []json.RawMessage{json.RawMessage(`{"A":2,"B":3}`)}, Idempotent: true})
}
