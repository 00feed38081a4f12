package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/tool"
)

type searchArgs struct {
	Query    string   `json:"query" jsonschema:"what to look for"`
	Limit    int      `json:"limit,omitempty"`
	Paths    []string `json:"paths,omitzero"`
	Regexp   bool     `json:"regexp"`
	Ratio    float64  `json:"ratio,omitempty"`
	Internal string   `json:"-"`
	//lint:ignore U1000 an unexported field, which the schema must leave out
	hidden int
}

func TestFuncSchema(t *testing.T) {
	search := tool.Func("search", "searches", func(context.Context, searchArgs) (string, error) { return "", nil })
	var got map[string]any
	if err := json.Unmarshal(search.Info().Schema, &got); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "what to look for"},
			"limit": map[string]any{"type": "integer"},
			// A slice may be null: encoding/json decodes null into a nil slice.
			"paths":  map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "string"}},
			"regexp": map[string]any{"type": "boolean"},
			"ratio":  map[string]any{"type": "number"},
		},
		// Fields without omitempty or omitzero are required.
		"required":             []any{"query", "regexp"},
		"additionalProperties": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("derived schema (-want +got):\n%s", diff)
	}
	// The derived schema must be one the registry accepts.
	if _, err := tool.NewRegistry(search); err != nil {
		t.Errorf("NewRegistry rejected a Func tool: %v", err)
	}
}

func TestFuncMapArgs(t *testing.T) {
	sum := tool.Func("sum", "sums values", func(_ context.Context, in map[string]int) (int, error) {
		n := 0
		for _, v := range in {
			n += v
		}
		return n, nil
	})
	if got := string(sum.Info().Schema); got != `{"type":"object","additionalProperties":{"type":"integer"}}` {
		t.Errorf("schema = %s", got)
	}
	out, err := sum.Run(context.Background(), json.RawMessage(`{"a":1,"b":2}`))
	if out != "3" || err != nil {
		t.Errorf("Run = %q, %v; want 3, nil", out, err)
	}
}

func TestFuncInfo(t *testing.T) {
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	tests := []struct {
		name string
		opts []tool.Option
		want tool.Info
	}{
		{"defaults", nil, tool.Info{}},
		{"idempotent", []tool.Option{tool.Idempotent()}, tool.Info{Idempotent: true}},
		{"timeout", []tool.Option{tool.Timeout(3 * time.Second)}, tool.Info{Timeout: 3 * time.Second}},
		{"max output", []tool.Option{tool.MaxOutput(100, 7)}, tool.Info{MaxOutputBytes: 100, MaxOutputLines: 7}},
		{
			"all, later wins",
			[]tool.Option{tool.Timeout(time.Second), tool.Idempotent(), tool.MaxOutput(1, 2), tool.Timeout(2 * time.Second)},
			tool.Info{Idempotent: true, Timeout: 2 * time.Second, MaxOutputBytes: 1, MaxOutputLines: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tool.Func("noop", "does nothing", noop, tt.opts...).Info()
			tt.want.Name, tt.want.Description = "noop", "does nothing"
			tt.want.Schema = json.RawMessage(`{"type":"object","additionalProperties":false}`)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Info (-want +got):\n%s", diff)
			}
		})
	}
}

type label string

type point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

func TestFuncRun(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		tool    tool.Tool
		args    string
		want    string
		wantErr string
	}{
		{
			name: "string output as is",
			tool: tool.Func("echo", "echoes", func(_ context.Context, in struct {
				S string `json:"s"`
			}) (string, error) {
				return in.S, nil
			}),
			args: `{"s":"a \"quoted\"\nline"}`,
			want: "a \"quoted\"\nline",
		},
		{
			name: "struct output as compact JSON",
			tool: tool.Func("swap", "swaps", func(_ context.Context, p point) (point, error) {
				return point{p.Y, p.X}, nil
			}),
			args: `{ "x": 1, "y": 2 }`,
			want: `{"x":2,"y":1}`,
		},
		{
			name: "named string type as JSON",
			tool: tool.Func("label", "labels", func(context.Context, struct{}) (label, error) {
				return "x", nil
			}),
			args: `{}`,
			want: `"x"`,
		},
		{
			name: "error returned unchanged",
			tool: tool.Func("fail", "fails", func(context.Context, struct{}) (string, error) {
				return "ignored", boom
			}),
			args:    `{}`,
			wantErr: "boom",
		},
		{
			name: "undecodable args",
			tool: tool.Func("swap", "swaps", func(_ context.Context, p point) (point, error) {
				return p, nil
			}),
			args:    `{"x":1e300,"y":0}`,
			wantErr: "invalid arguments: json: cannot unmarshal number 1e300 into Go struct field point.x of type int",
		},
		{
			name: "unencodable output",
			tool: tool.Func("chan", "returns a channel", func(context.Context, struct{}) (any, error) {
				return make(chan int), nil
			}),
			args:    `{}`,
			wantErr: "encoding result: json: unsupported type: chan int",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.tool.Run(context.Background(), json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
				}
				if tt.wantErr == "boom" && !errors.Is(err, boom) {
					t.Errorf("Run error %v does not wrap the tool's error", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Run = %q, %v; want %q, nil", got, err, tt.want)
			}
		})
	}
}

func TestFuncUndecodableArgsAreInvalidArgs(t *testing.T) {
	p := tool.Func("p", "p", func(_ context.Context, p point) (point, error) { return p, nil })
	_, err := p.Run(context.Background(), json.RawMessage(`{"x":"one"}`))
	if !errors.Is(err, tool.ErrInvalidArgs) {
		t.Errorf("Run error = %v, want one wrapping ErrInvalidArgs", err)
	}
}

func TestFuncPanicsWithoutObjectSchema(t *testing.T) {
	tests := []struct {
		name string
		make func()
		want string
	}{
		{
			name: "func field",
			make: func() {
				tool.Func("f", "f", func(context.Context, struct{ F func() }) (string, error) { return "", nil })
			},
			want: `tool.Func("f"): For[struct { F func() }](): type func() is unsupported by jsonschema`,
		},
		{
			name: "int map key",
			make: func() {
				tool.Func("m", "m", func(context.Context, map[int]string) (string, error) { return "", nil })
			},
			want: `tool.Func("m"): For[map[int]string](): unsupported map key type int`,
		},
		{
			name: "not an object",
			make: func() {
				tool.Func("i", "i", func(context.Context, int) (string, error) { return "", nil })
			},
			want: `tool.Func("i"): arguments type int must be a struct or a map with string keys`,
		},
		{
			name: "pointer may be null",
			make: func() {
				tool.Func("p", "p", func(context.Context, *point) (string, error) { return "", nil })
			},
			want: `tool.Func("p"): arguments type *tool_test.point must be a struct or a map with string keys`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				got, _ := recover().(string)
				if got != tt.want {
					t.Errorf("Func panicked with %q, want %q", got, tt.want)
				}
			}()
			tt.make()
		})
	}
}

func TestFuncHonoursContext(t *testing.T) {
	wait := tool.Func("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := wait.Run(ctx, json.RawMessage(`{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Run error = %v, want context.Canceled", err)
	}
}
