package testreport

import (
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Bounds for TAP parsing.
const (
	maxTAPIndent    = 400 // deeper lines are garbage
	maxYAMLKeys     = 32
	maxYAMLValue    = 8 << 10
	maxYAMLLines    = 200
	maxTAPComments  = 40
	maxTAPLevels    = 100
	tapCommentBytes = 300
)

// ParseTAP reads TAP version 13 with YAML diagnostic blocks, as printed by
// `node --test --test-reporter=tap` (and by a plain `node --test` on Node 20
// when stdout is not a terminal; Node 23 and later default to the spec
// reporter, which this does not read: ask for tap).
//
// Each test point ("ok N - name", "not ok N - name # SKIP reason") is a
// case; nested points are indented, and their names are joined with the
// names announced by "# Subtest:" lines: "outer > inner". A point that has
// subtests is reported through them: it is a case only when it failed for a
// reason of its own (node's failureType is not 'subtestsFailed'). From the
// YAML block: the Message is the error (with the error's name, e.g.
// "AssertionError: Expected values to be strictly equal: -4 !== -3"); the
// Location is the first stack line when it is in a user file, else the
// location key; the Output is the error's lines, expected and actual when the
// error has no diff, and only the first stack line. A failing assertion is
// Failed; a thrown error, a failed hook, a timeout, a cancelled test or a
// file that failed to load is Errored. A file that failed before any test
// ran (node reports it as a test named by the file) takes its Message and
// Location from the "# " lines node copied from the file's stderr just
// before it. TODO points are Skipped. "Bail out!" is an Errored case.
//
// Complete is true when the last top-level plan ("1..N") matches the number
// of top-level points and, in node's format, the "# tests / # pass / # fail"
// summary came after it. See the package comment for what is done about
// printed fake "ok" lines. The error is for input with no TAP line at all.
func ParseTAP(r io.Reader) (Report, error) {
	p := &tapParser{plan: -1}
	lr := newLineReader(r, MaxLineBytes)
	for {
		line, _, ok := lr.next()
		if !ok {
			break
		}
		p.line(line)
	}
	return p.finish()
}

type tapLevel struct {
	indent      int
	name        string
	named       bool
	childSeen   bool
	childFailed bool
}

type tapPoint struct {
	indent    int
	ok        bool
	name      string
	directive string // "skip", "todo" or ""
	reason    string
	comments  []string
	yaml      map[string]string
}

type yamlState struct {
	indent int
	key    string
	mode   byte // 0 none, '|' literal block, '>' folded block, 'n' nested
	lines  []string
	size   int
}

type tapParser struct {
	b           builder
	levels      []tapLevel
	pending     *tapPoint
	yaml        *yamlState
	comments    []string
	nodeMode    bool // "# Subtest:" lines seen: node's format
	sawTAP      bool
	plan        int
	topPoints   int // top-level points kept, orphans included
	topOrphanOK int // top-level passing orphans among them
	summary     bool
	summaryFail int
	bailed      bool
}

var (
	tapPointRe   = regexp.MustCompile(`^(not ok|ok)(?:\s+(\d+))?(?:\s*-\s*|\s+|$)(.*)$`)
	tapPlanRe    = regexp.MustCompile(`^1\.\.(\d+)(?:\s*#.*)?$`)
	tapSummaryRe = regexp.MustCompile(`^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) \d+(?:\.\d+)?$`)
	tapVersionRe = regexp.MustCompile(`^TAP version \d+$`)
	yamlKeyRe    = regexp.MustCompile(`^([A-Za-z_][\w-]*):(?:\s+(.*)|\s*)$`)
	// "TestContext.<anonymous> (/x/calc.test.js:12:12)", "/x/a.js:3:1"
	jsFrameRe = regexp.MustCompile(`(?:^|\(|\s)((?:file://)?[^\s()]+?):(\d+):\d+\)?$`)
	// "TypeError: subtract is not a function"
	jsErrorRe = regexp.MustCompile(`^[A-Za-z_$][\w$.]*(?:Error|Exception)\b(?::.*)?$`)
	// "/x/broken.test.js:3", the first line of an uncaught exception
	jsPathLineRe = regexp.MustCompile(`^(\S+\.[cm]?[jt]sx?):(\d+)$`)
)

func (p *tapParser) line(raw string) {
	raw = strings.TrimRight(raw, "\r")
	indent := 0 // in columns: a tab counts four
	for i := 0; i < len(raw) && (raw[i] == ' ' || raw[i] == '\t'); i++ {
		if raw[i] == '\t' {
			indent += 4
		} else {
			indent++
		}
	}
	content := strings.TrimSpace(raw)
	if indent > maxTAPIndent {
		return
	}
	if p.yaml != nil {
		if p.yamlLine(raw, indent, content) {
			return
		}
	}
	if p.pending != nil {
		if content == "---" && indent > p.pending.indent {
			p.yaml = &yamlState{indent: indent}
			p.pending.yaml = map[string]string{}
			return
		}
		p.finishPoint()
	}
	switch {
	case content == "":
	case tapVersionRe.MatchString(content):
		p.sawTAP = true
	case strings.HasPrefix(content, "ok") || strings.HasPrefix(content, "not ok"):
		m := tapPointRe.FindStringSubmatch(content)
		if m == nil {
			return
		}
		p.sawTAP = true
		pt := &tapPoint{indent: indent, ok: m[1] == "ok", comments: p.comments}
		p.comments = nil
		pt.name, pt.directive, pt.reason = splitDirective(m[3])
		p.pending = pt
	case strings.HasPrefix(content, "Bail out!"):
		p.sawTAP = true
		p.bailed = true
		msg := strings.TrimSpace(strings.TrimPrefix(content, "Bail out!"))
		if msg == "" {
			msg = "the runner bailed out"
		}
		p.b.add(Case{Name: "Bail out!", Status: Errored, Message: text(msg, MaxMessageBytes)}, false)
	case strings.HasPrefix(content, "# Subtest:"):
		p.sawTAP = true
		p.nodeMode = true
		name := unescapeTAP(strings.TrimSpace(strings.TrimPrefix(content, "# Subtest:")))
		p.closeLevels(indent)
		if len(p.levels) < maxTAPLevels {
			p.levels = append(p.levels, tapLevel{indent: indent, name: name, named: true})
		}
	case strings.HasPrefix(content, "#"):
		if indent == 0 && tapSummaryRe.MatchString(content) {
			if p.plan >= 0 {
				p.summary = true
				if strings.HasPrefix(content, "# fail ") {
					p.summaryFail, _ = strconv.Atoi(strings.TrimPrefix(content, "# fail "))
				}
			}
			return
		}
		if len(p.comments) < maxTAPComments {
			c := strings.TrimSpace(strings.TrimPrefix(content, "#"))
			p.comments = append(p.comments, clipMark(unescapeTAP(c), tapCommentBytes))
		}
	default:
		if m := tapPlanRe.FindStringSubmatch(content); m != nil {
			p.sawTAP = true
			if indent == 0 {
				n, err := strconv.Atoi(m[1])
				if err != nil {
					n = -2 // a plan too large to be real never matches
				}
				p.plan = n
				p.summary, p.summaryFail = false, 0
			}
		}
		// Anything else is output the runner did not frame: ignored.
	}
}

// closeLevels forgets the levels at indent or deeper.
func (p *tapParser) closeLevels(indent int) {
	i := len(p.levels)
	for i > 0 && p.levels[i-1].indent >= indent {
		i--
	}
	p.levels = p.levels[:i]
}

// yamlLine reads one line of a YAML block; false means the line ended the
// block without belonging to it and must be read as TAP.
func (p *tapParser) yamlLine(raw string, indent int, content string) bool {
	y := p.yaml
	if content == "" {
		if y.mode != 0 && len(y.lines) < maxYAMLLines {
			y.lines = append(y.lines, "")
		}
		return true
	}
	if indent == y.indent && content == "..." {
		p.yamlFlush()
		p.yaml = nil
		p.finishPoint()
		return true
	}
	if indent < y.indent {
		p.yamlFlush()
		p.yaml = nil
		p.finishPoint()
		return false
	}
	if indent > y.indent {
		if y.mode != 0 && len(y.lines) < maxYAMLLines && y.size < maxYAMLValue {
			// Keep the indentation relative to the block.
			l := strings.Repeat(" ", indent-y.indent) + raw[leadingSpace(raw):]
			y.lines = append(y.lines, l)
			y.size += len(l)
		}
		return true
	}
	p.yamlFlush()
	m := yamlKeyRe.FindStringSubmatch(content)
	if m == nil {
		return true
	}
	y.key, y.mode, y.lines, y.size = m[1], 0, nil, 0
	switch v := strings.TrimSpace(m[2]); v {
	case "|", "|-", "|+":
		y.mode = '|'
	case ">", ">-", ">+":
		y.mode = '>'
	case "":
		y.mode = 'n'
	default:
		p.yamlSet(y.key, yamlScalar(v))
		y.key = ""
	}
	return true
}

func leadingSpace(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func (p *tapParser) yamlFlush() {
	y := p.yaml
	if y == nil || y.key == "" || y.mode == 0 {
		if y != nil {
			y.key = ""
		}
		return
	}
	// Dedent by the least indentation of the non-blank lines.
	least := -1
	for _, l := range y.lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := leadingSpace(l); least < 0 || n < least {
			least = n
		}
	}
	lines := make([]string, 0, len(y.lines))
	for _, l := range y.lines {
		if len(l) >= least && least > 0 {
			l = l[least:]
		}
		lines = append(lines, strings.TrimRight(l, " \t"))
	}
	sep := "\n"
	if y.mode == '>' {
		sep = " "
	}
	p.yamlSet(y.key, strings.TrimRight(strings.Join(lines, sep), "\n "))
	y.key, y.mode, y.lines, y.size = "", 0, nil, 0
}

func (p *tapParser) yamlSet(k, v string) {
	if p.pending == nil || p.pending.yaml == nil {
		return
	}
	if _, ok := p.pending.yaml[k]; !ok && len(p.pending.yaml) >= maxYAMLKeys {
		return
	}
	p.pending.yaml[k] = clip(v, maxYAMLValue)
}

func yamlScalar(v string) string {
	switch {
	case v == "~" || v == "null":
		return ""
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v[1 : len(v)-1]
	}
	return v
}

// splitDirective splits a test point's description into its name and its
// "# SKIP reason" or "# TODO reason" directive; "\#" is an escaped "#".
func splitDirective(desc string) (name, directive, reason string) {
	for i := 0; i < len(desc); i++ {
		if desc[i] == '\\' {
			i++
			continue
		}
		if desc[i] != '#' {
			continue
		}
		d := strings.TrimSpace(desc[i+1:])
		lower := strings.ToLower(d)
		for _, kw := range []string{"skip", "todo"} {
			if strings.HasPrefix(lower, kw) {
				directive, reason = kw, strings.TrimSpace(d[len(kw):])
				reason = strings.TrimSpace(strings.TrimPrefix(reason, ":"))
			}
		}
		return unescapeTAP(strings.TrimSpace(desc[:i])), directive, unescapeTAP(reason)
	}
	return unescapeTAP(strings.TrimSpace(desc)), "", ""
}

var tapUnescaper = strings.NewReplacer(`\\`, `\`, `\#`, `#`, `\n`, " ", `\r`, " ", `\t`, " ", `\b`, " ", `\f`, " ", `\v`, " ")

func unescapeTAP(s string) string { return tapUnescaper.Replace(s) }

// finishPoint turns the pending point into a case.
func (p *tapParser) finishPoint() {
	pt := p.pending
	p.pending = nil
	if pt == nil {
		return
	}
	y := pt.yaml
	// Its own level: the "# Subtest:" that announced it, and its children.
	var own *tapLevel
	var ancestors []string
	for i := range p.levels {
		lv := &p.levels[i]
		if lv.indent == pt.indent {
			own = lv
		} else if lv.indent < pt.indent && lv.named {
			ancestors = append(ancestors, lv.name)
		}
	}
	matched := own != nil && own.named && own.name == pt.name
	hasChildren := (own != nil && own.childSeen) || y["type"] == "suite"
	childFailed := own != nil && own.childFailed
	failing := !pt.ok && pt.directive == ""
	// Tell the parent level it has a child, creating it for plain TAP
	// (no "# Subtest:" lines) at the customary four spaces up.
	p.closeLevels(pt.indent)
	if pt.indent > 0 {
		if len(p.levels) == 0 && len(p.levels) < maxTAPLevels {
			p.levels = append(p.levels, tapLevel{indent: max(pt.indent-4, 0)})
		}
		if n := len(p.levels); n > 0 {
			p.levels[n-1].childSeen = true
			p.levels[n-1].childFailed = p.levels[n-1].childFailed || failing
		}
	}
	orphan := !matched
	if pt.indent == 0 {
		p.summary, p.summaryFail = false, 0 // a summary counts only after the last point
		p.topPoints++
		if orphan && !failing {
			p.topOrphanOK++
		}
	}
	if hasChildren {
		ft := y["failureType"]
		if !failing || ft == "subtestsFailed" || (ft == "" && childFailed) {
			return // reported through its subtests
		}
	}

	c := Case{
		Name:   text(strings.Join(append(ancestors, pt.name), " > "), MaxNameBytes),
		Status: Passed,
	}
	defLoc := jsLocation(y["location"])
	if defLoc != "" {
		c.Suite = text(defLoc[:strings.LastIndexByte(defLoc, ':')], MaxNameBytes)
	}
	c.Location = defLoc
	switch {
	case pt.directive != "":
		c.Status = Skipped
		c.Message = text(pt.reason, MaxMessageBytes)
	case failing:
		p.failure(&c, pt)
	}
	p.b.add(c, orphan)
}

// failure fills a failing case from the point's YAML block.
func (p *tapParser) failure(c *Case, pt *tapPoint) {
	y := pt.yaml
	errText := strings.TrimSpace(y["error"])
	if errText == "" {
		errText = strings.TrimSpace(y["message"]) // the TAP 13 convention
	}
	name := y["name"]
	ft := y["failureType"]
	switch {
	case ft == "" && name == "":
		c.Status = Failed // plain TAP
	case strings.Contains(name, "AssertionError") || y["code"] == "ERR_ASSERTION":
		c.Status = Failed
	default:
		c.Status = Errored
	}
	if _, fileLevel := y["exitCode"]; fileLevel && y["stack"] == "" {
		// A file that failed on its own (node names the test by the file):
		// the reason is in the stderr node copied to comments before it.
		c.Status = Errored
		if msg, loc, out := commentsError(pt.comments); msg != "" {
			c.Message, c.Output = text(msg, MaxMessageBytes), out
			if loc != "" {
				c.Location = loc
			}
			return
		}
	}
	var errLines []string
	for _, l := range strings.Split(errText, "\n") {
		if strings.TrimSpace(l) != "" {
			errLines = append(errLines, l)
		}
	}
	msg, used := "", 0 // used: how many error lines the message says
	if len(errLines) > 0 {
		msg, used = strings.TrimSpace(errLines[0]), 1
		if len(errLines) == 2 && strings.HasSuffix(msg, ":") {
			msg, used = msg+" "+strings.TrimSpace(errLines[1]), 2
		}
	}
	if name != "" && !strings.HasPrefix(msg, name) {
		if msg == "" {
			msg = name
		} else {
			msg = name + ": " + msg
		}
	}
	if msg == "" && ft != "" {
		msg = ft
	}
	c.Message = text(msg, MaxMessageBytes)

	out := append([]string{}, errLines[used:]...)
	if len(errLines) <= 1 {
		for _, k := range []string{"expected", "actual", "operator"} {
			if v, ok := y[k]; ok {
				v = strings.ReplaceAll(v, "\n", "\n  ")
				out = append(out, k+": "+v)
			}
		}
	}
	if stack := y["stack"]; stack != "" {
		first := strings.TrimSpace(firstLine(stack))
		out = append(out, "at "+first)
		if m := jsFrameRe.FindStringSubmatch(first); m != nil && !strings.HasPrefix(m[1], "node:") {
			c.Location = text(strings.TrimPrefix(m[1], "file://")+":"+m[2], MaxNameBytes)
		}
	}
	c.Output = trimLines(out, 10, 20)
}

// commentsError finds an uncaught error in node's copy of a file's stderr:
// the "XxxError: ..." line, its place, and the lines from the place to the
// first stack frame.
func commentsError(comments []string) (msg, loc, out string) {
	start, errAt := -1, -1
	for i, l := range comments {
		if start < 0 && jsPathLineRe.MatchString(l) {
			start = i
		}
		if jsErrorRe.MatchString(l) {
			errAt = i
			break
		}
	}
	if errAt < 0 {
		return "", "", ""
	}
	msg = comments[errAt]
	if start >= 0 {
		m := jsPathLineRe.FindStringSubmatch(comments[start])
		loc = text(strings.TrimPrefix(m[1], "file://")+":"+m[2], MaxNameBytes)
	} else {
		start = errAt
	}
	end := errAt + 1
	for ; end < len(comments); end++ {
		if strings.HasPrefix(comments[end], "at ") {
			if loc == "" {
				if m := jsFrameRe.FindStringSubmatch(comments[end]); m != nil {
					loc = text(strings.TrimPrefix(m[1], "file://")+":"+m[2], MaxNameBytes)
				}
			}
			end++
			break
		}
	}
	return msg, loc, trimLines(comments[start:end], 10, 10)
}

// jsLocation turns node's "file:line:col" into "file:line".
func jsLocation(s string) string {
	if s == "" {
		return ""
	}
	return fileLine(strings.TrimPrefix(s, "file://"))
}

func (p *tapParser) finish() (Report, error) {
	if p.yaml != nil {
		p.yamlFlush()
		p.yaml = nil
	}
	cutInPoint := p.pending != nil && p.pending.yaml != nil
	p.finishPoint()
	rep := Report{Runner: "tap"}
	if p.nodeMode {
		rep.Runner = "node"
	}
	p.b.finish(&rep, p.nodeMode)
	top := p.topPoints
	if p.nodeMode {
		top -= p.topOrphanOK
	}
	rep.Complete = p.plan >= 0 && p.plan == top && !p.bailed && !cutInPoint && (p.summary || !p.nodeMode)
	if p.summary && p.summaryFail > 0 && rep.Failed+rep.Errored == 0 {
		// The runner counted failures that no test point showed.
		c := Case{Name: "[run failed]", Status: Errored,
			Message: "the runner reported " + strconv.Itoa(p.summaryFail) + " failing tests that could not be read"}
		rep.Cases = append(rep.Cases, c)
		rep.Errored++
		rep.Ran[c.Name] |= outcomeBit(Errored)
	}
	if !p.sawTAP {
		return rep, errors.New("testreport: no TAP lines found")
	}
	return rep, nil
}
