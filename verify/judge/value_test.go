package judge

import (
	"strings"
	"testing"
)

// FuzzDecodeReply: whatever the candidate's process sends, the judge
// neither panics nor passes on anything but plain data: what it accepts
// is accepted again unchanged, so the tests' decoder sees only the shapes
// wire.py writes.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range []string{
		`{"ok":[1,2.5,"x",null,true]}`,
		`{"ok":{"$tuple":[1,{"$frozenset":[{"$tuple":[2]}]}]}}`,
		`{"ok":{"$dict":[[{"$tuple":[1,2]},[3]],["k",{"$set":[1]}]]}}`,
		`{"ok":{"$bytes":"AP8="}}`,
		`{"ok":{"$float":"nan"}}`,
		`{"exc":{"type":"ValueError","builtin":true,"msg":"no"}}`,
		`{"uncrossable":"returned a value of type solution.Yes"}`,
		`{"ok":{"$evil":1}}`,
		`{"ok":{"$set":[[1]]}}`,
		`{"ok":1,"exc":{"type":"ValueError","builtin":true,"msg":""}}`,
		`{"ok":1} {"ok":2}`,
		`{"ok":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		out, err := decodeReply(frame)
		if err != nil {
			return
		}
		again, err := decodeReply(out)
		if err != nil && !strings.Contains(string(out), "judge_error") {
			t.Fatalf("accepted %q as %q, which is refused: %v", frame, out, err)
		}
		if err == nil && string(again) != string(out) {
			t.Fatalf("%q became %q, then %q", frame, out, again)
		}
	})
}

func TestDecodeReply(t *testing.T) {
	for _, tc := range []struct{ frame, want string }{
		{`{"ok":{"$tuple":[1,2]}}`, `{"ok":{"$tuple":[1,2]}}`},
		{`{"ok":1.0}`, `{"ok":1.0}`},
		{`{"ok":null}`, `{"ok":null}`},
		{`{"ok":{"$evil":1}}`, "unknown tag"},
		{`{"ok":{"a":1,"b":2}}`, "2 fields"},
		{`{"ok":{"$set":[[1]]}}`, "list as a set element"},
		{`{"ok":{"$dict":[[[1],2]]}}`, "list as a set element or dict key"},
		{`{"ok":{"$bytes":"not base64!"}}`, "illegal base64"},
		{`{"ok":{"$float":"1e400"}}`, "$float"},
		{`{"ok":1,"exc":{"type":"E","builtin":false,"msg":""}}`, "not exactly one"},
		{`{"ok":1,"extra":2}`, `unknown field "extra"`},
		{`{"ok":null,"exc":null}`, "not exactly one"},
		{`{"ok":1} {}`, "data after"},
		{`{"ok":` + strings.Repeat("[", 102) + strings.Repeat("]", 102) + `}`, "nested more than"},
	} {
		out, err := decodeReply([]byte(tc.frame))
		got := string(out)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.frame, got, tc.want)
		}
	}
}

func TestDecodeHello(t *testing.T) {
	for _, tc := range []struct{ frame, want string }{
		{`{"hello":{"functions":["f","négatif"],"classes":[],"constants":[["N",{"$tuple":[1]}]]}}`, ""},
		{`{"hello":{"functions":["_call"],"classes":[],"constants":[]}}`, "not a public identifier"},
		{`{"hello":{"functions":["f"],"classes":["f"],"constants":[]}}`, "named twice"},
		{`{"hello":{"functions":[],"classes":[],"constants":[["N"]]}}`, "pair"},
		{`{"hello":{"functions":[],"classes":[],"constants":[["N",{"$x":1}]]}}`, "unknown tag"},
		{`{"ok":1}`, "unknown field"},
	} {
		_, err := decodeHello([]byte(tc.frame))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.frame, got, tc.want)
		}
	}
}
