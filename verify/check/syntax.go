package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ratchetloop/ratchet/internal/yamlerr"
	"github.com/ratchetloop/ratchet/verify"
)

// SyntaxLanguages are the languages Syntax knows.
var SyntaxLanguages = []string{"python", "go", "json", "yaml"}

// PythonTimeout bounds one python3 parse.
const PythonTimeout = 10 * time.Second

// Syntax returns a check, named "syntax:LANG", that passes when the answer
// parses as lang. Nothing is ever executed. A failure names the first error
// and its place: Where is "line N, column C" (columns count characters from
// 1), or "line N" when the parser gives no column.
//
// An answer that is empty or only white space fails in every language, even
// where the empty text would parse (Python, Go declarations, YAML): a syntax
// check is there to check an artifact, and there is none.
//
//   - "python": the answer is parsed by python3's ast.parse in a separate
//     process (python3 -I -S, isolated from the environment, user site and
//     site packages), with the answer on stdin, an environment holding only
//     PATH and LANG, output capped and a PythonTimeout limit. /usr/bin/python3
//     is used when present, otherwise python3 from PATH; when neither exists
//     Syntax returns an error saying to install the python3 package. The
//     Detail is the exception, e.g. "SyntaxError: invalid syntax at line 1,
//     column 7: def f(:". A parse that outlasts the timeout fails the
//     candidate (with confidence 0.5) rather than erroring, because the
//     likeliest cause is a pathological answer, not the machine.
//   - "go": go/parser, in-process. The answer is first read as a whole Go
//     file when it starts with a package clause. Otherwise it is read twice,
//     as top-level declarations (as if "package main" preceded it) and as
//     statements (as if wrapped in "package main; func _() { … }"), and it
//     passes if either form parses; when both fail, the errors reported are
//     those of the form that parsed further before its first error. Up to
//     three errors are listed, each as line:column.
//   - "json": encoding/json; the error's byte offset is turned into a line
//     and column. Exactly one JSON value is allowed (trailing text fails).
//   - "yaml": go.yaml.in/yaml/v3, every document of a multi-document
//     stream; YAML errors give a line but no column, and count lines as YAML
//     does (a lone \r, NEL, LS and PS also end a line).
//
// The provenance is Validation.
func Syntax(lang string) (verify.Verifier, error) {
	return syntax(lang, findPython, PythonTimeout)
}

// syntax is Syntax with the python3 lookup and timeout as parameters, for
// tests.
func syntax(lang string, findPython func() (string, error), timeout time.Duration) (verify.Verifier, error) {
	var fn func(ctx context.Context, answer string) (verify.Verdict, error)
	switch lang {
	case "python":
		python, err := findPython()
		if err != nil {
			return nil, err
		}
		fn = func(ctx context.Context, answer string) (verify.Verdict, error) {
			return checkPython(ctx, python, answer, timeout)
		}
	case "go":
		fn = func(_ context.Context, answer string) (verify.Verdict, error) { return checkGo(answer), nil }
	case "json":
		fn = func(_ context.Context, answer string) (verify.Verdict, error) { return checkJSON(answer), nil }
	case "yaml":
		fn = func(_ context.Context, answer string) (verify.Verdict, error) { return checkYAML(answer), nil }
	default:
		return nil, fmt.Errorf("syntax check: unknown language %q (known: %s)", lang, strings.Join(SyntaxLanguages, ", "))
	}
	names := map[string]string{"python": "Python", "go": "Go", "json": "JSON", "yaml": "YAML"}
	return &verifier{name: "syntax:" + lang, prov: verify.Validation, fn: func(ctx context.Context, c verify.Candidate) (verify.Verdict, error) {
		if strings.TrimSpace(c.Answer) == "" {
			return verify.Verdict{Confidence: 1, Detail: "the answer is empty; expected " + names[lang] + " source"}, nil
		}
		return fn(ctx, c.Answer)
	}}, nil
}

// findPython returns the python3 to use: /usr/bin/python3 when it exists,
// else python3 from PATH.
func findPython() (string, error) { return findPythonIn("/usr/bin/python3", exec.LookPath) }

