package judge

import (
	"strings"
	"testing"
)

// PlanGo serves what can cross and names, per function, what cannot.
func TestPlanGo(t *testing.T) {
	mod := []byte("module example.com/m\n")
	p, err := PlanGo(mod, "m.go", []byte(`package m

type T struct{ N int }

func Served(a, b int, t T, xs ...string) (int, error) { return 0, nil }
func Callback(f func() int) int { return f() }
func Stream(c chan int) {}
func Any(v interface{ M() }) {}
func Generic[X any](x X) X { return x }
func (t T) Method() int { return t.N }
func init() {}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Callback": "parameter f is a function",
		"Stream":   "parameter c is a channel",
		"Any":      "parameter v is an interface",
		"Generic":  "it is generic",
	}
	for name, why := range want {
		if !strings.Contains(p.Unserved[name], why) {
			t.Errorf("%s: %q, want %q", name, p.Unserved[name], why)
		}
	}
	if len(p.Functions) != 1 || p.Functions[0] != "Served" || len(p.Unserved) != len(want) {
		t.Errorf("served %v, unserved %v", p.Functions, p.Unserved)
	}
	if !strings.Contains(string(p.Main), `import candidate "example.com/m"`) || strings.Contains(string(p.Stub), "Method") {
		t.Errorf("main:\n%s\nstub:\n%s", p.Main, p.Stub)
	}
	for _, tc := range []struct{ mod, file, src, want string }{
		{"", "m.go", "package m\n", "names no module"},
		{"module example.com/m\n", "m.go", "package main\nfunc main() {}\n", "package main"},
		{"module example.com/m\n", "m.go", "package m\nfunc F( {\n", "does not parse"},
		{"module example.com/m\n", "m.go", "package m\n\n// int f() { return 1; }\nimport \"C\"\n", "cgo"},
	} {
		if _, err := PlanGo([]byte(tc.mod), tc.file, []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
	if p, err := PlanGo(mod, "sub/m.go", []byte("package m\n")); err != nil || !strings.Contains(string(p.Main), `"example.com/m/sub"`) {
		t.Errorf("a package in a subdirectory: %v\n%s", err, p.Main)
	}
}

// FuzzPlanGo: whatever the candidate's file holds, planning neither panics
// nor yields a stub or server that is not Go.
func FuzzPlanGo(f *testing.F) {
	f.Add("package m\n\ntype T struct{ N int }\n\nconst K = 2\n\nfunc F(a int, xs ...string) (int, error) { return a, nil }\n")
	f.Add("package m\n\nimport t \"time\"\n\nfunc G(d t.Duration, m map[string][]*T) [2]t.Time { return [2]t.Time{} }\n\ntype T int\n")
	f.Add("package m\n\nfunc H(f func(int) int, c <-chan int) {}\n\nfunc (T) M() {}\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := PlanGo([]byte("module example.com/m\n"), "m.go", []byte(src))
		if err != nil {
			if strings.Contains(err.Error(), "does not compile") {
				t.Fatalf("a file that parses gave an invalid plan: %v\n%q", err, src)
			}
			return
		}
		if len(p.Stub) == 0 || len(p.Server) == 0 || len(p.Main) == 0 {
			t.Fatalf("empty plan for %q", src)
		}
	})
}
