package strength

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"reflect"
	"strconv"
)

var goCompare = map[token.Token][]token.Token{
	token.LSS: {token.LEQ, token.GEQ}, token.LEQ: {token.LSS, token.GTR},
	token.GTR: {token.GEQ, token.LEQ}, token.GEQ: {token.GTR, token.LSS},
	token.EQL: {token.NEQ}, token.NEQ: {token.EQL},
}

var goArith = map[token.Token][]token.Token{
	token.ADD: {token.SUB}, token.SUB: {token.ADD}, token.MUL: {token.QUO},
	token.QUO: {token.MUL}, token.REM: {token.QUO}, token.SHL: {token.SHR},
	token.SHR: {token.SHL}, token.AND: {token.OR}, token.OR: {token.AND},
	token.XOR: {token.AND},
}

var goAssign = map[token.Token][]token.Token{
	token.ADD_ASSIGN: {token.SUB_ASSIGN}, token.SUB_ASSIGN: {token.ADD_ASSIGN},
	token.MUL_ASSIGN: {token.QUO_ASSIGN}, token.QUO_ASSIGN: {token.MUL_ASSIGN},
	token.INC: {token.DEC}, token.DEC: {token.INC},
}

// goMutants mutates a Go file in place, one change at a time, printing
// each. A mutant that no longer type-checks (when the original does, with
// the standard library as its only imports) is stillborn: the compiler
// would reject it before any test ran.
func goMutants(src []byte) ([]Mutant, int, int, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "reference.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("the reference does not parse: %v", err)
	}
	print := func() (string, error) {
		var buf bytes.Buffer
		if err := format.Node(&buf, fset, file); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	orig, err := print()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("printing the reference: %v", err)
	}
	conf := types.Config{Importer: importer.Default(), Error: func(error) {}}
	typeChecks := func(s string) bool {
		fs := token.NewFileSet()
		f, err := parser.ParseFile(fs, "mutant.go", s, 0)
		if err != nil {
			return false
		}
		_, err = conf.Check(f.Name.Name, fs, []*ast.File{f}, nil)
		return err == nil
	}
	checked := typeChecks(orig)
	g := &goGen{fset: fset, seen: map[string]bool{}}
	g.emit = func(pos token.Pos, kind, desc string, apply func() (undo func())) {
		undo := apply()
		out, err := print()
		undo()
		switch {
		case err != nil || (checked && !typeChecks(out)):
			g.stillborn++
		case out == orig:
			g.mutants = append(g.mutants, Mutant{Line: fset.Position(pos).Line, Kind: kind, Description: desc, Source: out, Equivalent: true})
		case g.seen[out]:
			g.duplicates++
		default:
			g.seen[out] = true
			g.mutants = append(g.mutants, Mutant{Line: fset.Position(pos).Line, Kind: kind, Description: desc, Source: out})
		}
	}
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
			g.walk(reflect.ValueOf(fn.Body).Elem())
		}
	}
	return g.mutants, g.stillborn, g.duplicates, nil
}

type goGen struct {
	fset                  *token.FileSet
	emit                  func(pos token.Pos, kind, desc string, apply func() (undo func()))
	mutants               []Mutant
	seen                  map[string]bool
	stillborn, duplicates int
}

var (
	exprType = reflect.TypeFor[ast.Expr]()
	stmtType = reflect.TypeFor[ast.Stmt]()
)

// walk visits the fields of a node struct. Expressions are mutated through
// the field that holds them, so a node can be replaced, not only changed.
func (g *goGen) walk(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch {
		case f.Type() == exprType:
			if !f.IsNil() {
				g.expr(f)
				g.walk(f.Elem().Elem())
			}
		case f.Type() == stmtType:
			if !f.IsNil() {
				g.walk(f.Elem().Elem())
			}
		case f.Kind() == reflect.Slice && f.Type().Elem() == exprType:
			for j := range f.Len() {
				g.expr(f.Index(j))
				g.walk(f.Index(j).Elem().Elem())
			}
		case f.Kind() == reflect.Slice && f.Type().Elem() == stmtType:
			for j := range f.Len() {
				g.stmt(f, j)
				g.walk(f.Index(j).Elem().Elem())
			}
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct && !f.IsNil():
			if _, isNode := f.Interface().(ast.Node); isNode {
				if _, isFunc := f.Interface().(*ast.FuncType); !isFunc {
					g.walk(f.Elem())
				}
			}
		}
	}
}

// set replaces the expression in slot by e, returning the undo.
func set(slot reflect.Value, e ast.Expr) func() {
	old := reflect.ValueOf(slot.Interface())
	slot.Set(reflect.ValueOf(&e).Elem())
	return func() { slot.Set(old) }
}

