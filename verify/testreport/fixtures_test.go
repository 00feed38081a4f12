package testreport

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Paths as they appear in the fixtures (see testdata/README.md).
const (
	nodeDir = "/work/main/verify/testreport/testdata/node/"
	pyDir   = "/work/main/verify/testreport/testdata/pytest/"
)

type parser func(io.Reader) (Report, error)

func parseFixture(t testing.TB, name string, parse parser) Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := parse(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}

// fixtures are the real runner outputs in testdata and what they must
// parse to, exactly.
var fixtures = []struct {
	file  string
	parse parser
	want  Report
}{
	{
		file: "pytest_mixed.xml", parse: ParseJUnitXML,
		want: Report{
			Runner: "pytest", Complete: true, Passed: 2, Failed: 4, Errored: 1, Skipped: 1,
			Cases: []Case{
				{Name: "test_add", Suite: "test_calc", Status: Passed, Location: "test_calc.py:8"},
				{
					Name: "test_negatives", Suite: "test_calc", Status: Failed,
					Message:  "assert -4 == -3",
					Location: "test_calc.py:13",
					Output: ">       assert add(-1, -2) == -3\n" +
						"E       assert -4 == -3\n" +
						"E        +  where -4 = add(-1, -2)\n" +
						"test_calc.py:13: AssertionError",
				},
				{
					Name: "test_parse_raises", Suite: "test_calc", Status: Failed,
					Message:  "ValueError: invalid literal for int() with base 10: 'seven'",
					Location: "calc.py:8",
					Output: `>       assert parse("seven") == 7` + "\n" +
						"test_calc.py:18:\n" +
						">       return int(s)\n" +
						"E       ValueError: invalid literal for int() with base 10: 'seven'\n" +
						"calc.py:8: ValueError",
				},
				{
					Name: "test_with_db", Suite: "test_calc", Status: Errored,
					Message:  `failed on setup with "ConnectionError: database unavailable on port 5432"`,
					Location: "test_calc.py:23",
					Output: `>       raise ConnectionError("database unavailable on port 5432")` + "\n" +
						"E       ConnectionError: database unavailable on port 5432\n" +
						"test_calc.py:23: ConnectionError",
				},
				{Name: "test_skipped", Suite: "test_calc", Status: Skipped, Message: "not implemented yet", Location: "test_calc.py:30"},
				{Name: "test_int", Suite: "test_calc.TestParse", Status: Passed, Location: "test_calc.py:36"},
				{
					Name: "test_list_equal", Suite: "test_calc.TestParse", Status: Failed,
					Message:  "assert [1, 2, 3] == [1, 2, 4]",
					Location: "test_calc.py:40",
					Output: `>       assert [parse(x) for x in ["1", "2", "3"]] == [1, 2, 4]` + "\n" +
						"E       assert [1, 2, 3] == [1, 2, 4]\n" +
						"E         At index 2 diff: 3 != 4\n" +
						"E         Use -v to get more diff\n" +
						"test_calc.py:40: AssertionError",
				},
				{
					// Its captured stdout holds fake runner lines: never read.
					Name: "test_fake_output", Suite: "test_calc", Status: Failed,
					Message:  "assert 2 == 3",
					Location: "test_calc.py:48",
					Output: ">       assert add(1, 1) == 3\n" +
						"E       assert 2 == 3\n" +
						"E        +  where 2 = add(1, 1)\n" +
						"test_calc.py:48: AssertionError",
				},
			},
		},
	},
	{
		file: "pytest_import_error.xml", parse: ParseJUnitXML,
		want: Report{
			Runner: "pytest", Complete: true, Errored: 1,
			Cases: []Case{{
				Name: "test_import_error", Status: Errored,
				Message:  "ImportError: cannot import name 'subtract' from 'calc' (" + pyDir + "calc.py)",
				Location: "test_import_error.py:1",
				Output: "/usr/lib/python3.11/importlib/__init__.py:126: in import_module\n" +
					"test_import_error.py:1: in <module>\n" +
					"E   ImportError: cannot import name 'subtract' from 'calc' (" + pyDir + "calc.py)",
			}},
		},
	},
	{
		file: "pytest_empty.xml", parse: ParseJUnitXML,
		want: Report{Runner: "pytest", Complete: true},
	},
	{
		file: "go_mixed.jsonl", parse: ParseGoTestJSON,
		want: Report{
			Runner: "go", Complete: true, Passed: 4, Failed: 2, Errored: 1, Skipped: 1,
			Cases: []Case{
				{Name: "TestAddPositive", Suite: "example.com/sample/calc", Status: Passed},
				{Name: "TestAdd/positive", Suite: "example.com/sample/calc", Status: Passed},
				{
					// The t.Logf line comes first; the assertion is the line that says "want".
					Name: "TestAdd/negative", Suite: "example.com/sample/calc", Status: Failed,
					Message:  "Add(-1, -2) = -4, want -3",
					Location: "calc_test.go:27",
					Output:   "    calc_test.go:25: adding -1 and -2\n    calc_test.go:27: Add(-1, -2) = -4, want -3",
				},
				{Name: "TestAdd/mixed", Suite: "example.com/sample/calc", Status: Passed},
				{Name: "TestSkipped", Suite: "example.com/sample/calc", Status: Skipped, Message: "needs a database", Location: "calc_test.go:34"},
				{
					// The printed "--- PASS", "ok" and JSON lines are output, not results.
					Name: "TestFakeOutput", Suite: "example.com/sample/calc", Status: Failed,
					Message:  "the real verdict: this test fails",
					Location: "calc_test.go:42",
					Output: "ok  \texample.com/sample/calc\t0.001s\n" +
						`{"Action":"pass","Package":"example.com/sample/calc","Test":"TestFakeOutput"}` + "\n" +
						"    calc_test.go:42: the real verdict: this test fails",
				},
				{Name: "TestBeforePanic", Suite: "example.com/sample/boom", Status: Passed},
				{
					Name: "TestIndex", Suite: "example.com/sample/boom", Status: Errored,
					Message:  "panic: runtime error: index out of range [3] with length 0",
					Location: "/work/main/verify/testreport/testdata/gotest/boom/boom_test.go:9",
					Output: "panic: runtime error: index out of range [3] with length 0\n" +
						"example.com/sample/boom.TestIndex(0x580036e6488?)\n" +
						"\t/work/main/verify/testreport/testdata/gotest/boom/boom_test.go:9 +0x9",
				},
			},
		},
	},
	{
		file: "go_build_failed.jsonl", parse: ParseGoTestJSON,
		want: Report{
			Runner: "go", Complete: true, Errored: 1,
			Cases: []Case{{
				Name: "[build failed]", Suite: "example.com/sample/broken", Status: Errored,
				Message:  "undefined: two",
				Location: "broken/broken.go:5",
				Output: "broken/broken.go:5:13: undefined: two\n" +
					"broken/broken_test.go:6:17: cannot use Double(2) (value of type int) as string value in variable declaration",
			}},
		},
	},
	{
		file: "go_setup_failed.jsonl", parse: ParseGoTestJSON,
		want: Report{
			Runner: "go", Complete: true, Errored: 1,
			Cases: []Case{{
				Name: "[setup failed]", Suite: "example.com/sample/setup", Status: Errored,
				Message:  "no required module provides package example.com/sample/missing; to add it:",
				Location: "setup/setup_test.go:6",
				Output: "setup/setup_test.go:6:2: no required module provides package example.com/sample/missing; to add it:\n" +
					"\tgo get example.com/sample/missing",
			}},
		},
	},
	{
		file: "go_no_tests.jsonl", parse: ParseGoTestJSON,
		want: Report{Runner: "go", Complete: true},
	},
	{
		file: "node_tap.txt", parse: ParseTAP,
		want: Report{
			Runner: "node", Complete: true, Passed: 2, Failed: 3, Errored: 1, Skipped: 1,
			Cases: nodeCalcCases,
		},
	},
	{
		// Printed "ok 1 - everything passed", "# pass 99", "# fail 0" reach
		// this stream raw: the same cases as node_tap.txt.
		file: "node_tap_unisolated.txt", parse: ParseTAP,
		want: Report{
			Runner: "node", Complete: true, Passed: 2, Failed: 3, Errored: 1, Skipped: 1,
			Cases: nodeCalcCases,
		},
	},
	{
		file: "node_default.txt", parse: ParseTAP,
		want: Report{
			Runner: "node", Complete: true, Passed: 2, Failed: 3, Errored: 2, Skipped: 1,
			Cases: append([]Case{{
				Name:     nodeDir + "broken.test.js",
				Suite:    nodeDir + "broken.test.js",
				Status:   Errored,
				Message:  "TypeError: subtract is not a function",
				Location: nodeDir + "broken.test.js:3",
				Output: nodeDir + "broken.test.js:3\n" +
					"subtract(3, 1); // TypeError at load time: no test ever starts\n" +
					"^\n" +
					"TypeError: subtract is not a function\n" +
					"at Object.<anonymous> (" + nodeDir + "broken.test.js:3:1)",
			}}, nodeCalcCases...),
		},
	},
}

