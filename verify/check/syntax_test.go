package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratchetloop/ratchet/internal/testenv"
	"github.com/ratchetloop/ratchet/verify"
)

// requirePython skips the test when python3 is missing, except under CI,
// where a missing python3 is a broken test machine and fails the test.
func requirePython(t *testing.T) {
	t.Helper()
	if _, err := findPython(); err != nil {
		testenv.Missing(t, fmt.Sprintf("python3: %v (./test.sh installs it)", err))
	}
}

func TestSyntaxPython(t *testing.T) {
	requirePython(t)
	v := mustNew(t)(Syntax("python"))
	if v.Name() != "syntax:python" || v.Provenance() != verify.Validation {
		t.Errorf("name %q, provenance %q", v.Name(), v.Provenance())
	}
	runVerdicts(t, v, []verdictCase{
		{name: "valid", answer: "def f(x):\n    return x + 1\n", ok: true, conf: 1, detail: "valid Python syntax (parsed, not run)"},
		{name: "never executed", answer: "import os\nos._exit(3)\nraise SystemExit(4)\n", ok: true, conf: 1, detail: "valid Python syntax (parsed, not run)"},
		{name: "no trailing newline", answer: "x = 1", ok: true, conf: 1, detail: "valid Python syntax (parsed, not run)"},
		{name: "syntax error", answer: "def f(:\n    pass\n", conf: 1, detail: "SyntaxError: invalid syntax at line 1, column 7: def f(:", where: "line 1, column 7"},
		{name: "error on a later line", answer: "x = 1\ny = (2 +\n", conf: 1, detail: "SyntaxError: '(' was never closed at line 2, column 5: y = (2 +", where: "line 2, column 5"},
		{name: "indentation", answer: "def f():\nreturn 1\n", conf: 1, detail: "IndentationError: expected an indented block after function definition on line 1 at line 2, column 1: return 1", where: "line 2, column 1"},
		{name: "columns count characters", answer: "s = \"é\" +\n", conf: 1, detail: "SyntaxError: invalid syntax at line 1, column 10: s = \"é\" +", where: "line 1, column 10"},
		{name: "coding line", answer: "# -*- coding: latin-1 -*-\ns = '\xe9' +\n", conf: 1, detail: "SyntaxError: invalid syntax at line 2, column 10: s = 'é' +", where: "line 2, column 10"},
		{name: "empty", answer: " \n\t", conf: 1, detail: "the answer is empty; expected Python source"},
	})
	// Python's wording for these changes between versions: check the gist.
	for _, tt := range []struct{ name, answer, detail, where string }{
		{"null byte", "x = 1\x00\n", "source code string cannot contain null bytes", ""},
		{"not UTF-8", "s = '\xff'\n", "'utf-8' codec can't decode byte 0xff", "line 1, "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Check(context.Background(), verify.Candidate{Answer: tt.answer})
			if err != nil {
				t.Fatal(err)
			}
			if got.OK || got.Confidence != 1 || !strings.Contains(got.Detail, tt.detail) || !strings.HasPrefix(got.Where, tt.where) {
				t.Errorf("verdict %+v, want a failure mentioning %q at %q…", got, tt.detail, tt.where)
			}
		})
	}
}

// fakePython writes a shell script standing in for python3.
func fakePython(t *testing.T, script string) func() (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) { return path, nil }
}

