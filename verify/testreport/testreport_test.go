package testreport

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// ignoreRan leaves Report.Ran out of whole-report comparisons;
// checkInvariants ties it to the cases.
var ignoreRan = cmpopts.IgnoreFields(Report{}, "Ran", "RanCut")

// checkInvariants holds for every report, whatever the input.
func checkInvariants(t testing.TB, r Report) {
	t.Helper()
	if got, want := r.Passed+r.Failed+r.Errored+r.Skipped, len(r.Cases)+r.Omitted; got != want {
		t.Errorf("totals %d (p%d f%d e%d s%d) != len(Cases) %d + Omitted %d",
			got, r.Passed, r.Failed, r.Errored, r.Skipped, len(r.Cases), r.Omitted)
	}
	if r.Omitted < 0 || r.Passed < 0 || r.Failed < 0 || r.Errored < 0 || r.Skipped < 0 {
		t.Errorf("a negative count: %+v", r)
	}
	if len(r.Cases) > MaxCases+1 {
		t.Errorf("%d cases kept, more than MaxCases", len(r.Cases))
	}
	byStatus := map[Status]int{}
	for _, c := range r.Cases {
		byStatus[c.Status]++
		switch c.Status {
		case Passed, Failed, Errored, Skipped:
		default:
			t.Errorf("case %q has status %q", c.Name, c.Status)
		}
		for field, s := range map[string]string{"Name": c.Name, "Suite": c.Suite, "Location": c.Location, "Message": c.Message, "Output": c.Output} {
			if !utf8.ValidString(s) {
				t.Errorf("%s of %q is not valid UTF-8: %q", field, c.Name, s)
			}
			for _, r := range s {
				if isControl(r, field == "Output") {
					t.Errorf("%s of %q holds control character %U: %q", field, c.Name, r, s)
					break
				}
			}
		}
		if len(c.Name) > MaxNameBytes || len(c.Suite) > MaxNameBytes || len(c.Location) > MaxNameBytes {
			t.Errorf("name, suite or location over %d bytes: %q %q %q", MaxNameBytes, c.Name, c.Suite, c.Location)
		}
		if len(c.Message) > MaxMessageBytes {
			t.Errorf("message of %q is %d bytes", c.Name, len(c.Message))
		}
		if len(c.Output) > MaxOutputBytes || strings.Count(c.Output, "\n") >= MaxOutputLines {
			t.Errorf("output of %q is %d bytes, %d lines", c.Name, len(c.Output), strings.Count(c.Output, "\n")+1)
		}
	}
	if len(r.Ran) > MaxNames {
		t.Errorf("Ran holds %d names, more than MaxNames", len(r.Ran))
	}
	for _, c := range r.Cases {
		if !r.RanCut && !r.Ran[c.Name].Has(c.Status) {
			t.Errorf("case %q (%s) is not in Ran: %v", c.Name, c.Status, r.Ran[c.Name])
		}
	}
	if byStatus[Passed] > r.Passed || byStatus[Failed] > r.Failed || byStatus[Errored] > r.Errored || byStatus[Skipped] > r.Skipped {
		t.Errorf("kept cases %v exceed the totals %+v", byStatus, r)
	}
	failing := r.Failed+r.Errored > 0
	for _, n := range []int{-1, 0, 1, 2, 3, 4, 10, 40, 100, 300, 1000, 4000, 1 << 16} {
		fb := r.Feedback(n)
		if len(fb) > max(n, 0) {
			t.Errorf("Feedback(%d) is %d bytes", n, len(fb))
		}
		if !utf8.ValidString(fb) {
			t.Errorf("Feedback(%d) is not valid UTF-8: %q", n, fb)
		}
		if !failing && fb != "" {
			t.Errorf("Feedback(%d) = %q with nothing failing", n, fb)
		}
		if failing && n >= 100 && fb == "" {
			t.Errorf("Feedback(%d) is empty with %d failing", n, r.Failed+r.Errored)
		}
	}
}

