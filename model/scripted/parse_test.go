package scripted_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ratchetloop/ratchet/model/scripted"
)

// scriptOpts compares Scripts by their exported fields, showing JSON as text.
var scriptOpts = cmp.Options{
	cmpopts.IgnoreUnexported(scripted.Script{}),
	cmp.Transformer("json", func(r json.RawMessage) string { return string(r) }),
}

const demoPath = "testdata/demo.yaml"

// demoScript is what testdata/demo.yaml parses to.
func demoScript() scripted.Script {
	return scripted.Script{
		Name: "demo",
		File: demoPath,
		Turns: []scripted.Turn{
			{
				Text: "I'll add the numbers first.",
				Tools: []scripted.ToolCall{
					{Name: "add", Args: json.RawMessage(`{"a":2,"b":3}`)},
					{Name: "add", RawArgs: new(`{"a": 2,`)},
				},
				Line: 4,
			},
			{Finish: &scripted.Finish{Answer: "6", Confidence: new(0.9)}, Line: 10},
			{Expect: []string{`expected "5"`}, Finish: &scripted.Finish{Answer: "5", Confidence: new(0.95)}, Line: 11},
			{Line: 13},
			{Error: "overloaded", Line: 14},
			{Delay: 50 * time.Millisecond, Text: "slow", Usage: &scripted.Usage{InputTokens: 100, OutputTokens: 20}, Line: 15},
		},
	}
}

