package testreport

import (
	"encoding/json"
	"errors"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Bounds for go test -json parsing.
const (
	maxGoInFlight  = 1000 // tests running at once whose output is collected
	maxGoPackages  = 2000 // packages tracked
	maxGoBuildKeys = 200  // import paths whose build output is kept
	maxGoTestName  = 1024
	goHeadLines    = 20
	goTailLines    = 20
	goPanicLines   = 80
	goLineBytes    = 300
	goPartialBytes = 4096
	goStrayLines   = 50
)

type goEvent struct {
	Action      string
	Package     string
	Test        string
	ImportPath  string
	FailedBuild string
	Output      *string
}

// ParseGoTestJSON reads the `go test -json` event stream (test2json).
//
// A test's result is its pass, fail or skip event; its output events are
// gathered to find the Message: the first "file_test.go:NN: ..." line that
// reads like an assertion (it says want, got, expected, fail, error, diff,
// mismatch, unexpected, should, must, != or not equal), else the first such
// line at all, else the last; a skipped test's Message is its last such line
// (the t.Skip reason). The location goes to Location, not the Message. A
// test whose output has a "panic: " or "fatal error: " line is Errored, with
// that line as the Message and the first stack frame outside runtime and
// testing as the Location.
//
// A parent test is reported through its subtests: it is a case only when it
// failed for a reason of its own (no subtest failed, or its own output has
// an assertion line). A package that failed without a failing test, as in a
// build failure ("[build failed]", the compile errors as Output), a setup
// failure ("[setup failed]"), a panic in init or TestMain or a timeout
// ("[package failed]"), becomes one Errored case with that name and the
// package as its Suite. A test that started but reported no result is
// Errored.
//
// Lines that are not JSON events (stderr mixed in, garbage) are skipped;
// the last few are used only to explain a failed build that has no
// build-output events (Go before 1.24). Complete is true when every package
// seen reported its result. The error is for input with no event at all.
func ParseGoTestJSON(r io.Reader) (Report, error) {
	p := &goParser{
		tests:  map[goKey]*goTest{},
		pkgs:   map[string]*goPkg{},
		builds: map[string]*collector{},
	}
	lr := newLineReader(r, MaxJSONLineBytes)
	for {
		line, cut, ok := lr.next()
		if !ok {
			break
		}
		if cut {
			continue // an event cut in the middle is garbage
		}
		t := strings.TrimSpace(line)
		var ev goEvent
		if !strings.HasPrefix(t, "{") || json.Unmarshal([]byte(t), &ev) != nil || ev.Action == "" {
			p.stray(t)
			continue
		}
		p.events++
		p.event(&ev)
	}
	return p.finish()
}

type goKey struct{ pkg, test string }

type goTest struct {
	key         goKey
	parent      *goTest
	out         collector
	hasChildren bool
	childFailed bool
}

type goPkg struct {
	ended    bool
	failed   bool // it reported fail
	failing  int  // failed or errored cases reported for it
	out      *collector
	inflight int
}

type goParser struct {
	b        builder
	tests    map[goKey]*goTest
	pkgs     map[string]*goPkg
	order    []string // packages in the order seen
	builds   map[string]*collector
	strays   []string
	events   int
	overflow bool // more packages than tracked
}

func (p *goParser) stray(l string) {
	if l == "" {
		return
	}
	if len(p.strays) >= goStrayLines {
		p.strays = p.strays[1:]
	}
	p.strays = append(p.strays, clipMark(l, goLineBytes))
}

func (p *goParser) pkg(name string) *goPkg {
	if pk, ok := p.pkgs[name]; ok {
		return pk
	}
	if len(p.pkgs) >= maxGoPackages {
		p.overflow = true
		return nil
	}
	pk := &goPkg{}
	p.pkgs[name] = pk
	p.order = append(p.order, name)
	return pk
}

func (p *goParser) event(ev *goEvent) {
	if ev.Action == "build-output" || ev.Action == "build-fail" {
		if ev.Output == nil {
			return
		}
		c := p.builds[ev.ImportPath]
		if c == nil {
			if len(p.builds) >= maxGoBuildKeys {
				return
			}
			c = &collector{}
			p.builds[ev.ImportPath] = c
		}
		c.write(*ev.Output)
		return
	}
	pkgName := clip(ev.Package, maxGoTestName)
	pk := p.pkg(pkgName)
	if ev.Test == "" {
		if pk == nil || pk.ended {
			return
		}
		switch ev.Action {
		case "output":
			if ev.Output != nil {
				if pk.out == nil {
					pk.out = &collector{pkg: true}
				}
				pk.out.write(*ev.Output)
			}
		case "pass", "fail", "skip":
			p.endPackage(pkgName, pk, ev)
		}
		return
	}
	key := goKey{pkgName, clip(ev.Test, maxGoTestName)}
	switch ev.Action {
	case "run":
		p.start(key, pk)
	case "output":
		if ev.Output == nil {
			return
		}
		t := p.tests[key]
		if t == nil {
			t = p.start(key, pk)
		}
		if t != nil {
			t.out.write(*ev.Output)
		}
	case "pass", "fail", "skip":
		t := p.tests[key]
		if t == nil {
			t = &goTest{key: key}
		} else {
			delete(p.tests, key)
			if pk != nil {
				pk.inflight--
			}
		}
		st := map[string]Status{"pass": Passed, "fail": Failed, "skip": Skipped}[ev.Action]
		p.endTest(t, st, pk)
	}
}

// start tracks a running test, linking it to its running parent.
func (p *goParser) start(key goKey, pk *goPkg) *goTest {
	if t, ok := p.tests[key]; ok {
		return t
	}
	if len(p.tests) >= maxGoInFlight {
		return nil
	}
	t := &goTest{key: key}
	for name := key.test; ; {
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			break
		}
		name = name[:i]
		if parent, ok := p.tests[goKey{key.pkg, name}]; ok {
			t.parent = parent
			parent.hasChildren = true
			break
		}
	}
	p.tests[key] = t
	if pk != nil {
		pk.inflight++
	}
	return t
}

