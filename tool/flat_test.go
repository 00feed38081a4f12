package tool

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// flatFixtures are schemas of the flat shape, and one per reason a schema is
// not flat.
var flatFixtures = []string{
	`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`,
	`{"type":"object","properties":{"s":{"type":"string","description":"x"},"n":{"type":"number","minimum":-1.5,"maximum":10},"ok":{"type":"boolean"}},"required":["s"]}`,
	`{"type":"object","properties":{"u":{"type":"integer","minimum":0,"maximum":255}},"additionalProperties":false}`,
	`{"type":"object"}`,
}

func TestNewFlatSchemaRefusesOtherShapes(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","properties":{"a":{"type":["null","integer"]}}}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}`,
		`{"type":"object","properties":{"a":{"type":"array"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","required":["ghost"]}`,
		`{"type":"object","properties":{"a":{"type":"string","minimum":1}}}`,
		`{"type":"object","$defs":{}}`,
	} {
		if newFlatSchema(json.RawMessage(raw)) != nil {
			t.Errorf("%s: got a flat schema; want the general validator", raw)
		}
	}
	for _, raw := range flatFixtures {
		if newFlatSchema(json.RawMessage(raw)) == nil {
			t.Errorf("%s: not recognised as flat", raw)
		}
	}
}

// FuzzFlatMatchesValidator holds the fast path to the general validator's
// verdict on arbitrary model-written arguments, for every flat fixture.
func FuzzFlatMatchesValidator(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":2}`, `{"a":1.0,"b":-0}`, `{"a":"1","b":2}`, `{"a":1}`, `{"a":1,"b":2,"c":3}`,
		`{"a":1,"a":"x","b":2}`, `{"a":1e400,"b":1}`, `{"s":"x","n":10.5}`, `{"u":256}`, `{"u":-1}`, `{"s":"x","ok":null}`,
		`{"\u0061":1,"b":2}`, `[1]`, `null`, ` { "s" : "a\"b" , "n" : [1,{"x":"}"}] } `} {
		f.Add([]byte(s))
	}
	type fixture struct {
		flat *flatSchema
		rs   *jsonschema.Resolved
	}
	var fixtures []fixture
	for _, raw := range flatFixtures {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			f.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			f.Fatal(err)
		}
		fixtures = append(fixtures, fixture{newFlatSchema(json.RawMessage(raw)), rs})
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		var v any
		if json.Unmarshal(args, &v) != nil {
			return // invalid JSON never reaches either validator
		}
		for i, fx := range fixtures {
			fast := fx.flat.validate(args)
			slow := fx.rs.Validate(v)
			if (fast == "") != (slow == nil) {
				t.Fatalf("fixture %d, args %s: fast says %q, validator says %v", i, args, fast, slow)
			}
		}
	})
}