// findPythonIn is findPython with the system path and PATH lookup as
// parameters, for tests.
func findPythonIn(system string, lookPath func(string) (string, error)) (string, error) {
	if fi, err := os.Stat(system); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return system, nil
	}
	if p, err := lookPath("python3"); err == nil {
		return p, nil
	}
	return "", errors.New("syntax check for python needs python3, which is not installed: install the Debian package python3 (apt-get install python3)")
}

// pythonParse reads the source as bytes and decodes it as Python would (a
// PEP 263 coding line, else UTF-8) so that error columns count characters;
// source that does not decode is parsed as bytes, for Python's own report.
// It prints one JSON line describing the first error. Exit status 0 means the
// source parsed; 1 means the JSON line says why not.
const pythonParse = `import ast, io, json, sys, tokenize
src = sys.stdin.buffer.read()
try:
    enc, _ = tokenize.detect_encoding(io.BytesIO(src).readline)
    src = src.decode(enc)
except (SyntaxError, UnicodeDecodeError, LookupError):
    pass
try:
    ast.parse(src, "<answer>")
except SyntaxError as e:
    print(json.dumps({"type": type(e).__name__, "msg": str(e.msg)[:300], "line": e.lineno or 0, "col": e.offset or 0, "text": (e.text or "")[:300]}))
    sys.exit(1)
except (ValueError, RecursionError, MemoryError, OverflowError) as e:
    print(json.dumps({"type": type(e).__name__, "msg": str(e)[:300], "line": 0, "col": 0, "text": ""}))
    sys.exit(1)
`

// maxPythonOutput caps what is kept of python3's stdout and stderr each.
const maxPythonOutput = 16 << 10

// errPythonTimeout is the cause of a parse that outlasted PythonTimeout.
var errPythonTimeout = errors.New("python3 parse timed out")

func checkPython(parent context.Context, python, answer string, timeout time.Duration) (verify.Verdict, error) {
	ctx, cancel := context.WithTimeoutCause(parent, timeout, errPythonTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-S", "-c", pythonParse)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if lang, ok := os.LookupEnv("LANG"); ok {
		cmd.Env = append(cmd.Env, "LANG="+lang)
	}
	cmd.Dir = os.TempDir()
	cmd.Stdin = strings.NewReader(answer)
	stdout, stderr := &capped{n: maxPythonOutput}, &capped{n: maxPythonOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return verify.Verdict{OK: true, Confidence: 1, Detail: "valid Python syntax (parsed, not run)"}, nil
	case parent.Err() != nil: // the caller's deadline or cancellation
		return verify.Verdict{}, fmt.Errorf("syntax check for python: %w", parent.Err())
	case context.Cause(ctx) == errPythonTimeout:
		return verify.Verdict{Confidence: 0.5, Detail: fmt.Sprintf("python3 did not finish parsing the answer within %v; simplify the code", timeout)}, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		var e struct {
			Type, Msg, Text string
			Line, Col       int
		}
		if json.Unmarshal(bytes.TrimSpace(stdout.b.Bytes()), &e) == nil && e.Type != "" {
			detail := e.Type + ": " + e.Msg
			if where := at(e.Line, e.Col); where != "" {
				detail += " at " + where
			}
			if text := strings.TrimSpace(e.Text); text != "" {
				detail += ": " + clip(oneLine(text), 120)
			}
			return verify.Verdict{Confidence: 1, Detail: detail, Where: at(e.Line, e.Col)}, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		return verify.Verdict{}, fmt.Errorf("syntax check for python: %s is gone (%v): install the Debian package python3 (apt-get install python3)", python, err)
	}
	return verify.Verdict{}, fmt.Errorf("syntax check for python: %s: %v: %s", python, err, clip(strings.TrimSpace(stderr.b.String()), 500))
}

// capped is an io.Writer that keeps the first n bytes and discards the rest.
type capped struct {
	b bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Go source wrappers tried when the answer has no package clause. Each adds
// whole lines before the answer, so columns are unchanged.
var goForms = []struct{ name, prefix, suffix string }{
	{"declarations", "package main\n", "\n"},
	{"statements in a function body", "package main\nfunc _() {\n", "\n}\n"},
}

func checkGo(answer string) verify.Verdict {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "answer.go", answer, parser.PackageClauseOnly); err == nil {
		_, err := parser.ParseFile(fset, "answer.go", answer, parser.SkipObjectResolution)
		if err == nil {
			return verify.Verdict{OK: true, Confidence: 1, Detail: "valid Go source file"}
		}
		return goFailure(answer, err, 0, "a Go file")
	}
	var (
		best     error
		bestOff  = -1
		bestForm string
		bestPre  int
	)
	for _, f := range goForms {
		_, err := parser.ParseFile(token.NewFileSet(), "answer.go", f.prefix+answer+f.suffix, parser.SkipObjectResolution)
		if err == nil {
			return verify.Verdict{OK: true, Confidence: 1, Detail: "valid Go " + f.name}
		}
		off := len(answer) + 1 // an error with no position parsed furthest of all
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			off = list[0].Pos.Offset - len(f.prefix)
		}
		if off > bestOff {
			best, bestOff, bestForm, bestPre = err, off, f.name, len(f.prefix)
		}
	}
	return goFailure(answer, best, bestPre, "Go "+bestForm)
}

