package codegen

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/lang"
)

// TestPassesLeaveASTAlone checks that resolution, checking and code
// generation record what they find in side tables (lang.Info, the Spec)
// and never write on the program they are handed: for every program of
// the corpus, the AST as the desugaring passes leave it (what lang.Resolve
// receives) is fingerprinted, every field of every node, unexported ones
// included, and the identity of every node; then Resolve and Check run
// (lang.Analyze), and Compile for the programs that check clean, and the
// fingerprint must not have changed. A pass that sets a field on a node,
// or replaces a node by an equal copy, fails here.
func TestPassesLeaveASTAlone(t *testing.T) {
	programs, cfg := corpus(t), corpusConfig()
	lastDesugar := ""
	for _, pass := range lang.Passes {
		if pass.Desugar {
			lastDesugar = pass.Name
		}
	}
	compiled := 0
	for _, prog := range programs {
		p, err := lang.Parse(filepath.Base(prog.name), prog.src)
		if err != nil {
			continue
		}
		var before *astFingerprint
		info, err := lang.Analyze(p, cfg, func(pass lang.Pass, _ *lang.Info) {
			if pass.Name == lastDesugar {
				before = fingerprint(p)
			}
		})
		if before == nil {
			continue // a desugaring pass refused it: nothing ran after
		}
		stage := "resolve and check"
		if err == nil {
			if _, err := Compile(info.ResolvedProgram(p), info, Options{USDT: fakeUSDT(p, info, fakeProbe(0))}); err == nil {
				stage = "resolve, check and compile"
				compiled++
			}
		}
		if diff := before.diff(fingerprint(p)); diff != "" {
			t.Errorf("%s: %s changed the AST: %s", prog.name, stage, diff)
		}
	}
	if compiled < len(programs)/2 {
		t.Fatalf("only %d of %d programs compiled", compiled, len(programs))
	}
	t.Logf("%d programs, %d of them compiled", len(programs), compiled)
}

// astFingerprint is what a program's AST holds: every value reachable
// from the Program, one line each, and the address of every node.
type astFingerprint struct {
	lines []string
	nodes []uintptr
}

// fingerprint takes p's fingerprint. Reflection reaches unexported
// fields too (it reads them, never calls through them), so nothing a
// pass could write is left out.
func fingerprint(p *lang.Program) *astFingerprint {
	f := &astFingerprint{}
	ids := map[uintptr]int{}
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				f.lines = append(f.lines, path+" nil")
				return
			}
			if id, ok := ids[v.Pointer()]; ok {
				f.lines = append(f.lines, fmt.Sprintf("%s -> #%d", path, id))
				return
			}
			ids[v.Pointer()] = len(ids)
			f.nodes = append(f.nodes, v.Pointer())
			f.lines = append(f.lines, fmt.Sprintf("%s #%d %s", path, ids[v.Pointer()], v.Type()))
			walk(path, v.Elem())
		case reflect.Interface:
			if v.IsNil() {
				f.lines = append(f.lines, path+" nil")
				return
			}
			walk(path, v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.IsNil() {
				f.lines = append(f.lines, path+" nil")
				return
			}
			f.lines = append(f.lines, fmt.Sprintf("%s len %d", path, v.Len()))
			for i := range v.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
			}
		case reflect.Map:
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			f.lines = append(f.lines, fmt.Sprintf("%s map %d", path, len(keys)))
			for _, k := range keys {
				walk(fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k))
			}
		case reflect.String:
			f.lines = append(f.lines, fmt.Sprintf("%s %q", path, v.String()))
		case reflect.Bool:
			f.lines = append(f.lines, fmt.Sprintf("%s %v", path, v.Bool()))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.lines = append(f.lines, fmt.Sprintf("%s %d", path, v.Int()))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			f.lines = append(f.lines, fmt.Sprintf("%s %d", path, v.Uint()))
		default:
			f.lines = append(f.lines, fmt.Sprintf("%s (%s)", path, v.Kind()))
		}
	}
	walk("Program", reflect.ValueOf(p))
	return f
}

// diff describes the first difference between f and g, "" for none.
func (f *astFingerprint) diff(g *astFingerprint) string {
	for i := range min(len(f.lines), len(g.lines)) {
		if f.lines[i] != g.lines[i] {
			return fmt.Sprintf("was %s, now %s", f.lines[i], g.lines[i])
		}
	}
	if len(f.lines) != len(g.lines) {
		return fmt.Sprintf("%d values, now %d", len(f.lines), len(g.lines))
	}
	if !slices.Equal(f.nodes, g.nodes) {
		return "a node was replaced by an equal copy"
	}
	return ""
}

// TestNoWritesOnNodes is TestPassesLeaveASTAlone's complement in the
// source: a write the corpus does not reach, or that writes what a field
// held already (an index of 0), escapes a fingerprint, so the code of
// resolve and check (lang's check*.go, resolve.go and the files they
// use, and every method of the checker) and of codegen is read for an
// assignment, an op-assignment or ++/-- on a field of, or through, a
// variable whose declared type is a pointer to one of lang's AST nodes
// (the struct types of ast.go): a parameter, a variable, or the result
// of a type assertion or type switch. Nodes a function builds itself
// (&lang.T{...}) are its own to fill in, and copies of nodes are not
// pointers to them. It cannot see writes through a pointer whose type it
// is not told (a function's result): those are left to the corpus.
func TestNoWritesOnNodes(t *testing.T) {
	nodes := langStructTypes(t, "ast.go")
	passFile := regexp.MustCompile(`^(check.*|resolve|info|kfunc|tracepoint|ktypes|format|types)\.go$`)
	type source struct {
		dir   string
		whole func(file string) bool
	}
	found := 0
	for _, src := range []source{
		{"../lang", func(file string) bool { return passFile.MatchString(file) }},
		{".", func(string) bool { return true }},
	} {
		fset, files := parseGoFiles(t, src.dir)
		for _, f := range files {
			whole := src.whole(filepath.Base(fset.Position(f.Pos()).Filename))
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil || !whole && !isCheckerMethod(fn) || fillsOwnNodes[fn.Name.Name] != "" {
					continue
				}
				found++
				for _, w := range nodeWrites(fn, nodes) {
					t.Errorf("%s: %s writes on a lang.%s node", fset.Position(w.pos), fn.Name.Name, w.node)
				}
			}
		}
	}
	if found < 200 {
		t.Fatalf("read only %d functions", found)
	}
}

