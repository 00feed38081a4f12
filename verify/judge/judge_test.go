package judge_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify/judge"
)

func runner(t testing.TB) sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(sandbox.Config{})
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("no sandbox: %v (./test.sh installs bubblewrap)", err))
	}
	return r
}

// judged runs script in a sandbox of its own, importing the proxy as
// "solution" for a candidate whose module is source.
func judged(t testing.TB, cfg judge.Config, source, script string) (sandbox.Result, judge.Stats) {
	t.Helper()
	r := runner(t)
	cfg.Runner, cfg.Spec = r, judge.PythonSpec("solution", []byte(source), "", nil, sandbox.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := judge.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, sandbox.Spec{
		Files:      map[string][]byte{"solution.py": judge.Proxy("solution"), "t.py": []byte(script)},
		Command:    []string{"python3", "-E", "-s", "t.py"},
		ExtraFiles: []*os.File{s.TestEnd()},
	})
	stats := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, stats
}

func TestCalls(t *testing.T) {
	res, stats := judged(t, judge.Config{}, "def add(a, b):\n    return a + b\n",
		"from solution import add\nassert add(1, 2) == 3\nassert add([1], [2]) == [1, 2]\nprint('ok')\n")
	if !strings.Contains(string(res.Stdout), "ok") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if stats.Calls != 2 {
		t.Errorf("calls = %d, want 2", stats.Calls)
	}
}

