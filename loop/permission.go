package loop

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Action is what a Permission does to a matching tool call.
type Action string

const (
	Allow Action = "allow" // run it
	Ask   Action = "ask"   // run it only once a person approves
	Deny  Action = "deny"  // never run it; the model is told
)

// Permission is one rule for tool calls. Rules are tried in order and the
// first that matches decides; a call no rule matches is allowed.
type Permission struct {
	// Tool is a glob (path.Match syntax) on the tool's name; "" matches all.
	Tool string `json:"tool,omitempty"`
	// Args are globs that named arguments must match, all of them. A string
	// argument is matched on its value, any other on its JSON text; a
	// missing argument matches nothing. The command argument is matched as
	// a command line (see [CommandArg]).
	Args   []ArgPattern `json:"args,omitempty"`
	Action Action       `json:"action"`
}

// ArgPattern matches one named argument.
type ArgPattern struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
}

// Validate reports what is wrong with the rule, if anything.
func (p Permission) Validate() error {
	switch p.Action {
	case Allow, Ask, Deny:
	default:
		return fmt.Errorf("action %q is not allow, ask or deny", p.Action)
	}
	if _, err := path.Match(p.Tool, ""); err != nil {
		return fmt.Errorf("tool pattern %q: %w", p.Tool, err)
	}
	for _, a := range p.Args {
		if a.Name == "" {
			return fmt.Errorf("an argument pattern has no name")
		}
		if _, err := path.Match(a.Pattern, ""); err != nil {
			return fmt.Errorf("argument %s pattern %q: %w", a.Name, a.Pattern, err)
		}
	}
	return nil
}

func (p Permission) String() string {
	var b strings.Builder
	b.WriteString(string(p.Action))
	b.WriteString(" ")
	if p.Tool == "" {
		b.WriteString("*")
	} else {
		b.WriteString(p.Tool)
	}
	for _, a := range p.Args {
		fmt.Fprintf(&b, " %s=%s", a.Name, a.Pattern)
	}
	return b.String()
}

// matches reports whether the rule applies to a call of tool with args
// (valid JSON).
func (p Permission) matches(tool string, args json.RawMessage) bool {
	if ok, _ := path.Match(p.Tool, tool); p.Tool != "" && !ok {
		return false
	}
	if len(p.Args) == 0 {
		return true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return false
	}
	for _, a := range p.Args {
		raw, ok := obj[a.Name]
		if !ok {
			return false
		}
		val := string(raw)
		var s string
		isString := json.Unmarshal(raw, &s) == nil
		if isString {
			val = s
		}
		if isString && a.Name == CommandArg {
			if !matchCommand(a.Pattern, val, p.Action) {
				return false
			}
			continue
		}
		if ok, _ := path.Match(a.Pattern, val); !ok {
			return false
		}
	}
	return true
}

// CommandArg is the argument matched as a shell command line (run_command's
// command): its glob's * and ? also match "/" and spaces.
const CommandArg = "command"

// matchCommand matches a command-line glob against line. A deny or ask
// rule matches when the glob matches the whole line or any one of its
// simple commands (the parts between ;, &, |, parentheses, backquotes and
// newlines), so that "rm *" also catches "make && rm -rf build"; an allow
// rule matches only when the glob matches every one of them, so that
// "go test *" does not allow "go test ./... ; curl …". The split ignores
// quoting: it can only see more commands than the shell does, which makes
// deny and ask rules match more often and allow rules less. Permission
// globs are a convenience, not a boundary: the sandbox is.
func matchCommand(pattern, line string, action Action) bool {
	parts := strings.FieldsFunc(line, func(r rune) bool {
		return strings.ContainsRune(";&|()`\n", r)
	})
	if action != Allow && globLine(pattern, strings.TrimSpace(line)) {
		return true
	}
	all := len(parts) > 0
	for _, part := range parts {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "$"))
		if part == "" {
			continue
		}
		m := globLine(pattern, part)
		if m && action != Allow {
			return true
		}
		all = all && m
	}
	return action == Allow && all
}

// globLine is path.Match where * and ? also match "/": * any run of
// characters, ? one character, [...] a class, \x the character x. It
// backtracks only to the last *, so it takes time proportional to the
// product of the lengths at worst, whatever the pattern.
func globLine(pattern, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) || px < len(pattern) {
		if px < len(pattern) {
			if pattern[px] == '*' {
				starP, starS = px, sx
				px++
				continue
			}
			if sx < len(s) {
				if pw, sw, ok := matchOne(pattern[px:], s[sx:]); ok {
					px += pw
					sx += sw
					continue
				}
			}
		}
		if starP < 0 || starS >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		px, sx = starP+1, starS
	}
	return true
}

// matchOne matches the first element of pattern (not a *) against the
// first character of s (not empty) and returns the widths of both.
func matchOne(pattern, s string) (pw, sw int, ok bool) {
	r, sw := utf8.DecodeRuneInString(s)
	switch pattern[0] {
	case '?':
		return 1, sw, true
	case '\\':
		if len(pattern) < 2 {
			return 1, sw, false
		}
		_, n := utf8.DecodeRuneInString(pattern[1:])
		return 1 + n, n, strings.HasPrefix(s, pattern[1:1+n])
	case '[':
		end := classEnd(pattern)
		if end < 0 {
			return len(pattern), sw, false
		}
		ok, _ := path.Match(pattern[:end], string(r))
		return end, sw, ok
	}
	_, n := utf8.DecodeRuneInString(pattern)
	return n, n, strings.HasPrefix(s, pattern[:n])
}

// classEnd returns the length of the class at the start of pattern, or -1
// when it is not closed (Validate refuses such a pattern).
func classEnd(pattern string) int {
	i := 1
	if i < len(pattern) && pattern[i] == '^' {
		i++
	}
	for first := true; i < len(pattern); first = false {
		switch pattern[i] {
		case '\\':
			i += 2
			continue
		case ']':
			if !first {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// permissionFor returns the rule of rules deciding a call of tool with
// args, nil when none does (allow).
func permissionFor(rules []Permission, tool string, args json.RawMessage) *Permission {
	for i := range rules {
		if p := &rules[i]; p.matches(tool, args) {
			return p
		}
	}
	return nil
}
