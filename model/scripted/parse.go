package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits that keep aliases (which YAML expands where they are used) and deep
// nesting from blowing up a small file.
const (
	maxNodes     = 1 << 20  // values visited in the whole script
	maxArgsBytes = 16 << 20 // args JSON and raw_args in the whole script
	maxArgsDepth = 64
)

var (
	scriptKeys = []string{"name", "turns"}
	turnKeys   = []string{"thinking", "text", "tools", "finish", "expect", "error", "delay", "usage"}
	toolKeys   = []string{"name", "args", "raw_args"}
	finishKeys = []string{"answer", "confidence"}
	usageKeys  = []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
)

// Parse parses a YAML script; filename is used in messages and becomes the
// Script's File. Parse reports every problem it finds at once, as a
// *ScriptError whose lines read file:line: message. The Script it returns is
// prepared (see Prepare).
func Parse(data []byte, filename string) (Script, error) {
	p := &parser{file: filename}
	s := Script{File: filename}
	if root := p.document(data); root != nil {
		p.script(root, &s)
	}
	if len(p.probs) > 0 {
		slices.SortStableFunc(p.probs, func(a, b Problem) int { return a.Line - b.Line })
		return Script{}, &ScriptError{Problems: p.probs}
	}
	return Prepare(s)
}

type parser struct {
	file  string
	probs []Problem

	nodes     int  // values visited
	argsBytes int  // bytes of args and raw_args
	tooBig    bool // a limit was hit and reported; stop
}

// visit counts a value against maxNodes and reports whether to go on.
func (p *parser) visit(n *yaml.Node) bool {
	if p.tooBig {
		return false
	}
	p.nodes++
	if p.nodes > maxNodes {
		p.tooBig = true
		p.errf(n, "", "script too large: more than %d values once aliases are expanded", maxNodes)
		return false
	}
	return true
}

// spendArgs counts n bytes of tool input against maxArgsBytes and reports
// whether to go on.
func (p *parser) spendArgs(node *yaml.Node, n int) bool {
	if p.tooBig {
		return false
	}
	p.argsBytes += n
	if p.argsBytes > maxArgsBytes {
		p.tooBig = true
		p.errf(node, "", "script too large: args and raw_args total more than %d bytes once aliases are expanded", maxArgsBytes)
		return false
	}
	return true
}

func (p *parser) add(line int, ctx, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ctx != "" {
		msg = ctx + ": " + msg
	}
	p.probs = append(p.probs, Problem{File: p.file, Line: line, Msg: msg})
}

