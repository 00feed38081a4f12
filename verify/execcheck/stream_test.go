package execcheck

import (
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/sandbox"
)

// TestOutcomeStream: what the stream says against what the report says.
func TestOutcomeStream(t *testing.T) {
	const sentinel = "test_ratchet_sentinel_x"
	report := func(cases string) []byte {
		return []byte(`<testsuites><testsuite name="pytest">` + cases + `</testsuite></testsuites>`)
	}
	failing := func(name string) string {
		return `<testcase classname="t" name="` + name + `"><failure message="no">no</failure></testcase>`
	}
	passing := func(name string) string { return `<testcase classname="t" name="` + name + `"/>` }
	line := func(id, when, outcome string) string {
		return `{"id": "` + id + `", "when": "` + when + `", "outcome": "` + outcome + `"}` + "\n"
	}
	sent := line("t.py::"+sentinel, "call", "failed")
	for _, tc := range []struct {
		name, stream string
		report       []byte
		want         string
	}{
		{"honest", line("t.py::test_a", "call", "failed") + line("t.py::test_b[1]", "call", "passed") + sent,
			report(failing("test_a") + passing("test_b[1]") + failing(sentinel)), ""},
		{"a parametrized failure", line("t.py::test_b[2]", "call", "failed") + sent,
			report(failing("test_b[2]") + failing(sentinel)), ""},
		{"a failure in setup, reported as an error", line("t.py::C::test_c", "setup", "failed") + sent,
			report(`<testcase classname="t.C" name="test_c"><error message="e">e</error></testcase>` + failing(sentinel)), ""},
		{"a collection error is the missing tests' business", line("t.py", "collect", "failed") + sent, report(failing(sentinel)), ""},
		{"a failure the report turned into a pass", line("t.py::test_a", "call", "failed") + sent,
			report(passing("test_a") + failing(sentinel)), "test_a failed while the tests ran"},
		{"the sentinel never came through", line("t.py::test_a", "call", "passed"),
			report(passing("test_a") + failing(sentinel)), "never came through the stream"},
		{"a line the launcher did not write", "all tests passed\n" + sent, report(failing(sentinel)), "did not write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newOutcomeStream()
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			s.w.WriteString(tc.stream)
			got := s.contradicts(sandbox.Result{Report: tc.report}, sentinel)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