// fillsOwnNodes are the functions of the passes that are handed nodes
// their pass made, not nodes of the AST it was given, and what those are.
var fillsOwnNodes = map[string]string{
	"substituteParams":  "Resolve's copy of a parsed attach point",
	"resolveKfunc":      "Resolve's copy of a parsed attach point",
	"resolveTracepoint": "Resolve's copy of a parsed attach point",
	"members":           "a struct the checker makes of one of the kernel's BTF",
}

// langStructTypes returns the names of the struct types that lang's file
// declares.
func langStructTypes(t *testing.T, file string) map[string]bool {
	t.Helper()
	fset, files := parseGoFiles(t, "../lang")
	names := map[string]bool{}
	for _, f := range files {
		if filepath.Base(fset.Position(f.Pos()).Filename) != file {
			continue
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gen.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					if _, ok := ts.Type.(*ast.StructType); ok {
						names[ts.Name.Name] = true
					}
				}
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("found only %d struct types in lang/%s", len(names), file)
	}
	return names
}

// isCheckerMethod reports whether fn is a method of lang's checker.
func isCheckerMethod(fn *ast.FuncDecl) bool {
	if fn.Recv == nil || len(fn.Recv.List) != 1 {
		return false
	}
	star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "checker"
}

// nodeWrite is a write on an AST node: where, and the node's type.
type nodeWrite struct {
	pos  token.Pos
	node string
}

// nodeWrites returns the writes of fn on a field of, or through, a
// variable declared as a pointer to one of nodes.
func nodeWrites(fn *ast.FuncDecl, nodes map[string]bool) []nodeWrite {
	var writes []nodeWrite
	var clauses []*ast.CaseClause
	check := func(lhs ast.Expr) {
		id, through := writtenVar(lhs)
		if id == nil || !through {
			return
		}
		if name := declaredNode(id, clauses); nodes[name] {
			writes = append(writes, nodeWrite{lhs.Pos(), name})
		}
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			// The clause's statements see a type switch's variable as
			// the clause's type.
			clauses = append(clauses, n)
			for _, s := range n.Body {
				ast.Inspect(s, visit)
			}
			clauses = clauses[:len(clauses)-1]
			return false
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, lhs := range n.Lhs {
					check(lhs)
				}
			}
		case *ast.IncDecStmt:
			check(n.X)
		}
		return true
	}
	ast.Inspect(fn.Body, visit)
	if fn.Recv != nil {
		// A method of a node type writes on its own node.
		for _, f := range fn.Recv.List {
			if name := pointerTo(f.Type); nodes[name] {
				return nil
			}
		}
	}
	return writes
}

// writtenVar returns the variable lhs writes on or through (x of x, x.f,
// x.f[i], *x), nil for none, and whether it writes through it.
func writtenVar(lhs ast.Expr) (*ast.Ident, bool) {
	through := false
	for {
		switch x := lhs.(type) {
		case *ast.Ident:
			return x, through
		case *ast.SelectorExpr:
			lhs, through = x.X, true
		case *ast.StarExpr:
			lhs, through = x.X, true
		case *ast.IndexExpr:
			lhs = x.X
		case *ast.ParenExpr:
			lhs = x.X
		default:
			return nil, false
		}
	}
}

// declaredNode returns the type T of id's declaration as *T or *lang.T:
// a parameter or variable of that type, or id := x.(*T); in a type
// switch's clause, the clause's one type. It returns "" for any other
// declaration, a node built in place (&T{...}) among them.
func declaredNode(id *ast.Ident, clauses []*ast.CaseClause) string {
	if id.Obj == nil {
		return ""
	}
	switch decl := id.Obj.Decl.(type) {
	case *ast.Field:
		return pointerTo(decl.Type)
	case *ast.ValueSpec:
		if decl.Type != nil {
			return pointerTo(decl.Type)
		}
	case *ast.AssignStmt:
		for i, lhs := range decl.Lhs {
			if l, ok := lhs.(*ast.Ident); !ok || l.Name != id.Name {
				continue
			}
			rhs := decl.Rhs[min(i, len(decl.Rhs)-1)]
			ta, ok := rhs.(*ast.TypeAssertExpr)
			switch {
			case !ok:
				return ""
			case ta.Type != nil:
				return pointerTo(ta.Type)
			case len(clauses) > 0 && len(clauses[len(clauses)-1].List) == 1:
				return pointerTo(clauses[len(clauses)-1].List[0])
			}
		}
	}
	return ""
}

// pointerTo returns T for the type expression *T or *lang.T, else "".
func pointerTo(e ast.Expr) string {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return ""
	}
	if id, ok := star.X.(*ast.Ident); ok {
		return id.Name
	}
	name, _ := langName(star.X)
	return name
}