func (p *parser) errf(n *yaml.Node, ctx, format string, args ...any) {
	p.add(n.Line, ctx, format, args...)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func (p *parser) syntax(err error) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.add(line, "", "invalid YAML: %s", msg[len(m[0]):])
		return
	}
	p.add(0, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// document returns the script's root node, or nil after recording why not.
func (p *parser) document(data []byte) (root *yaml.Node) {
	defer func() {
		if r := recover(); r != nil { // a bug in the YAML library; report, don't crash
			p.add(0, "", "invalid YAML: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(0, "", "empty script: want a mapping with a turns list")
		} else {
			p.syntax(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(err)
	default:
		p.errf(&extra, "", "a script is one YAML document; found another")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.add(0, "", "empty script: want a mapping with a turns list")
		return nil
	}
	return doc.Content[0]
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 100 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a string"
	}
	return "nothing"
}

// fields checks that n is a mapping whose keys are known and distinct and
// calls fn for each field. It reports false if n is not a mapping.
func (p *parser) fields(n *yaml.Node, ctx, what string, allowed []string, fn func(key string, k, v *yaml.Node)) bool {
	if n.Kind != yaml.MappingNode {
		p.errf(n, ctx, "%s must be a mapping, not %s", what, describe(n))
		return false
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.visit(k) {
			break
		}
		rk := resolve(k)
		switch {
		case rk.Kind != yaml.ScalarNode:
			p.errf(k, ctx, "keys must be strings, not %s", describe(rk))
			continue
		case rk.ShortTag() == "!!merge":
			p.errf(k, ctx, "merge keys (<<) are not supported")
			continue
		}
		key := rk.Value
		if line, dup := seen[key]; dup {
			p.errf(k, ctx, "duplicate key %q (first at line %d)", key, line)
			continue
		}
		seen[key] = k.Line
		if !slices.Contains(allowed, key) {
			p.errf(k, ctx, "unknown key %q in %s (want %s)", key, what, strings.Join(allowed, ", "))
			continue
		}
		fn(key, k, v)
	}
	return true
}

// str returns a non-null scalar as written.
func (p *parser) str(n *yaml.Node, ctx, key string) (string, bool) {
	r := resolve(n)
	if r.Kind != yaml.ScalarNode || r.ShortTag() == "!!null" {
		p.errf(n, ctx, "%s must be a string, not %s", key, describe(r))
		return "", false
	}
	return r.Value, true
}

func (p *parser) number(n *yaml.Node, ctx, key string) (float64, bool) {
	r := resolve(n)
	if r.Kind != yaml.ScalarNode || (r.ShortTag() != "!!int" && r.ShortTag() != "!!float") {
		p.errf(n, ctx, "%s must be a number, not %s", key, describe(r))
		return 0, false
	}
	var f float64
	if err := r.Decode(&f); err != nil {
		p.errf(n, ctx, "%s: bad number %q", key, r.Value)
		return 0, false
	}
	if !finite(f) {
		p.errf(n, ctx, "%s must be a finite number, not %s", key, r.Value)
		return 0, false
	}
	return f, true
}

func (p *parser) count(n *yaml.Node, ctx, key string) int64 {
	r := resolve(n)
	if r.Kind != yaml.ScalarNode || r.ShortTag() != "!!int" {
		p.errf(n, ctx, "%s must be a whole number, not %s", key, describe(r))
		return 0
	}
	var i int64
	if err := r.Decode(&i); err != nil {
		p.errf(n, ctx, "%s: %q is out of range", key, r.Value)
		return 0
	}
	if i < 0 {
		p.errf(n, ctx, "%s must not be negative", key)
		return 0
	}
	return i
}

func (p *parser) script(n *yaml.Node, s *Script) {
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		p.errf(n, "", "a script must be a mapping with a turns list, not %s", describe(r))
		return
	}
	sawTurns := false
	p.fields(r, "", "the script", scriptKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "name":
			if name, ok := p.str(v, "", "name"); ok {
				if name == "" {
					p.errf(v, "", "name is empty; leave it out for the default %q", DefaultName)
				}
				s.Name = name
			}
		case "turns":
			sawTurns = true
			p.turns(v, s)
		}
	})
	if !sawTurns {
		p.errf(r, "", "the script has no turns list")
	}
}

func (p *parser) turns(n *yaml.Node, s *Script) {
	r := resolve(n)
	if r.Kind != yaml.SequenceNode {
		p.errf(n, "", "turns must be a list, not %s", describe(r))
		return
	}
	s.Turns = make([]Turn, 0, len(r.Content))
	for i, tn := range r.Content {
		if !p.visit(tn) {
			return
		}
		s.Turns = append(s.Turns, p.turn(tn, i+1))
	}
}

func (p *parser) turn(n *yaml.Node, num int) Turn {
	ctx := fmt.Sprintf("turn %d", num)
	t := Turn{Line: n.Line}
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		p.errf(n, ctx, "a turn must be a mapping (write {} for an empty reply), not %s", describe(r))
		return t
	}
	var has []string
	p.fields(r, ctx, "a turn", turnKeys, func(key string, _, v *yaml.Node) {
		has = append(has, key)
		switch key {
		case "thinking":
			t.Thinking, _ = p.str(v, ctx, "thinking")
		case "text":
			t.Text, _ = p.str(v, ctx, "text")
		case "tools":
			t.Tools = p.tools(v, ctx)
		case "finish":
			t.Finish = p.finish(v, ctx)
		case "expect":
			t.Expect = p.expect(v, ctx)
		case "error":
			if e, ok := p.str(v, ctx, "error"); ok {
				if e == "" {
					p.errf(v, ctx, "error is empty")
				}
				t.Error = e
			}
		case "delay":
			t.Delay = p.delay(v, ctx)
		case "usage":
			t.Usage = p.usage(v, ctx)
		}
	})
	if slices.Contains(has, "error") {
		var with []string
		for _, k := range []string{"thinking", "text", "tools", "finish", "usage"} {
			if slices.Contains(has, k) {
				with = append(with, k)
			}
		}
		if len(with) > 0 {
			p.errf(n, ctx, "error cannot be combined with %s: an error turn has no reply", strings.Join(with, ", "))
		}
	}
	return t
}

