//lint:file-ignore SA5008 the tags "-," and "," are odd on purpose: the flat decoder must read them as encoding/json does

package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

type Celsius float64

type selfDecoder struct{ V int }

func (*selfDecoder) UnmarshalJSON([]byte) error { return nil }

type valueDecoder int

func (valueDecoder) UnmarshalJSON([]byte) error { return nil }

type textDecoder string

func (*textDecoder) UnmarshalText([]byte) error { return nil }

type Inner struct{ X int }

type inner struct{ X int }

// allKinds has one field of each kind the flat decoder writes, and fields
// std ignores.
type allKinds struct {
	S      string        `json:"s"`
	B      bool          `json:"b"`
	I      int           `json:"i"`
	I8     int8          `json:"i8"`
	I16    int16         `json:"i16"`
	I32    int32         `json:"i32"`
	I64    int64         `json:"i64"`
	U      uint          `json:"u"`
	U8     uint8         `json:"u8"`
	U16    uint16        `json:"u16"`
	U32    uint32        `json:"u32"`
	U64    uint64        `json:"u64"`
	F32    float32       `json:"f32"`
	F64    float64       `json:"f64"`
	C      Celsius       `json:"c,omitempty"`
	D      time.Duration `json:"d,omitzero"`
	Dash   int           `json:"-,"`
	Plain  string
	Skip   string `json:"-"`
	hidden int
}

// summary lists d's fields as "name kind/bits", or "nil".
func summary(d *flatDecoder) []string {
	if d == nil {
		return []string{"nil"}
	}
	out := []string{}
	for _, f := range d.fields {
		out = append(out, fmt.Sprintf("%s %v/%d", f.name, f.kind, f.bits))
	}
	return out
}

func TestNewFlatDecoder(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		want []string
	}{
		{"add", reflect.TypeFor[struct {
			A int `json:"a"`
			B int `json:"b"`
		}](), []string{"a int/64", "b int/64"}},
		{"empty", reflect.TypeFor[struct{}](), []string{}},
		{"all kinds", reflect.TypeFor[allKinds](), []string{
			"s string/0", "b bool/0", "i int/64", "i8 int8/8", "i16 int16/16", "i32 int32/32", "i64 int64/64",
			"u uint/64", "u8 uint8/8", "u16 uint16/16", "u32 uint32/32", "u64 uint64/64",
			"f32 float32/32", "f64 float64/64", "c float64/64", "d int64/64", "- int/64", "Plain string/0",
		}},
		{"untagged and option-only tags use the Go name", reflect.TypeFor[struct {
			Name  string
			Count int  `json:",omitempty"`
			Flag  bool `json:","`
		}](), []string{"Name string/0", "Count int/64", "Flag bool/0"}},
		{"unexported fields ignored", reflect.TypeFor[struct {
			A int `json:"a"`
			b []int
			c chan int
		}](), []string{"a int/64"}},
		{"names differing in case", reflect.TypeFor[struct {
			A int `json:"a"`
			B int `json:"A"`
		}](), []string{"a int/64", "A int/64"}},
		{"underscore and dash names", reflect.TypeFor[struct {
			A int `json:"max_count"`
			B int `json:"dry-run"`
		}](), []string{"max_count int/64", "dry-run int/64"}},

		{"string option", reflect.TypeFor[struct {
			A int `json:"a,string"`
		}](), []string{"nil"}},
		{"unknown option", reflect.TypeFor[struct {
			A int `json:"a,inline"`
		}](), []string{"nil"}},
		{"embedded exported", reflect.TypeFor[struct {
			Inner
			A int
		}](), []string{"nil"}},
		{"embedded unexported", reflect.TypeFor[struct {
			inner
			A int
		}](), []string{"nil"}},
		{"Unmarshaler field by pointer", reflect.TypeFor[struct{ A selfDecoder }](), []string{"nil"}},
		{"Unmarshaler basic field", reflect.TypeFor[struct{ A valueDecoder }](), []string{"nil"}},
		{"TextUnmarshaler field", reflect.TypeFor[struct{ A textDecoder }](), []string{"nil"}},
		{"In is an Unmarshaler", reflect.TypeFor[selfDecoder](), []string{"nil"}},
		{"duplicate tags", reflect.StructOf([]reflect.StructField{ // as vet refuses the literal
			{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"a"`},
			{Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"a"`},
		}), []string{"nil"}},
		{"tag duplicating a Go name", reflect.TypeFor[struct {
			A int
			B int `json:"A"`
		}](), []string{"nil"}},
		{"name needing escapes", reflect.TypeFor[struct {
			A int `json:"a.b"`
		}](), []string{"nil"}},
		{"non-ASCII Go name", reflect.TypeFor[struct{ Größe int }](), []string{"nil"}},
		{"uintptr", reflect.TypeFor[struct{ A uintptr }](), []string{"nil"}},
		{"slice", reflect.TypeFor[struct{ A []int }](), []string{"nil"}},
		{"pointer", reflect.TypeFor[struct{ A *int }](), []string{"nil"}},
		{"map", reflect.TypeFor[struct{ A map[string]int }](), []string{"nil"}},
		{"interface", reflect.TypeFor[struct{ A any }](), []string{"nil"}},
		{"nested struct", reflect.TypeFor[struct{ A Inner }](), []string{"nil"}},
		{"time.Time", reflect.TypeFor[struct{ A time.Time }](), []string{"nil"}},
		{"complex", reflect.TypeFor[struct{ A complex128 }](), []string{"nil"}},
		{"pointer to struct", reflect.TypeFor[*Inner](), []string{"nil"}},
		{"map type", reflect.TypeFor[map[string]any](), []string{"nil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summary(newFlatDecoder(tc.typ))); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// floatBits compares floats by bits, so -0 differs from 0.
var floatBits = cmp.Options{
	cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }),
	cmp.Comparer(func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }),
	cmp.Comparer(func(a, b Celsius) bool { return math.Float64bits(float64(a)) == math.Float64bits(float64(b)) }),
	cmp.AllowUnexported(allKinds{}),
}

