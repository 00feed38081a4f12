package progress_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/progress"
)

// keys turns "a b a" into three keys.
func keys(s string) []progress.Key {
	var out []progress.Key
	for _, f := range strings.Fields(s) {
		out = append(out, progress.Key(f))
	}
	return out
}

// observeAll feeds keys to m and returns the pattern after each, "-" for
// none.
func observeAll(m *progress.Monitor, ks []progress.Key) []string {
	var out []string
	for _, k := range ks {
		p := m.Observe(k)
		if p == progress.None {
			out = append(out, "-")
		} else {
			out = append(out, string(p))
		}
	}
	return out
}

func TestMonitorObserve(t *testing.T) {
	tests := []struct {
		name string
		cfg  progress.Config
		keys string
		want string // the pattern after each key
		// The state after the last key.
		recent   string
		sinceNew int
	}{
		{"all new: nothing fires", progress.Config{}, "a b c d e", "- - - - -", "b c d e", 0},
		{"repeating at the default window of 3", progress.Config{}, "a a a", "- - repeating", "a a a", 2},
		{"window 2 fires on the second", progress.Config{Window: 2}, "a a", "- repeating", "a a", 1},
		{"a broken run does not repeat", progress.Config{}, "a a b a a", "- - - - -", "a b a a", 2},
		{"oscillating: A B A B", progress.Config{}, "a b a b", "- - - oscillating", "a b a b", 2},
		{"A B A C is no oscillation", progress.Config{}, "a b a c", "- - - -", "a b a c", 0},
		{"stagnating: patience keys with nothing new", progress.Config{Patience: 3}, "a b c a c b", "- - - - - stagnating", "c a c b", 3},
		{"a new key resets the stagnation count", progress.Config{Patience: 3}, "a b a b2 a b", "- - - - - -", "a b2 a b", 2},
		{"repeating is reported before stagnating", progress.Config{Patience: 2}, "a a a", "- - repeating", "a a a", 2},
		{"oscillating is reported before stagnating", progress.Config{Patience: 2}, "a b a b", "- - - oscillating", "a b a b", 2},
		{"a long window keeps more than four", progress.Config{Window: 6}, "a b c d a a a a a a", "- - - - - - - - - repeating", "a a a a a a", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := progress.NewMonitor(tt.cfg)
			got := observeAll(&m, keys(tt.keys))
			if diff := cmp.Diff(strings.Fields(tt.want), got); diff != "" {
				t.Errorf("patterns (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(keys(tt.recent), m.Recent); diff != "" {
				t.Errorf("Recent (-want +got):\n%s", diff)
			}
			if m.SinceNew != tt.sinceNew {
				t.Errorf("SinceNew = %d, want %d", m.SinceNew, tt.sinceNew)
			}
		})
	}
}

func TestMonitorDefaults(t *testing.T) {
	m := progress.NewMonitor(progress.Config{})
	if diff := cmp.Diff(progress.Config{Window: 3, Patience: 6}, m.Config); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if m := progress.NewMonitor(progress.Config{Window: 5, Patience: 2}); !cmp.Equal(m.Config, progress.Config{Window: 5, Patience: 2}) {
		t.Errorf("set fields were changed: %+v", m.Config)
	}
}

// TestMonitorReset: after an intervention the next fire needs fresh
// evidence, but an old key is still not progress.
func TestMonitorReset(t *testing.T) {
	m := progress.NewMonitor(progress.Config{Patience: 3})
	if got := observeAll(&m, keys("a a a")); got[2] != string(progress.Repeating) {
		t.Fatalf("patterns %v", got)
	}
	m.Reset()
	if len(m.Recent) != 0 || m.SinceNew != 0 {
		t.Fatalf("after Reset: Recent %v, SinceNew %d", m.Recent, m.SinceNew)
	}
	// Two more a: not a full window yet; the third fires again.
	if diff := cmp.Diff([]string{"-", "-", "repeating"}, observeAll(&m, keys("a a a"))); diff != "" {
		t.Errorf("after Reset (-want +got):\n%s", diff)
	}
	m = progress.NewMonitor(progress.Config{Window: 5, Patience: 3})
	observeAll(&m, keys("a b c"))
	m.Reset()
	if diff := cmp.Diff([]string{"-", "-", "stagnating"}, observeAll(&m, keys("a b c"))); diff != "" {
		t.Errorf("seen keys forgotten by Reset (-want +got):\n%s", diff)
	}
}