func (p *parser) tools(n *yaml.Node, ctx string) []ToolCall {
	r := resolve(n)
	if r.Kind != yaml.SequenceNode {
		p.errf(n, ctx, "tools must be a list, not %s", describe(r))
		return nil
	}
	calls := make([]ToolCall, 0, len(r.Content))
	for j, tn := range r.Content {
		if !p.visit(tn) {
			break
		}
		tctx := fmt.Sprintf("%s, tool %d", ctx, j+1)
		var tc ToolCall
		hasName, hasArgs := false, false
		ok := p.fields(resolve(tn), tctx, "a tool call", toolKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "name":
				hasName = true
				if name, ok := p.str(v, tctx, "name"); ok {
					if name == "" {
						p.errf(v, tctx, "name is empty")
					}
					tc.Name = name
				}
			case "args":
				hasArgs = true
				tc.Args = p.args(v, tctx)
			case "raw_args":
				if raw, ok := p.str(v, tctx, "raw_args"); ok && p.spendArgs(v, len(raw)) {
					tc.RawArgs = &raw
				}
			}
		})
		if !ok {
			continue
		}
		if !hasName {
			p.errf(tn, tctx, "missing name")
		}
		if hasArgs && tc.RawArgs != nil {
			p.errf(tn, tctx, "args and raw_args are both set; use one")
		}
		calls = append(calls, tc)
	}
	return calls
}

func (p *parser) finish(n *yaml.Node, ctx string) *Finish {
	fctx := ctx + ", finish"
	f := &Finish{}
	hasAnswer := false
	if !p.fields(resolve(n), ctx, "finish", finishKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "answer":
			hasAnswer = true
			f.Answer, _ = p.str(v, fctx, "answer")
		case "confidence":
			if c, ok := p.number(v, fctx, "confidence"); ok {
				f.Confidence = &c
			}
		}
	}) {
		return nil
	}
	if !hasAnswer {
		p.errf(n, fctx, `missing answer (send other shapes as a tool call named "finish")`)
	}
	return f
}

func (p *parser) expect(n *yaml.Node, ctx string) []string {
	r := resolve(n)
	items := []*yaml.Node{n}
	switch r.Kind {
	case yaml.SequenceNode:
		items = r.Content
	case yaml.ScalarNode:
	default:
		p.errf(n, ctx, "expect must be a string or a list of strings, not %s", describe(r))
		return nil
	}
	var out []string
	for _, it := range items {
		if !p.visit(it) {
			break
		}
		s, ok := p.str(it, ctx, "expect")
		if !ok {
			continue
		}
		if s == "" {
			p.errf(it, ctx, "an empty expect string matches anything")
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) delay(n *yaml.Node, ctx string) time.Duration {
	s, ok := p.str(n, ctx, "delay")
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.errf(n, ctx, "bad delay %q: want a duration such as 50ms or 2s", s)
		return 0
	}
	if d < 0 {
		p.errf(n, ctx, "delay %q is negative", s)
		return 0
	}
	return d
}

func (p *parser) usage(n *yaml.Node, ctx string) *Usage {
	uctx := ctx + ", usage"
	u := &Usage{}
	if !p.fields(resolve(n), ctx, "usage", usageKeys, func(key string, _, v *yaml.Node) {
		c := p.count(v, uctx, key)
		switch key {
		case "input_tokens":
			u.InputTokens = c
		case "output_tokens":
			u.OutputTokens = c
		case "cache_read_tokens":
			u.CacheReadTokens = c
		case "cache_write_tokens":
			u.CacheWriteTokens = c
		}
	}) {
		return nil
	}
	return u
}

// args converts a mapping to a JSON object, keeping the key order.
func (p *parser) args(n *yaml.Node, ctx string) any {
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		p.errf(n, ctx, "args must be a mapping (a JSON object), not %s; use raw_args for anything else", describe(r))
		return nil
	}
	c := converter{p: p, ctx: ctx + ", args"}
	buf, ok := c.value(nil, r, 0)
	if !ok || !p.spendArgs(n, len(buf)) {
		return nil
	}
	return json.RawMessage(buf)
}

