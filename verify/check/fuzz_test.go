package check

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ratchetloop/ratchet/internal/yamlerr"
	"github.com/ratchetloop/ratchet/verify"
)

// FuzzParseGrade: the grader reply parser never panics, always returns one
// grade per rubric point in rubric order, never passes a point it did not
// read, and reads back any well-formed grade wrapped in prose or a fence.
func FuzzParseGrade(f *testing.F) {
	f.Add(`{"points":[{"name":"correct","pass":true,"reason":"ok"}]}`, uint8(5), "fine")
	f.Add("```json\n{\"points\":[{\"name\":\"format\",\"pass\":\"no\"}]}\n```", uint8(0), "")
	f.Add(`{"points":[{"name":"brief","pass":false},{"name":"brief","pass":true}]} {"points":`, uint8(31), `"quoted" \ reason`)
	f.Add(`{"result":{"points":[]}} {{{ "points": [`, uint8(2), "é")
	f.Fuzz(func(t *testing.T, reply string, mask uint8, reason string) {
		grades, ok := parseGrade(reply, rubric)
		again, ok2 := parseGrade(reply, rubric)
		if ok != ok2 || fmt.Sprint(grades) != fmt.Sprint(again) {
			t.Fatalf("parseGrade is not deterministic on %q", reply)
		}
		if len(grades) != len(rubric) {
			t.Fatalf("%d grades for %d points", len(grades), len(rubric))
		}
		for i, g := range grades {
			if g.name != rubric[i].Name {
				t.Errorf("grade %d is %q, want %q", i, g.name, rubric[i].Name)
			}
			if g.pass && !g.answered {
				t.Errorf("point %q passes without an answer", g.name)
			}
			if !ok && g.answered {
				t.Errorf("point %q answered in an unreadable reply", g.name)
			}
		}

		// Round trip: a well-formed grade in prose with no braces of its own.
		if strings.ContainsAny(reply, "{}") || len(reply) > 1000 {
			return
		}
		var points []map[string]any
		for i, p := range rubric {
			points = append(points, map[string]any{"name": p.Name, "pass": mask&(1<<i) != 0, "reason": reason})
		}
		if mask&8 != 0 {
			points = append(points, map[string]any{"name": "not a rubric point", "pass": true})
		}
		body, err := json.Marshal(map[string]any{"points": points})
		if err != nil {
			t.Fatal(err)
		}
		text := reply + string(body) + reply
		if mask&16 != 0 {
			text = reply + "\n```json\n" + string(body) + "\n```\n" + reply
		}
		grades, ok = parseGrade(text, rubric)
		if !ok {
			t.Fatalf("well-formed grade not read from %q", text)
		}
		for i, g := range grades {
			if want := mask&(1<<i) != 0; !g.answered || g.pass != want {
				t.Errorf("point %q: answered %v pass %v, want pass %v", g.name, g.answered, g.pass, want)
			}
			if utf8.ValidString(reason) && g.reason != reason {
				t.Errorf("point %q: reason %q, want %q", g.name, g.reason, reason)
			}
		}
	})
}

// FuzzGrounding: quote extraction never panics; every claim is a piece of
// the answer with enough words, in order; and an answer is always grounded
// in itself.
func FuzzGrounding(f *testing.F) {
	f.Add(`The report says "the committee met on 3 May".`)
	f.Add("“curly quote with words” and \"straight … with elision\" and \"x\"")
	f.Add("\"a b\n\nc d\" \"e f g\" 27\" screen")
	f.Add(`"bobcat sat on" "...cat sat on..." "İstanbul ǅ ß"`)
	f.Add("\"\xff\xfe bad bytes here\" \"\u200bzero width joins\u200d x\"")
	f.Fuzz(func(t *testing.T, answer string) {
		quotes := extractQuotes(answer)
		pos := 0
		for _, q := range quotes {
			i := strings.Index(answer[pos:], q.raw)
			if i < 0 {
				t.Fatalf("quote %q is not in the answer after byte %d: %q", q.raw, pos, answer)
			}
			pos += i + len(q.raw)
			if len(q.pieces) == 0 {
				t.Errorf("quote %q has no pieces", q.raw)
			}
			words := 0
			for _, w := range strings.Fields(normalizeText(q.raw)) {
				if strings.IndexFunc(w, isWordRune) >= 0 {
					words++
				}
			}
			if words < MinQuoteWords {
				t.Errorf("quote %q has %d words", q.raw, words)
			}
		}
		if strings.TrimSpace(answer) == "" || normalizeText(answer) == "" {
			return
		}
		v, err := Grounding(map[string]string{"self": answer})
		if err != nil {
			t.Fatalf("Grounding(self): %v", err)
		}
		got, err := v.Check(context.Background(), verify.Candidate{Answer: answer})
		if err != nil {
			t.Fatal(err)
		}
		if got.OK != (len(quotes) > 0) {
			t.Errorf("answer %q grounded in itself: ok %v with %d quotes (%s)", answer, got.OK, len(quotes), got.Detail)
		}
		if !utf8.ValidString(got.Detail) || !utf8.ValidString(got.Where) {
			t.Errorf("invalid UTF-8 in %+v", got)
		}
	})
}

