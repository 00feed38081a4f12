package taskfile

import "testing"

func TestDidYouMean(t *testing.T) {
	known := []string{"steps", "model_calls", "tool_calls", "tokens", "cost", "time", "goal", "mode"}
	for _, tc := range []struct{ word, want string }{
		{"stpes", `; did you mean "steps"?`}, // a swap
		{"step", `; did you mean "steps"?`},  // a missing letter
		{"tokns", `; did you mean "tokens"?`},
		{"toolcalls", `; did you mean "tool_calls"?`},
		{"colour", ""}, // nothing close
		{"go", ""},     // too short to guess from
		{"widgets", ""},
	} {
		if got := DidYouMean(tc.word, known); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
