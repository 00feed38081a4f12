package check

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ratchetloop/ratchet/verify"
)

// verdictCase is one row of a verifier table test.
type verdictCase struct {
	name   string
	answer string
	peers  []string
	ok     bool
	conf   float64
	detail string
	where  string
}

// runVerdicts checks every case against v, comparing the whole verdict.
func runVerdicts(t *testing.T, v verify.Verifier, cases []verdictCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Check(context.Background(), verify.Candidate{Answer: tt.answer, Confidence: 0.5, Attempt: 1, Peers: tt.peers})
			if err != nil {
				t.Fatalf("Check(%q): unexpected error %v", tt.answer, err)
			}
			want := verify.Verdict{Check: v.Name(), OK: tt.ok, Confidence: tt.conf, Detail: tt.detail, Where: tt.where, Provenance: v.Provenance()}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// mustNew fails the test when a constructor fails:
// mustNew(t)(Syntax("go")).
func mustNew(t *testing.T) func(verify.Verifier, error) verify.Verifier {
	return func(v verify.Verifier, err error) verify.Verifier {
		t.Helper()
		if err != nil {
			t.Fatalf("constructor: %v", err)
		}
		return v
	}
}

// wantConfigError checks that a constructor failed with exactly msg.
func wantConfigError(t *testing.T, v verify.Verifier, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("constructor succeeded (%v %s); want error %q", v, v.Name(), msg)
	}
	if v != nil {
		t.Errorf("constructor returned a verifier alongside error %q", err)
	}
	if diff := cmp.Diff(msg, err.Error()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestLineCol(t *testing.T) {
	tests := []struct {
		src       string
		off       int
		line, col int
	}{
		{"", 0, 1, 1},
		{"abc", 0, 1, 1},
		{"abc", 3, 1, 4},
		{"ab\ncd", 3, 2, 1},
		{"ab\ncd", 4, 2, 2},
		{"é\nxé y", 6, 2, 3}, // columns count runes: é is 2 bytes
		{"abc", -5, 1, 1},
		{"abc", 99, 1, 4},
	}
	for _, tt := range tests {
		if line, col := lineCol(tt.src, tt.off); line != tt.line || col != tt.col {
			t.Errorf("lineCol(%q, %d) = %d:%d, want %d:%d", tt.src, tt.off, line, col, tt.line, tt.col)
		}
	}
}