// TestMonitorJSON: a monitor restored from its JSON goes on exactly as the
// original does (it lives in the loop's snapshots).
func TestMonitorJSON(t *testing.T) {
	const first, rest = "a b c b", "c b a a a"
	orig := progress.NewMonitor(progress.Config{Window: 3, Patience: 4})
	observeAll(&orig, keys(first))
	data, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	var restored progress.Monitor
	if err := json.Unmarshal(data, &restored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orig, restored); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	want := observeAll(&orig, keys(rest))
	if diff := cmp.Diff(want, observeAll(&restored, keys(rest))); diff != "" {
		t.Errorf("restored monitor diverges (-original +restored):\n%s", diff)
	}
}

// TestMonitorWindowBounded: the window keeps the last max(Window, 4) keys,
// so a run of thousands of steps holds a few.
func TestMonitorWindowBounded(t *testing.T) {
	m := progress.NewMonitor(progress.Config{Window: 2})
	observeAll(&m, keys("a b c d e f g h"))
	if diff := cmp.Diff(keys("e f g h"), m.Recent); diff != "" {
		t.Errorf("Recent (-want +got):\n%s", diff)
	}
}

func TestLadder(t *testing.T) {
	got := []progress.Intervention{progress.Ladder(0), progress.Ladder(1), progress.Ladder(2), progress.Ladder(3), progress.Ladder(9)}
	want := []progress.Intervention{progress.Reflect, progress.Reflect, progress.Widen, progress.Stop, progress.Stop}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ladder (-want +got):\n%s", diff)
	}
}

// See: polls of a declared tool that see no change are waiting; they fire
// only after MaxWaits, and any change starts the count again.
func TestMonitorSee(t *testing.T) {
	poll := func(result string) (progress.Key, progress.Observation) {
		o := progress.Observation{Kind: progress.Action, Calls: []progress.Call{{Tool: "status", Args: json.RawMessage(`{}`), Result: result}}}
		return progress.DefaultKey(o), o
	}
	see := func(m *progress.Monitor, results string) string {
		var out []string
		for _, r := range strings.Fields(results) {
			if p := m.See(poll(r)); p == progress.None {
				out = append(out, "-")
			} else {
				out = append(out, string(p))
			}
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name    string
		cfg     progress.Config
		results string
		want    string
	}{
		{"undeclared polls repeat", progress.Config{}, "q q q", "- - repeating"},
		{"declared polls wait", progress.Config{Waits: []string{"status"}, MaxWaits: 4}, "q q q q", "- - - -"},
		{"until MaxWaits", progress.Config{Waits: []string{"status"}, MaxWaits: 4}, "q q q q q", "- - - - waiting"},
		{"a change starts the count again", progress.Config{Waits: []string{"status"}, MaxWaits: 3}, "q q q r r r r", "- - - - - - waiting"},
		{"returning to an old state still waits", progress.Config{Waits: []string{"status"}, MaxWaits: 3}, "q r q r q", "- - - - waiting"},
		{"another tool is not waiting", progress.Config{Waits: []string{"other"}}, "q q q", "- - repeating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := progress.NewMonitor(tt.cfg)
			if got := see(&m, tt.results); got != tt.want {
				t.Errorf("patterns %q, want %q", got, tt.want)
			}
		})
	}
	// The default MaxWaits, and Reset forgetting the count.
	m := progress.NewMonitor(progress.Config{Waits: []string{"status"}})
	if got := see(&m, strings.Repeat("q ", progress.DefaultMaxWaits)); strings.Contains(got, "waiting") {
		t.Errorf("fired within the default MaxWaits: %s", got)
	}
	if got := see(&m, "q"); got != "waiting" {
		t.Errorf("after the default MaxWaits: %q", got)
	}
	m.Reset()
	if got := see(&m, "q"); got != "-" {
		t.Errorf("after Reset: %q", got)
	}
}