// TestWire runs each case's script against its candidate: the script
// prints ok when every value, exception and failure crossed as it must.
func TestWire(t *testing.T) {
	for _, tc := range []struct{ name, source, script string }{
		{"values", `
def echo(x):
    return x
def shapes():
    return (1, 2.5, "é", None, True), {1, (2, 3)}, frozenset({"a"}), b"\x00\xff", {(1, 2): [3], "k": {"n": -0.0}}
def big():
    return 10**200
def nothing():
    return None
def floats():
    return [float("nan"), float("inf"), float("-inf")]
`, `
import math
from solution import echo, shapes, big, floats, nothing
assert nothing() is None
t, s, f, b, d = shapes()
assert t == (1, 2.5, "é", None, True) and type(t) is tuple, t
assert s == {1, (2, 3)} and type(s) is set, s
assert f == frozenset({"a"}) and type(f) is frozenset
assert b == b"\x00\xff" and type(b) is bytes
assert d == {(1, 2): [3], "k": {"n": -0.0}} and math.copysign(1, d["k"]["n"]) == -1
assert big() == 10**200
n, i, m = floats()
assert math.isnan(n) and i == math.inf and m == -math.inf
assert echo([1, [2, (3,)]]) == [1, [2, (3,)]]
assert echo(x={"a": 1}) == {"a": 1}
assert type(echo(1.0)) is float and type(echo(1)) is int and type(echo(True)) is bool
print("ok")
`},
		{"exceptions", `
class Mine(Exception):
    pass
def bad(kind):
    if kind == "value":
        raise ValueError("negative input")
    if kind == "key":
        raise KeyError("k")
    raise Mine("custom")
`, `
from solution import bad
try:
    bad("value")
except ValueError as e:
    assert str(e) == "negative input", e
try:
    bad("key")
except KeyError:
    pass
try:
    bad("mine")
except Exception as e:
    assert type(e).__name__ == "CandidateError" and "Mine: custom" in str(e), repr(e)
print("ok")
`},
		{"always equal", `
import collections
class Yes(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
class Text(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
Pair = collections.namedtuple("Pair", "a b")
def f():
    return Yes(0), Text("x"), Pair(1, 2), collections.Counter("aab")
def g():
    return object()
`, `
from solution import f, g
n, s, p, c = f()
assert type(n) is int and n != 42 and n == 0, n
assert type(s) is str and s != "y" and s == "x", s
assert type(p) is tuple and p == (1, 2), p
assert type(c) is dict and c == {"a": 2, "b": 1}, c
try:
    g()
except Exception:
    raise SystemExit("an Exception handler caught the judge's error")
except BaseException as e:
    assert type(e).__name__ == "JudgeError" and "builtins.object" in str(e), repr(e)
print("ok")
`},
		{"import star", `
LIMIT = 10
def len(x):
    return 3
def area(w, h):
    return w * h
class Shape:
    pass
`, `
from solution import *
assert area(2, 3) == 6 and LIMIT == 10
assert len([]) == 0, "import * rebound a builtin"
try:
    Shape()
except BaseException as e:
    assert type(e).__name__ == "JudgeError" and "class" in str(e)
import solution
assert solution.len([]) == 3
print("ok")
`},
		{"import error", `
import nonexistent_module
def f():
    return 1
`, `
from solution import f
try:
    f()
except Exception as e:
    assert "nonexistent_module" in str(e), e
print("ok")
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := judged(t, judge.Config{}, tc.source, tc.script)
			if strings.TrimSpace(string(res.Stdout)) != "ok" {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}

// TestFailures: what the candidate's process does wrong reaches the tests
// as a JudgeError (never an Exception a test could expect), and a process
// that died is replaced for the next call, a bounded number of times.
func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name, source, script string
		restarts             int
	}{
		{"timeout then restart", `
def spin(n):
    while n:
        pass
    return "done"
`, `
from solution import spin
try:
    spin(1)
except Exception:
    raise SystemExit("caught as an Exception")
except BaseException as e:
    assert type(e).__name__ == "JudgeError" and "no answer within" in str(e), e
assert spin(0) == "done"
print("ok")
`, 1},
		{"crash then restart", `
import os, sys
def die(code):
    if code:
        print("dying", file=sys.stderr, flush=True)
        os._exit(code)
    return "alive"
`, `
from solution import die
try:
    die(7)
except BaseException as e:
    assert type(e).__name__ == "JudgeError" and "status 7" in str(e) and "dying" in str(e), e
assert die(0) == "alive"
print("ok")
`, 1},
		{"restart cap", `
import os
def die():
    os._exit(1)
`, `
from solution import die
for i in range(6):
    try:
        die()
    except BaseException as e:
        assert type(e).__name__ == "JudgeError", e
        last = str(e)
assert "died 4 times" in last, last
print("ok")
`, 3},
		{"forged frames", `
import os
def f(kind):
    if kind == "tag":
        data = b'{"ok": {"$evil": 1}}'
    elif kind == "object":
        data = b'{"ok": {"a": 1, "b": 2}}'
    elif kind == "huge":
        os.write(3, (2**31).to_bytes(4, "big"))
        return 0
    else:
        data = b'{"ok": 1, "exc": {"type": "ValueError", "builtin": true, "msg": ""}}'
    os.write(3, len(data).to_bytes(4, "big") + data)
    return 0
`, `
from solution import f
for kind in ["tag", "object", "huge", "both"]:
    try:
        f(kind)
        raise SystemExit(kind + " crossed")
    except BaseException as e:
        assert type(e).__name__ == "JudgeError", (kind, e)
print("ok")
`, 3},
		{"uncrossable argument", `
def apply(fn):
    return fn(1)
`, `
from solution import apply
try:
    apply(lambda x: x)
except BaseException as e:
    assert type(e).__name__ == "JudgeError" and "argument" in str(e), e
print("ok")
`, 0},
		{"import hangs", `
while True:
    pass
def f():
    return 1
`, `
from solution import f
for i in range(2):
    try:
        f()
    except Exception as e:
        assert "did not load" in str(e), e
print("ok")
`, 0},
		{"stdout is its own", `
def f():
    print("noise " * 1000)
    return 1
`, `
from solution import f
assert f() == 1 and f() == 1
print("ok")
`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, stats := judged(t, judge.Config{CallTimeout: time.Second}, tc.source, tc.script)
			if strings.TrimSpace(string(res.Stdout)) != "ok" {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
			}
			if stats.Restarts != tc.restarts {
				t.Errorf("restarts = %d, want %d", stats.Restarts, tc.restarts)
			}
		})
	}
}

// TestWarm: a session given a server started ahead (PythonWarm) and a
// channel made before it serves the tests from that process, which
// imports the candidate's module only when the session hands it over:
// the process answering is older than the session.
func TestWarm(t *testing.T) {
	r := runner(t)
	st, ok := r.(sandbox.Starter)
	if !ok {
		t.Fatal("the sandbox's Runner is not a Starter")
	}
	ch, err := judge.NewChannel()
	if err != nil {
		t.Fatal(err)
	}
	w, err := judge.PythonWarm(st, "solution", "", nil, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	// The process's age, from its start time in /proc (bwrap's own).
	source := `import os
def age():
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) - start / ticks
`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := judge.Start(ctx, judge.Config{
		Runner: r, Channel: ch, Warm: w,
		Spec: judge.PythonSpec("solution", []byte(source), "", nil, sandbox.Limits{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, sandbox.Spec{
		Files:      map[string][]byte{"solution.py": judge.Proxy("solution"), "t.py": []byte("from solution import age\nprint(age())\n")},
		Command:    []string{"python3", "-E", "-s", "t.py"},
		ExtraFiles: []*os.File{ch.TestEnd()},
	})
	stats := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	var age float64
	if _, err := fmt.Sscan(string(res.Stdout), &age); err != nil {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if age < 1 || stats.Restarts != 0 || stats.Calls != 1 {
		t.Errorf("the answering process was %.2f s old (restarts %d, calls %d): want the one started ahead, over 1 s before", age, stats.Restarts, stats.Calls)
	}
}
