package eval

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratchetloop/ratchet/observe"
	"github.com/ratchetloop/ratchet/taskfile"
)

// FuzzParseSuite: any input gives a suite or problems with a file, never a
// panic; a parsed suite's cases have unique, valid names.
func FuzzParseSuite(f *testing.F) {
	for _, seed := range []string{
		simSuite,
		"cases:\n  - task:\n      goal: g\n      checks: [{equals: x}]\n",
		"cases:\n  - task: {goal: g, checks: [{equals: x}]}\n    expect: {status: done}\n",
		"label: a\nsim:\n  - cases: 2\n    p: 0.5\n",
		"cases: [1, 2]\nsim: {}\n",
		"- a\n- b\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite(data, filepath.Join(dir, "suite.yaml"))
		if err != nil {
			var ps taskfile.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					if p.File == "" || p.Line < 0 {
						t.Fatalf("problem without a place: %+v", p)
					}
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, c := range s.Cases {
			if seen[c.Name] || checkName(c.Name, true) != nil && c.TaskPath == "" {
				t.Fatalf("bad or repeated case name %q", c.Name)
			}
			seen[c.Name] = true
			if c.Repeats < 1 || (c.Task == nil) == (c.Sim == nil) {
				t.Fatalf("case %+v", c)
			}
		}
	})
}

// FuzzDiagnose: any log that reads gives a diagnosis or an error, never a
// panic, and a category only from Categories.
func FuzzDiagnose(f *testing.F) {
	for _, l := range []string{
		`{"seq":1,"run":"r","kind":"command","command":{"type":"finish","id":"f","result":{"status":"exhausted:steps"}}}`,
		`{"seq":1,"run":"r","kind":"event","event":{"type":"tool_result","tool":{"outcome":"unknown_tool"}}}` + "\n" +
			`{"seq":2,"run":"r","kind":"note","note":{"type":"observation","problem":"invalid_json"}}` + "\n" +
			`{"seq":3,"run":"r","kind":"command","command":{"type":"finish","result":{"status":"stalled:repeating","best":{"accepted":true,"holdout":[{"ok":false}]}}}}`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := observe.ReadJSONL(bytes.NewReader(data))
		if err != nil {
			return
		}
		d, err := Diagnose(recs)
		if err != nil || d.Category == "" {
			return
		}
		for _, c := range Categories {
			if c == d.Category {
				return
			}
		}
		t.Fatalf("category %q is not one of Categories", d.Category)
	})
}

// FuzzReadRecords: a damaged results file reads without error or panic.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"case":"a","repeat":0,"result":{"status":"done"}}` + "\n" + `{"case":"b","rep`))
	f.Add([]byte("\n\n{}\nnull\n[]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ResultsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadRecords(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Case == "" {
				t.Fatal("a record without a case")
			}
		}
		Compute(recs) // must not panic on whatever parsed
	})
}
