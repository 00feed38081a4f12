package command

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/redact"
	"github.com/ratchetloop/ratchet/sandbox"
)

// FuzzRender: whatever a command prints, and whatever report it leaves,
// the result is valid UTF-8 without terminal escapes or control characters
// (but newline and tab), holds no secret of the run, and nothing panics.
func FuzzRender(f *testing.F) {
	f.Add("python3 -m pytest -q", []byte("ok\n"), []byte("\x1b[31merr\r\n"), []byte(`<testsuite><testcase name="t"><failure message="boom"/></testcase></testsuite>`))
	f.Add("go test -json ./...", []byte(`{"Action":"fail","Package":"p","Test":"TestX"}`+"\n"), []byte{}, []byte{})
	f.Add("node --test", []byte("TAP version 13\nnot ok 1 - x\n1..1\n"), []byte("\x00\xff"), []byte{})
	f.Add("echo sk-secret-abcdef", []byte("sk-secret-abcdef\x07"), []byte{}, []byte{})
	r := &runCommand{cfg: Config{Secrets: redact.New("sk-secret-abcdef")}}
	f.Fuzz(func(t *testing.T, line string, stdout, stderr, report []byte) {
		res := sandbox.Result{ExitCode: 1, Stdout: stdout, Stderr: stderr, StdoutBytes: int64(len(stdout)), StderrBytes: int64(len(stderr)), Report: report, Duration: time.Second}
		out := r.render(line, limit{d: time.Minute}, res, recognise(line), changes{written: []string{"a\x1b]0;x\x07"}}, nil)
		if !utf8.ValidString(out) {
			t.Fatalf("not UTF-8: %q", out)
		}
		for _, c := range out {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				t.Fatalf("control character %q in %q", c, out)
			}
		}
		if strings.Contains(out, "sk-secret-abcdef") {
			t.Fatalf("secret shown: %q", out)
		}
	})
}

func TestRecognise(t *testing.T) {
	for line, want := range map[string]string{
		"python3 -m pytest -q":              "pytest",
		"cd pkg && pytest tests/":           "pytest",
		"/usr/bin/py.test":                  "pytest",
		"go test -json ./...":               "go test",
		"go test ./...":                     "",
		"go vet ./... && go test -json ./a": "go test",
		"node --test":                       "node --test",
		"node --test-reporter=tap --test":   "node --test",
		"node index.js --testing":           "",
		"echo pytest-like":                  "",
		"ls":                                "",
	} {
		if got := recognise(line).name; got != want {
			t.Errorf("recognise(%q) = %q, want %q", line, got, want)
		}
	}
}