type converter struct {
	p     *parser
	ctx   string
	fatal bool // a limit was hit: stop converting
}

// value appends n as JSON to buf. It reports false on a problem, which it
// has recorded.
func (c *converter) value(buf []byte, n *yaml.Node, depth int) ([]byte, bool) {
	switch {
	case c.fatal:
		return buf, false
	case !c.p.visit(n) || !c.p.spendArgs(n, 0) || c.p.argsBytes+len(buf) > maxArgsBytes:
		if !c.p.tooBig {
			c.p.spendArgs(n, len(buf)) // reports
		}
		c.fatal = true
		return buf, false
	case depth > maxArgsDepth:
		c.p.errf(n, c.ctx, "nested too deeply")
		c.fatal = true
		return buf, false
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			c.p.errf(n, c.ctx, "unknown alias")
			return buf, false
		}
		return c.value(buf, n.Alias, depth+1)
	case yaml.MappingNode:
		buf = append(buf, '{')
		seen := make(map[string]int, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			switch {
			case k.Kind != yaml.ScalarNode:
				c.p.errf(n.Content[i], c.ctx, "keys must be strings, not %s", describe(k))
				ok = false
				continue
			case k.ShortTag() == "!!merge":
				c.p.errf(n.Content[i], c.ctx, "merge keys (<<) are not supported")
				ok = false
				continue
			}
			if line, dup := seen[k.Value]; dup {
				c.p.errf(n.Content[i], c.ctx, "duplicate key %q (first at line %d)", k.Value, line)
				ok = false
				continue
			}
			seen[k.Value] = n.Content[i].Line
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k.Value)
			buf = append(buf, ':')
			var vok bool
			buf, vok = c.value(buf, n.Content[i+1], depth+1)
			if !vok {
				if c.fatal {
					return buf, false
				}
				ok = false
			}
		}
		return append(buf, '}'), ok
	case yaml.SequenceNode:
		buf = append(buf, '[')
		ok := true
		for i, item := range n.Content {
			if i > 0 {
				buf = append(buf, ',')
			}
			var iok bool
			buf, iok = c.value(buf, item, depth+1)
			if !iok {
				if c.fatal {
					return buf, false
				}
				ok = false
			}
		}
		return append(buf, ']'), ok
	case yaml.ScalarNode:
		return c.scalar(buf, n)
	}
	c.p.errf(n, c.ctx, "unexpected YAML node")
	return buf, false
}

func (c *converter) scalar(buf []byte, n *yaml.Node) ([]byte, bool) {
	switch n.ShortTag() {
	case "!!null":
		return append(buf, "null"...), true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.p.errf(n, c.ctx, "bad boolean %q", n.Value)
			return buf, false
		}
		return strconv.AppendBool(buf, b), true
	case "!!int", "!!float":
		var v any
		if n.ShortTag() == "!!float" {
			var f float64
			if err := n.Decode(&f); err != nil {
				c.p.errf(n, c.ctx, "bad number %q", n.Value)
				return buf, false
			}
			if !finite(f) {
				c.p.errf(n, c.ctx, "%s is not a JSON number", n.Value)
				return buf, false
			}
			v = f
		} else if err := n.Decode(&v); err != nil {
			c.p.errf(n, c.ctx, "bad integer %q", n.Value)
			return buf, false
		}
		js, err := marshal(v)
		if err != nil {
			c.p.errf(n, c.ctx, "%q is not a JSON number", n.Value)
			return buf, false
		}
		return append(buf, js...), true
	}
	return appendString(buf, n.Value), true
}

func appendString(buf []byte, s string) []byte {
	js, _ := marshal(s) // a string always marshals
	return append(buf, js...)
}
