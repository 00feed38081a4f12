package testreport

import (
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// maxElementText caps the text kept from one <failure>, <error>,
// <skipped>, <system-out> or <system-err> element.
const maxElementText = 64 << 10

// ParseJUnitXML reads a JUnit XML report, as written by
// `pytest --junitxml=FILE` or any other JUnit producer.
//
// Each <testcase> becomes a Case: <failure> is Failed, <error> is Errored,
// <skipped> is Skipped, none of them is Passed. For pytest's failure text
// the Message is the first "E   " line (or the message attribute when it
// says more, as in `failed on setup with "..."`), the Location is the
// "file.py:NN:" line that follows the E lines, and the Output keeps the
// ">" source lines, the E lines and the location lines. Captured
// <system-out> and <system-err> are used only when the failure has no text.
//
// Complete is true when the root element was closed. A document that is cut
// off or broken gives the cases read so far, Complete false and no error; the
// error is for input with no <testsuite> or <testsuites> element at all.
func ParseJUnitXML(r io.Reader) (Report, error) {
	rep := Report{Runner: "junit"}
	var b builder
	dec := xml.NewDecoder(io.LimitReader(r, MaxXMLBytes))
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	dec.Strict = true

	type suite struct{ pytest bool }
	var (
		depth     int
		suites    []suite
		sawSuite  bool
		rootDepth = -1
		tc        *junitCase
		elem      *junitElem // the failure/error/skipped/system-* being read
		elemDepth int
	)
	for {
		tok, err := dec.Token()
		if err != nil {
			break // io.EOF when the input ended before the root closed; or a syntax error
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "testsuites", "testsuite":
				if !sawSuite {
					rootDepth = depth
				}
				sawSuite = true
				s := suite{}
				if t.Name.Local == "testsuite" {
					s.pytest = attr(t, "name") == "pytest"
					if s.pytest {
						rep.Runner = "pytest"
					}
				} else if len(suites) > 0 {
					s = suites[len(suites)-1]
				}
				if len(suites) < 64 {
					suites = append(suites, s)
				}
			case "testcase":
				if tc != nil { // a testcase inside a testcase: close the outer one
					b.add(tc.toCase(), false)
				}
				if !sawSuite {
					rootDepth, sawSuite = depth, true
				}
				tc = &junitCase{
					name: attr(t, "name"), class: attr(t, "classname"),
					file: attr(t, "file"), line: attr(t, "line"), depth: depth,
				}
				if len(suites) > 0 {
					tc.pytest = suites[len(suites)-1].pytest
				}
			case "failure", "error", "skipped", "system-out", "system-err":
				if tc != nil && elem == nil {
					elem = &junitElem{kind: t.Name.Local, message: attr(t, "message"), typ: attr(t, "type")}
					elemDepth = depth
				}
			}
		case xml.CharData:
			if elem != nil && len(elem.text) < maxElementText {
				room := maxElementText - len(elem.text)
				if len(t) > room {
					t = t[:room]
				}
				elem.text = append(elem.text, t...)
			}
		case xml.EndElement:
			if elem != nil && depth == elemDepth {
				tc.add(elem)
				elem = nil
			}
			if tc != nil && depth == tc.depth {
				b.add(tc.toCase(), false)
				tc = nil
			}
			if (t.Name.Local == "testsuite" || t.Name.Local == "testsuites") && len(suites) > 0 {
				suites = suites[:len(suites)-1]
			}
			if depth == rootDepth {
				rep.Complete = true
			}
			depth--
		}
		if rep.Complete {
			break
		}
	}
	if tc != nil { // cut off inside a testcase: keep what it said
		if elem != nil {
			tc.add(elem)
		}
		b.add(tc.toCase(), false)
	}
	b.finish(&rep, false)
	if !sawSuite {
		return rep, errors.New("testreport: no JUnit <testsuite> or <testsuites> element found")
	}
	return rep, nil
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

type junitElem struct {
	kind, message, typ string
	text               []byte
}

type junitCase struct {
	name, class, file, line string
	pytest                  bool
	depth                   int
	result                  *junitElem // the first failure or error, else skipped
	status                  Status
	sysout                  []byte
}

func (c *junitCase) add(e *junitElem) {
	switch e.kind {
	case "system-out", "system-err":
		if len(c.sysout) < maxElementText {
			c.sysout = append(c.sysout, e.text...)
			c.sysout = append(c.sysout, '\n')
		}
		return
	case "failure":
		if c.status != Failed {
			c.status = Failed
			c.result = e // a failure says more than an error in teardown
		}
	case "error":
		if c.status != Failed && c.status != Errored {
			c.status = Errored
			c.result = e
		}
	case "skipped":
		if c.status == "" {
			c.status = Skipped
			c.result = e
		}
	}
}

var (
	// "test_calc.py:13: AssertionError", "test_calc.py:18: ", "x.py:1: in <module>"
	pyLocRe = regexp.MustCompile(`^(\S.*?):(\d+):(?:\s|$)`)
	pyELine = regexp.MustCompile(`^E(?:\s|$)`)
)

func (c *junitCase) toCase() Case {
	out := Case{
		Name:   text(c.name, MaxNameBytes),
		Suite:  text(c.class, MaxNameBytes),
		Status: c.status,
	}
	if out.Status == "" {
		out.Status = Passed
	}
	if c.file != "" && c.line != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(c.line)); err == nil && n >= 0 {
			if c.pytest {
				n++ // pytest's line attribute counts from 0
			}
			out.Location = text(c.file+":"+strconv.Itoa(n), MaxNameBytes)
		}
	}
	if c.result == nil {
		return out
	}
	attrMsg := firstLine(c.result.message)
	body := strings.Split(strings.ReplaceAll(string(c.result.text), "\r\n", "\n"), "\n")

	// pytest's long traceback: "E   " lines hold the assertion, the
	// "file.py:NN: Exc" line after them the place it was raised.
	firstE := -1
	for i, l := range body {
		if pyELine.MatchString(l) {
			firstE = i
			break
		}
	}
	if firstE >= 0 {
		eMsg := strings.TrimSpace(strings.TrimPrefix(body[firstE], "E"))
		out.Message = eMsg
		if attrMsg != "" && strings.Contains(attrMsg, eMsg) {
			out.Message = attrMsg
		}
		loc := ""
		for _, l := range body[firstE:] {
			if m := pyLoc(l); m != nil {
				loc = m[1] + ":" + m[2]
				break
			}
		}
		if loc == "" {
			for _, l := range body[:firstE] {
				if m := pyLocRe.FindStringSubmatch(l); m != nil {
					loc = m[1] + ":" + m[2]
				}
			}
		}
		if loc != "" {
			out.Location = text(loc, MaxNameBytes)
		}
		var rel []string
		for _, l := range body {
			if strings.HasPrefix(l, ">") || pyELine.MatchString(l) || pyLocRe.MatchString(l) {
				rel = append(rel, l)
			}
		}
		out.Output = trimLines(rel, 5, 25)
	} else {
		out.Message = attrMsg
		if out.Message == "" {
			for _, l := range body {
				if strings.TrimSpace(l) != "" {
					out.Message = l
					break
				}
			}
		}
		if c.result.kind != "skipped" {
			out.Output = trimLines(body, 10, 20)
			if out.Output == "" && len(c.sysout) > 0 {
				out.Output = trimLines(strings.Split(string(c.sysout), "\n"), 0, 10)
			}
		}
	}
	if out.Message == "" && c.result.typ != "" && c.result.kind != "skipped" {
		out.Message = c.result.typ
	}
	out.Message = text(out.Message, MaxMessageBytes)
	return out
}

// pyLoc matches a pytest location line, never an E or ">" line.
func pyLoc(l string) []string {
	if strings.HasPrefix(l, ">") || pyELine.MatchString(l) {
		return nil
	}
	return pyLocRe.FindStringSubmatch(l)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
