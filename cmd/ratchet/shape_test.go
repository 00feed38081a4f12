package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The shape the CLI keeps: each command a small type or function of its own
// file, Main only what every command shares, functions that fit on a screen.
const (
	maxTypeMethods = 20
	maxFuncLines   = 80
)

// TestShape counts the methods each type declares (promoted ones are the
// embedded type's) and, as loop's TestShape does for *Machine, a function
// whose first parameter is a *T of this package as one of T's: a method in
// all but name. Every offender is listed at once.
func TestShape(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]int{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			typ := methodOf(fd)
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: func %s is %d lines, more than %d: split it into named steps", name, funcName(typ, fd), n, maxFuncLines)
			}
			if typ != "" {
				methods[typ]++
			}
		}
	}
	types := make([]string, 0, len(methods))
	for typ := range methods {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		if n := methods[typ]; n > maxTypeMethods {
			t.Errorf("%s has %d methods, more than %d: give a command or a part of one a type of its own", typ, n, maxTypeMethods)
		}
	}
	if methods["Main"] < 5 {
		t.Errorf("counted %d methods of Main: the count is broken", methods["Main"])
	}
}

// methodOf names the type fd is a method of: its receiver's, or for a
// function, the type its first parameter points to if this package declares
// it (an identifier, not a qualified name); "" for any other function.
func methodOf(fd *ast.FuncDecl) string {
	if fd.Recv != nil {
		return typeName(fd.Recv.List[0].Type)
	}
	params := fd.Type.Params.List
	if len(params) == 0 {
		return ""
	}
	if _, ok := params[0].Type.(*ast.StarExpr); !ok {
		return ""
	}
	return typeName(params[0].Type)
}

// typeName is the name of the type e denotes, through a pointer; "" unless
// it is declared in this package.
func typeName(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// funcName is fd's name as the code says it: "(showCommand).run", "tick".
func funcName(typ string, fd *ast.FuncDecl) string {
	if fd.Recv == nil {
		return fd.Name.Name
	}
	return "(" + typ + ")." + fd.Name.Name
}
