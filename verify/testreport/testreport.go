// Package testreport turns test-runner output into structured failures, so
// that a failing candidate gets shaped feedback (the failing test's name, the
// assertion and a few relevant lines) instead of the whole log.
//
// Three formats are read:
//
//   - JUnit XML, as written by `pytest --junitxml=FILE` (and by most other
//     JUnit producers): ParseJUnitXML.
//   - The `go test -json` event stream (test2json): ParseGoTestJSON.
//   - TAP version 13 with YAML diagnostics, as printed by
//     `node --test --test-reporter=tap` (and, on Node 20, by a plain
//     `node --test` whose stdout is not a terminal): ParseTAP.
//
// # Untrusted input
//
// The output parsed here comes from running code that a model wrote. The
// parsers never panic, bound their memory (long lines are cut, each kept
// string is capped, at most MaxCases cases are kept and the rest are only
// counted in Omitted and the totals), sanitise every kept string (valid
// UTF-8, no terminal escapes or control characters) and read a truncated run
// as a partial report with Complete false.
//
// A program under test can print lines that look like runner output (a fake
// "ok 1 - all passed", a fake "--- PASS" line, a fake summary). What each
// parser does about it:
//
//   - go test -json: results are read only from test2json's Action events;
//     whatever a test prints arrives inside Output fields and is never read
//     as a result, so printed "--- PASS", "ok" or even JSON lines are inert.
//   - JUnit XML: pytest escapes captured output into <system-out>, which is
//     never read as a result.
//   - TAP: node --test runs each file in a child process and turns the
//     child's stray stdout into "# " comments, which are never read as
//     results. Run without --test (no isolation), printed lines reach the
//     stream verbatim; then, in node-style streams (those with "# Subtest:"
//     lines), a passing test point that no "# Subtest:" line announced is
//     dropped, a summary counts for Complete only after the final top-level
//     plan with as many top-level tests as the plan says, and a failing point
//     is always kept: a printed line can add noise but can never erase a
//     real failure.
//
// A report shapes feedback; it is not the verdict. The runner's exit status
// stays the gate: a candidate whose runner exited non-zero has failed even if
// the report shows no failure, and one whose report has NoTestsRan, or is
// not Complete, must not pass either.
package testreport

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Status is a test case's outcome.
type Status string

const (
	Passed  Status = "passed"
	Failed  Status = "failed"  // an assertion failed
	Errored Status = "errored" // the test could not run or crashed: setup, import, build, panic, thrown error
	Skipped Status = "skipped" // skipped, or an expected failure (xfail, TAP TODO)
)

// Case is one test's result.
type Case struct {
	// Name is the test's name: "test_negatives", "TestAdd/negative", or for
	// nested TAP tests "outer > inner".
	Name string `json:"name"`
	// Suite is where the test lives: a pytest class path, a Go package or a
	// test file.
	Suite  string `json:"suite,omitempty"`
	Status Status `json:"status"`
	// Message is the assertion or error line, without its location.
	Message string `json:"message,omitempty"`
	// Location is "file:line" when known: where the assertion failed or the
	// error was raised, else where the test is defined.
	Location string `json:"location,omitempty"`
	// Output holds the relevant lines only, already trimmed and capped.
	Output string `json:"output,omitempty"`
}

// Report is a parsed test run.
type Report struct {
	Runner string `json:"runner"` // pytest, junit, go, node or tap
	// Cases are the kept cases, in the order the runner reported them.
	Cases []Case `json:"cases"`
	// The totals count every case seen, kept or omitted, so that
	// Passed+Failed+Errored+Skipped == len(Cases)+Omitted.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errored int `json:"errored"`
	Skipped int `json:"skipped"`
	// Omitted counts the cases seen but not kept, beyond MaxCases.
	Omitted int `json:"omitted,omitempty"`
	// Complete is true when the runner reported the end of the run (a
	// summary, a closed document, a result for every package), i.e. the
	// output was not cut off.
	Complete bool `json:"complete"`
	// Ran holds the name of every case seen, kept or omitted, with the
	// outcomes it had (a name can recur: parametrized tests, the same test
	// in two packages), for checking that the expected tests ran. It holds
	// at most MaxNames names; RanCut says that more were seen.
	Ran    map[string]Outcomes `json:"-"`
	RanCut bool                `json:"-"`
}