func (p *goParser) endTest(t *goTest, st Status, pk *goPkg) {
	c := Case{Name: text(t.key.test, MaxNameBytes), Suite: text(t.key.pkg, MaxNameBytes), Status: st}
	t.out.flush()
	switch {
	case t.out.panicLine != "":
		c.Status = Errored
		c.Message, c.Location, c.Output = t.out.panicCase()
	case st == Failed:
		c.Message, c.Location = t.out.message(false)
		c.Output = t.out.output()
	case st == Skipped:
		c.Message, c.Location = t.out.message(true)
	}
	failing := c.Status == Failed || c.Status == Errored
	if t.parent != nil && failing {
		t.parent.childFailed = true
	}
	if t.hasChildren {
		// Reported through its subtests, unless it failed on its own.
		own := t.out.panicLine != "" || t.out.assertLine != ""
		if !failing || (t.childFailed && !own) {
			return
		}
	}
	if failing && pk != nil {
		pk.failing++
	}
	p.b.add(c, false)
}

func (p *goParser) endPackage(name string, pk *goPkg, ev *goEvent) {
	pk.ended = true
	pk.failed = ev.Action == "fail"
	var pout collector
	if pk.out != nil {
		pk.out.flush()
		pout = *pk.out
	}
	// Tests still running when their package ended never reported.
	if pk.inflight > 0 {
		for _, key := range testKeys(p.tests, name) {
			t := p.tests[key]
			delete(p.tests, key)
			t.out.flush()
			c := Case{Name: text(key.test, MaxNameBytes), Suite: text(key.pkg, MaxNameBytes), Status: Errored}
			switch {
			case t.out.panicLine != "": // a timeout is reported in the running test's output
				c.Message, c.Location, c.Output = t.out.panicCase()
			case pout.panicLine != "":
				c.Message, c.Location, _ = pout.panicCase()
				c.Output = t.out.output()
			default:
				c.Message = "the test reported no result before its package ended"
				c.Output = t.out.output()
			}
			if t.hasChildren {
				continue // its running subtest says it
			}
			pk.failing++
			p.b.add(c, false)
		}
		pk.inflight = 0
	}
	if !pk.failed || pk.failing > 0 {
		return
	}
	c := Case{Name: "[package failed]", Suite: text(name, MaxNameBytes), Status: Errored}
	switch {
	case pout.contains("[setup failed]"):
		c.Name = "[setup failed]"
	case ev.FailedBuild != "" || pout.contains("[build failed]"):
		c.Name = "[build failed]"
	}
	var lines []string
	if c.Name != "[package failed]" {
		if b := p.builds[ev.FailedBuild]; b != nil && ev.FailedBuild != "" {
			b.flush()
			lines = b.all()
		} else {
			for _, k := range buildKeys(p.builds, name) {
				p.builds[k].flush()
				lines = append(lines, p.builds[k].all()...)
			}
		}
		if len(lines) == 0 {
			lines = append(pout.all(), p.strays...)
		}
	}
	if pout.panicLine != "" && c.Name == "[package failed]" {
		c.Message, c.Location, c.Output = pout.panicCase()
	} else {
		if lines == nil {
			lines = pout.all()
		}
		var kept []string
		for _, l := range lines {
			if strings.HasPrefix(l, "# ") || strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
				continue
			}
			kept = append(kept, l)
		}
		for _, l := range kept {
			if m := goCompileRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				c.Message, c.Location = text(m[3], MaxMessageBytes), text(m[1]+":"+m[2], MaxNameBytes)
				break
			}
		}
		if c.Message == "" && len(kept) > 0 {
			c.Message = text(kept[0], MaxMessageBytes)
		}
		if c.Message == "" {
			c.Message = "the package failed without a failing test"
		}
		c.Output = trimLines(kept, 10, 20)
	}
	pk.failing++
	p.b.add(c, false)
}

