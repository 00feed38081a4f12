package check

import (
	"encoding/json"
	"testing"

	"github.com/ratchetloop/ratchet/verify"
	"github.com/ratchetloop/ratchet/verify/verifytest"
)

// TestConformance runs verifytest over every built-in verifier of the
// package.
func TestConformance(t *testing.T) {
	must := func(v verify.Verifier, err error) verify.Verifier {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	answers := func(ss ...string) []verify.Candidate {
		out := make([]verify.Candidate, len(ss))
		for i, s := range ss {
			out[i] = verify.Candidate{Answer: s, Confidence: 0.9, Attempt: 1}
		}
		return out
	}
	grade := `{"points":[{"name":"correct","pass":true,"reason":"r"},{"name":"format","pass":false,"reason":"r"},{"name":"brief","pass":true,"reason":"r"}]}`
	for _, tc := range []struct {
		name string
		v    verify.Verifier
		cfg  verifytest.Config
	}{
		{"equals", Equals("42"), verifytest.Config{Candidates: answers("42", "41")}},
		{"regex", must(Regex(`^TOTAL: \d+$`)), verifytest.Config{Candidates: answers("TOTAL: 5", "total")}},
		{"contains", Contains("a", "b"), verifytest.Config{Candidates: answers("ab", "a")}},
		{"syntax python", must(Syntax("python")), verifytest.Config{Candidates: answers("x = 1\n", "def (:\n")}},
		{"syntax go", must(Syntax("go")), verifytest.Config{Candidates: answers("package p\n", "package\n")}},
		{"syntax json", must(Syntax("json")), verifytest.Config{Candidates: answers(`{"a":1}`, `{"a":`)}},
		{"syntax yaml", must(Syntax("yaml")), verifytest.Config{Candidates: answers("a: 1\n", "a: [\n")}},
		{"json_schema", must(JSONSchema(json.RawMessage(`{"type":"object","required":["a"]}`))), verifytest.Config{Candidates: answers(`{"a":1}`, `{}`)}},
		{"output_schema", must(Output(json.RawMessage(`{"type":"object","required":["a"]}`), func([]byte) error { return nil })), verifytest.Config{Candidates: answers(`{"a":1}`, `{}`)}},
		{"length", must(Length(1, 10, "words")), verifytest.Config{Candidates: answers("one two", "")}},
		{"grounding", must(Grounding(map[string]string{"src.txt": "The sky is blue."})), verifytest.Config{Candidates: answers(`He said "The sky is blue."`, `"The sky is green."`)}},
		{"grader", must(Grader(graderConfig(replying(grade, nil)))), verifytest.Config{Candidates: answers("TOTAL: 142.50")}},
		{"vote", must(Vote(0)), verifytest.Config{Candidates: []verify.Candidate{{Answer: "a", Confidence: 0.5, Peers: []string{"a", "b"}}, {Answer: "b", Peers: []string{"a", "a"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { verifytest.Run(t, tc.v, tc.cfg) })
	}
}