// Outcomes is a set of statuses.
type Outcomes uint8

// Has reports whether s is in o.
func (o Outcomes) Has(s Status) bool { return o&outcomeBit(s) != 0 }

func outcomeBit(s Status) Outcomes {
	switch s {
	case Passed:
		return 1
	case Failed:
		return 2
	case Errored:
		return 4
	case Skipped:
		return 8
	}
	return 0
}

// MaxNames caps Report.Ran.
const MaxNames = 20000

// Limits on what is kept from untrusted output.
const (
	// MaxCases is how many cases a report keeps. Failing cases may use all
	// of it; passing and skipped ones at most half, so that a flood of
	// passing tests cannot push the failures out.
	MaxCases = 1000
	// MaxMessageBytes caps Case.Message.
	MaxMessageBytes = 1024
	// MaxOutputBytes and MaxOutputLines cap Case.Output.
	MaxOutputBytes = 4096
	MaxOutputLines = 40
	// MaxNameBytes caps Case.Name, Case.Suite and Case.Location.
	MaxNameBytes = 512
	// MaxLineBytes is how much of one line of TAP is read; the rest of
	// the line is skipped.
	MaxLineBytes = 64 << 10
	// MaxJSONLineBytes is how long one go test -json event may be; a longer
	// line is skipped whole.
	MaxJSONLineBytes = 1 << 20
	// MaxXMLBytes is how much of a JUnit XML document is read; a longer one
	// is read as cut off.
	MaxXMLBytes = 32 << 20
)

// Failures returns the failed and errored cases, in report order.
func (r Report) Failures() []Case {
	var out []Case
	for _, c := range r.Cases {
		if c.Status == Failed || c.Status == Errored {
			out = append(out, c)
		}
	}
	return out
}

// NoTestsRan reports whether the run has no case at all: a candidate whose
// runner exits 0 before any test runs must not pass.
func (r Report) NoTestsRan() bool {
	return r.Passed+r.Failed+r.Errored+r.Skipped == 0
}

// Feedback renders the failures for a model: one block per failing case
// (status, name, suite, location, the assertion, a few relevant lines),
// most informative first, at most maxBytes bytes of valid UTF-8 in all. When
// not every failing case fits, a last line says "… and N more failing
// tests". It returns "" when nothing failed.
//
// A block looks like:
//
//	FAIL test_negatives (test_calc) at test_calc.py:13
//	  assert -4 == -3
//	  | >       assert add(-1, -2) == -3
//	  | E        +  where -4 = add(-1, -2)
func (r Report) Feedback(maxBytes int) string {
	fails := r.Failures()
	total := r.Failed + r.Errored
	if total < len(fails) {
		total = len(fails) // a hand-built report
	}
	if total == 0 || maxBytes <= 0 {
		return ""
	}
	sort.SliceStable(fails, func(i, j int) bool { return informativeness(fails[i]) > informativeness(fails[j]) })

	var tail string
	if !r.Complete {
		tail = "(the run was cut off: later tests may not have run)\n"
	}
	var b strings.Builder
	shown := 0
	for i, c := range fails {
		block := renderBlock(c)
		if i > 0 {
			block = "\n" + block
		}
		rest := total - shown - 1
		reserve := len(moreLine(rest)) + len(tail)
		if b.Len()+len(block)+reserve <= maxBytes {
			b.WriteString(block)
			shown++
			continue
		}
		if shown == 0 {
			// The most informative failure matters most: cut it to fit
			// rather than showing none.
			if room := maxBytes - reserve; room > 0 {
				b.WriteString(clip(block, room))
				shown++
			}
		}
		break
	}
	if rest := total - shown; rest > 0 {
		b.WriteString(moreLine(rest))
	}
	if tail != "" && b.Len()+len(tail) <= maxBytes {
		b.WriteString(tail)
	}
	return clip(b.String(), maxBytes)
}

