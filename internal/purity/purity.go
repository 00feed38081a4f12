// Package purity checks that a package is deterministic by construction: it
// imports nothing that does I/O or draws randomness, never reads the clock,
// starts no goroutines, uses no channels and never ranges over a map (whose
// order Go randomises). It also holds the package to an allow-list of the
// module's packages it may import, so that the core cannot come to depend
// on the shell (runner, store, tool, …) by an innocent-looking import. The
// loop core, budget and progress must pass, with the allow-lists of Core.
package purity

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"
)

// forbiddenImports do I/O, concurrency or randomness.
var forbiddenImports = []string{
	"crypto/rand", "io/ioutil", "math/rand", "math/rand/v2", "net", "os", "os/exec",
	"os/signal", "runtime", "sync", "sync/atomic", "syscall", "unsafe",
}

// forbiddenTime reads or waits on the clock; time's types and arithmetic
// are fine.
var forbiddenTime = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// Module is the module whose packages an allow-list names.
const Module = "github.com/ratchetloop/ratchet"

// Core maps each core package (its path in Module) to the packages of Module
// it may import. Everything else of the module is the shell, or reaches it.
var Core = map[string][]string{
	"loop": {"budget", "progress", "verify", "model", "internal/jsonvalid"},
	// budget and progress are plain values and functions of them.
	"budget":   {},
	"progress": {"internal/jsonvalid"},
}

// Check type-checks the non-test Go files in dir and returns every violation
// as "file:line: problem". allowed lists the packages of Module (by their
// path in it, such as "budget") that dir may import; any other is a
// violation, and so is an entry nothing in dir imports (a stale allowance
// would let the next import through unreviewed).
func Check(dir string, allowed []string) ([]string, error) {
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("purity: no Go files in %s", dir)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check(files[0].Name.Name, fset, files, info); err != nil {
		return nil, fmt.Errorf("purity: type-checking %s: %w", dir, err)
	}
	var problems []string
	report := func(n ast.Node, format string, args ...any) {
		pos := fset.Position(n.Pos())
		problems = append(problems, fmt.Sprintf("%s:%d: %s", filepath.Base(pos.Filename), pos.Line, fmt.Sprintf(format, args...)))
	}
	used := map[string]bool{}
	for _, f := range files {
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if rel, ok := strings.CutPrefix(path, Module+"/"); ok {
				used[rel] = true
			}
			if slices.Contains(forbiddenImports, path) || strings.HasPrefix(path, "net/") {
				report(imp, "imports %s", path)
			}
			if rel, ok := strings.CutPrefix(path, Module+"/"); ok && !slices.Contains(allowed, rel) {
				report(imp, "imports %s, which is not on its allow-list (%s)", rel, strings.Join(allowed, ", "))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				report(n, "starts a goroutine")
			case *ast.SelectStmt:
				report(n, "selects on channels")
			case *ast.ChanType:
				report(n, "uses a channel type")
			case *ast.RangeStmt:
				if t, ok := info.Types[n.X]; ok {
					if _, isMap := t.Type.Underlying().(*types.Map); isMap {
						report(n, "ranges over a map (random order); sort the keys first")
					}
				}
			case *ast.SelectorExpr:
				if obj, ok := info.Uses[n.Sel]; ok && obj.Pkg() != nil && obj.Pkg().Path() == "time" {
					// Methods (t.After(u) compares two times) are pure; only the
					// package's functions touch the clock.
					if fn, isFunc := obj.(*types.Func); isFunc && fn.Signature().Recv() == nil && slices.Contains(forbiddenTime, obj.Name()) {
						report(n, "reads the clock (time.%s); time must arrive on events", obj.Name())
					}
				}
			}
			return true
		})
	}
	for _, a := range allowed {
		if !used[a] {
			problems = append(problems, fmt.Sprintf("%s: the allow-list names %s, which nothing here imports: remove it", filepath.Base(dir), a))
		}
	}
	return problems, nil
}
