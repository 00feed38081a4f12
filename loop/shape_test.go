package loop_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// The shape the core keeps so that the next person can read it: the
// machine a thin dispatcher (its sub-protocols are types of their own),
// files that fit in a sitting, functions that fit on a screen.
const (
	maxMachineMethods = 40
	maxFileLines      = 600 // in loop and its subpackages
	maxFuncLines      = 80  // in loop and runner, tests included
)

func TestShape(t *testing.T) {
	fset := token.NewFileSet()
	methods := 0
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
			if n := fset.File(f.Pos()).LineCount(); dir != "../runner" && n > maxFileLines {
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
				if dir == "." && isMachineMethod(fd) {
					methods++
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
}

func isMachineMethod(fd *ast.FuncDecl) bool {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return false
	}
	star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Machine"
}