var whereLine = regexp.MustCompile(`^line (\d+)(, column (\d+))?$`)

// FuzzSyntax: the in-process syntax checks never fail to run, and place
// errors on a line of the answer (or just after its end).
func FuzzSyntax(f *testing.F) {
	for _, s := range []string{"package main\nfunc f( {\n}", "x := 1", "{\"a\":1,}", "a: [\n", "- a\nb: 1", "\t\"é\": \xff", "---\n...\n---"} {
		f.Add(s)
	}
	checks := map[string]verify.Verifier{}
	for _, lang := range []string{"go", "json", "yaml"} {
		v, err := Syntax(lang)
		if err != nil {
			f.Fatal(err)
		}
		checks[lang] = v
	}
	f.Fuzz(func(t *testing.T, answer string) {
		for lang, v := range checks {
			lines := strings.Count(answer, "\n") + 1
			if lang == "yaml" {
				lines = max(lines, yamlerr.Lines([]byte(answer))) // YAML also breaks lines at \r, NEL, LS and PS
			}
			got, err := v.Check(context.Background(), verify.Candidate{Answer: answer})
			if err != nil {
				t.Fatalf("%s: %v", lang, err)
			}
			if got.OK && got.Where != "" {
				t.Errorf("%s: passed with a place %q", lang, got.Where)
			}
			if got.Where != "" {
				m := whereLine.FindStringSubmatch(got.Where)
				if m == nil {
					t.Fatalf("%s: Where %q is not a line", lang, got.Where)
				}
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines+1 {
					t.Errorf("%s: Where %q is outside the answer's %d lines", lang, got.Where, lines)
				}
			}
			if lang == "json" && got.OK != (json.Valid([]byte(answer)) && strings.TrimSpace(answer) != "") {
				t.Errorf("json: ok %v but json.Valid %v for %q", got.OK, json.Valid([]byte(answer)), answer)
			}
		}
	})
}

// FuzzJSONSchema: the schema check never fails to run on any answer, passes
// only JSON, and always says where a failure is.
func FuzzJSONSchema(f *testing.F) {
	for _, s := range []string{`{"name":"a","tags":[]}`, `{"name":"a","tags":[{"v":"x"}],"x":1.5}`, `{"name":"a\nvalidating /anyOf/0: x","tags":[],"x":[]}`, `[`, `{"odd key":1}`} {
		f.Add(s)
	}
	v, err := JSONSchema(json.RawMessage(personSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		got, err := v.Check(context.Background(), verify.Candidate{Answer: answer})
		if err != nil {
			t.Fatalf("Check(%q): %v", answer, err)
		}
		if got.OK && !json.Valid([]byte(answer)) {
			t.Errorf("passed invalid JSON %q", answer)
		}
		if !got.OK && !strings.HasPrefix(got.Where, "$") && !strings.HasPrefix(got.Where, "line ") {
			t.Errorf("failure without a place: %+v", got)
		}
	})
}

// FuzzOutput: the typed answer's check never fails to run or panics on
// any answer (its items probed one at a time included), passes only JSON,
// and says where a schema failure is.
func FuzzOutput(f *testing.F) {
	for _, s := range []string{`{"items":[{"price":1},{"price":-1}]}`, `{"items":[{"price":"x"},1,null]}`, `{"items":{}}`, `[`, `{"items":[[[]]]}`} {
		f.Add(s)
	}
	v, err := Output(json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","maxItems":5,"items":{"type":"object","properties":{"price":{"type":"number","minimum":0}},"required":["price"]}}},"required":["items"]}`),
		func(b []byte) error {
			var o struct{ Items []struct{ Price float64 } }
			return json.Unmarshal(b, &o)
		})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		got, err := v.Check(context.Background(), verify.Candidate{Answer: answer})
		if err != nil {
			t.Fatalf("Check(%q): %v", answer, err)
		}
		if got.OK && !json.Valid([]byte(answer)) {
			t.Errorf("passed invalid JSON %q", answer)
		}
		if !got.OK && got.Detail == "" {
			t.Errorf("failure without a reason: %+v", got)
		}
	})
}