func TestParseDemo(t *testing.T) {
	data, err := os.ReadFile(demoPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scripted.Parse(data, demoPath)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff(demoScript(), got, scriptOpts); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want scripted.Script
	}{
		{
			name: "no turns",
			src:  "turns: []",
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{}},
		},
		{
			name: "name and empty turn",
			src:  "name: x\nturns:\n  - {}\n",
			want: scripted.Script{Name: "x", File: "t.yaml", Turns: []scripted.Turn{{Line: 3}}},
		},
		{
			name: "text tools and finish together",
			src: `turns:
  - text: both
    tools: [{name: search, args: {q: go}}]
    finish: {answer: done}
`,
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{{
				Text:   "both",
				Tools:  []scripted.ToolCall{{Name: "search", Args: json.RawMessage(`{"q":"go"}`)}},
				Finish: &scripted.Finish{Answer: "done"},
				Line:   2,
			}}},
		},
		{
			name: "confidence out of range is allowed",
			src:  "turns:\n  - finish: {answer: a, confidence: 1.5}\n  - finish: {answer: b, confidence: -1}\n",
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{
				{Finish: &scripted.Finish{Answer: "a", Confidence: new(1.5)}, Line: 2},
				{Finish: &scripted.Finish{Answer: "b", Confidence: new(-1.0)}, Line: 3},
			}},
		},
		{
			name: "scalars are taken as written",
			src:  "turns:\n  - {text: 42, finish: {answer: 6}, expect: yes}\n",
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{
				{Text: "42", Finish: &scripted.Finish{Answer: "6"}, Expect: []string{"yes"}, Line: 2},
			}},
		},
		{
			name: "raw args verbatim, empty too; tools may be called finish",
			src: `turns:
  - tools:
      - {name: a, raw_args: ''}
      - {name: b, raw_args: "not json"}
      - {name: c}
      - {name: finish, args: {answer: [1]}}
`,
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{{
				Tools: []scripted.ToolCall{
					{Name: "a", RawArgs: new("")},
					{Name: "b", RawArgs: new("not json")},
					{Name: "c"},
					{Name: "finish", Args: json.RawMessage(`{"answer":[1]}`)},
				},
				Line: 2,
			}}},
		},
		{
			name: "args become JSON in YAML order",
			src: `turns:
  - tools:
      - name: t
        args:
          z: 1
          a: {nested: [1, 2.5, -3, 0x1f, 1e3, 12345678901234567890]}
          s: "<&>\"é"
          n: ~
          b: [true, false, yes]
          d: 2024-01-02
          1: int key
          m: {}
          l: []
`,
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{{
				Tools: []scripted.ToolCall{{Name: "t", Args: json.RawMessage(
					`{"z":1,"a":{"nested":[1,2.5,-3,31,1000,12345678901234567890]},"s":"<&>\"é","n":null,` +
						`"b":[true,false,"yes"],"d":"2024-01-02","1":"int key","m":{},"l":[]}`)}},
				Line: 2,
			}}},
		},
		{
			name: "expect list, delay, full usage",
			src: `turns:
  - expect: [a, b]
    delay: 1m30s
    usage: {input_tokens: 1, output_tokens: 2, cache_read_tokens: 3, cache_write_tokens: 4}
`,
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{{
				Expect: []string{"a", "b"},
				Delay:  90 * time.Second,
				Usage:  &scripted.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4},
				Line:   2,
			}}},
		},
		{
			name: "error with expect and delay",
			src:  "turns:\n  - {error: boom, expect: x, delay: 0s}\n",
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{{Error: "boom", Expect: []string{"x"}, Line: 2}}},
		},
		{
			name: "anchors and aliases",
			src: `turns:
  - &t {text: again, tools: [&call {name: t, args: &args {k: v}}]}
  - *t
  - tools: [*call, {name: u, args: *args}]
`,
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{
				{Text: "again", Tools: []scripted.ToolCall{{Name: "t", Args: json.RawMessage(`{"k":"v"}`)}}, Line: 2},
				{Text: "again", Tools: []scripted.ToolCall{{Name: "t", Args: json.RawMessage(`{"k":"v"}`)}}, Line: 3},
				{Tools: []scripted.ToolCall{
					{Name: "t", Args: json.RawMessage(`{"k":"v"}`)},
					{Name: "u", Args: json.RawMessage(`{"k":"v"}`)},
				}, Line: 4},
			}},
		},
		{
			name: "block scalars",
			src:  "turns:\n  - text: |\n      line one\n      line two\n",
			want: scripted.Script{File: "t.yaml", Turns: []scripted.Turn{{Text: "line one\nline two\n", Line: 2}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scripted.Parse([]byte(tt.src), "t.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, scriptOpts); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // the whole error, one problem per line
	}{
		{"empty", "", "t.yaml: empty script: want a mapping with a turns list"},
		{"only a comment", "# nothing\n", "t.yaml: empty script: want a mapping with a turns list"},
		{"syntax", "turns:\n  - {text: [\n", "t.yaml:2: invalid YAML: did not find expected node content"},
		{"not a mapping", "- text: hi\n", "t.yaml:1: a script must be a mapping with a turns list, not a list"},
		{"missing turns", "name: x\n", "t.yaml:1: the script has no turns list"},
		{
			"unknown and duplicate keys",
			"name: a\nname: b\nturn: []\nturns: []\n",
			"t.yaml:2: duplicate key \"name\" (first at line 1)\n" +
				"t.yaml:3: unknown key \"turn\" in the script (want name, turns)",
		},
		{
			"wrong top-level types",
			"name: [x]\nturns: {a: 1}\n",
			"t.yaml:1: name must be a string, not a list\n" +
				"t.yaml:2: turns must be a list, not a mapping",
		},
		{"empty name", "name: ''\nturns: []\n", `t.yaml:1: name is empty; leave it out for the default "scripted"`},
		{
			"turn is not a mapping",
			"turns:\n  - hello\n  -\n",
			"t.yaml:2: turn 1: a turn must be a mapping (write {} for an empty reply), not a string\n" +
				"t.yaml:3: turn 2: a turn must be a mapping (write {} for an empty reply), not null",
		},
		{
			"unknown turn key",
			"turns:\n  - {txt: hi}\n",
			`t.yaml:2: turn 1: unknown key "txt" in a turn (want thinking, text, tools, finish, expect, error, delay, usage)`,
		},
		{
			"tool problems",
			`turns:
  - tools:
      - args: {a: 1}
      - name: ""
      - {name: t, args: {a: 1}, raw_args: "{}"}
      - {name: t, args: [1]}
      - {name: t, raw_args: {a: 1}}
      - {name: t, arg: {}}
      - just a string
`,
			"t.yaml:3: turn 1, tool 1: missing name\n" +
				"t.yaml:4: turn 1, tool 2: name is empty\n" +
				"t.yaml:5: turn 1, tool 3: args and raw_args are both set; use one\n" +
				"t.yaml:6: turn 1, tool 4: args must be a mapping (a JSON object), not a list; use raw_args for anything else\n" +
				"t.yaml:7: turn 1, tool 5: raw_args must be a string, not a mapping\n" +
				"t.yaml:8: turn 1, tool 6: unknown key \"arg\" in a tool call (want name, args, raw_args)\n" +
				"t.yaml:9: turn 1, tool 7: a tool call must be a mapping, not a string",
		},
		{
			"tools not a list",
			"turns:\n  - tools: {name: t}\n",
			"t.yaml:2: turn 1: tools must be a list, not a mapping",
		},
		{
			"args values",
			"turns:\n  - tools:\n      - name: t\n        args:\n          a: .inf\n          b: {x: 1, x: 2}\n          [k]: v\n          <<: {m: 1}\n",
			"t.yaml:5: turn 1, tool 1, args: .inf is not a JSON number\n" +
				"t.yaml:6: turn 1, tool 1, args: duplicate key \"x\" (first at line 6)\n" +
				"t.yaml:7: turn 1, tool 1, args: keys must be strings, not a list\n" +
				"t.yaml:8: turn 1, tool 1, args: merge keys (<<) are not supported",
		},
		{
			"args keys",
			"turns:\n  - tools:\n      - name: t\n        args:\n          b: {x: 1, x: 2}\n          [k]: v\n          <<: {m: 1}\n",
			"t.yaml:5: turn 1, tool 1, args: duplicate key \"x\" (first at line 5)\n" +
				"t.yaml:6: turn 1, tool 1, args: keys must be strings, not a list\n" +
				"t.yaml:7: turn 1, tool 1, args: merge keys (<<) are not supported",
		},
		{
			"args alias cycle",
			"turns:\n  - tools: [{name: t, args: &a {self: *a}}]\n",
			"t.yaml:2: turn 1, tool 1, args: nested too deeply",
		},
		{
			"finish problems",
			`turns:
  - finish: {confidence: "0.9"}
  - finish: {answer: [x], confidence: .nan}
  - finish: done
  - finish: {answer: a, why: b}
`,
			"t.yaml:2: turn 1, finish: confidence must be a number, not a string\n" +
				"t.yaml:2: turn 1, finish: missing answer (send other shapes as a tool call named \"finish\")\n" +
				"t.yaml:3: turn 2, finish: answer must be a string, not a list\n" +
				"t.yaml:3: turn 2, finish: confidence must be a finite number, not .nan\n" +
				"t.yaml:4: turn 3: finish must be a mapping, not a string\n" +
				"t.yaml:5: turn 4: unknown key \"why\" in finish (want answer, confidence)",
		},
		{
			"expect problems",
			"turns:\n  - expect: {a: 1}\n  - expect: [ok, [x], '']\n",
			"t.yaml:2: turn 1: expect must be a string or a list of strings, not a mapping\n" +
				"t.yaml:3: turn 2: expect must be a string, not a list\n" +
				"t.yaml:3: turn 2: an empty expect string matches anything",
		},
		{
			"delay problems",
			"turns:\n  - delay: 50\n  - delay: soon\n  - delay: -1s\n  - delay: [1s]\n",
			"t.yaml:2: turn 1: bad delay \"50\": want a duration such as 50ms or 2s\n" +
				"t.yaml:3: turn 2: bad delay \"soon\": want a duration such as 50ms or 2s\n" +
				"t.yaml:4: turn 3: delay \"-1s\" is negative\n" +
				"t.yaml:5: turn 4: delay must be a string, not a list",
		},
		{
			"usage problems",
			"turns:\n  - usage: {input_tokens: 1.5, output_tokens: -2, cached: 1}\n  - usage: 5\n  - usage: {input_tokens: 99999999999999999999}\n",
			"t.yaml:2: turn 1, usage: input_tokens must be a whole number, not a number\n" +
				"t.yaml:2: turn 1, usage: output_tokens must not be negative\n" +
				"t.yaml:2: turn 1: unknown key \"cached\" in usage (want input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)\n" +
				"t.yaml:3: turn 2: usage must be a mapping, not a number\n" +
				"t.yaml:4: turn 3, usage: input_tokens must be a whole number, not a number",
		},
		{
			"error problems",
			"turns:\n  - {error: '', text: hi, tools: [], finish: {answer: a}, usage: {}}\n  - error: [x]\n",
			"t.yaml:2: turn 1: error is empty\n" +
				"t.yaml:2: turn 1: error cannot be combined with text, tools, finish, usage: an error turn has no reply\n" +
				"t.yaml:3: turn 2: error must be a string, not a list",
		},
		{
			"merge key in a turn",
			"turns:\n  - {<<: {text: a}}\n",
			"t.yaml:2: turn 1: merge keys (<<) are not supported",
		},
		{
			"two documents",
			"turns: []\n---\nturns: []\n",
			"t.yaml:2: a script is one YAML document; found another",
		},
		{
			"problems found late are sorted by line",
			"turns:\n  - error: x\n    text: hi\n    delay: 5\n",
			"t.yaml:2: turn 1: error cannot be combined with text: an error turn has no reply\n" +
				"t.yaml:4: turn 1: bad delay \"5\": want a duration such as 50ms or 2s",
		},
		{
			"problems everywhere, in line order",
			`name: 1
bogus: true
turns:
  - text: hi
    tools: [{args: {}}]
  - finish: {answer: a, confidence: high}
  - delay: 5
    error: ""
`,
			"t.yaml:2: unknown key \"bogus\" in the script (want name, turns)\n" +
				"t.yaml:5: turn 1, tool 1: missing name\n" +
				"t.yaml:6: turn 2, finish: confidence must be a number, not a string\n" +
				"t.yaml:7: turn 3: bad delay \"5\": want a duration such as 50ms or 2s\n" +
				"t.yaml:8: turn 3: error is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scripted.Parse([]byte(tt.src), "t.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded with %+v; want error:\n%s", s, tt.want)
			}
			var se *scripted.ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error is %T, want *scripted.ScriptError", err)
			}
			if len(se.Problems) != strings.Count(tt.want, "\n")+1 {
				t.Errorf("got %d problems, want %d", len(se.Problems), strings.Count(tt.want, "\n")+1)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Parse error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNoFilename(t *testing.T) {
	_, err := scripted.Parse([]byte("turns: 1\n"), "")
	if want := "inline:1: turns must be a list, not a number"; err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %q", err, want)
	}
	s, err := scripted.Parse([]byte("turns: []\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.File != "" {
		t.Errorf("File = %q, want empty", s.File)
	}
}

func TestLoad(t *testing.T) {
	m, err := scripted.Load(demoPath, scripted.Config{Quiet: true})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := m.Name(), "demo"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if got, want := m.Turns(), 6; got != want {
		t.Errorf("Turns() = %d, want %d", got, want)
	}
	if got := m.Played(); got != 0 {
		t.Errorf("Played() = %d before any call, want 0", got)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := scripted.Load("testdata/no-such-file.yaml", scripted.Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: err = %v, want os.ErrNotExist", err)
	}
	dir := t.TempDir()
	path := dir + "/bad.yaml"
	if err := os.WriteFile(path, []byte("turns:\n  - tools: [{}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scripted.Load(path, scripted.Config{})
	if want := path + ":2: turn 1, tool 1: missing name"; err == nil || err.Error() != want {
		t.Errorf("Load error = %v, want %q", err, want)
	}
}

// TestParseAliasBombs checks that aliases cannot make a small script expand
// without bound.
func TestParseAliasBombs(t *testing.T) {
	var nested strings.Builder
	nested.WriteString("turns:\n  - tools:\n      - name: t\n        args:\n          l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&nested, "          l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	var wide strings.Builder
	wide.WriteString("turns:\n  - &t {tools: &tools [")
	for range 2000 {
		wide.WriteString("{name: t}, ")
	}
	wide.WriteString("]}\n")
	for range 1000 {
		wide.WriteString("  - *t\n")
	}
	var long strings.Builder
	long.WriteString("turns:\n  - tools:\n      - {name: t, raw_args: &r '" + strings.Repeat("x", 1<<20) + "'}\n")
	for range 20 {
		long.WriteString("      - {name: t, raw_args: *r}\n")
	}
	tests := []struct{ name, src, want string }{
		{"nested", nested.String(), "script too large: more than 1048576 values once aliases are expanded"},
		{"wide", wide.String(), "script too large: more than 1048576 values once aliases are expanded"},
		{"long", long.String(), "script too large: args and raw_args total more than 16777216 bytes once aliases are expanded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := scripted.Parse([]byte(tt.src), "t.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %.300v, want it to contain %q", err, tt.want)
			}
			if elapsed := time.Since(start); elapsed > 20*time.Second {
				t.Errorf("Parse took %v", elapsed)
			}
		})
	}
}
