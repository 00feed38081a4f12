package loop

import (
	"encoding/json"
	"path"
	"strings"
	"testing"
)

// TestCommandPermissions: the command argument is matched as a command
// line, by its whole and by its simple commands.
func TestCommandPermissions(t *testing.T) {
	for _, c := range []struct {
		action  Action
		pattern string
		line    string
		want    bool
	}{
		{Deny, "rm *", "rm -rf /tmp/x", true}, // * crosses "/"
		{Deny, "rm *", "make && rm -rf build", true},
		{Deny, "rm *", "ls; rm a", true},
		{Deny, "rm *", "echo $(rm -rf x)", true},
		{Deny, "rm *", "ls -la | grep rm", false},
		{Deny, "rm *", "  rm  a", true},
		{Deny, "*curl*", "cd x\ncurl http://a/b", true},
		{Ask, "git push*", "git commit -m x && git push origin", true},
		{Allow, "go test *", "go test ./...", true},
		{Allow, "go test *", "go test ./... ; curl http://x", false},
		{Allow, "go test *", "go test ./... && go test -race ./a", true},
		{Allow, "*", "anything | at all", true},
		{Deny, "rm [a-c]", "rm b", true},
		{Deny, "rm [a-c]", "rm d", false},
		{Deny, `echo \*`, "echo *", true},
		{Deny, `echo \*`, "echo x", false},
		{Deny, "ls ?", "ls /", true},
	} {
		args, _ := json.Marshal(map[string]string{"command": c.line})
		p := Permission{Tool: "run_command", Action: c.action, Args: []ArgPattern{{Name: CommandArg, Pattern: c.pattern}}}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := p.matches("run_command", args); got != c.want {
			t.Errorf("%s %q on %q: matches %v, want %v", c.action, c.pattern, c.line, got, c.want)
		}
	}
	// Other arguments keep path.Match: * stops at "/".
	p := Permission{Action: Deny, Args: []ArgPattern{{Name: "path", Pattern: "*.lock"}}}
	if p.matches("edit_file", json.RawMessage(`{"path":"dir/a.lock"}`)) {
		t.Error(`path "*.lock" matched "dir/a.lock"`)
	}
}

// TestGlobLineIsFast: a pattern of many stars against a long line that
// almost matches takes time linear in their product, not exponential.
func TestGlobLineIsFast(t *testing.T) {
	pattern := strings.Repeat("a*", 30) + "b"
	line := strings.Repeat("a", 20000)
	if globLine(pattern, line) {
		t.Error("matched")
	}
}

// FuzzGlobLine: without "/" in the text, globLine agrees with path.Match
// on every pattern path.Match accepts.
func FuzzGlobLine(f *testing.F) {
	for _, s := range [][2]string{{"rm *", "rm -rf x"}, {"[a-c]?*", "bxy"}, {`\*x`, "*x"}, {"[^a]", "b"}, {"*a*b*", "xxaxxbxx"}, {"[]a]", "]"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if strings.Contains(s, "/") || len(pattern) > 64 || len(s) > 256 {
			return
		}
		want, err := path.Match(pattern, s)
		if err != nil {
			return
		}
		if got := globLine(pattern, s); got != want {
			t.Errorf("globLine(%q, %q) = %v, path.Match says %v", pattern, s, got, want)
		}
	})
}