func TestDefaultKey(t *testing.T) {
	call := func(tool, args, result string) progress.Call {
		return progress.Call{Tool: tool, Args: json.RawMessage(args), Result: result}
	}
	action := func(calls ...progress.Call) progress.Observation {
		return progress.Observation{Kind: progress.Action, Calls: calls}
	}
	attempt := func(cand string, failing ...string) progress.Observation {
		return progress.Observation{Kind: progress.Attempt, Candidate: cand, Failing: failing}
	}
	tests := []struct {
		name string
		a, b progress.Observation
		same bool
	}{
		{"arguments canonicalised", action(call("read", `{"b":1, "a":2}`, "r")), action(call("read", `{"a":2,"b":1}`, "r")), true},
		{"a turn's calls are a set", action(call("x", `{}`, "1"), call("y", `{}`, "2")), action(call("y", `{}`, "2"), call("x", `{}`, "1")), true},
		{"a different result is progress", action(call("read", `{}`, "r1")), action(call("read", `{}`, "r2")), false},
		{"different arguments", action(call("read", `{"p":"a"}`, "r")), action(call("read", `{"p":"b"}`, "r")), false},
		{"fields cannot run together", action(call("ab", `{}`, "c")), action(call("a", `{}`, "bc")), false},
		{"failing checks are a set", attempt("x", "t1", "t2"), attempt("x", "t2", "t1"), true},
		{"another candidate", attempt("x", "t1"), attempt("y", "t1"), false},
		{"another failing set", attempt("x", "t1"), attempt("x", "t1", "t2"), false},
		{"failing names cannot pass for the candidate", attempt("", "x"), attempt("x"), false},
		{"kinds differ", progress.Observation{Kind: progress.Malformed, Problem: "empty_reply"}, progress.Observation{Kind: progress.Attempt, Candidate: "empty_reply"}, false},
		{"durations are noise", action(call("sh", `{}`, "FAIL\tex/m\t0.004s (12ms)")), action(call("sh", `{}`, "FAIL\tex/m\t1.250s (7ms)")), true},
		{"timestamps are noise", action(call("sh", `{}`, "2026-12-03T10:14:02Z denied")), action(call("sh", `{}`, "2026-12-04 09:00:59.123+01:00 denied")), true},
		{"clock times are noise", action(call("sh", `{}`, "[10:14:02] denied")), action(call("sh", `{}`, "[23:59:59] denied")), true},
		{"addresses are noise", action(call("sh", `{}`, "pc=0x4a1b2c")), action(call("sh", `{}`, "pc=0x4a1d08")), true},
		{"temporary names are noise", action(call("sh", `{}`, "/tmp/go-build2817/b001/x.go /tmp/tmpa1b2c3d4")), action(call("sh", `{}`, "/tmp/go-build9/b001/x.go /tmp/tmpzz99x_y0")), true},
		{"other numbers are news", action(call("poll", `{}`, "indexing 10%, 3 files")), action(call("poll", `{}`, "indexing 35%, 3 files")), false},
		{"a unit must end the word", action(call("sh", `{}`, "12mb, 3min")), action(call("sh", `{}`, "13mb, 4min")), false},
		{"a number glued to a word is news", action(call("sh", `{}`, "b001 v2s")), action(call("sh", `{}`, "b002 v3s")), false},
		{"space around a candidate is not", attempt("x = 1\n", "t"), attempt("\nx = 1  ", "t"), true},
		{"space inside a candidate is", attempt("if x:\n    y", "t"), attempt("if x:\n  y", "t"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, kb := progress.DefaultKey(tt.a), progress.DefaultKey(tt.b)
			if (ka == kb) != tt.same {
				t.Errorf("keys %s and %s: same = %v, want %v", ka, kb, ka == kb, tt.same)
			}
			if len(ka) != 24 {
				t.Errorf("key %q is %d characters, want 24", ka, len(ka))
			}
		})
	}
	// The calls' order is the caller's: sorting for the key must not
	// reorder them.
	o := action(call("y", `{}`, ""), call("x", `{}`, ""))
	progress.DefaultKey(o)
	if o.Calls[0].Tool != "y" {
		t.Errorf("DefaultKey reordered the observation's calls")
	}
}
