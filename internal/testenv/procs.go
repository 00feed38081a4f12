package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessesOf lists the live (not zombie) processes of uid on the host, as
// "pid(name)", for tests that check a sandbox left nothing behind. When the
// tests do not run as root the sandbox runs as the test's own uid, so there
// is nothing to tell apart: it returns nil.
func ProcessesOf(uid int) []string {
	if os.Geteuid() != 0 {
		return nil
	}
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // it ended meanwhile
		}
		var id, state, name string
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "Uid:":
				id = f[1]
			case "State:":
				state = f[1]
			case "Name:":
				name = f[1]
			}
		}
		if id == strconv.Itoa(uid) && state != "Z" && state != "X" {
			out = append(out, filepath.Base(filepath.Dir(p))+"("+name+")")
		}
	}
	return out
}