func (g *goGen) expr(slot reflect.Value) {
	switch e := slot.Interface().(type) {
	case *ast.BinaryExpr:
		kind, alts := "comparison", goCompare[e.Op]
		if alts == nil {
			kind, alts = "arithmetic", goArith[e.Op]
		}
		if e.Op == token.LAND || e.Op == token.LOR {
			kind, alts = "boolean", []token.Token{token.LOR + token.LAND - e.Op}
		}
		for _, op := range alts {
			old := e.Op
			g.emit(e.OpPos, kind, old.String()+" → "+op.String(), func() func() {
				e.Op = op
				return func() { e.Op = old }
			})
		}
	case *ast.UnaryExpr:
		if e.Op == token.NOT || e.Op == token.SUB {
			kind := "boolean"
			if e.Op == token.SUB {
				kind = "arithmetic"
			}
			g.emit(e.OpPos, kind, e.Op.String()+"x → x", func() func() { return set(slot, e.X) })
		}
	case *ast.BasicLit:
		if e.Kind != token.INT {
			return
		}
		n, err := strconv.ParseInt(e.Value, 0, 64)
		if err != nil {
			return
		}
		for _, d := range []int64{1, -1} {
			v := n + d
			old := e.Value
			g.emit(e.ValuePos, "constant", fmt.Sprintf("%d → %d", n, v), func() func() {
				if v < 0 {
					return set(slot, &ast.UnaryExpr{Op: token.SUB, X: &ast.BasicLit{Kind: token.INT, Value: strconv.FormatInt(-v, 10)}})
				}
				e.Value = strconv.FormatInt(v, 10)
				return func() { e.Value = old }
			})
		}
	case *ast.Ident:
		if e.Name == "true" || e.Name == "false" {
			other := map[string]string{"true": "false", "false": "true"}[e.Name]
			g.emit(e.NamePos, "constant", e.Name+" → "+other, func() func() { return set(slot, ast.NewIdent(other)) })
		}
	}
}

// stmt mutates the statement at list[i]: removes it, negates its
// condition, flips its assignment operator or swaps its return values.
func (g *goGen) stmt(list reflect.Value, i int) {
	s := list.Index(i).Interface().(ast.Stmt)
	switch s := s.(type) {
	case *ast.IfStmt:
		g.negate(s.Pos(), &s.Cond)
	case *ast.ForStmt:
		if s.Cond != nil {
			g.negate(s.Pos(), &s.Cond)
		}
	case *ast.AssignStmt:
		for _, op := range goAssign[s.Tok] {
			old := s.Tok
			g.emit(s.TokPos, "arithmetic", old.String()+" → "+op.String(), func() func() {
				s.Tok = op
				return func() { s.Tok = old }
			})
		}
	case *ast.IncDecStmt:
		for _, op := range goAssign[s.Tok] {
			old := s.Tok
			g.emit(s.TokPos, "arithmetic", old.String()+" → "+op.String(), func() func() {
				s.Tok = op
				return func() { s.Tok = old }
			})
		}
	case *ast.ReturnStmt:
		for j := 0; j+1 < len(s.Results); j++ {
			g.emit(s.Return, "swap", fmt.Sprintf("return values %d and %d swapped", j+1, j+2), func() func() {
				s.Results[j], s.Results[j+1] = s.Results[j+1], s.Results[j]
				return func() { s.Results[j], s.Results[j+1] = s.Results[j+1], s.Results[j] }
			})
		}
	}
	switch s.(type) {
	case *ast.DeclStmt, *ast.EmptyStmt, *ast.LabeledStmt, *ast.CaseClause, *ast.CommClause:
		return
	}
	g.emit(s.Pos(), "removal", "statement removed", func() func() {
		old := list.Index(i).Interface().(ast.Stmt)
		var empty ast.Stmt = &ast.EmptyStmt{Semicolon: old.Pos(), Implicit: true}
		list.Index(i).Set(reflect.ValueOf(&empty).Elem())
		return func() { list.Index(i).Set(reflect.ValueOf(&old).Elem()) }
	})
}

func (g *goGen) negate(pos token.Pos, cond *ast.Expr) {
	if u, ok := (*cond).(*ast.UnaryExpr); ok && u.Op == token.NOT {
		return // removing the negation is the boolean mutator's
	}
	g.emit(pos, "negation", "condition negated", func() func() {
		old := *cond
		*cond = &ast.UnaryExpr{Op: token.NOT, X: &ast.ParenExpr{X: old}}
		return func() { *cond = old }
	})
}
