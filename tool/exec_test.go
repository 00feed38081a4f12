package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/tool"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func add(_ context.Context, in addArgs) (int, error) { return in.A + in.B, nil }

func mustRegistry(t testing.TB, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return reg
}

func TestExecutorOutcomes(t *testing.T) {
	// stuck ignores its context; release lets its goroutine end after the
	// test.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := mustRegistry(t,
		tool.Func("add", "adds two integers", add),
		tool.Func("none", "takes no arguments", func(context.Context, struct{}) (string, error) { return "done", nil }),
		&fixed{
			info: tool.Info{Name: "make", Description: "builds", Schema: json.RawMessage(objectSchema)},
			run: func(context.Context, json.RawMessage) (string, error) {
				return "main.go:3: undefined: x", errors.New("exit status 1")
			},
		},
		newFixed("fail", "", errors.New("disk full")),
		tool.Func("panic", "panics", func(context.Context, struct{}) (string, error) { panic("kaboom") }),
		tool.Func("goexit", "exits its goroutine", func(context.Context, struct{}) (string, error) {
			runtime.Goexit()
			return "", nil
		}),
		tool.Func("decode", "has a panicking decoder", func(context.Context, struct {
			P panicky `json:"p"`
		}) (string, error) {
			return "", nil
		}),
		&fixed{
			info: tool.Info{Name: "raw", Description: "echoes its arguments", Schema: json.RawMessage(objectSchema)},
			run:  func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil },
		},
		tool.Func("stuck", "ignores its context", func(context.Context, struct{}) (string, error) {
			<-release
			return "too late", nil
		}, tool.Timeout(20*time.Millisecond)),
		tool.Func("wait", "honours its context", func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "partial", ctx.Err()
		}, tool.Timeout(20*time.Millisecond)),
	)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name string
		ctx  context.Context
		call tool.Call
		want tool.Result
	}{
		{
			name: "ok",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)},
			want: tool.Result{Output: "3", Outcome: tool.OutcomeOK},
		},
		{
			name: "ok, empty args mean {}",
			call: tool.Call{ID: "1", Name: "none"},
			want: tool.Result{Output: "done", Outcome: tool.OutcomeOK},
		},
		{
			name: "args reach the tool as sent",
			call: tool.Call{ID: "1", Name: "raw", Args: json.RawMessage(` { "x" : [1, 2.50] } `)},
			want: tool.Result{Output: ` { "x" : [1, 2.50] } `, Outcome: tool.OutcomeOK},
		},
		{
			name: "empty args reach the tool as {}",
			call: tool.Call{ID: "1", Name: "raw"},
			want: tool.Result{Output: `{}`, Outcome: tool.OutcomeOK},
		},
		{
			name: "unknown tool lists the available ones",
			call: tool.Call{ID: "1", Name: "ad", Args: json.RawMessage(`{}`)},
			want: tool.Result{
				Output:  `unknown tool "ad"; available tools: add, none, make, fail, panic, goexit, decode, raw, stuck, wait`,
				IsError: true, Outcome: tool.OutcomeUnknownTool,
			},
		},
		{
			name: "invalid JSON",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,`)},
			want: tool.Result{
				Output:  `tool "add": arguments are not valid JSON: unexpected end of JSON input`,
				IsError: true, Outcome: tool.OutcomeInvalidArgs,
			},
		},
		{
			name: "missing property",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1}`)},
			want: tool.Result{
				Output:  `tool "add": arguments do not match the schema: $: missing property 'b'`,
				IsError: true, Outcome: tool.OutcomeInvalidArgs,
			},
		},
		{
			name: "wrong type",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":"2"}`)},
			want: tool.Result{
				Output:  `tool "add": arguments do not match the schema: $.b: got string, want integer`,
				IsError: true, Outcome: tool.OutcomeInvalidArgs,
			},
		},
		{
			name: "unknown property",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2,"c":3}`)},
			want: tool.Result{
				Output:  `tool "add": arguments do not match the schema: $: additional properties 'c' not allowed`,
				IsError: true, Outcome: tool.OutcomeInvalidArgs,
			},
		},
		{
			name: "null args",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`null`)},
			want: tool.Result{
				Output:  `tool "add": arguments must be a JSON object, not null`,
				IsError: true, Outcome: tool.OutcomeInvalidArgs,
			},
		},
		{
			name: "args the tool cannot decode",
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1e300,"b":2}`)},
			want: tool.Result{
				Output:  `tool "add": invalid arguments: json: cannot unmarshal number 1e300 into Go struct field addArgs.a of type int`,
				IsError: true, Outcome: tool.OutcomeInvalidArgs,
			},
		},
		{
			name: "tool error",
			call: tool.Call{ID: "1", Name: "fail", Args: json.RawMessage(`{}`)},
			want: tool.Result{Output: `tool "fail" failed: disk full`, IsError: true, Outcome: tool.OutcomeToolError},
		},
		{
			name: "tool error with output",
			call: tool.Call{ID: "1", Name: "make", Args: json.RawMessage(`{}`)},
			want: tool.Result{
				Output:  "tool \"make\" failed: exit status 1\nmain.go:3: undefined: x",
				IsError: true, Outcome: tool.OutcomeToolError,
			},
		},
		{
			name: "panic",
			call: tool.Call{ID: "1", Name: "panic", Args: json.RawMessage(`{}`)},
			want: tool.Result{Output: `tool "panic" panicked: kaboom`, IsError: true, Outcome: tool.OutcomePanic},
		},
		{
			name: "panic while decoding args",
			call: tool.Call{ID: "1", Name: "decode", Args: json.RawMessage(`{"p":{}}`)},
			want: tool.Result{Output: `tool "decode" panicked: bad decoder`, IsError: true, Outcome: tool.OutcomePanic},
		},
		{
			name: "goexit",
			call: tool.Call{ID: "1", Name: "goexit", Args: json.RawMessage(`{}`)},
			want: tool.Result{Output: `tool "goexit" exited without returning`, IsError: true, Outcome: tool.OutcomePanic},
		},
		{
			name: "timeout, tool ignores its context",
			call: tool.Call{ID: "1", Name: "stuck", Args: json.RawMessage(`{}`)},
			want: tool.Result{Output: `tool "stuck" timed out after 20ms`, IsError: true, Outcome: tool.OutcomeTimeout},
		},
		{
			name: "timeout, tool honours its context",
			call: tool.Call{ID: "1", Name: "wait", Args: json.RawMessage(`{}`)},
			want: tool.Result{Output: `tool "wait" timed out after 20ms`, IsError: true, Outcome: tool.OutcomeTimeout},
		},
		{
			name: "cancelled before it started",
			ctx:  cancelled,
			call: tool.Call{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)},
			want: tool.Result{
				Output:  `tool "add" was cancelled before it started: context canceled`,
				IsError: true, Outcome: tool.OutcomeCancelled,
			},
		},
	}
	e := tool.NewExecutor(tool.ExecConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			tt.want.ID, tt.want.Name = tt.call.ID, tt.call.Name
			got := e.Run(ctx, reg, []tool.Call{tt.call})
			if diff := cmp.Diff([]tool.Result{tt.want}, got); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

// panicky is an argument type whose decoder panics.
type panicky struct{}

func (*panicky) UnmarshalJSON([]byte) error { panic("bad decoder") }

func TestExecutorCancelledWhileRunning(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	// Each tool cancels the run once it has started, then either waits for
	// its context or ignores it.
	tests := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"honours", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
		{"ignores", func(context.Context) error { <-release; return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			reg := mustRegistry(t, tool.Func("interrupt", "cancels the run", func(ctx context.Context, _ struct{}) (string, error) {
				cancel(errors.New("interrupted by user"))
				return "", tt.run(ctx)
			}))
			got := tool.NewExecutor(tool.ExecConfig{}).RunOne(ctx, reg, tool.Call{ID: "1", Name: "interrupt"})
			want := tool.Result{
				ID: "1", Name: "interrupt",
				Output:  `tool "interrupt" was cancelled: interrupted by user`,
				IsError: true, Outcome: tool.OutcomeCancelled,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("RunOne (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecutorParentDeadlineBeatsToolTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	reg := mustRegistry(t, tool.Func("stuck", "ignores its context", func(context.Context, struct{}) (string, error) {
		<-release
		return "", nil
	}, tool.Timeout(time.Hour)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := tool.NewExecutor(tool.ExecConfig{Timeout: time.Hour}).RunOne(ctx, reg, tool.Call{ID: "1", Name: "stuck"})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("RunOne took %v, want about 30ms", elapsed)
	}
	want := tool.Result{
		ID: "1", Name: "stuck",
		Output:  `tool "stuck" was cancelled: context deadline exceeded`,
		IsError: true, Outcome: tool.OutcomeCancelled,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunOne (-want +got):\n%s", diff)
	}
}

func TestExecutorDefaultTimeout(t *testing.T) {
	reg := mustRegistry(t, tool.Func("wait", "waits for its context", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	got := tool.NewExecutor(tool.ExecConfig{Timeout: 10 * time.Millisecond}).RunOne(context.Background(), reg, tool.Call{ID: "1", Name: "wait"})
	if want := `tool "wait" timed out after 10ms`; got.Output != want {
		t.Errorf("Output = %q, want %q", got.Output, want)
	}
}

func TestExecutorRunsInParallelInOrder(t *testing.T) {
	reg := mustRegistry(t, tool.Func("sleep", "sleeps", func(ctx context.Context, in struct {
		MS int `json:"ms"`
	}) (string, error) {
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return fmt.Sprintf("slept %dms", in.MS), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	// Later calls finish first, so the results must be put back in order.
	var calls []tool.Call
	var want []tool.Result
	for i, ms := range []int{100, 90, 80, 70} {
		id := fmt.Sprintf("call-%d", i)
		calls = append(calls, tool.Call{ID: id, Name: "sleep", Args: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, ms))})
		want = append(want, tool.Result{ID: id, Name: "sleep", Output: fmt.Sprintf("slept %dms", ms), Outcome: tool.OutcomeOK})
	}
	calls = append(calls, tool.Call{ID: "call-4", Name: "nope"})
	want = append(want, tool.Result{
		ID: "call-4", Name: "nope", Output: `unknown tool "nope"; available tools: sleep`,
		IsError: true, Outcome: tool.OutcomeUnknownTool,
	})

	start := time.Now()
	got := tool.NewExecutor(tool.ExecConfig{}).Run(context.Background(), reg, calls)
	elapsed := time.Since(start)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
	// Sequentially they take 340ms.
	if elapsed > 250*time.Millisecond {
		t.Errorf("Run took %v, want about 100ms: calls did not run in parallel", elapsed)
	}
}

func TestExecutorMaxParallel(t *testing.T) {
	tests := []struct {
		maxParallel, calls, want int
	}{
		{0, 20, 8}, // default
		{2, 6, 2},
		{3, 1, 1},
		{100, 5, 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max %d, %d calls", tt.maxParallel, tt.calls), func(t *testing.T) {
			var running, peak atomic.Int64
			reg := mustRegistry(t, tool.Func("busy", "occupies a slot", func(context.Context, struct{}) (string, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(50 * time.Millisecond)
				return "", nil
			}))
			calls := make([]tool.Call, tt.calls)
			for i := range calls {
				calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "busy"}
			}
			results := tool.NewExecutor(tool.ExecConfig{MaxParallel: tt.maxParallel}).Run(context.Background(), reg, calls)
			for _, r := range results {
				if r.Outcome != tool.OutcomeOK {
					t.Fatalf("call %s: %s: %s", r.ID, r.Outcome, r.Output)
				}
			}
			if got := peak.Load(); got != int64(tt.want) {
				t.Errorf("at most %d calls ran at once, want %d", got, tt.want)
			}
		})
	}
}

func TestExecutorCancelledBatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int64
	reg := mustRegistry(t, tool.Func("cancel", "cancels the batch", func(ctx context.Context, _ struct{}) (string, error) {
		ran.Add(1)
		cancel()
		return "", nil
	}))
	calls := []tool.Call{{ID: "a", Name: "cancel"}, {ID: "b", Name: "cancel"}, {ID: "c", Name: "cancel"}}
	// One at a time, so the first call's cancel stops the rest before they
	// start.
	got := tool.NewExecutor(tool.ExecConfig{MaxParallel: 1}).Run(ctx, reg, calls)
	if len(got) != 3 {
		t.Fatalf("Run returned %d results, want 3", len(got))
	}
	// The first call's reply races with its own cancel: either is right.
	if o := got[0].Outcome; o != tool.OutcomeOK && o != tool.OutcomeCancelled {
		t.Errorf("first call: %s: %s; want ok or cancelled", o, got[0].Output)
	}
	want := []tool.Result{
		{ID: "b", Name: "cancel", Output: `tool "cancel" was cancelled before it started: context canceled`, IsError: true, Outcome: tool.OutcomeCancelled},
		{ID: "c", Name: "cancel", Output: `tool "cancel" was cancelled before it started: context canceled`, IsError: true, Outcome: tool.OutcomeCancelled},
	}
	if diff := cmp.Diff(want, got[1:]); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
}

func TestExecutorTrimsOutput(t *testing.T) {
	long := numbered(1000) // 3893 bytes
	longErr := errors.New(strings.TrimSuffix(long, "\n"))
	reg := mustRegistry(t,
		newFixed("default", long, nil),
		tool.Func("bytes", "own byte limit", func(context.Context, struct{}) (string, error) { return long, nil },
			tool.MaxOutput(100, 0)),
		tool.Func("lines", "own line limit", func(context.Context, struct{}) (string, error) { return long, nil },
			tool.MaxOutput(0, 5)),
		newFixed("error", "", longErr),
		tool.Func("paged", "own hint", func(context.Context, struct{}) (string, error) { return long, nil },
			tool.MaxOutput(0, 4), tool.MoreHint("call paged with offset={first}")),
	)
	hint := tool.DefaultMoreHint
	tests := []struct {
		name string
		cfg  tool.ExecConfig
		tool string
		want string
	}{
		{"executor defaults", tool.ExecConfig{}, "default", tool.TrimHint(long, 16384, 200, hint)},
		{"executor config", tool.ExecConfig{MaxOutputBytes: 1000, MaxOutputLines: 50}, "default", tool.TrimHint(long, 1000, 50, hint)},
		{"tool byte limit", tool.ExecConfig{MaxOutputLines: 50}, "bytes", tool.TrimHint(long, 100, 50, hint)},
		{"tool line limit", tool.ExecConfig{MaxOutputBytes: 1000}, "lines", tool.TrimHint(long, 1000, 5, hint)},
		{"errors too", tool.ExecConfig{MaxOutputLines: 4}, "error", tool.TrimHint(`tool "error" failed: `+longErr.Error(), 16384, 4, hint)},
		{"per-tool config beats the tool's own", tool.ExecConfig{Output: map[string]tool.OutputCaps{"lines": {MaxLines: 8}}}, "lines", tool.TrimHint(long, 16384, 8, hint)},
		{"per-tool config keeps what it leaves zero", tool.ExecConfig{Output: map[string]tool.OutputCaps{"bytes": {MaxLines: 8}}}, "bytes", tool.TrimHint(long, 100, 8, hint)},
		{"the tool's own hint", tool.ExecConfig{}, "paged", "1\n2\n[… 3880 bytes, 996 lines elided (lines 3–998 of 1000); call paged with offset=3 …]\n999\n1000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tool.NewExecutor(tt.cfg).RunOne(context.Background(), reg, tool.Call{ID: "1", Name: tt.tool})
			if got.Output != tt.want {
				t.Errorf("Output =\n%s\nwant\n%s", got.Output, tt.want)
			}
			if got.Output == long {
				t.Errorf("Output was not trimmed")
			}
		})
	}
}

func TestExecutorNoCalls(t *testing.T) {
	got := tool.NewExecutor(tool.ExecConfig{}).Run(context.Background(), nil, nil)
	if len(got) != 0 {
		t.Errorf("Run with no calls = %v, want none", got)
	}
}

func TestExecutorNilRegistry(t *testing.T) {
	got := tool.NewExecutor(tool.ExecConfig{}).RunOne(context.Background(), nil, tool.Call{ID: "1", Name: "add"})
	want := tool.Result{
		ID: "1", Name: "add", Output: `unknown tool "add": no tools are available`,
		IsError: true, Outcome: tool.OutcomeUnknownTool,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunOne (-want +got):\n%s", diff)
	}
}

type fuzzArgs struct {
	A     int              `json:"a"`
	Name  string           `json:"name,omitempty"`
	Tags  []string         `json:"tags,omitempty"`
	Ratio *float64         `json:"ratio,omitempty"`
	Meta  map[string]uint8 `json:"meta,omitempty"`
	Pair  [2]bool          `json:"pair,omitzero"`
	Any   any              `json:"any,omitempty"`
	Inner struct{ X int8 } `json:"inner,omitzero"`
}

func FuzzExecutorArgs(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"a":1}`, `{"a":1.5}`, `{"a":1e400}`, `{"a":-0}`, `null`, `[]`, `"x"`, `{"a":1,"a":2}`,
		`{"a":1,"name":"\ud800","tags":null,"ratio":null,"meta":{"k":256},"pair":[true,false],"any":{"z":[1]},"inner":{"X":-129}}`,
		"{\"a\":1}\x00", `{"a":1,}`, `{"a":1} {}`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	reg := mustRegistry(f, tool.Func("echo", "echoes its arguments", func(_ context.Context, in fuzzArgs) (fuzzArgs, error) {
		return in, nil
	}))
	e := tool.NewExecutor(tool.ExecConfig{})
	f.Fuzz(func(t *testing.T, args []byte) {
		results := e.Run(context.Background(), reg, []tool.Call{{ID: "x", Name: "echo", Args: args}})
		if len(results) != 1 {
			t.Fatalf("Run returned %d results, want 1", len(results))
		}
		r := results[0]
		if r.ID != "x" || r.Name != "echo" {
			t.Fatalf("result is for %q %q, want x echo", r.ID, r.Name)
		}
		switch r.Outcome {
		case tool.OutcomeOK:
			if r.IsError || !json.Valid([]byte(r.Output)) {
				t.Fatalf("ok result: IsError %v, output %q", r.IsError, r.Output)
			}
		case tool.OutcomeInvalidArgs:
			if !r.IsError || !strings.HasPrefix(r.Output, `tool "echo"`) {
				t.Fatalf("invalid_args result: IsError %v, output %q", r.IsError, r.Output)
			}
		default:
			t.Fatalf("args %q: outcome %s: %s", args, r.Outcome, r.Output)
		}
	})
}

func BenchmarkExecutorAdd(b *testing.B) {
	reg := mustRegistry(b, tool.Func("add", "adds two integers", add))
	e := tool.NewExecutor(tool.ExecConfig{})
	calls := []tool.Call{{ID: "1", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Run(ctx, reg, calls); r[0].Output != "3" {
			b.Fatalf("Run = %+v", r)
		}
	}
}

// TestInline: an Inline tool runs on the caller's goroutine with the same
// outcomes as any other: output, panic recovered, deadline reported.
func TestInline(t *testing.T) {
	ok := tool.Func("ok", "returns", func(context.Context, struct{}) (string, error) { return "fine", nil }, tool.Inline())
	boom := tool.Func("boom", "panics", func(context.Context, struct{}) (string, error) { panic("kaboom") }, tool.Inline())
	slow := tool.Func("slow", "waits for its deadline", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.Inline())
	reg, err := tool.NewRegistry(ok, boom, slow)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	got := tool.NewExecutor(tool.ExecConfig{}).Run(ctx, reg, []tool.Call{{ID: "1", Name: "ok"}, {ID: "2", Name: "boom"}, {ID: "3", Name: "slow"}})
	want := []tool.Outcome{tool.OutcomeOK, tool.OutcomePanic, tool.OutcomeCancelled}
	for i, r := range got {
		if r.Outcome != want[i] {
			t.Errorf("call %s: outcome %s (%q), want %s", r.ID, r.Outcome, r.Output, want[i])
		}
	}
	if !ok.Info().Inline {
		t.Error("Inline option not recorded in Info")
	}
	both := tool.Func("both", "inline with a timeout", func(context.Context, struct{}) (string, error) { return "", nil }, tool.Inline(), tool.Timeout(time.Second))
	if _, err := tool.NewRegistry(both); err == nil || !strings.Contains(err.Error(), "cannot have its own Timeout") {
		t.Errorf("registry accepted an Inline tool with a Timeout: %v", err)
	}
}