func TestSyntaxPythonInfrastructure(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the fake python3")
	}
	t.Run("missing python3 is a constructor error naming the package", func(t *testing.T) {
		missing := func() (string, error) { return "", errors.New("no python3: install the Debian package python3") }
		v, err := syntax("python", missing, time.Second)
		wantConfigError(t, v, err, "no python3: install the Debian package python3")
		if _, err := syntax("go", missing, time.Second); err != nil {
			t.Errorf("go syntax needs no python3, got %v", err)
		}
	})
	t.Run("lookup", func(t *testing.T) {
		dir := t.TempDir()
		system := filepath.Join(dir, "python3")
		onPath := func(string) (string, error) { return "/elsewhere/python3", nil }
		noPath := func(string) (string, error) { return "", errors.New("not found") }
		if got, err := findPythonIn(system, onPath); err != nil || got != "/elsewhere/python3" {
			t.Errorf("no system python3: got %q, %v; want the one on PATH", got, err)
		}
		_, err := findPythonIn(system, noPath)
		if want := "syntax check for python needs python3, which is not installed: install the Debian package python3 (apt-get install python3)"; err == nil || err.Error() != want {
			t.Errorf("no python3 at all: %v, want %q", err, want)
		}
		if err := os.WriteFile(system, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got, err := findPythonIn(system, onPath); err != nil || got != system {
			t.Errorf("system python3 present: got %q, %v; want %q", got, err, system)
		}
	})
	t.Run("python3 gone after construction", func(t *testing.T) {
		gone := filepath.Join(t.TempDir(), "python3")
		v := mustNew(t)(syntax("python", func() (string, error) { return gone, nil }, time.Second))
		_, err := v.Check(context.Background(), verify.Candidate{Answer: "x = 1"})
		if err == nil || !strings.Contains(err.Error(), "install the Debian package python3") {
			t.Errorf("Check = %v, want an error naming the package to install", err)
		}
	})
	t.Run("interpreter crash is an error", func(t *testing.T) {
		v := mustNew(t)(syntax("python", fakePython(t, "echo 'boom: no such module' >&2; exit 2"), time.Second))
		_, err := v.Check(context.Background(), verify.Candidate{Answer: "x = 1"})
		if err == nil || !strings.Contains(err.Error(), "boom: no such module") {
			t.Errorf("Check = %v, want an error quoting python3's stderr", err)
		}
	})
	t.Run("unreadable report is an error", func(t *testing.T) {
		v := mustNew(t)(syntax("python", fakePython(t, "echo not json; exit 1"), time.Second))
		if _, err := v.Check(context.Background(), verify.Candidate{Answer: "x = 1"}); err == nil {
			t.Error("Check succeeded on an unreadable python3 report")
		}
	})
	t.Run("environment is emptied", func(t *testing.T) {
		t.Setenv("RATCHET_SENTINEL_VAR", "leaked")
		t.Setenv("LANG", "C.UTF-8")
		// The shell adds PWD, SHLVL and _ itself.
		v := mustNew(t)(syntax("python", fakePython(t, `env | grep -v -e '^PWD=' -e '^SHLVL=' -e '^_=' | sort | tr '\n' ' ' >&2; exit 3`), time.Second))
		_, err := v.Check(context.Background(), verify.Candidate{Answer: "x = 1"})
		if err == nil {
			t.Fatal("Check succeeded; want the fake's error listing its environment")
		}
		_, env, _ := strings.Cut(err.Error(), "exit status 3: ")
		if want := "LANG=C.UTF-8 PATH=" + os.Getenv("PATH"); env != want {
			t.Errorf("python3's environment is %q, want only %q", env, want)
		}
	})
	t.Run("output is capped", func(t *testing.T) {
		v := mustNew(t)(syntax("python", fakePython(t, "yes xxxxxxxxxxxxxxxx | head -c 10000000 >&2; exit 2"), 5*time.Second))
		_, err := v.Check(context.Background(), verify.Candidate{Answer: "x = 1"})
		if err == nil || len(err.Error()) > 2000 {
			t.Errorf("Check error is %d bytes, want a short error", len(err.Error()))
		}
	})
	t.Run("our timeout fails the candidate", func(t *testing.T) {
		v := mustNew(t)(syntax("python", fakePython(t, "exec sleep 10"), 50*time.Millisecond))
		start := time.Now()
		got, err := v.Check(context.Background(), verify.Candidate{Answer: "x = 1"})
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		want := "python3 did not finish parsing the answer within 50ms; simplify the code"
		if got.OK || got.Detail != want || got.Confidence != 0.5 {
			t.Errorf("verdict %+v, want a failure %q with confidence 0.5", got, want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Check took %v", d)
		}
	})
	t.Run("the caller's cancellation is an error", func(t *testing.T) {
		v := mustNew(t)(syntax("python", fakePython(t, "exec sleep 10"), time.Minute))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := v.Check(ctx, verify.Candidate{Answer: "x = 1"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Check = %v, want the caller's deadline", err)
		}
	})
}

func TestSyntaxGo(t *testing.T) {
	v := mustNew(t)(Syntax("go"))
	if v.Name() != "syntax:go" || v.Provenance() != verify.Validation {
		t.Errorf("name %q, provenance %q", v.Name(), v.Provenance())
	}
	runVerdicts(t, v, []verdictCase{
		{name: "file", answer: "package main\n\nfunc main() {}\n", ok: true, conf: 1, detail: "valid Go source file"},
		{name: "declarations", answer: "func Add(a, b int) int { return a + b }", ok: true, conf: 1, detail: "valid Go declarations"},
		{name: "statements", answer: "x := 1\nfmt.Println(x)", ok: true, conf: 1, detail: "valid Go statements in a function body"},
		{name: "file with error", answer: "package main\nfunc f( {\n}\n", conf: 1,
			detail: "Go syntax error (read as a Go file): 2:9: expected ')', found '{'; 3:1: missing ',' in parameter list", where: "line 2, column 9"},
		{name: "declarations with error", answer: "func f() {", conf: 1,
			detail: "Go syntax error (read as Go declarations): 1:11: expected '}', found 'EOF'", where: "line 1, column 11"},
		{name: "statements with error", answer: "x := \nif x > 0 {\n", conf: 1,
			detail: "Go syntax error (read as Go statements in a function body): 2:1: expected operand, found 'if'; 3:1: expected '}', found 'EOF'", where: "line 2, column 1"},
		{name: "columns count characters", answer: "package main\nfunc main() { x := \"é\" y }", conf: 1,
			detail: "Go syntax error (read as a Go file): 2:24: expected ';', found y", where: "line 2, column 24"},
		{name: "at most three errors", answer: "package p\nfunc a( {\n}\nfunc b( {\n}\nfunc c( {\n}\n", conf: 1,
			detail: "Go syntax error (read as a Go file): 2:9: expected ')', found '{'; 3:1: missing ',' in parameter list; 4:6: expected '(', found b; and 3 more", where: "line 2, column 9"},
		{name: "empty", answer: "\n", conf: 1, detail: "the answer is empty; expected Go source"},
	})
}

func TestSyntaxJSON(t *testing.T) {
	v := mustNew(t)(Syntax("json"))
	runVerdicts(t, v, []verdictCase{
		{name: "object", answer: `{"a": [1, 2]}`, ok: true, conf: 1, detail: "valid JSON"},
		{name: "scalar with space", answer: " 42\n", ok: true, conf: 1, detail: "valid JSON"},
		{name: "huge number is still JSON", answer: "1e999", ok: true, conf: 1, detail: "valid JSON"},
		{name: "trailing comma", answer: "{\"a\": 1,}", conf: 1,
			detail: "the answer is not valid JSON: invalid character '}' looking for beginning of object key string at line 1, column 9", where: "line 1, column 9"},
		{name: "later line", answer: "{\n  \"é\": tru\n}", conf: 1,
			detail: "the answer is not valid JSON: invalid character '\\n' in literal true (expecting 'e') at line 2, column 11", where: "line 2, column 11"},
		{name: "truncated", answer: "{\n \"a\": [1,\n 2", conf: 1,
			detail: "the answer is not valid JSON: unexpected end of JSON input at line 3, column 3", where: "line 3, column 3"},
		{name: "two values", answer: "{} x", conf: 1,
			detail: "the answer is not valid JSON: invalid character 'x' after top-level value at line 1, column 4", where: "line 1, column 4"},
		{name: "fenced", answer: "```json\n{}\n```", conf: 1,
			detail: "the answer is not valid JSON: invalid character '`' looking for beginning of value at line 1, column 1 (give the bare JSON, without a ``` fence)", where: "line 1, column 1"},
		{name: "empty", answer: "", conf: 1, detail: "the answer is empty; expected JSON source"},
	})
}

func TestSyntaxYAML(t *testing.T) {
	v := mustNew(t)(Syntax("yaml"))
	runVerdicts(t, v, []verdictCase{
		{name: "mapping", answer: "a: 1\nb: [x, y]\n", ok: true, conf: 1, detail: "valid YAML"},
		{name: "documents", answer: "a: 1\n---\nb: 2\n", ok: true, conf: 1, detail: "valid YAML (2 documents)"},
		{name: "error in a later document", answer: "a: 1\n---\nb: [\n", conf: 1,
			detail: "the answer is not valid YAML: did not find expected node content at line 3", where: "line 3"},
		{name: "parser error lines are 1-based", answer: "- a\nb: 1\n", conf: 1,
			detail: "the answer is not valid YAML: did not find expected '-' indicator at line 2", where: "line 2"},
		{name: "scanner error", answer: "a:\n  - 1\n - 2\n", conf: 1,
			detail: "the answer is not valid YAML: did not find expected key at line 3", where: "line 3"},
		{name: "first line", answer: "a: b: c", conf: 1,
			detail: "the answer is not valid YAML: mapping values are not allowed in this context at line 1", where: "line 1"},
		{name: "no place", answer: "x: *y", conf: 1, detail: "the answer is not valid YAML: unknown anchor 'y' referenced"},
		{name: "empty", answer: "  ", conf: 1, detail: "the answer is empty; expected YAML source"},
	})
}

func TestSyntaxConfig(t *testing.T) {
	v, err := Syntax("rust")
	wantConfigError(t, v, err, `syntax check: unknown language "rust" (known: python, go, json, yaml)`)
	v, err = Syntax("Go")
	wantConfigError(t, v, err, `syntax check: unknown language "Go" (known: python, go, json, yaml)`)
}
