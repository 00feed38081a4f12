package testreport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, pattern string, extra ...string) {
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed fixtures for %s: %v", pattern, err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// Pieces of real output, cut at line ends: small seeds keep the
		// minimisation of new inputs short, so the fuzzer spends its time
		// fuzzing.
		for len(data) > 0 {
			n := min(len(data), 1500)
			if i := bytes.LastIndexByte(data[:n], '\n'); i > 0 && n < len(data) {
				n = i + 1
			}
			f.Add(data[:n])
			data = data[n:]
		}
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// fuzzParse checks what must hold for any input: no panic, totals that
// match the cases, capped and clean strings, Feedback within its budget and
// valid UTF-8 (checkInvariants).
func fuzzParse(f *testing.F, parse parser) {
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := parse(bytes.NewReader(data))
		if err != nil && len(rep.Cases) > 0 {
			t.Errorf("an error (%v) with %d cases", err, len(rep.Cases))
		}
		if rep.Runner == "" {
			t.Error("no Runner")
		}
		checkInvariants(t, rep)
	})
}

func FuzzParseJUnitXML(f *testing.F) {
	addSeeds(f, "*.xml",
		`<testsuite name="pytest"><testcase name="a"><failure>E   x`,
		`<testsuites><testsuite><testcase><testcase><error message="m"/></testcase></testcase></testsuite></testsuites>`,
		`<testsuite name="pytest"><testcase name="a" file="f.py" line="-1"><skipped message="s"/></testcase></testsuite>`)
	fuzzParse(f, ParseJUnitXML)
}

func FuzzParseGoTestJSON(f *testing.F) {
	addSeeds(f, "*.jsonl",
		`{"Action":"run","Package":"p","Test":"A/B"}`+"\n"+`{"Action":"output","Package":"p","Test":"A/B","Output":"panic: x\n"}`,
		`{"Action":"fail","Package":"p","FailedBuild":"q"}`,
		`{"Action":"build-output","ImportPath":"q","Output":"q.go:1:2: bad\n"}`+"\n"+`{"Action":"fail","Package":"p","FailedBuild":"q"}`)
	fuzzParse(f, ParseGoTestJSON)
}

func FuzzParseTAP(f *testing.F) {
	addSeeds(f, "node_*.txt",
		"1..2\nok 1\n    not ok 1 - x\n  ---\n  error: |-\n    a\n  ...\nnot ok 2 # TODO\nBail out!\n",
		"# Subtest: a\n    # Subtest: b\n    not ok 1 - b\n      ---\n      stack: |-\n        f (/x.js:1:2)\n      ...\nnot ok 1 - a\n1..1\n# fail 1\n")
	fuzzParse(f, ParseTAP)
}
