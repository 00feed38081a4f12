package loop_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The shape the core keeps so that the next person can read it: the
// machine a thin dispatcher (its sub-protocols are types of their own),
// files that fit in a sitting, functions that fit on a screen.
const (
	maxMachineMethods = 40  // functions that take a *Machine first count too
	maxFileLines      = 600 // in loop, its subpackages and runner
	maxFuncLines      = 80  // in loop and runner, tests included
	maxRunnerMethods  = 25  // of any one type in runner
)

func TestShape(t *testing.T) {
	fset := token.NewFileSet()
	methods := 0
	runnerMethods := map[string]int{}
	for _, dir := range []string{".", "looptest", "../runner"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
				t.Errorf("%s: %d lines, more than %d: split it by what its parts are about", name, n, maxFileLines)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
					t.Errorf("%s: func %s is %d lines, more than %d", name, fd.Name.Name, n, maxFuncLines)
				}
				test := strings.HasSuffix(name, "_test.go")
				if dir == "." && !test && takesMachine(fd) {
					methods++
				}
				if dir == "../runner" && !test && fd.Recv != nil {
					runnerMethods[receiver(fd)]++
				}
			}
		}
	}
	if methods > maxMachineMethods {
		t.Errorf("loop.Machine has %d methods, more than %d: give a sub-protocol its own type", methods, maxMachineMethods)
	}
	if methods < 10 {
		t.Errorf("counted %d methods of loop.Machine: the count is broken", methods)
	}
	for typ, n := range runnerMethods {
		if n > maxRunnerMethods {
			t.Errorf("runner.%s has %d methods, more than %d: give a part of it a type of its own", typ, n, maxRunnerMethods)
		}
	}
	if len(runnerMethods) < 3 {
		t.Errorf("counted the methods of %d runner types: the count is broken", len(runnerMethods))
	}
}

// takesMachine reports whether fd is a method of Machine or a function
// whose first parameter is a *Machine: a method in all but name.
func takesMachine(fd *ast.FuncDecl) bool {
	if fd.Recv != nil {
		return isMachineMethod(fd)
	}
	params := fd.Type.Params.List
	return len(params) > 0 && isMachinePtr(params[0].Type)
}

// receiver is the name of fd's receiver type.
func receiver(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

func isMachineMethod(fd *ast.FuncDecl) bool {
	return fd.Recv != nil && len(fd.Recv.List) == 1 && isMachinePtr(fd.Recv.List[0].Type)
}

func isMachinePtr(e ast.Expr) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Machine"
}
