package taskfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratchetloop/ratchet/taskfile"
)

const strengthTask = "mode: generate\ngoal: g\nartifact: f.py\nchecks:\n  - exec: {command: [python3, t.py], tests: [t.py]}\n"

func TestParseStrengthFields(t *testing.T) {
	dir := t.TempDir()
	writeTask(t, dir, "t.py", "import f\n")
	writeTask(t, dir, "ref.py", "x = 1\n")
	f, err := taskfile.Load(writeTask(t, dir, "task.yaml", strengthTask+"reference: ref.py\nmin_strength: 0.9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Reference != filepath.Join(dir, "ref.py") || f.MinStrength != 0.9 {
		t.Errorf("reference %q, min_strength %v", f.Reference, f.MinStrength)
	}
	for _, tc := range []struct{ name, extra, want string }{
		{"min_strength without reference", "min_strength: 0.9\n", "6: min_strength needs reference:"},
		{"min_strength above 1", "reference: ref.py\nmin_strength: 90\n", "7: min_strength is a mutation score in (0, 1]"},
		{"min_strength zero", "reference: ref.py\nmin_strength: 0\n", "7: min_strength is a mutation score in (0, 1]"},
		{"missing reference", "reference: nope.py\n", `6: reference: "nope.py" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := taskfile.Load(writeTask(t, dir, "bad.yaml", strengthTask+tc.extra))
			ps := problems(t, err)
			if len(ps) != 1 || !strings.Contains(ps[0].Error(), tc.want) {
				t.Errorf("problems %v, want one with %q", ps, tc.want)
			}
		})
	}
	_, err = taskfile.Load(writeTask(t, dir, "agent.yaml", "goal: g\nchecks: [{equals: a}]\nreference: ref.py\n"))
	if ps := problems(t, err); len(ps) != 1 || !strings.Contains(ps[0].Msg, "reference: is for generate mode") {
		t.Errorf("agent mode with a reference: %v", ps)
	}
}

// TestChecksDigest: the digest changes with the checks and with the tests'
// contents, and with nothing else.
func TestChecksDigest(t *testing.T) {
	dir := t.TempDir()
	writeTask(t, dir, "t.py", "import f\n")
	digest := func(task string) string {
		t.Helper()
		f, err := taskfile.Load(writeTask(t, dir, "task.yaml", task))
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.ChecksDigest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest(strengthTask)
	if d := digest(strengthTask + "budget: {steps: 3}\n"); d != base {
		t.Error("the budget changed the digest")
	}
	if d := digest(strings.Replace(strengthTask, "[python3, t.py]", "[python3, -B, t.py]", 1)); d == base {
		t.Error("the command did not change the digest")
	}
	if err := os.WriteFile(filepath.Join(dir, "t.py"), []byte("import f\nassert f.x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := digest(strengthTask); d == base {
		t.Error("the tests' contents did not change the digest")
	}
}