func TestFlatDecode(t *testing.T) {
	dec := newFlatDecoder(reflect.TypeFor[allKinds]())
	for _, tc := range []struct {
		in      string
		handled bool
		want    allKinds // when handled
	}{
		{`{}`, true, allKinds{}},
		{" \t\r\n{ \t\r\n} \t\r\n", true, allKinds{}},
		{`{"s":"hi","b":true,"i":-5,"i8":-8,"i16":16,"i32":-32,"i64":64,"u":1,"u8":8,"u16":16,"u32":32,"u64":64,"f32":0.5,"f64":-2.25e-3,"c":-40.5,"d":1000,"-":7,"Plain":"p"}`, true,
			allKinds{S: "hi", B: true, I: -5, I8: -8, I16: 16, I32: -32, I64: 64, U: 1, U8: 8, U16: 16, U32: 32, U64: 64, F32: 0.5, F64: -2.25e-3, C: -40.5, D: 1000, Dash: 7, Plain: "p"}},
		{` { "s" : "a" , "b" : false } `, true, allKinds{S: "a"}},
		{"{\"s\":\"héllo ☃ \x7f\"}", true, allKinds{S: "héllo ☃ \u007f"}},
		{`{"s":""}`, true, allKinds{}},
		{`{"i":-0}`, true, allKinds{}},
		{`{"f64":-0}`, true, allKinds{F64: math.Copysign(0, -1)}},
		{`{"f32":-0.0e0}`, true, allKinds{F32: float32(math.Copysign(0, -1))}},
		{`{"f64":1e2,"f32":1E+2,"c":100e-2}`, true, allKinds{F64: 100, F32: 100, C: 1}},
		{`{"f64":12345678901234567890123}`, true, allKinds{F64: 12345678901234567890123}},
		{`{"f32":1e-50,"f64":1e-400}`, true, allKinds{}}, // underflow to 0, as std
		{`{"i":1,"i":2}`, true, allKinds{I: 2}},
		{`{"i":1,"i":null}`, true, allKinds{I: 1}},
		{`{"s":null,"b":null,"i":null,"u":null,"f64":null}`, true, allKinds{}},
		{`{"x":1,"y":"z","w":true,"v":null,"q":-1.5e3}`, true, allKinds{}},
		{`{"Skip":"x","hidden":3}`, true, allKinds{}},
		{`{"i8":127,"i16":-32768,"i32":2147483647,"i64":-9223372036854775808,"i":9223372036854775807}`, true,
			allKinds{I8: 127, I16: -32768, I32: math.MaxInt32, I64: math.MinInt64, I: math.MaxInt}},
		{`{"i8":-128,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"u":18446744073709551615}`, true,
			allKinds{I8: -128, U8: 255, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxUint64, U: math.MaxUint}},
		{`{"f32":3.4028234e38,"f64":1.7976931348623157e308}`, true, allKinds{F32: math.MaxFloat32, F64: math.MaxFloat64}},

		// Overflow, per kind.
		{`{"i8":128}`, false, allKinds{}},
		{`{"i8":-129}`, false, allKinds{}},
		{`{"i16":32768}`, false, allKinds{}},
		{`{"i32":-2147483649}`, false, allKinds{}},
		{`{"i64":9223372036854775808}`, false, allKinds{}},
		{`{"i":-9223372036854775809}`, false, allKinds{}},
		{`{"u8":256}`, false, allKinds{}},
		{`{"u16":65536}`, false, allKinds{}},
		{`{"u32":4294967296}`, false, allKinds{}},
		{`{"u64":18446744073709551616}`, false, allKinds{}},
		{`{"u":18446744073709551616}`, false, allKinds{}},
		{`{"f32":3.5e38}`, false, allKinds{}},
		{`{"f64":1e309}`, false, allKinds{}},
		{`{"c":-1e400}`, false, allKinds{}},
		// Numbers std refuses for the kind.
		{`{"i":1e2}`, false, allKinds{}},
		{`{"i":1.5}`, false, allKinds{}},
		{`{"i":1.0}`, false, allKinds{}},
		{`{"u":-1}`, false, allKinds{}},
		{`{"u8":-0}`, false, allKinds{}},
		// Kind mismatches.
		{`{"i":"1"}`, false, allKinds{}},
		{`{"s":1}`, false, allKinds{}},
		{`{"b":1}`, false, allKinds{}},
		{`{"b":"true"}`, false, allKinds{}},
		{`{"s":true}`, false, allKinds{}},
		{`{"i":[1]}`, false, allKinds{}},
		{`{"i":{}}`, false, allKinds{}},
		{`{"x":{}}`, false, allKinds{}},
		{`{"x":[]}`, false, allKinds{}},
		// Keys std might match case-insensitively.
		{`{"S":"x"}`, false, allKinds{}},
		{`{"I8":1}`, false, allKinds{}},
		{`{"PLAIN":"x"}`, false, allKinds{}},
		{`{"i_8":1}`, false, allKinds{}},
		// Escapes, control characters, invalid UTF-8, non-ASCII keys.
		{`{"s":"a\nb"}`, false, allKinds{}},
		{`{"s":"\u0041"}`, false, allKinds{}},
		{`{"\u0073":"x"}`, false, allKinds{}},
		{"{\"s\":\"a\tb\"}", false, allKinds{}},
		{"{\"s\":\"\xff\"}", false, allKinds{}},
		{"{\"x\":\"\xed\xa0\x80\"}", false, allKinds{}},
		{`{"ſ":"x"}`, false, allKinds{}},
		{"{\"s\x01\":1}", false, allKinds{}},
		// Not JSON, or not one object.
		{``, false, allKinds{}},
		{`null`, false, allKinds{}},
		{`[]`, false, allKinds{}},
		{`{`, false, allKinds{}},
		{`{} x`, false, allKinds{}},
		{`{}{}`, false, allKinds{}},
		{`{"i":1}}`, false, allKinds{}},
		{`{"i":1,}`, false, allKinds{}},
		{`{,}`, false, allKinds{}},
		{`{"i" 1}`, false, allKinds{}},
		{`{"i":}`, false, allKinds{}},
		{`{"i":1 2}`, false, allKinds{}},
		{`{"i":1"s":"x"}`, false, allKinds{}},
		{`{"s":"x}`, false, allKinds{}},
		{`{i:1}`, false, allKinds{}},
		{"\v{}", false, allKinds{}},
		{"{}\u00a0", false, allKinds{}},
		// Numbers JSON refuses though ParseFloat or ParseInt accept them.
		{`{"i":01}`, false, allKinds{}},
		{`{"i":+1}`, false, allKinds{}},
		{`{"f64":.5}`, false, allKinds{}},
		{`{"f64":1.}`, false, allKinds{}},
		{`{"f64":1e}`, false, allKinds{}},
		{`{"f64":1e+}`, false, allKinds{}},
		{`{"f64":-}`, false, allKinds{}},
		{`{"f64":Inf}`, false, allKinds{}},
		{`{"f64":NaN}`, false, allKinds{}},
		{`{"f64":0x1p3}`, false, allKinds{}},
		{`{"i":1_0}`, false, allKinds{}},
		{`{"x":-01}`, false, allKinds{}},
		// Literals.
		{`{"b":tru}`, false, allKinds{}},
		{`{"b":truex}`, false, allKinds{}},
		{`{"b":True}`, false, allKinds{}},
		{`{"x":nul}`, false, allKinds{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var got allKinds
			handled := dec.decode([]byte(tc.in), unsafe.Pointer(&got))
			if handled != tc.handled {
				t.Fatalf("handled = %v, want %v", handled, tc.handled)
			}
			var std allKinds
			stdErr := json.Unmarshal([]byte(tc.in), &std)
			if handled {
				if diff := cmp.Diff(tc.want, got, floatBits); diff != "" {
					t.Errorf("decoded (-want +got):\n%s", diff)
				}
				if stdErr != nil {
					t.Errorf("json.Unmarshal: %v, flat decoder handled it", stdErr)
				}
				if diff := cmp.Diff(std, got, floatBits); diff != "" {
					t.Errorf("differs from json.Unmarshal (-std +flat):\n%s", diff)
				}
			}
			// Func gives json.Unmarshal's result whichever path decodes.
			ft := Func("t", "", func(context.Context, allKinds) (string, error) { return "", nil }).(*funcTool[allKinds, string])
			in, err := ft.decode(json.RawMessage(tc.in))
			if (err != nil) != (stdErr != nil) || err != nil && !errors.Is(err, ErrInvalidArgs) {
				t.Errorf("Func error %v, json.Unmarshal %v", err, stdErr)
			}
			if diff := cmp.Diff(std, in, floatBits); diff != "" {
				t.Errorf("Func differs from json.Unmarshal (-std +Func):\n%s", diff)
			}
		})
	}
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

func addTool() *funcTool[addIn, int] {
	return Func("add", "", func(_ context.Context, in addIn) (int, error) { return in.A + in.B, nil }).(*funcTool[addIn, int])
}

func TestFuncFlatPath(t *testing.T) {
	ft := addTool()
	if ft.flat == nil {
		t.Fatal("no flat decoder for a struct of two ints")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		args, want string
		err        error
	}{
		{`{"a":3,"b":1}`, "4", nil},
		{`{"A":3,"b":1}`, "4", nil}, // case-insensitive, by json.Unmarshal
		{`{"a":3.5}`, "", ErrInvalidArgs},
		{`{"a":99999999999999999999}`, "", ErrInvalidArgs},
		{`{"a":`, "", ErrInvalidArgs},
	} {
		out, err := ft.Run(ctx, json.RawMessage(tc.args))
		if out != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Run(%s) = %q, %v; want %q, %v", tc.args, out, err, tc.want, tc.err)
		}
		run, err := ft.prepare(json.RawMessage(tc.args))
		if !errors.Is(err, tc.err) {
			t.Errorf("prepare(%s) error %v, want %v", tc.args, err, tc.err)
		}
		if run != nil {
			if out, _ := run(ctx); out != tc.want {
				t.Errorf("prepare(%s) ran to %q, want %q", tc.args, out, tc.want)
			}
		}
	}
}

