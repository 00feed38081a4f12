package execcheck

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ratchetloop/ratchet/sandbox"
	"github.com/ratchetloop/ratchet/verify/testreport"
)

// pytestLaunch runs pytest in-process with each test's outcome streamed
// out as it is known (pytest_launch.py).
//
//go:embed pytest_launch.py
var pytestLaunch string

// runsPytestModule reports whether cmd is `python -m pytest ...` run by a
// Python that has -P (3.11 and later), which the launcher can stand in
// for; path is the sandbox's PATH.
func runsPytestModule(cmd []string, path string) bool {
	if len(cmd) < 3 || !pythonName.MatchString(filepath.Base(cmd[0])) || cmd[1] != "-m" || cmd[2] != "pytest" {
		return false
	}
	python := inPath(cmd[0], path)
	if python == "" {
		return false
	}
	has, _ := safePath.LoadOrStore(python, sync.OnceValue(func() bool {
		// The sandbox sees the host's file system: this is its interpreter.
		return exec.Command(python, "-E", "-s", "-P", "-c", "pass").Run() == nil
	}))
	return has.(func() bool)()
}

// safePath remembers, per interpreter, whether it takes -P.
var safePath sync.Map

// maxStream bounds the outcome stream read from one run.
const maxStream = 8 << 20

// outcomeStream is the pipe the launcher writes each outcome to, and what
// came through it.
type outcomeStream struct {
	w    *os.File // the sandbox's end
	r    *os.File
	done chan struct{}
	data []byte
	over bool // more than maxStream was written
}

func newOutcomeStream() (*outcomeStream, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s := &outcomeStream{w: w, r: r, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.data, _ = io.ReadAll(io.LimitReader(r, maxStream+1))
		if len(s.data) > maxStream {
			s.over = true
			io.Copy(io.Discard, r) // keep the writer from blocking
		}
	}()
	return s, nil
}

func (s *outcomeStream) close() {
	s.w.Close()
	s.r.Close()
}

// outcome is one line of the stream.
type outcome struct {
	ID      string `json:"id"`
	When    string `json:"when"`
	Outcome string `json:"outcome"`
}

// contradicts says how the report of a finished run contradicts the
// outcomes streamed while it ran, or "": a test the stream saw fail that
// the report shows passed, a sentinel the report shows that the stream
// never saw, or a line the launcher did not write.
func (s *outcomeStream) contradicts(res sandbox.Result, sentinel string) string {
	s.w.Close() // the sandbox is gone: the reader sees the end
	<-s.done
	if s.over {
		return fmt.Sprintf("more than %d MiB of test outcomes were streamed out of pytest", maxStream>>20)
	}
	rep, err := testreport.ParseJUnitXML(bytes.NewReader(res.Report))
	if err != nil {
		return "" // judged already: no report, no tests
	}
	failed := map[string]bool{} // by test name, without parameters
	sc := bufio.NewScanner(bytes.NewReader(s.data))
	sc.Buffer(nil, maxStream)
	for sc.Scan() {
		var o outcome
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil || o.ID == "" {
			return fmt.Sprintf("the stream of test outcomes out of pytest holds a line ratchet's launcher did not write (%.80q)", sc.Text())
		}
		// A collection error is judged by the tests that did not run.
		if o.Outcome == "failed" && o.When != "collect" {
			failed[baseName(o.ID)] = true
		}
	}
	ranFailing := map[string]bool{}
	for name, o := range rep.Ran {
		base, _, _ := strings.Cut(name, "[")
		if o.Has(testreport.Failed) || o.Has(testreport.Errored) {
			ranFailing[base] = true
		}
	}
	var flipped []string
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		if name != sentinel && !ranFailing[name] && !rep.RanCut {
			flipped = append(flipped, name)
		}
	}
	if len(flipped) > 0 {
		return clip(fmt.Sprintf("%s failed while the tests ran (outcomes streamed out of pytest), but the report shows no failure of it: the report was rewritten after the run", strings.Join(flipped, ", ")), 600)
	}
	if sentinel != "" && rep.Ran[sentinel] != 0 && !failed[sentinel] {
		return "the report shows the sentinel test " + sentinel + ", but its failure never came through the stream of outcomes out of pytest: the stream was cut or redirected"
	}
	return ""
}

// baseName is a pytest node ID's test name without its parameters:
// "tests/test_a.py::TestX::test_b[1-2]" is "test_b".
func baseName(id string) string {
	if i := strings.LastIndex(id, "::"); i >= 0 {
		id = id[i+2:]
	}
	id, _, _ = strings.Cut(id, "[")
	return id
}
