package tool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type typedAdd struct {
	A int `json:"a"`
	B int `json:"b"`
}

type typedItem struct {
	Name  string  `json:"name"`
	Price float64 `json:"price"`
	Tags  []string
}

type typedMixed struct {
	Items  []typedItem         `json:"items"`
	Ptr    *typedItem          `json:"ptr,omitempty"`
	Counts map[string]uint8    `json:"counts,omitempty"`
	Any    any                 `json:"any,omitzero"`
	Small  float32             `json:"small,omitempty"`
	OK     bool                `json:"ok"`
	Nested map[string][]string `json:"nested,omitempty"`
	Skip   string              `json:"-"`
	//lint:ignore U1000 an unexported field, which the typed check must skip like encoding/json
	hidden int
}

// typedEmpty has a member with nothing in it: null decodes to it too.
type typedEmpty struct {
	E struct{} `json:"e"`
	A int      `json:"a"`
}

// typedCase is one Func tool's typed check, compared with the schema's.
type typedCase interface {
	// agree fails t if the typed check accepted args that the schema or
	// the tool's own decoding (encoding/json) would not give it alike.
	agree(t *testing.T, args []byte)
}

type typedFor[In any] struct{ ent *entry }

func newTypedFor[In any](t testing.TB) typedFor[In] {
	reg, err := NewRegistry(Func("f", "d", func(context.Context, In) (string, error) { return "", nil }))
	if err != nil {
		t.Fatal(err)
	}
	ent, _ := reg.entry("f")
	if ent.typed == nil {
		t.Fatalf("Func tool of %T has no typed check", *new(In))
	}
	return typedFor[In]{ent}
}

func (c typedFor[In]) agree(t *testing.T, args []byte) {
	p := c.ent.typed.prepare(args)
	if p == nil {
		return
	}
	if msg := checkArgs(c.ent, args); msg != "" {
		t.Fatalf("typed check accepted %s; the schema says %s", args, msg)
	}
	var want In
	if err := json.Unmarshal(args, &want); err != nil {
		t.Fatalf("typed check accepted %s; encoding/json says %v", args, err)
	}
	got := p.(*funcCall[In, string]).in
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(typedMixed{})); diff != "" {
		t.Fatalf("typed check of %s decoded (-encoding/json +typed):\n%s", args, diff)
	}
}

func typedCases(t testing.TB) []typedCase {
	return []typedCase{newTypedFor[typedAdd](t), newTypedFor[typedMixed](t), newTypedFor[typedEmpty](t)}
}

// typedSeeds are arguments where a typed check that trusted its decode
// too far would accept what the schema refuses: absent, null and zero
// members at each depth, duplicates, case, types, values that decode
// differently.
var typedSeeds = []string{
	`{"a":1,"b":2}`, `{"a":1}`, `{"a":1,"b":null}`, `{"a":0,"b":2}`, `{"a":1,"b":2,"c":3}`,
	`{"a":1,"b":2,"a":3}`, `{"A":1,"b":2}`, `{"a":1.0,"b":2}`, `{"a":"1","b":2}`, `null`, `[]`, `{}`,
	`{"e":null,"a":1}`, `{"e":{},"a":1}`, `{"a":1e2,"b":2}`, `{"a":-0,"b":2}`, ` {"a":1,"b":2} `, `{"a":1,"b":2}x`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true}`,
	`{"items":[{"name":"a","price":1}],"ok":true}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"ptr":null}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"ptr":{"name":"p","price":2,"Tags":["y"]}}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"counts":{"k":1}}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"counts":{"k":300}}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"any":{"z":[1,null]}}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"any":null}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"small":1e40}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"Skip":"s"}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"hidden":1}`,
	`{"items":[{"name":"a","price":1,"Tags":[""]}],"ok":true}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"],"name":"b"}],"ok":true}`,
	`{"items":[{"name":"\ud800","price":1,"Tags":["x"]}],"ok":true}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"nested":{"k":["v"]}}`,
	`{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"nested":{"k":null}}`,
}

// TestTypedCheckAgreesWithSchema runs the seeds of FuzzTypedCheck, and
// checks the typed check accepts the plain valid arguments (else the
// agreement would hold by never accepting).
func TestTypedCheckAgreesWithSchema(t *testing.T) {
	for _, c := range typedCases(t) {
		for _, s := range typedSeeds {
			c.agree(t, []byte(s))
		}
	}
	add := newTypedFor[typedAdd](t)
	mixed := newTypedFor[typedMixed](t)
	for _, tt := range []struct {
		ent  *entry
		args string
	}{
		{add.ent, `{"a":1,"b":2}`},
		{add.ent, ` {"b":-2, "a":7} `},
		{mixed.ent, `{"items":[{"name":"a","price":1,"Tags":["x"]}],"ok":true,"ptr":{"name":"p","price":2,"Tags":["y"]},"counts":{"k":1},"any":[0],"small":0.5,"nested":{"k":["v"]}}`},
	} {
		if tt.ent.typed.prepare([]byte(tt.args)) == nil {
			t.Errorf("typed check refused %s", tt.args)
		}
	}
}

// FuzzTypedCheck: whatever a Func tool's typed check accepts, its schema
// accepts too, and the tool gets the value encoding/json would decode.
//
//	go test ./tool -run '^$' -fuzz FuzzTypedCheck -fuzztime 60s
func FuzzTypedCheck(f *testing.F) {
	for _, s := range typedSeeds {
		f.Add([]byte(s))
	}
	cases := typedCases(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, c := range cases {
			c.agree(t, args)
		}
	})
}

type selfDecoding struct{ V int }

func (*selfDecoding) UnmarshalJSON([]byte) error { return nil }

// TestTypedCheckOnlyWhereItHolds: the registry gives a tool the typed
// check only for types where the decode and the schema agree, and only
// with the schema derived from the type.
func TestTypedCheckOnlyWhereItHolds(t *testing.T) {
	tools := map[string]Tool{
		"self-decoding": Func("a", "d", func(context.Context, struct {
			S selfDecoding `json:"s"`
		}) (string, error) {
			return "", nil
		}),
		"time":  Func("b", "d", func(context.Context, struct{ T time.Time }) (string, error) { return "", nil }),
		"bytes": Func("c", "d", func(context.Context, struct{ B []byte }) (string, error) { return "", nil }),
		"array": Func("d", "d", func(context.Context, struct{ A [2]int }) (string, error) { return "", nil }),
		"string": Func("e", "d", func(context.Context, struct {
			N int `json:"n,string"`
		}) (string, error) {
			return "", nil
		}),
		"embedded":  Func("f", "d", func(context.Context, struct{ typedAdd }) (string, error) { return "", nil }),
		"refined":   Func("g", "d", func(context.Context, typedAdd) (string, error) { return "", nil }, func(i *Info) { i.Schema = json.RawMessage(`{"type":"object"}`) }),
		"interface": Func("h", "d", func(context.Context, struct{ E error }) (string, error) { return "", nil }),
	}
	for why, tl := range tools {
		info := tl.Info()
		reg, err := NewRegistry(tl)
		if err != nil {
			t.Logf("%s: not a valid tool here (%v)", why, err)
			continue
		}
		if ent, _ := reg.entry(info.Name); ent.typed != nil {
			t.Errorf("%s: the registry gave the tool a typed check", why)
		}
	}
}