func TestFuncFlatDecodeAllocs(t *testing.T) {
	ft := addTool()
	args := json.RawMessage(`{"a":3,"b":1}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = ft.decode(args) }); n != 0 {
		t.Errorf("flat decode allocates %v times per call, want 0", n)
	}
}

// flatSeeds are inputs worth fuzzing from.
var flatSeeds = []string{
	`{}`, ` {"s":"x","b":true,"i":-1,"u":2,"f64":1.5e3,"f32":-0,"c":1e2,"d":5,"-":1,"Plain":"p"} `,
	`{"i8":127,"i16":-32768,"i32":2147483647,"i64":-9223372036854775808,"u64":18446744073709551615}`,
	`{"i8":128}`, `{"u":-0}`, `{"i":1e2}`, `{"i":1.5}`, `{"i":1,"i":null}`, `{"S":"x"}`, `{"Skip":1,"hidden":2}`,
	`{"s":"a\u0041"}`, "{\"s\":\"\xff\"}", `{"f32":3.4028235e38}`, `{"f32":3.4028236e38}`, `{"f64":1e309}`,
	`{"x":[1]}`, `{"x":null,"y":false}`, `{} x`, `{"i":01}`, `{"f64":0x1p3}`, `{"i":1_0}`, `null`,
	`{"u8":255,"u16":65535,"u32":4294967295,"u":1}`, `{"f32":1.401298464324817e-45}`, `{"f32":7e-46}`,
}

func FuzzFlatDecodeMatchesJSON(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	dec := newFlatDecoder(reflect.TypeFor[allKinds]())
	f.Fuzz(func(t *testing.T, data []byte) {
		var got allKinds
		if !dec.decode(data, unsafe.Pointer(&got)) {
			return
		}
		var want allKinds
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("flat decoder handled %q, json.Unmarshal: %v", data, err)
		}
		if diff := cmp.Diff(want, got, floatBits); diff != "" {
			t.Fatalf("%q: flat decoder differs from json.Unmarshal (-std +flat):\n%s", data, diff)
		}
	})
}

type smallKinds struct {
	U8  uint8   `json:"u"`
	I8  int8    `json:"i"`
	F32 float32 `json:"f"`
}

func FuzzFlatDecodeSmallKinds(f *testing.F) {
	for _, s := range []string{
		`{"u":255,"i":-128,"f":3.4028234e38}`, `{"u":256}`, `{"i":128}`, `{"i":-129}`, `{"f":3.4028235677973366e38}`,
		`{"f":-3.4028235677973366e+38}`, `{"f":1e-46}`, `{"u":0,"i":-0,"f":-0}`, `{"u":1e0}`, `{"U":1}`,
	} {
		f.Add([]byte(s))
	}
	dec := newFlatDecoder(reflect.TypeFor[smallKinds]())
	f.Fuzz(func(t *testing.T, data []byte) {
		var got smallKinds
		if !dec.decode(data, unsafe.Pointer(&got)) {
			return
		}
		var want smallKinds
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("flat decoder handled %q, json.Unmarshal: %v", data, err)
		}
		if diff := cmp.Diff(want, got, floatBits); diff != "" {
			t.Fatalf("%q: flat decoder differs from json.Unmarshal (-std +flat):\n%s", data, diff)
		}
	})
}

// BenchmarkFuncDecode compares the flat decoder with json.Unmarshal on the
// arguments of a trivial tool.
func BenchmarkFuncDecode(b *testing.B) {
	args := json.RawMessage(`{"a":3,"b":1}`)
	b.Run("flat", func(b *testing.B) {
		ft := addTool()
		b.ReportAllocs()
		for b.Loop() {
			if in, err := ft.decode(args); err != nil || in.A != 3 {
				b.Fatal(in, err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in addIn
			if err := json.Unmarshal(args, &in); err != nil || in.A != 3 {
				b.Fatal(in, err)
			}
		}
	})
}