// testKeys returns the running tests of pkg, sorted by name.
func testKeys(m map[goKey]*goTest, pkg string) []goKey {
	var keys []goKey
	for k := range m {
		if k.pkg == pkg {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b goKey) int { return strings.Compare(a.test, b.test) })
	return keys
}

// buildKeys returns the import paths of pkg's build output ("pkg" and
// "pkg [pkg.test]"), sorted.
func buildKeys(m map[string]*collector, pkg string) []string {
	var keys []string
	for k := range m {
		if k == pkg || strings.HasPrefix(k, pkg+" ") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (p *goParser) finish() (Report, error) {
	rep := Report{Runner: "go"}
	// Tests still running at the end of the input: the output was cut off.
	var left []goKey
	for k := range p.tests {
		left = append(left, k)
	}
	slices.SortFunc(left, func(a, b goKey) int {
		if c := strings.Compare(a.pkg, b.pkg); c != 0 {
			return c
		}
		return strings.Compare(a.test, b.test)
	})
	for _, k := range left {
		t := p.tests[k]
		if t.hasChildren {
			continue
		}
		t.out.flush()
		c := Case{Name: text(k.test, MaxNameBytes), Suite: text(k.pkg, MaxNameBytes), Status: Errored,
			Message: "the test reported no result: the output ended while it was running"}
		if t.out.panicLine != "" {
			c.Message, c.Location, c.Output = t.out.panicCase()
		} else {
			c.Output = t.out.output()
		}
		p.b.add(c, false)
	}
	rep.Complete = len(p.order) > 0 && !p.overflow
	for _, name := range p.order {
		if !p.pkgs[name].ended {
			rep.Complete = false
		}
	}
	p.b.finish(&rep, false)
	if p.events == 0 {
		return rep, errors.New("testreport: no go test -json events found")
	}
	return rep, nil
}

var (
	// "    calc_test.go:27: Add(-1, -2) = -4, want -3"
	goLocRe = regexp.MustCompile(`^\s*([^\s:]+\.go):(\d+): ?(.*)$`)
	// "broken/broken.go:5:13: undefined: two"
	goCompileRe  = regexp.MustCompile(`^(\S+\.go):(\d+)(?::\d+)?: (.*)$`)
	goFrameRe    = regexp.MustCompile(`^\s+(\S.*\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)
	goAssertWord = regexp.MustCompile(`(?i)want|got|expect|fail|error|mismatch|diff|unexpected|should|must|!=|not equal`)
	goFraming    = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)\b|--- (PASS|FAIL|SKIP|BENCH): )`)
	goPkgFraming = regexp.MustCompile(`^(PASS|FAIL|ok  \t.*|FAIL\t.*|\?   \t.*|testing: warning: no tests to run|coverage: .*)$`)
)

// collector keeps the relevant part of one test's (or package's) output in
// bounded memory: the first and last lines, the first location lines and a
// panic's first lines.
type collector struct {
	pkg        bool // package output: its framing lines differ
	partial    []byte
	head       []string
	tail       []string // a ring of the last lines, once head is full
	tailStart  int
	total      int
	firstLoc   string // the first "file.go:NN: msg" line
	lastLoc    string
	assertLine string // the first location line that reads like an assertion
	panicLine  string
	panicPre   []string // lines before the panic, from head
	panicBody  []string
	marks      []string // "[build failed]" and the like, when seen
}

func (c *collector) write(s string) {
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			room := goPartialBytes - len(c.partial)
			if len(s) > room {
				s = s[:max(room, 0)]
			}
			c.partial = append(c.partial, s...)
			if len(c.partial) >= goPartialBytes {
				c.flush()
			}
			return
		}
		if len(c.partial) > 0 {
			part := s[:i]
			if room := goPartialBytes - len(c.partial); len(part) > room {
				part = part[:max(room, 0)]
			}
			c.partial = append(c.partial, part...)
			c.line(string(c.partial))
			c.partial = c.partial[:0]
		} else {
			c.line(s[:i])
		}
		s = s[i+1:]
	}
}

func (c *collector) flush() {
	if len(c.partial) > 0 {
		c.line(string(c.partial))
		c.partial = c.partial[:0]
	}
}

