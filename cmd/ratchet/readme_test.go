package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every example path a README command names exists, so a user who copies
// a line gets a run, not "no such file".
func TestReadmeCommandsNameRealFiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	file := regexp.MustCompile(`^[\w./-]+\.(yaml|py|go|json|jsonl)$`)
	n := 0
	for i, line := range strings.Split(string(readme), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		args := strings.Fields(cmd)
		if !slices.Contains(args, "./cmd/ratchet") {
			continue
		}
		for j, arg := range args {
			// --record names a file the command writes.
			if !file.MatchString(arg) || j > 0 && args[j-1] == "--record" {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join("../..", arg)); err != nil {
				t.Errorf("README.md:%d names %s, which does not exist: %s", i+1, arg, strings.TrimSpace(line))
			}
		}
	}
	if n == 0 {
		t.Fatal("found no example path in the README's commands: the pattern no longer matches them")
	}
}