func TestFeedbackPytest(t *testing.T) {
	rep := parseFixture(t, "pytest_mixed.xml", ParseJUnitXML)
	want := `FAIL test_negatives (test_calc) at test_calc.py:13
  assert -4 == -3
  | >       assert add(-1, -2) == -3
  | E        +  where -4 = add(-1, -2)
  | test_calc.py:13: AssertionError

FAIL test_parse_raises (test_calc) at calc.py:8
  ValueError: invalid literal for int() with base 10: 'seven'
  | >       assert parse("seven") == 7
  | test_calc.py:18:
  | >       return int(s)
  | calc.py:8: ValueError

ERROR test_with_db (test_calc) at test_calc.py:23
  failed on setup with "ConnectionError: database unavailable on port 5432"
  | >       raise ConnectionError("database unavailable on port 5432")
  | E       ConnectionError: database unavailable on port 5432
  | test_calc.py:23: ConnectionError
… and 2 more failing tests
`
	// Exactly the room for three blocks and the last line.
	if diff := cmp.Diff(want, rep.Feedback(len(want))); diff != "" {
		t.Errorf("Feedback(%d) (-want +got):\n%s", len(want), diff)
	}
	if got := rep.Feedback(len(want) - 1); strings.Contains(got, "test_with_db") || !strings.HasSuffix(got, "… and 3 more failing tests\n") {
		t.Errorf("Feedback(%d) = %q", len(want)-1, got)
	}
	all := rep.Feedback(1 << 20)
	if strings.Contains(all, "more failing") || strings.Count(all, "\nFAIL ")+strings.Count(all, "\nERROR ") != 4 {
		t.Errorf("Feedback with room for all shows %q", all)
	}
	for _, name := range []string{"test_negatives", "test_parse_raises", "test_with_db", "test_list_equal", "test_fake_output"} {
		if !strings.Contains(all, name) {
			t.Errorf("Feedback misses %s:\n%s", name, all)
		}
	}
	if strings.Contains(all, "99 passed") || strings.Contains(all, "test_add ") {
		t.Errorf("Feedback shows printed or passing lines:\n%s", all)
	}
}

func TestFeedbackGoBuildFailureFirst(t *testing.T) {
	mixed := parseFixture(t, "go_mixed.jsonl", ParseGoTestJSON)
	build := parseFixture(t, "go_build_failed.jsonl", ParseGoTestJSON)
	rep := mixed
	rep.Cases = append(append([]Case{}, mixed.Cases...), build.Cases...)
	rep.Errored += build.Errored
	fb := rep.Feedback(4000)
	if !strings.HasPrefix(fb, "ERROR [build failed] (example.com/sample/broken) at broken/broken.go:5\n  undefined: two\n") {
		t.Errorf("the build failure is not first:\n%s", fb)
	}
	want := "FAIL TestAdd/negative (example.com/sample/calc) at calc_test.go:27\n" +
		"  Add(-1, -2) = -4, want -3\n" +
		"  |     calc_test.go:25: adding -1 and -2\n"
	if !strings.Contains(fb, want) {
		t.Errorf("Feedback lacks %q:\n%s", want, fb)
	}
}

