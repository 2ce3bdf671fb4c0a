package lang

// This file reads `let` declarations (bpftrace 0.22 to 0.24): of a
// variable in a block, `let $x;`, `let $x = v;`, `let $x: TYPE [= v];`,
// and of a map at the top level, `let @m = hash(N);` and its kin, which
// choose the map's BPF type and size.

// MapDecl is a map declaration, `let @m = KIND(N);`.
type MapDecl struct {
	Loc  Span
	Name string
	// Kind is hash, lruhash, percpuhash or percpulruhash.
	Kind string
	// Entries is the most keys the map holds, N.
	Entries int
}

// MapDeclOf returns the declaration of map name (let @m = hash(N)) in p,
// or nil.
func MapDeclOf(p *Program, name string) *MapDecl {
	for _, d := range p.MapDecls {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// LRU reports whether the map evicts its least recently used key when
// full, instead of refusing a new key.
func (d *MapDecl) LRU() bool { return d.Kind == "lruhash" || d.Kind == "percpulruhash" }

// mapDeclKind reports whether a declaration may name the map kind.
func mapDeclKind(kind string) bool {
	switch kind {
	case "hash", "lruhash", "percpuhash", "percpulruhash":
		return true
	}
	return false
}

// mapDecl parses `let @m = KIND(N);` at the top level.
func (p *parser) mapDecl(prog *Program) {
	start := p.tok()
	p.next()
	name := p.tok().Value
	p.next()
	p.expect("=", "=")
	kind := p.take(tokIdent, "identifier")
	p.expect("(", "(")
	n := p.take(tokInt, "integer")
	p.expect(")", ")")
	d := &MapDecl{Loc: p.span(start), Name: name, Kind: kind.Value}
	if p.is(";") {
		p.next()
	}
	v, _ := parseInt(n.Value) // validated by the lexer
	switch {
	case kind.Value == "percpuarray":
		p.errorf(tokSpan(kind), "percpuarray map declarations are not supported by gotrace")
	case !mapDeclKind(kind.Value):
		p.errorf(tokSpan(kind), "Invalid bpf map type: %s", kind.Value)
	case v < 1 || v > 1<<24:
		p.errorf(tokSpan(n), "map %s must hold 1 to %d keys, not %s", name, 1<<24, n.Value)
	}
	d.Entries = int(v)
	for _, old := range prog.MapDecls {
		if old.Name == name {
			p.errorf(d.Loc, "map %s is already declared at line %d", name, old.Loc.Start.Line)
		}
	}
	prog.MapDecls = append(prog.MapDecls, d)
}

// letStmt parses `let $x [: TYPE] [= VALUE]` in a block. A declaration
// with a value is that assignment, with a type and no value an assignment
// of zero, the value converted to TYPE as a cast does; a bare `let $x`
// is a LetStmt, which lets the variable be read before it is assigned.
func (p *parser) letStmt() Stmt {
	start := p.tok()
	p.next()
	return p.declaration(start, p.take(tokVar, "variable"))
}

// declaration parses the rest of `[let] $x [: TYPE] [= VALUE]` after the
// variable v; start is the statement's first token.
func (p *parser) declaration(start, v lexToken) Stmt {
	x := &Var{ExprBase: ExprBase{Loc: tokSpan(v)}, Name: v.Value}
	var typ lexToken
	typed := false
	// The scanner takes ":TYPE" without a blank for a path.
	if t := p.tok(); t.Type == tokAttach && len(t.Value) > 1 && t.Value[0] == ':' {
		typ, typed = t, true
		typ.Value = t.Value[1:]
		p.next()
	} else if p.is(":") {
		p.next()
		typ, typed = p.tok(), true
		p.next()
	}
	var to Type
	typeLoc := tokSpan(typ)
	var typeOf Expr
	if typed && typ.Value == "typeof" && p.is("(") {
		// `$x: typeof(EXPR)` (bpftrace 0.24): the type of EXPR, which
		// the checker gives; EXPR is not evaluated.
		p.next()
		typeOf, _ = p.expr(expectParen)
		p.expect(")", expectParen)
		typeLoc = Span{Start: typeLoc.Start, End: posAt(p.prevEnd)}
	} else if typed {
		it, ok := castIntType(typ.Value)
		if typ.Type != tokIdent && typ.Type != tokAttach || !ok {
			p.errorf(tokSpan(typ), "gotrace declares variables of integer types and bool only, not %s", typ.Value)
		}
		to = it
	}
	var value Expr
	opLoc := tokSpan(start)
	if p.is("=") {
		opLoc = tokSpan(p.tok())
		p.next()
		value, _ = p.expr(expectStmt)
	}
	if value == nil && !typed {
		return &LetStmt{Loc: p.span(start), Var: x}
	}
	if value == nil {
		// `$x: TYPE` without a value: zero, and no "=", where the
		// type ends.
		end := typeLoc.End
		opLoc = Span{Start: end, End: end}
		value = &IntLit{ExprBase: ExprBase{Loc: opLoc}}
	}
	if typed {
		c := &Cast{TypeName: typ.Value, TypeLoc: typeLoc, To: to, X: value, Decl: true, TypeOf: typeOf}
		c.Loc = Span{Start: c.TypeLoc.Start, End: value.Span().End}
		value = c
	}
	return &AssignStmt{Loc: p.span(start), Op: "=", OpLoc: opLoc, LHS: x, RHS: value}
}