func moreLine(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return "… and 1 more failing test\n"
	default:
		return fmt.Sprintf("… and %d more failing tests\n", n)
	}
}

// informativeness ranks failures for Feedback: a build or setup failure
// first (nothing else can be fixed before it), then cases that say what and
// where, then the rest.
func informativeness(c Case) int {
	score := 0
	if strings.HasPrefix(c.Name, "[") && c.Status == Errored {
		score += 10
	}
	if c.Message != "" {
		score += 2
	}
	if c.Location != "" {
		score += 2
	}
	if c.Output != "" {
		score++
	}
	return score
}

func renderBlock(c Case) string {
	var b strings.Builder
	if c.Status == Errored {
		b.WriteString("ERROR ")
	} else {
		b.WriteString("FAIL ")
	}
	b.WriteString(oneLine(c.Name))
	if c.Suite != "" && c.Suite != c.Name && !strings.HasPrefix(c.Location, c.Suite+":") {
		b.WriteString(" (" + oneLine(c.Suite) + ")")
	}
	if c.Location != "" {
		b.WriteString(" at " + oneLine(c.Location))
	}
	b.WriteString("\n")
	msg := strings.TrimSpace(c.Message)
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimRight(l, " \t"); l != "" {
			b.WriteString("  " + l + "\n")
		}
	}
	for _, l := range strings.Split(c.Output, "\n") {
		l = strings.TrimRight(l, " \t")
		t := strings.TrimSpace(l)
		if t == "" || t == msg || strings.TrimSpace(strings.TrimPrefix(t, "E ")) == msg {
			continue
		}
		b.WriteString("  | " + l + "\n")
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clipMark cuts s to at most n bytes, ending with "…" when it was cut.
func clipMark(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	if n < len(mark) {
		return clip(s, n)
	}
	return clip(s, n-len(mark)) + mark
}

var ansiEscape = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])`)

// Sanitize makes untrusted multi-line text, such as a command's output,
// safe to show: valid UTF-8, no terminal escape sequences, no control
// characters but tab and newline (CRLF becomes LF).
func Sanitize(s string) string { return sanitize(s, true) }

// sanitize makes untrusted text safe to keep and show: valid UTF-8, no
// terminal escape sequences, no control characters but tab and (when
// multiline) newline.
func sanitize(s string, multiline bool) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiEscape.ReplaceAllString(s, "")
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	clean := true
	for _, r := range s {
		if isControl(r, multiline) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\r' && multiline:
			// dropped: CRLF becomes LF
		case (r == '\r' || r == '\n') && !multiline:
			b.WriteByte(' ')
		case isControl(r, multiline):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune, multiline bool) bool {
	if r == '\t' || (r == '\n' && multiline) {
		return false
	}
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029'
}

// text sanitises a single-line field and caps it.
func text(s string, max int) string {
	return clipMark(strings.TrimSpace(sanitize(s, false)), max)
}

// trimLines keeps the non-blank lines of lines, sanitised and capped: the
// first head and last tail of them when there are more than head+tail, at
// most MaxOutputBytes in all.
func trimLines(lines []string, head, tail int) string {
	var kept []string
	for _, l := range lines {
		l = strings.TrimRight(sanitize(l, false), " \t")
		if strings.TrimSpace(l) != "" {
			kept = append(kept, clipMark(l, 300))
		}
	}
	if len(kept) > head+tail {
		n := len(kept) - head - tail
		out := append([]string{}, kept[:head]...)
		out = append(out, fmt.Sprintf("… (%d lines omitted)", n))
		kept = append(out, kept[len(kept)-tail:]...)
	}
	return capOutput(strings.Join(kept, "\n"))
}

func capOutput(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > MaxOutputLines {
		lines = append(lines[:MaxOutputLines-1], "…")
		s = strings.Join(lines, "\n")
	}
	return clipMark(s, MaxOutputBytes)
}

// builder collects cases under the caps and keeps the totals.
type builder struct {
	cases      []Case
	orphan     []bool // parallel to cases: see tap.go
	keptOK     int    // kept passing and skipped cases
	omitted    map[Status]int
	omittedOrp map[Status]int
	// ran and ranOrp are the names seen (Report.Ran), of cases and of
	// orphans.
	ran, ranOrp map[string]Outcomes
	ranCut      bool
}

func (b *builder) add(c Case, orphan bool) {
	ran := &b.ran
	if orphan {
		ran = &b.ranOrp
	}
	if *ran == nil {
		*ran = map[string]Outcomes{}
	}
	if _, ok := (*ran)[c.Name]; ok || len(b.ran)+len(b.ranOrp) < MaxNames {
		(*ran)[c.Name] |= outcomeBit(c.Status)
	} else {
		b.ranCut = true
	}
	failing := c.Status == Failed || c.Status == Errored
	if len(b.cases) < MaxCases && (failing || b.keptOK < MaxCases/2) {
		b.cases = append(b.cases, c)
		b.orphan = append(b.orphan, orphan)
		if !failing {
			b.keptOK++
		}
		return
	}
	m := &b.omitted
	if orphan {
		m = &b.omittedOrp
	}
	if *m == nil {
		*m = map[Status]int{}
	}
	(*m)[c.Status]++
}

// finish fills the report's cases and totals. With dropPassingOrphans, the
// passing and skipped cases added as orphans are left out.
func (b *builder) finish(r *Report, dropPassingOrphans bool) {
	r.Cases, r.Passed, r.Failed, r.Errored, r.Skipped, r.Omitted = nil, 0, 0, 0, 0, 0
	r.Ran, r.RanCut = map[string]Outcomes{}, b.ranCut
	for name, o := range b.ran {
		r.Ran[name] |= o
	}
	for name, o := range b.ranOrp {
		if dropPassingOrphans {
			o &= outcomeBit(Failed) | outcomeBit(Errored)
		}
		if o != 0 {
			r.Ran[name] |= o
		}
	}
	count := func(s Status, n int) {
		switch s {
		case Passed:
			r.Passed += n
		case Failed:
			r.Failed += n
		case Errored:
			r.Errored += n
		case Skipped:
			r.Skipped += n
		}
	}
	for i, c := range b.cases {
		if dropPassingOrphans && b.orphan[i] && c.Status != Failed && c.Status != Errored {
			continue
		}
		r.Cases = append(r.Cases, c)
		count(c.Status, 1)
	}
	for s, n := range b.omitted {
		count(s, n)
		r.Omitted += n
	}
	for s, n := range b.omittedOrp {
		if dropPassingOrphans && s != Failed && s != Errored {
			continue
		}
		count(s, n)
		r.Omitted += n
	}
}

// lineReader reads lines of at most max bytes; the rest of a longer line is
// skipped and reported as cut.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending, whether it was cut,
// and false at the end of the input (or on a read error).
func (lr *lineReader) next() (line string, cut bool, ok bool) {
	lr.buf = lr.buf[:0]
	read := false
	for {
		frag, isPrefix, err := lr.br.ReadLine()
		if len(frag) > 0 || err == nil {
			read = true
		}
		if room := lr.max - len(lr.buf); room > 0 {
			if len(frag) > room {
				frag, cut = frag[:room], true
			}
			lr.buf = append(lr.buf, frag...)
		} else if len(frag) > 0 {
			cut = true
		}
		if err != nil {
			if !read {
				return "", false, false
			}
			return string(lr.buf), cut, true
		}
		if !isPrefix {
			return string(lr.buf), cut, true
		}
	}
}

var fileLineRe = regexp.MustCompile(`^(.*?[^\s:]):(\d+)(?::\d+)?$`)

// fileLine normalises "path:line" or "path:line:col" to "path:line"; it
// returns "" for anything else.
func fileLine(s string) string {
	m := fileLineRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return ""
	}
	return text(m[1]+":"+m[2], MaxNameBytes)
}