func (c *collector) line(l string) {
	l = strings.TrimRight(l, "\r")
	if c.pkg {
		for _, m := range []string{"[build failed]", "[setup failed]"} {
			if strings.Contains(l, m) && len(c.marks) < 4 {
				c.marks = append(c.marks, m)
			}
		}
		if goPkgFraming.MatchString(l) {
			return
		}
	} else if goFraming.MatchString(l) {
		return
	}
	l = clipMark(l, goLineBytes)
	if c.panicLine != "" {
		if len(c.panicBody) < goPanicLines {
			c.panicBody = append(c.panicBody, l)
		}
		return
	}
	if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
		p := strings.TrimSuffix(strings.TrimSuffix(l, " [recovered, repanicked]"), " [recovered]")
		c.panicLine = p
		c.panicPre = c.lastLines(10)
		return
	}
	if m := goLocRe.FindStringSubmatch(l); m != nil {
		if c.firstLoc == "" {
			c.firstLoc = l
		}
		c.lastLoc = l
		if c.assertLine == "" && goAssertWord.MatchString(m[3]) {
			c.assertLine = l
		}
	}
	c.total++
	if len(c.head) < goHeadLines {
		c.head = append(c.head, l)
		return
	}
	if len(c.tail) < goTailLines {
		c.tail = append(c.tail, l)
		return
	}
	c.tail[c.tailStart] = l
	c.tailStart = (c.tailStart + 1) % goTailLines
}

// all returns the kept lines in order (head, then the tail).
func (c *collector) all() []string {
	out := append([]string{}, c.head...)
	if omitted := c.total - len(c.head) - len(c.tail); omitted > 0 {
		out = append(out, "… ("+strconv.Itoa(omitted)+" lines omitted)")
	}
	out = append(out, c.tail[c.tailStart:]...)
	return append(out, c.tail[:c.tailStart]...)
}

func (c *collector) lastLines(n int) []string {
	all := c.all()
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

func (c *collector) contains(mark string) bool {
	for _, m := range c.marks {
		if m == mark {
			return true
		}
	}
	return false
}

func (c *collector) output() string {
	return trimLines(c.all(), goHeadLines, goTailLines)
}

// message returns the assertion line's text and location.
func (c *collector) message(skip bool) (msg, loc string) {
	l := c.assertLine
	if skip || l == "" {
		l = c.firstLoc
	}
	if skip {
		l = c.lastLoc
	}
	m := goLocRe.FindStringSubmatch(l)
	if m == nil {
		return "", ""
	}
	return text(m[3], MaxMessageBytes), text(m[1]+":"+m[2], MaxNameBytes)
}

// panicCase returns the panic line, the first frame outside the runtime and
// the testing package, and the lines that matter: what the test printed
// just before, the panic and that frame.
func (c *collector) panicCase() (msg, loc, output string) {
	msg = text(c.panicLine, MaxMessageBytes)
	lines := append(append([]string{}, c.panicPre...), c.panicLine)
	type frame struct{ fn, fileLine, file, line string }
	var frames []frame
	for i := 0; i+1 < len(c.panicBody); i++ {
		fn, fl := c.panicBody[i], c.panicBody[i+1]
		if strings.HasPrefix(fn, "\t") || strings.HasPrefix(fn, " ") {
			continue
		}
		if m := goFrameRe.FindStringSubmatch(fl); m != nil {
			frames = append(frames, frame{fn, fl, m[1], m[2]})
			i++
		}
	}
	// The standard library's source root, learnt from the testing and
	// runtime frames: "/usr/local/go/src/".
	goroot := ""
	for _, f := range frames {
		if strings.HasPrefix(f.fn, "testing.") || strings.HasPrefix(f.fn, "runtime.") {
			if root := path.Dir(path.Dir(f.file)) + "/"; strings.HasSuffix(root, "/src/") {
				goroot = root
				break
			}
		}
	}
	for _, f := range frames {
		if strings.HasPrefix(f.fn, "testing.") || strings.HasPrefix(f.fn, "runtime.") ||
			strings.HasPrefix(f.fn, "panic(") || strings.HasPrefix(f.fn, "created by ") ||
			strings.HasPrefix(f.fn, "main.main(") || path.Base(f.file) == "_testmain.go" ||
			(goroot != "" && strings.HasPrefix(f.file, goroot)) {
			continue
		}
		loc = text(f.file+":"+f.line, MaxNameBytes)
		lines = append(lines, f.fn, f.fileLine)
		break
	}
	if loc == "" {
		// No user frame (a timeout, a fatal error): a few lines of the trace.
		n := min(len(c.panicBody), 6)
		lines = append(lines, c.panicBody[:n]...)
	}
	return msg, loc, trimLines(lines, 10, 10)
}
