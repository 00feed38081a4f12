package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/verify"
)

var sources = map[string]string{
	"report.txt": "The committee met on 3 May.\nIt concluded that   the bridge is SAFE for traffic — pending a final review.\n",
	"notes.md":   "Revenue grew by 12% in 2023, driven by exports. The “new plant” opened in March; it’s the largest in the region.",
}

func TestGrounding(t *testing.T) {
	v := mustNew(t)(Grounding(sources))
	if v.Name() != "grounding" || v.Provenance() != verify.Grounding {
		t.Errorf("name %q, provenance %q", v.Name(), v.Provenance())
	}
	runVerdicts(t, v, []verdictCase{
		{name: "exact", answer: `The report says "the committee met on 3 May".`, ok: true, conf: 1, detail: "all 1 quote found in the sources"},
		{name: "case, space, dash and full stop", answer: "It found “the bridge is safe for traffic - pending a final review.”", ok: true, conf: 1, detail: "all 1 quote found in the sources"},
		{name: "curly apostrophe and quotes in the source", answer: `Notes: "it's the largest in the region" and “The "new plant" opened in March”`, ok: true, conf: 1, detail: "all 2 quotes found in the sources"},
		{name: "line break inside a quote", answer: "\"revenue grew\nby 12%\"", ok: true, conf: 1, detail: "all 1 quote found in the sources"},
		{name: "ellipsis", answer: `"The committee met … the bridge is safe"`, ok: true, conf: 1, detail: "all 1 quote found in the sources"},
		{name: "ellipsis keeps order", answer: `"the bridge is safe ... The committee met"`, conf: 1,
			detail: `1 of 1 quote not found in any source (notes.md, report.txt): "the bridge is safe ... The committee met"`, where: `"the bridge is safe ... The committee met"`},
		{name: "short quotes are not claims", answer: `It is "safe" and "very safe" says "the committee met on 3 May"`, ok: true, conf: 1, detail: "all 1 quote found in the sources"},
		{name: "invented", answer: `Revenue "grew by 15% in 2023" and "the committee met on 3 May" and "the bridge is unsafe"`, conf: 1,
			detail: `2 of 3 quotes not found in any source (notes.md, report.txt): "grew by 15% in 2023", "the bridge is unsafe"`, where: `"grew by 15% in 2023"`},
		{name: "word boundaries", answer: `"rew by 12%" and "grew by 12% in 202"`, conf: 1,
			detail: `2 of 2 quotes not found in any source (notes.md, report.txt): "rew by 12%", "grew by 12% in 202"`, where: `"rew by 12%"`},
		{name: "boundary at punctuation", answer: `"grew by 12%" and "in 2023, driven by"`, ok: true, conf: 1, detail: "all 2 quotes found in the sources"},
		{name: "across sources", answer: `"met on 3 May. Revenue grew"`, conf: 1,
			detail: `1 of 1 quote not found in any source (notes.md, report.txt): "met on 3 May. Revenue grew"`, where: `"met on 3 May. Revenue grew"`},
		{name: "no quotes", answer: "The bridge is safe.", conf: 1,
			detail: "the answer quotes nothing: cite the sources with quotes, copying at least 3 words word for word in double quotes"},
		{name: "stray quote across a paragraph", answer: "He said \"hello.\n\nThen \"the committee met on 3 May\" was noted.", ok: true, conf: 1, detail: "all 1 quote found in the sources"},
	})
	t.Run("allow no quotes", func(t *testing.T) {
		runVerdicts(t, mustNew(t)(Grounding(sources, AllowNoQuotes())), []verdictCase{
			{name: "none", answer: "The bridge is safe.", ok: true, conf: 1, detail: "the answer quotes nothing, which is allowed"},
			{name: "quotes still checked", answer: `"the bridge is unsafe"`, conf: 1,
				detail: `1 of 1 quote not found in any source (notes.md, report.txt): "the bridge is unsafe"`, where: `"the bridge is unsafe"`},
		})
	})
	t.Run("missing list is capped", func(t *testing.T) {
		var b strings.Builder
		for i := range 7 {
			fmt.Fprintf(&b, "\"invented claim number %d\" ", i)
		}
		runVerdicts(t, v, []verdictCase{{name: "seven", answer: b.String(), conf: 1,
			detail: `7 of 7 quotes not found in any source (notes.md, report.txt): "invented claim number 0", "invented claim number 1", "invented claim number 2", "invented claim number 3", "invented claim number 4", and 2 more`,
			where:  `"invented claim number 0"`}})
	})
}

func TestExtractQuotes(t *testing.T) {
	tests := []struct {
		answer string
		want   []string
	}{
		{`no quotes here`, nil},
		{`"one two three"`, []string{"one two three"}},
		{`“one two three” and "four five six"`, []string{"one two three", "four five six"}},
		{`"one two" "three four five"`, []string{"three four five"}},
		{`{"key": "value", "k2": "v"}`, nil},                                           // JSON: spans between keys are not claims
		{`“curly "straight inside" still”`, []string{`curly "straight inside" still`}}, // no nesting
		{`"- - -" and "... ... ..."`, nil},                                             // words need a letter or digit
		{`unclosed "one two three`, nil},
		{"\"a b\n\nc d\" \"e f g\"", []string{"e f g"}},              // a stray quote, then a closing one
		{`a 27" screen, "one two three"`, []string{"one two three"}}, // an inch mark
		{`"one two three "`, []string{"one two three "}},
	}
	for _, tt := range tests {
		var got []string
		for _, q := range extractQuotes(tt.answer) {
			got = append(got, q.raw)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("extractQuotes(%q) mismatch (-want +got):\n%s", tt.answer, diff)
		}
	}
}

func TestGroundingConfig(t *testing.T) {
	tests := []struct {
		name    string
		sources map[string]string
		msg     string
	}{
		{"none", nil, "grounding check: no sources given; the quotes need texts to be found in"},
		{"empty name", map[string]string{" ": "text"}, "grounding check: a source has an empty name"},
		{"empty text", map[string]string{"a.txt": "text", "b.txt": " \n"}, `grounding check: source "b.txt" is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Grounding(tt.sources)
			wantConfigError(t, v, err, tt.msg)
		})
	}
}