// goFailure reports up to three of a Go parse's errors; prefix is how many
// bytes a wrapper put before the answer.
func goFailure(answer string, err error, prefix int, form string) verify.Verdict {
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("Go syntax error (read as %s): %v", form, err)}
	}
	var parts []string
	where := ""
	for i, e := range list {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-3))
			break
		}
		line, col := lineCol(answer, e.Pos.Offset-prefix)
		if i == 0 {
			where = at(line, col)
		}
		parts = append(parts, fmt.Sprintf("%d:%d: %s", line, col, e.Msg))
	}
	return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("Go syntax error (read as %s): %s", form, strings.Join(parts, "; ")), Where: where}
}

func checkJSON(answer string) verify.Verdict {
	if json.Valid([]byte(answer)) {
		return verify.Verdict{OK: true, Confidence: 1, Detail: "valid JSON"}
	}
	var v any
	return jsonFailure(answer, json.Unmarshal([]byte(answer), &v), "the answer is not valid JSON")
}

// jsonFailure describes a JSON decoding error of answer, locating it when it
// is a syntax error.
func jsonFailure(answer string, err error, what string) verify.Verdict {
	var hint string
	if strings.HasPrefix(strings.TrimSpace(answer), "```") {
		hint = " (give the bare JSON, without a ``` fence)"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) { // valid JSON, but a number beyond float64
		literal := strings.TrimPrefix(te.Value, "number ")
		// Offset is just after the number, or a byte beyond: find it.
		off := int(max(0, min(te.Offset, int64(len(answer)))))
		if i := strings.LastIndex(answer[:off], literal); i >= 0 {
			off = i
		}
		where := at(lineCol(answer, off))
		return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("the answer's number %s at %s is out of range (beyond a 64-bit float)", clip(literal, 50), where), Where: where}
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("%s: %v%s", what, err, hint)}
	}
	// Offset counts the bytes read, so the offending byte is the one before
	// it; at the end of the input the place is just after the last byte.
	off := int(se.Offset)
	if off > 0 && off <= len(answer) && !strings.HasPrefix(se.Error(), "unexpected end") {
		off--
	}
	where := at(lineCol(answer, off))
	return verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("%s: %s at %s%s", what, se.Error(), where, hint), Where: where}
}

func checkYAML(answer string) (v verify.Verdict) {
	defer func() {
		if r := recover(); r != nil { // yaml.v3 has panicked on hostile input before
			v = verify.Verdict{Confidence: 1, Detail: fmt.Sprintf("the answer is not valid YAML: the parser failed on it (%v)", clip(fmt.Sprint(r), 200))}
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(answer))
	docs := 0
	for ; ; docs++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			line, msg := yamlerr.Locate(err, []byte(answer))
			where := at(line, 0)
			detail := "the answer is not valid YAML: " + msg
			if where != "" {
				detail += " at " + where
			}
			return verify.Verdict{Confidence: 1, Detail: detail, Where: where}
		}
	}
	if docs == 1 {
		return verify.Verdict{OK: true, Confidence: 1, Detail: "valid YAML"}
	}
	return verify.Verdict{OK: true, Confidence: 1, Detail: fmt.Sprintf("valid YAML (%d documents)", docs)}
}