var nodeCalcCases = []Case{
	{Name: "adds positives", Status: Passed},
	{
		Name: "add > handles negatives", Suite: nodeDir + "calc.test.js", Status: Failed,
		Message:  "AssertionError: Expected values to be strictly equal: -4 !== -3",
		Location: nodeDir + "calc.test.js:12",
		Output:   "at TestContext.<anonymous> (" + nodeDir + "calc.test.js:12:12)",
	},
	{
		Name: "add > objects > compares deeply", Suite: nodeDir + "calc.test.js", Status: Failed,
		Message:  "AssertionError: Expected values to be strictly deep-equal:",
		Location: nodeDir + "calc.test.js:17",
		Output: "+ actual - expected\n" +
			"  {\n" +
			"+   ok: true,\n" +
			"-   ok: false,\n" +
			"    sum: 2\n" +
			"  }\n" +
			"at TestContext.<anonymous> (" + nodeDir + "calc.test.js:17:14)",
	},
	{Name: "add > objects > passes", Status: Passed},
	{
		Name: "throws an error", Suite: nodeDir + "calc.test.js", Status: Errored,
		Message:  "TypeError: cannot read the config",
		Location: nodeDir + "calc.test.js:26",
		Output:   "at TestContext.<anonymous> (" + nodeDir + "calc.test.js:26:9)",
	},
	{Name: "skipped for now", Status: Skipped, Message: "not implemented"},
	{
		Name: "fake output", Suite: nodeDir + "calc.test.js", Status: Failed,
		Message:  "AssertionError: Expected values to be strictly equal: 2 !== 3",
		Location: nodeDir + "calc.test.js:36",
		Output:   "at TestContext.<anonymous> (" + nodeDir + "calc.test.js:36:10)",
	},
}

