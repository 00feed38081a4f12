package loop

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
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
	// missing argument matches nothing.
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
		if json.Unmarshal(raw, &s) == nil {
			val = s
		}
		if ok, _ := path.Match(a.Pattern, val); !ok {
			return false
		}
	}
	return true
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
