package jsonvalid

import (
	"encoding/json"
	"strings"
	"testing"
)

var cases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x"]} `, `{"a":{"b":{}}}`,
	`[1,]`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{a:1}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`,
	`"\u00e9"`, `"\u00g9"`, `"\x"`, "\"a\tb\"", `"\/"`, `"abc`, "\"\xff\"", `tru`, `nulll`, `[null]x`, `{"a":1}}`,
	`[[[]]]`, `[[[]]`, `]`, `}`, `{"a":[}]}`, `"\u12"`, `1 2`, "\u00a0{}", `{"":""}`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func TestValidDepth(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			if got, want := Valid(s), json.Valid(s); got != want {
				t.Errorf("depth %d of %s: Valid = %v, encoding/json says %v", depth, open, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if got, want := Valid(s), json.Valid(s); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

// go test ./internal/jsonvalid -bench . -benchmem
func BenchmarkValid(b *testing.B) {
	args := []byte(`{"path": "src/main.go", "start": 120, "end": 180, "pattern": "func (r \\*run) drive", "regex": true}`)
	b.Run("jsonvalid", func(b *testing.B) {
		for b.Loop() {
			Valid(args)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(args)
		}
	})
}
