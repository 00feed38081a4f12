package strength

import (
	"go/parser"
	"go/token"
	"testing"
)

// FuzzGoMutants: any Go source either fails to parse, cleanly, or gives
// mutants that each parse, with a line inside the file; never a panic.
func FuzzGoMutants(f *testing.F) {
	f.Add(goSource)
	f.Add("package p\n\nfunc f(a, b int) (int, int) {\n\tswitch {\n\tcase a < b:\n\t\treturn b, a\n\t}\n\tgo func() { a++ }()\n\treturn a &^ b, -a\n}\n")
	f.Add("package p\n\nvar x = 1\n\nfunc g() { select {} }\n")
	f.Fuzz(func(t *testing.T, src string) {
		ms, _, _, err := goMutants([]byte(src))
		if err != nil {
			return
		}
		lines := len(lines(src)) + 1
		for _, m := range ms {
			if _, err := parser.ParseFile(token.NewFileSet(), "m.go", m.Source, 0); err != nil {
				t.Fatalf("mutant %q on line %d does not parse: %v\n%s", m.Description, m.Line, err, m.Source)
			}
			if m.Line < 1 || m.Line > lines {
				t.Fatalf("mutant %q on line %d of a %d-line file", m.Description, m.Line, lines)
			}
		}
	})
}
