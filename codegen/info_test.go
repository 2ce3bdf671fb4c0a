package codegen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// TestEveryExprTyped checks that every expression of a checked program
// that codegen could be handed has a type recorded in the program's
// lang.Info: the programs of the golden listings, the repository's
// scripts and the test scripts under testdata/ (those that check
// clean; the others never reach codegen). It finds the expressions by
// reflection over the probes rather than with lang's walker, so that a
// node kind the walker or the checker misses fails here too. fn.typeOf
// asserts the same for every expression codegen lowers.
func TestEveryExprTyped(t *testing.T) {
	programs, cfg := corpus(t), corpusConfig()
	checked, exprs := 0, 0
	for _, prog := range programs {
		p, err := lang.Parse(filepath.Base(prog.name), prog.src)
		if err != nil {
			continue
		}
		info, err := lang.Analyze(p, cfg, nil)
		if err != nil {
			continue
		}
		checked++
		seen := map[uintptr]bool{}
		for _, probe := range p.Probes {
			reflectExprs(reflect.ValueOf(probe), seen, func(e lang.Expr) {
				exprs++
				if !info.Typed(e) {
					t.Errorf("%s:%d:%d: %T has no type in the Info", prog.name, e.Span().Start.Line, e.Span().Start.Col, e)
				}
			})
		}
	}
	// Most of them check clean; a handful of programs would mean the
	// globs found the wrong files.
	if checked < len(programs)/2 || checked < 50 {
		t.Fatalf("only %d of %d programs checked clean", checked, len(programs))
	}
	t.Logf("%d expressions of %d programs, each typed", exprs, checked)
}

// corpusProgram is one script of the corpus the tests over every known
// program read.
type corpusProgram struct{ name, src string }

// corpus returns the programs codegen could be handed: those of the
// golden listings, the repository's scripts and the test scripts under
// testdata/ and lang's testdata/check/good.
func corpus(t *testing.T) []corpusProgram {
	t.Helper()
	var programs []corpusProgram
	for _, g := range goldenTests {
		programs = append(programs, corpusProgram{"golden/" + g.name, g.src})
	}
	for _, pat := range []string{"../testdata/*/*.bt", "../scripts/*.bt", "../lang/testdata/check/good/*.bt"} {
		files, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			programs = append(programs, corpusProgram{f, string(data)})
		}
	}
	return programs
}

// corpusConfig is the front end's configuration for the corpus: enough
// positional parameters, a host that finds files and one tracepoint, a
// kernel with symbols and no BTF.
func corpusConfig() lang.Config {
	return lang.Config{
		Params: []string{"1", "2", "3", "4", "5"}, Unsafe: true, Child: true,
		Host: tracepointHost{&usdt.Host{}}, Kernel: symbolKernel{},
	}
}

// reflectExprs calls visit for every expression reachable from v through
// exported fields, slices and pointers, each once (seen holds the
// pointers already followed).
func reflectExprs(v reflect.Value, seen map[uintptr]bool, visit func(lang.Expr)) {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			reflectExprs(v.Elem(), seen, visit)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		if e, ok := v.Interface().(lang.Expr); ok {
			visit(e)
		}
		reflectExprs(v.Elem(), seen, visit)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				reflectExprs(v.Field(i), seen, visit)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			reflectExprs(v.Index(i), seen, visit)
		}
	}
}

// TestNoUntypedNodes checks that codegen's own code builds no expression
// node (a composite literal of a lang type that embeds lang.ExprBase) and
// sets no type: an expression it needs that the script did not write, it
// asks lang for, typed (lang.Info.MemberOf). Test files, which build
// typed ASTs by hand, are exempt.
func TestNoUntypedNodes(t *testing.T) {
	exprTypes := langExprTypes(t)
	fset, files := parseGoFiles(t, ".")
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if name, ok := langName(n.Type); ok && slices.Contains(exprTypes, name) {
					t.Errorf("%s: codegen builds a lang.%s", fset.Position(n.Pos()), name)
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "SetType" {
					t.Errorf("%s: codegen sets a type", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

// langExprTypes returns the names of package lang's expression nodes:
// the struct types that embed ExprBase.
func langExprTypes(t *testing.T) []string {
	t.Helper()
	var names []string
	_, files := parseGoFiles(t, "../lang")
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := spec.Type.(*ast.StructType); ok {
				for _, field := range st.Fields.List {
					if id, ok := field.Type.(*ast.Ident); ok && len(field.Names) == 0 && id.Name == "ExprBase" {
						names = append(names, spec.Name.Name)
					}
				}
			}
			return false
		})
	}
	if len(names) < 10 {
		t.Fatalf("found only %d expression types in lang: %v", len(names), names)
	}
	return names
}

// parseGoFiles parses the Go files of dir, test files left out.
func parseGoFiles(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// langName returns T for the type expression lang.T.
func langName(e ast.Expr) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return sel.Sel.Name, ok && pkg.Name == "lang"
}