func TestFeedbackOrderAndCap(t *testing.T) {
	rep := Report{Complete: true}
	rep.Cases = []Case{
		{Name: "bare", Status: Failed},
		{Name: "cancelled", Status: Errored, Message: "cancelled"},
		{Name: "full", Status: Failed, Message: "want 1, got 2", Location: "a_test.go:3", Output: "detail"},
		{Name: "ok", Status: Passed},
	}
	rep.Failed, rep.Errored, rep.Passed = 2, 1, 1
	got := rep.Feedback(1000)
	want := "FAIL full at a_test.go:3\n  want 1, got 2\n  | detail\n\n" +
		"ERROR cancelled\n  cancelled\n\n" +
		"FAIL bare\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Feedback (-want +got):\n%s", diff)
	}
	// Room for the first block and the count of the rest only.
	got = rep.Feedback(len("FAIL full at a_test.go:3\n  want 1, got 2\n  | detail\n") + len("… and 2 more failing tests\n"))
	want = "FAIL full at a_test.go:3\n  want 1, got 2\n  | detail\n… and 2 more failing tests\n"
	if got != want {
		t.Errorf("capped Feedback = %q, want %q", got, want)
	}
	// Omitted failures are counted in the last line too.
	rep.Failed += 5
	rep.Omitted += 5
	if got := rep.Feedback(60); !strings.HasSuffix(got, "… and 7 more failing tests\n") || len(got) > 60 {
		t.Errorf("Feedback(60) = %q", got)
	}
	// Too small for even the first block: its beginning is shown.
	if got := rep.Feedback(40); !strings.HasPrefix(got, "FAIL full") || !strings.HasSuffix(got, "… and 7 more failing tests\n") {
		t.Errorf("Feedback(40) = %q", got)
	}
}

func TestFeedbackCutOff(t *testing.T) {
	rep := Report{Failed: 1, Cases: []Case{{Name: "t", Status: Failed, Message: "boom"}}}
	want := "FAIL t\n  boom\n(the run was cut off: later tests may not have run)\n"
	if got := rep.Feedback(1000); got != want {
		t.Errorf("Feedback = %q, want %q", got, want)
	}
	rep.Complete = true
	if got := rep.Feedback(1000); got != "FAIL t\n  boom\n" {
		t.Errorf("Feedback of a complete run = %q", got)
	}
}

func TestFeedbackNothingFailed(t *testing.T) {
	for _, name := range []string{"pytest_empty.xml", "go_no_tests.jsonl"} {
		p := ParseJUnitXML
		if strings.HasSuffix(name, ".jsonl") {
			p = ParseGoTestJSON
		}
		if got := parseFixture(t, name, p).Feedback(1000); got != "" {
			t.Errorf("%s: Feedback = %q, want empty", name, got)
		}
	}
	rep := Report{Passed: 1, Skipped: 1, Cases: []Case{{Name: "a", Status: Passed}, {Name: "b", Status: Skipped, Message: "later"}}}
	if got := rep.Feedback(1000); got != "" {
		t.Errorf("Feedback = %q, want empty", got)
	}
}

func TestFailures(t *testing.T) {
	rep := parseFixture(t, "go_mixed.jsonl", ParseGoTestJSON)
	var names []string
	for _, c := range rep.Failures() {
		names = append(names, c.Name+":"+string(c.Status))
	}
	want := []string{"TestAdd/negative:failed", "TestFakeOutput:failed", "TestIndex:errored"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Failures (-want +got):\n%s", diff)
	}
}

func TestGoTimeout(t *testing.T) {
	got := parseFixture(t, "go_timeout.jsonl", ParseGoTestJSON)
	want := Report{
		Runner: "go", Complete: true, Passed: 1, Errored: 1,
		Cases: []Case{
			{Name: "TestQuick", Suite: "example.com/sample/hang", Status: Passed},
			{
				// test2json gives it no result: the package ended while it ran.
				Name: "TestHang", Suite: "example.com/sample/hang", Status: Errored,
				Message:  "panic: test timed out after 2s",
				Location: "/work/main/verify/testreport/testdata/gotest/hang/hang_test.go:12",
				Output: "    hang_test.go:11: waiting for a reply that never comes\n" +
					"panic: test timed out after 2s\n" +
					"example.com/sample/hang.TestHang(0x282e1dcd6488?)\n" +
					"\t/work/main/verify/testreport/testdata/gotest/hang/hang_test.go:12 +0x49",
			},
		},
	}
	if diff := cmp.Diff(want, got, ignoreRan); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	checkInvariants(t, got)
}