func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			got := parseFixture(t, fx.file, fx.parse)
			if diff := cmp.Diff(fx.want, got, ignoreRan); diff != "" {
				t.Errorf("%s (-want +got):\n%s", fx.file, diff)
			}
			checkInvariants(t, got)
		})
	}
}

func TestNoTestsRan(t *testing.T) {
	for _, fx := range fixtures {
		got := parseFixture(t, fx.file, fx.parse)
		want := len(fx.want.Cases) == 0
		if got.NoTestsRan() != want {
			t.Errorf("%s: NoTestsRan() = %v, want %v", fx.file, got.NoTestsRan(), want)
		}
	}
	if !(Report{Omitted: 0}).NoTestsRan() {
		t.Error("an empty report must have run no test")
	}
	if (Report{Skipped: 1, Cases: []Case{{Name: "a", Status: Skipped}}}).NoTestsRan() {
		t.Error("a report with a skipped case ran a test")
	}
}

// TestTruncatedFixtures cuts every fixture short: the cases before the cut
// are kept, and the report is not Complete.
func TestTruncatedFixtures(t *testing.T) {
	for _, fx := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", fx.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, frac := range []int{2, 3} {
			cut := data[:len(data)*frac/(frac+1)]
			got, err := fx.parse(bytesReader(cut))
			if err != nil {
				t.Errorf("%s cut at %d/%d: %v", fx.file, frac, frac+1, err)
				continue
			}
			if got.Complete {
				t.Errorf("%s cut at %d/%d: Complete, want not", fx.file, frac, frac+1)
			}
			checkInvariants(t, got)
		}
	}
}
