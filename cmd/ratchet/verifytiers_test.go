package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyFollowsTiers: by default verify stops after a failing tier, as
// a run does (no expensive check after a failed cheap one, no holdout after
// a failed gate); --all runs every check.
func TestVerifyFollowsTiers(t *testing.T) {
	dir := write(t, map[string]string{
		"task.yaml": "mode: generate\ngoal: g\nmodel: scripted:none.yaml\nchecks:\n  - regex: '^[0-9]+$'\n  - equals: '42'\n    tier: expensive\n  - contains: ['4']\n    tier: holdout\n",
		"word.txt":  "forty-two",
		"wrong.txt": "41",
		"right.txt": "42",
	})
	task := filepath.Join(dir, "task.yaml")
	c := run(t, nil, "verify", task, filepath.Join(dir, "word.txt"), filepath.Join(dir, "wrong.txt"), filepath.Join(dir, "right.txt"))
	c.wantCode(t, exitNotDone)
	for _, tc := range []struct{ file, want, not string }{
		{"word.txt", "not run: the expensive and holdout checks", "equals"},
		{"wrong.txt", "not run: the holdout checks", "contains"},
		{"right.txt", "contains", "not run"},
	} {
		i := strings.Index(c.stdout, filepath.Join(dir, tc.file)+":")
		block := c.stdout[i:]
		if j := strings.Index(block[1:], dir); j >= 0 {
			block = block[:j+1]
		}
		if i < 0 || !strings.Contains(block, tc.want) || strings.Contains(block, tc.not) {
			t.Errorf("%s: want %q and no %q in:\n%s", tc.file, tc.want, tc.not, block)
		}
	}
	c = run(t, nil, "verify", "--all", task, filepath.Join(dir, "word.txt"))
	if !strings.Contains(c.stdout, "equals") || !strings.Contains(c.stdout, "contains") || strings.Contains(c.stdout, "not run") {
		t.Errorf("--all should run every check:\n%v", c)
	}
}