func TestGoCutOffWhileRunning(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "go_mixed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Cut right after TestIndex's panic line.
	i := bytes.Index(data, []byte(`index out of range [3] with length 0 [recovered, repanicked]\n"}`))
	if i < 0 {
		t.Fatal("fixture changed")
	}
	cut := data[:bytes.IndexByte(data[i:], '\n')+i+1]
	got, err := ParseGoTestJSON(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	last := got.Cases[len(got.Cases)-1]
	want := Case{Name: "TestIndex", Suite: "example.com/sample/boom", Status: Errored,
		Message: "panic: runtime error: index out of range [3] with length 0",
		Output:  "panic: runtime error: index out of range [3] with length 0"}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.Complete {
		t.Error("Complete, want not")
	}
	checkInvariants(t, got)
}

func TestGoSynthetic(t *testing.T) {
	ev := func(action, pkg, test, output string) string {
		s := fmt.Sprintf(`{"Action":%q,"Package":%q`, action, pkg)
		if test != "" {
			s += fmt.Sprintf(`,"Test":%q`, test)
		}
		if output != "" {
			s += fmt.Sprintf(`,"Output":%q`, output)
		}
		return s + "}\n"
	}
	tests := []struct {
		name  string
		input string
		want  Report
	}{
		{
			// Go before 1.24 printed build errors on stderr, as plain text.
			name: "old build failure on stderr",
			input: "# example.com/x\n./x.go:5:13: undefined: two\n" +
				ev("output", "example.com/x", "", "FAIL\texample.com/x [build failed]\n") +
				ev("fail", "example.com/x", "", ""),
			want: Report{Runner: "go", Complete: true, Errored: 1, Cases: []Case{{
				Name: "[build failed]", Suite: "example.com/x", Status: Errored,
				Message: "undefined: two", Location: "./x.go:5", Output: "./x.go:5:13: undefined: two",
			}}},
		},
		{
			name: "panic in init",
			input: ev("start", "p", "", "") +
				ev("output", "p", "", "panic: bad config\n") +
				ev("output", "p", "", "\n") +
				ev("output", "p", "", "goroutine 1 [running]:\n") +
				ev("output", "p", "", "p.init.0()\n") +
				ev("output", "p", "", "\t/src/p/p.go:7 +0x25\n") +
				ev("output", "p", "", "FAIL\tp\t0.01s\n") +
				ev("fail", "p", "", ""),
			want: Report{Runner: "go", Complete: true, Errored: 1, Cases: []Case{{
				Name: "[package failed]", Suite: "p", Status: Errored,
				Message: "panic: bad config", Location: "/src/p/p.go:7",
				Output: "panic: bad config\np.init.0()\n\t/src/p/p.go:7 +0x25",
			}}},
		},
		{
			// A parent that fails on its own is kept; one that only
			// reports its subtests' failures is not.
			name: "parents",
			input: ev("run", "p", "TestA", "") +
				ev("run", "p", "TestA/x", "") +
				ev("output", "p", "TestA/x", "    a_test.go:3: got 1, want 2\n") +
				ev("fail", "p", "TestA/x", "") +
				ev("output", "p", "TestA", "    a_test.go:9: cleanup failed\n") +
				ev("fail", "p", "TestA", "") +
				ev("run", "p", "TestB", "") +
				ev("run", "p", "TestB/y", "") +
				ev("output", "p", "TestB/y", "    b_test.go:4: want 3\n") +
				ev("fail", "p", "TestB/y", "") +
				ev("fail", "p", "TestB", "") +
				ev("fail", "p", "", ""),
			want: Report{Runner: "go", Complete: true, Failed: 3, Cases: []Case{
				{Name: "TestA/x", Suite: "p", Status: Failed, Message: "got 1, want 2", Location: "a_test.go:3", Output: "    a_test.go:3: got 1, want 2"},
				{Name: "TestA", Suite: "p", Status: Failed, Message: "cleanup failed", Location: "a_test.go:9", Output: "    a_test.go:9: cleanup failed"},
				{Name: "TestB/y", Suite: "p", Status: Failed, Message: "want 3", Location: "b_test.go:4", Output: "    b_test.go:4: want 3"},
			}},
		},
		{
			// Output split across events, garbage between events, and a
			// message that is neither first nor last.
			name: "partial lines and garbage",
			input: ev("run", "p", "TestC", "") +
				ev("output", "p", "TestC", "    c_test.go:1: step one\n    c_test.go:2: ") +
				"go: downloading something\n{not json\n" +
				ev("output", "p", "TestC", "expected 4\n") +
				ev("output", "p", "TestC", "    c_test.go:3: step three\n") +
				ev("fail", "p", "TestC", "") +
				ev("fail", "p", "", ""),
			want: Report{Runner: "go", Complete: true, Failed: 1, Cases: []Case{{
				Name: "TestC", Suite: "p", Status: Failed, Message: "expected 4", Location: "c_test.go:2",
				Output: "    c_test.go:1: step one\n    c_test.go:2: expected 4\n    c_test.go:3: step three",
			}}},
		},
		{
			name:  "a package never ends",
			input: ev("start", "p", "", "") + ev("run", "p", "TestD", "") + ev("pass", "p", "TestD", ""),
			want:  Report{Runner: "go", Passed: 1, Cases: []Case{{Name: "TestD", Suite: "p", Status: Passed}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGoTestJSON(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreRan); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkInvariants(t, got)
		})
	}
}

func TestTAPSynthetic(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Report
	}{
		{
			name: "plain TAP 13",
			input: "TAP version 13\n1..4\nok 1 - first\nnot ok 2 - second\n  ---\n  message: 'want 2, got 3'\n  severity: fail\n  ...\n" +
				"not ok 3 - later # TODO not done\nok 4 # skip no network\n",
			want: Report{Runner: "tap", Complete: true, Passed: 1, Failed: 1, Skipped: 2, Cases: []Case{
				{Name: "first", Status: Passed},
				{Name: "second", Status: Failed, Message: "want 2, got 3"},
				{Name: "later", Status: Skipped, Message: "not done"},
				{Name: "", Status: Skipped, Message: "no network"},
			}},
		},
		{
			name:  "plan says more than ran",
			input: "1..3\nok 1 - a\nnot ok 2 - b\n",
			want: Report{Runner: "tap", Passed: 1, Failed: 1, Cases: []Case{
				{Name: "a", Status: Passed}, {Name: "b", Status: Failed},
			}},
		},
		{
			name:  "bail out",
			input: "1..2\nok 1 - a\nBail out! database down\n",
			want: Report{Runner: "tap", Passed: 1, Errored: 1, Cases: []Case{
				{Name: "a", Status: Passed},
				{Name: "Bail out!", Status: Errored, Message: "database down"},
			}},
		},
		{
			// TAP 14 subtests without "# Subtest:" lines: the parent is
			// reported through its failing child.
			name:  "indented subtests",
			input: "1..1\n    not ok 1 - inner\n    ok 2 - sibling\n    1..2\nnot ok 1 - outer\n",
			want: Report{Runner: "tap", Complete: true, Passed: 1, Failed: 1, Cases: []Case{
				{Name: "inner", Status: Failed}, {Name: "sibling", Status: Passed},
			}},
		},
		{
			name: "escapes, terminal codes and a name that is not a directive",
			input: "# Subtest: a \\# b \x1b[31mred\x1b[0m\nnot ok 1 - a \\# b \x1b[31mred\x1b[0m # a comment\n" +
				"  ---\n  error: \"bad\\tthing\\u0007\"\n  failureType: 'testCodeFailure'\n  ...\n1..1\n# tests 1\n# pass 0\n# fail 1\n",
			want: Report{Runner: "node", Complete: true, Errored: 1, Cases: []Case{
				{Name: "a # b red", Status: Errored, Message: "bad\tthing"},
			}},
		},
		{
			name:  "a summary before the final plan does not count",
			input: "# Subtest: a\nok 1 - a\n1..1\n# tests 1\n# pass 1\n# fail 0\n1..1\n",
			want:  Report{Runner: "node", Passed: 1, Cases: []Case{{Name: "a", Status: Passed}}},
		},
		{
			name:  "a summary before the last point does not count",
			input: "# Subtest: a\nok 1 - a\n1..2\n# tests 1\n# pass 1\n# Subtest: b\nok 2 - b\n",
			want: Report{Runner: "node", Passed: 2, Cases: []Case{
				{Name: "a", Status: Passed}, {Name: "b", Status: Passed},
			}},
		},
		{
			name:  "tab-indented YAML, no plan",
			input: "not ok 1 - t\n\t---\n\terror: 'it''s wrong'\n\t...\n",
			want: Report{Runner: "tap", Failed: 1, Cases: []Case{
				{Name: "t", Status: Failed, Message: "it's wrong"},
			}},
		},
		{
			name:  "node summary counts failures that no point shows",
			input: "# Subtest: a\nok 1 - a\n1..1\n# tests 2\n# pass 1\n# fail 1\n",
			want: Report{Runner: "node", Complete: true, Passed: 1, Errored: 1, Cases: []Case{
				{Name: "a", Status: Passed},
				{Name: "[run failed]", Status: Errored, Message: "the runner reported 1 failing tests that could not be read"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTAP(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreRan); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkInvariants(t, got)
		})
	}
}

// TestTAPFakeLines injects lines a test could print into real node output.
func TestTAPFakeLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "node_tap_unisolated.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	plan := strings.Index(s, "\n1..5\n")
	if plan < 0 {
		t.Fatal("fixture changed")
	}
	base := parseFixture(t, "node_tap_unisolated.txt", ParseTAP)

	// Fake passing points and a fake summary: ignored.
	fakeOK := s[:plan+1] + "ok 6 - all good\n    ok 1 - also good\n# pass 99\n# fail 0\n" + s[plan+1:]
	got, err := ParseTAP(strings.NewReader(fakeOK))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(base, got, ignoreRan); diff != "" {
		t.Errorf("fake ok lines changed the report (-want +got):\n%s", diff)
	}

	// A fake summary where the run was cut off does not make it complete.
	cut := s[:plan+1] + "1..5\n# tests 7\n# pass 7\n# fail 0\n"
	got, err = ParseTAP(strings.NewReader(s[:strings.Index(s, "# Subtest: fake output")] + cut[plan+1:]))
	if err != nil {
		t.Fatal(err)
	}
	if got.Complete {
		t.Error("a fake plan and summary after a cut made the report complete")
	}
	if got.Failed != 2 || got.Errored != 1 {
		t.Errorf("failures = %d failed, %d errored; want 2, 1", got.Failed, got.Errored)
	}

	// A failing point is never dropped, announced or not.
	fakeFail := s[:plan+1] + "not ok 6 - printed failure\n" + s[plan+1:]
	got, err = ParseTAP(strings.NewReader(fakeFail))
	if err != nil {
		t.Fatal(err)
	}
	if got.Failed != base.Failed+1 {
		t.Errorf("Failed = %d, want %d", got.Failed, base.Failed+1)
	}
	if got.Complete {
		t.Error("an extra top-level point still matched the plan")
	}
}

func TestJUnitSynthetic(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Report
	}{
		{
			// Another producer: line counts from 1, the message attribute
			// and the text are used as they are.
			name: "surefire style",
			input: `<?xml version="1.0" encoding="ISO-8859-1"?>
<testsuite name="com.example.CalcTest" tests="2" failures="1">
  <testcase name="adds" classname="com.example.CalcTest" file="Calc.java" line="12"/>
  <testcase name="negatives" classname="com.example.CalcTest">
    <failure message="expected:&lt;-3&gt; but was:&lt;-4&gt;" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected:&lt;-3&gt; but was:&lt;-4&gt;
	at com.example.CalcTest.negatives(CalcTest.java:20)</failure>
    <system-out>noise</system-out>
  </testcase>
</testsuite>`,
			want: Report{Runner: "junit", Complete: true, Passed: 1, Failed: 1, Cases: []Case{
				{Name: "adds", Suite: "com.example.CalcTest", Status: Passed, Location: "Calc.java:12"},
				{Name: "negatives", Suite: "com.example.CalcTest", Status: Failed,
					Message: "expected:<-3> but was:<-4>",
					Output:  "org.opentest4j.AssertionFailedError: expected:<-3> but was:<-4>\n\tat com.example.CalcTest.negatives(CalcTest.java:20)"},
			}},
		},
		{
			name: "failure and teardown error in one testcase; output only in system-out",
			input: `<testsuites><testsuite name="x">
<testcase name="a"><error message="teardown broke"/><failure message="assert 1 == 2"/></testcase>
<testcase name="b"><error type="Timeout"/><system-out>line one
line two</system-out></testcase>
</testsuite></testsuites>`,
			want: Report{Runner: "junit", Complete: true, Failed: 1, Errored: 1, Cases: []Case{
				{Name: "a", Status: Failed, Message: "assert 1 == 2"},
				{Name: "b", Status: Errored, Message: "Timeout", Output: "line one\nline two"},
			}},
		},
		{
			name:  "cut off inside a failure",
			input: `<testsuites><testsuite name="pytest"><testcase classname="t" name="a" file="t.py" line="0"><failure message="boom">E   boom`,
			want: Report{Runner: "pytest", Failed: 1, Cases: []Case{
				{Name: "a", Suite: "t", Status: Failed, Message: "boom", Location: "t.py:1", Output: "E   boom"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJUnitXML(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreRan); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkInvariants(t, got)
		})
	}
}

func TestNotAReport(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "<html><body>nope</body></html>"} {
		if _, err := ParseJUnitXML(strings.NewReader(in)); err == nil {
			t.Errorf("ParseJUnitXML(%q): no error", in)
		}
		if _, err := ParseGoTestJSON(strings.NewReader(in)); err == nil {
			t.Errorf("ParseGoTestJSON(%q): no error", in)
		}
		if _, err := ParseTAP(strings.NewReader(in)); err == nil {
			t.Errorf("ParseTAP(%q): no error", in)
		}
	}
	rep, _ := ParseTAP(strings.NewReader(""))
	if rep.Runner != "tap" || !rep.NoTestsRan() || rep.Complete {
		t.Errorf("empty TAP = %+v", rep)
	}
}

// TestCaps floods each parser with passing tests before a few failures: the
// failures are kept, the rest counted.
func TestCaps(t *testing.T) {
	const passing, failing = 3000, 7
	var junit, gojson, tap strings.Builder
	junit.WriteString(`<testsuites><testsuite name="pytest">`)
	tap.WriteString("TAP version 13\n")
	for i := range passing + failing {
		name := fmt.Sprintf("test_%d", i)
		fail := i >= passing
		gojson.WriteString(fmt.Sprintf(`{"Action":"run","Package":"p","Test":%q}`+"\n", name))
		if fail {
			junit.WriteString(fmt.Sprintf(`<testcase classname="t" name=%q><failure message="no">E   no</failure></testcase>`, name))
			gojson.WriteString(fmt.Sprintf(`{"Action":"output","Package":"p","Test":%q,"Output":"    x_test.go:1: want 1\n"}`+"\n", name))
			gojson.WriteString(fmt.Sprintf(`{"Action":"fail","Package":"p","Test":%q}`+"\n", name))
			tap.WriteString(fmt.Sprintf("not ok %d - %s\n", i+1, name))
		} else {
			junit.WriteString(fmt.Sprintf(`<testcase classname="t" name=%q/>`, name))
			gojson.WriteString(fmt.Sprintf(`{"Action":"pass","Package":"p","Test":%q}`+"\n", name))
			tap.WriteString(fmt.Sprintf("ok %d - %s\n", i+1, name))
		}
	}
	junit.WriteString(`</testsuite></testsuites>`)
	gojson.WriteString(`{"Action":"fail","Package":"p"}` + "\n")
	tap.WriteString(fmt.Sprintf("1..%d\n", passing+failing))

	for name, parse := range map[string]struct {
		p  parser
		in string
	}{"junit": {ParseJUnitXML, junit.String()}, "go": {ParseGoTestJSON, gojson.String()}, "tap": {ParseTAP, tap.String()}} {
		got, err := parse.p(strings.NewReader(parse.in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Passed != passing || got.Failed != failing || got.Omitted != passing-MaxCases/2 || !got.Complete {
			t.Errorf("%s: passed %d failed %d omitted %d complete %v", name, got.Passed, got.Failed, got.Omitted, got.Complete)
		}
		if len(got.Failures()) != failing || len(got.Cases) != MaxCases/2+failing {
			t.Errorf("%s: %d failures kept of %d cases", name, len(got.Failures()), len(got.Cases))
		}
		// Omitted cases are still known to have run.
		if len(got.Ran) != passing+failing || !got.Ran["test_2999"].Has(Passed) || got.RanCut {
			t.Errorf("%s: Ran has %d names (cut %v), test_2999 %v", name, len(got.Ran), got.RanCut, got.Ran["test_2999"])
		}
		checkInvariants(t, got)
	}
}

// TestHugeOutput: a test printing megabytes, in one line or many, costs a
// few kilobytes of report.
func TestHugeOutput(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	var many strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&many, "line %d\\n", i)
	}
	goIn := `{"Action":"run","Package":"p","Test":"T"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"T","Output":"` + many.String() + `"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"T","Output":"` + long[:MaxJSONLineBytes/2] + `\n"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"T","Output":"` + long + `\n"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"T","Output":"    t_test.go:9: want ok\n"}` + "\n" +
		`{"Action":"fail","Package":"p","Test":"T"}` + "\n" +
		`{"Action":"fail","Package":"p"}` + "\n"
	got, err := ParseGoTestJSON(strings.NewReader(goIn))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cases) != 1 || got.Cases[0].Message != "want ok" || got.Cases[0].Location != "t_test.go:9" {
		t.Errorf("go: %+v", got.Cases)
	}
	checkInvariants(t, got)

	tapIn := "not ok 1 - " + long + "\n  ---\n  error: |-\n" + strings.Repeat("    "+long[:1000]+"\n", 2000) + "  ...\n1..1\n"
	got, err = ParseTAP(strings.NewReader(tapIn))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cases) != 1 || got.Cases[0].Status != Failed || !got.Complete {
		t.Errorf("tap: %d cases, complete %v", len(got.Cases), got.Complete)
	}
	checkInvariants(t, got)

	xmlIn := `<testsuite name="pytest"><testcase name="a"><failure message="` + long + `">` + long + "\nE   " + long + `</failure></testcase></testsuite>`
	got, err = ParseJUnitXML(strings.NewReader(xmlIn))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cases) != 1 || got.Cases[0].Status != Failed {
		t.Errorf("junit: %+v", got)
	}
	checkInvariants(t, got)
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"a\x00b\x07c\rd", "abc d"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"\x1b]0;title\x07after", "after"},
		{"tab\tkept", "tab\tkept"},
		{"line\u2028sep\u0085", "linesep"},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in, false); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := sanitize("a\r\nb", true); got != "a\nb" {
		t.Errorf("multiline sanitize = %q", got)
	}
}
