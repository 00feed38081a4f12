package progress

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{` { "q" : "x" } `, `{"q":"x"}`},
		{`{"z":[3, {"y":1,"x":[]}],"a":null}`, `{"a":null,"z":[3,{"x":[],"y":1}]}`},
		{`[true,false,-1.5e+3,"a\"b"]`, `[true,false,-1.5e+3,"a\"b"]`},
		{`{}`, `{}`},
		{`{"a":1,}`, `{"a":1,}`}, // invalid: unchanged
		{`{"a":01}`, `{"a":01}`},
		{`{"a":1} x`, `{"a":1} x`},
		{``, ``},
	} {
		if got := string(Canonical(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("Canonical(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzCanonical: model-written arguments are arbitrary bytes. Canonical must
// never panic, must keep valid JSON valid and meaning the same, must be
// idempotent, and must leave invalid JSON alone.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b":[1,2,{"c":"d"}],"a":"\u00e9"}`, `[`, `"\ud800"`, `1e5`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := Canonical(raw)
		if !json.Valid(raw) {
			if string(out) != string(raw) {
				t.Fatalf("invalid input changed: %q -> %q", raw, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("valid %q became invalid %q", raw, out)
		}
		var a, b any
		if json.Unmarshal(raw, &a) == nil && json.Unmarshal(out, &b) == nil && !reflect.DeepEqual(a, b) && !hasDuplicateKeys(raw) {
			t.Fatalf("meaning changed: %q -> %q", raw, out)
		}
		if again := Canonical(out); string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, out, again)
		}
	})
}

// hasDuplicateKeys reports duplicate object keys, where encoding/json keeps
// the last value but Canonical keeps both in order.
func hasDuplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].key {
				if stack[n-1].keys[v] {
					return true
				}
				stack[n-1].keys[v] = true
				stack[n-1].key = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].key = true
		}
	}
}

// BenchmarkDefaultKey keys a typical tool turn, once per step of a loop.
//
//	go test ./progress -run '^$' -bench DefaultKey -benchmem
func BenchmarkDefaultKey(b *testing.B) {
	o := Observation{Kind: Action, Calls: []Call{{Tool: "add", Args: json.RawMessage(`{"a":7,"b":1}`), Result: "8"}}}
	b.ReportAllocs()
	for b.Loop() {
		DefaultKey(o)
	}
}
