package lang

import (
	"fmt"
	"strings"
)

// This file reads `macro NAME(PARAMS) { BODY }` definitions (bpftrace
// 0.24) and expands their calls once the script has parsed, so that the
// checker and code generator only see ordinary statements and block
// expressions. A call becomes a BlockExpr of the body with the parameters
// bound as bpftrace's hygiene rules say:
//
//   - a `$x` parameter takes a variable, which the body then reads and
//     writes under the caller's name;
//   - an `@x` parameter takes a map, likewise;
//   - an `x` parameter takes any expression, evaluated where the body
//     names x (each time it does);
//   - every other variable of the body is the macro's own: it is renamed
//     for each expansion, so it never meets one of the caller's.

// macroDef is one macro definition.
type macroDef struct {
	name   string
	loc    Span
	params []lexToken
	body   *Block
}

// macroDef parses a macro definition at the top level and records it.
func (p *parser) macroDef() {
	start := p.tok()
	p.next()
	name := p.tok()
	p.next()
	p.expect("(", "(")
	m := &macroDef{name: name.Value}
	for !p.is(")") {
		switch t := p.tok(); t.Type {
		case tokVar, tokMap, tokIdent:
			m.params = append(m.params, t)
			p.next()
		default:
			p.fail("variable or map or identifier")
		}
		if !p.is(")") {
			p.expect(",", `) or ","`)
		}
	}
	p.next()
	m.body = p.block()
	m.loc = p.span(start)
	if p.macros == nil {
		p.macros = map[string]*macroDef{}
	}
	key := macroKey(m.name, len(m.params))
	if prev, ok := p.macros[key]; ok {
		p.errorf(m.loc, "Redefinition of macro: %s (first defined at line %d)", m.name, prev.loc.Start.Line)
		return
	}
	p.macros[key] = m
}

// macroKey names a macro by its name and its number of parameters: macros
// of one name and different arities are different macros.
func macroKey(name string, params int) string {
	return fmt.Sprintf("%s/%d", name, params)
}

// expandMacros replaces the macro calls of every probe by their bodies.
func (p *parser) expandMacros(prog *Program) {
	if len(p.macros) == 0 {
		return
	}
	x := &expander{p: p}
	for _, pr := range prog.Probes {
		if pr.Pred != nil {
			pr.Pred = mapExpr(pr.Pred, x.expand)
		}
		pr.Body = mapStmt(pr.Body, x.expand).(*Block)
	}
}

// expander expands macro calls; n counts the expansions, which name the
// renamed variables, and stack holds the macros being expanded.
type expander struct {
	p     *parser
	n     int
	stack []*macroDef
}

// expand is mapExpr's function: it returns the expansion of e when e is
// a macro call (its arguments already expanded), else e.
func (x *expander) expand(e Expr) Expr {
	var name string
	var args []Expr
	switch c := e.(type) {
	case *Call:
		name, args = c.Name, c.Args
	case *Builtin:
		name = c.Name
	default:
		return e
	}
	m, ok := x.p.macros[macroKey(name, len(args))]
	if !ok {
		return e
	}
	for i, active := range x.stack {
		if active == m {
			var chain strings.Builder
			for _, c := range x.stack[i:] {
				chain.WriteString(c.name + " > ")
			}
			x.p.errorf(e.Span(), "Recursive macro call detected. Call chain: %s%s", chain.String(), name)
			return e
		}
	}
	x.n++
	b := binding{vars: map[string]string{}, maps: map[string]string{}, exprs: map[string]Expr{}, own: fmt.Sprintf("$__%s_%d_", name, x.n)}
	for i, prm := range m.params {
		arg := args[i]
		switch prm.Type {
		case tokVar:
			v, ok := arg.(*Var)
			if !ok {
				x.p.errorf(arg.Span(), "Mismatched arg to macro call. Macro %s expects a variable for arg %s", name, prm.Value)
				return e
			}
			b.vars[prm.Value] = v.Name
		case tokMap:
			mp, ok := arg.(*MapExpr)
			if !ok || mp.Keys != nil {
				x.p.errorf(arg.Span(), "Mismatched arg to macro call. Macro %s expects a map for arg %s", name, prm.Value)
				return e
			}
			b.maps[prm.Value] = mp.Name
		default:
			b.exprs[prm.Value] = arg
		}
	}
	body := mapStmt(m.body, b.bind).(*Block)
	out := blockExpr(body)
	out.Loc = e.Span()
	x.stack = append(x.stack, m)
	defer func() { x.stack = x.stack[:len(x.stack)-1] }()
	return mapExpr(out, x.expand)
}

// binding says what a macro's parameters and own variables become in one
// expansion.
type binding struct {
	vars  map[string]string
	maps  map[string]string
	exprs map[string]Expr
	// own prefixes the names of the body's own variables.
	own string
}

// bind is mapExpr's function for a macro body: it renames variables and
// maps and puts the arguments of expression parameters in.
func (b *binding) bind(e Expr) Expr {
	switch e := e.(type) {
	case *Var:
		if to, ok := b.vars[e.Name]; ok {
			e.Name = to
		} else {
			e.Name = b.own + e.Name[1:]
		}
	case *MapExpr:
		if to, ok := b.maps[e.Name]; ok {
			e.Name = to
		}
	case *Builtin:
		if arg, ok := b.exprs[e.Name]; ok {
			return mapExpr(arg, keep)
		}
	}
	return e
}

// keep is mapExpr's function for a plain copy.
func keep(e Expr) Expr { return e }

// mapExpr returns a copy of e whose every expression, children first, is
// what f makes of the copy.
func mapExpr(e Expr, f func(Expr) Expr) Expr {
	m := func(x Expr) Expr {
		if x == nil {
			return nil
		}
		return mapExpr(x, f)
	}
	ms := func(xs []Expr) []Expr {
		if xs == nil {
			return nil
		}
		out := make([]Expr, len(xs))
		for i, x := range xs {
			out[i] = m(x)
		}
		return out
	}
	switch e := e.(type) {
	case *IntLit:
		c := *e
		return f(&c)
	case *StrLit:
		c := *e
		return f(&c)
	case *Var:
		c := *e
		return f(&c)
	case *Builtin:
		c := *e
		return f(&c)
	case *PositionalParam:
		c := *e
		return f(&c)
	case *MapExpr:
		c := *e
		c.Keys = ms(e.Keys)
		return f(&c)
	case *Call:
		c := *e
		c.Args = ms(e.Args)
		return f(&c)
	case *Binary:
		// A left-nested chain (1+1+...+1) is copied in a loop, innermost
		// first, rather than by recursion.
		spine := e.LeftSpine()
		x := m(spine[len(spine)-1].X)
		for i := len(spine) - 1; i >= 0; i-- {
			c := *spine[i]
			c.X, c.Y = x, m(spine[i].Y)
			x = f(&c)
		}
		return x
	case *Unary:
		c := *e
		c.X = m(e.X)
		return f(&c)
	case *IncDec:
		c := *e
		c.X = m(e.X)
		return f(&c)
	case *Ternary:
		c := *e
		c.Cond, c.Then, c.Else = m(e.Cond), m(e.Then), m(e.Else)
		return f(&c)
	case *Cast:
		c := *e
		c.X, c.TypeOf = m(e.X), m(e.TypeOf)
		return f(&c)
	case *Tuple:
		c := *e
		c.Elems = ms(e.Elems)
		return f(&c)
	case *FieldAccess:
		c := *e
		c.X = m(e.X)
		return f(&c)
	case *IndexExpr:
		c := *e
		c.X, c.Index = m(e.X), m(e.Index)
		return f(&c)
	case *BlockExpr:
		c := *e
		c.Stmts = mapStmts(e.Stmts, f)
		c.Value = m(e.Value)
		return f(&c)
	}
	panic(fmt.Sprintf("mapExpr: unexpected %T", e))
}

func mapStmts(ss []Stmt, f func(Expr) Expr) []Stmt {
	out := make([]Stmt, len(ss))
	for i, s := range ss {
		out[i] = mapStmt(s, f)
	}
	return out
}

// mapStmt returns a copy of s whose expressions are mapExpr's of f.
func mapStmt(s Stmt, f func(Expr) Expr) Stmt {
	switch s := s.(type) {
	case *Block:
		c := *s
		c.Stmts = mapStmts(s.Stmts, f)
		return &c
	case *ExprStmt:
		c := *s
		c.X = mapExpr(s.X, f)
		return &c
	case *AssignStmt:
		c := *s
		c.LHS, c.RHS = mapExpr(s.LHS, f), mapExpr(s.RHS, f)
		return &c
	case *IfStmt:
		// An else-if chain is copied in a loop, however long it is.
		var first, last *IfStmt
		for _, s := range s.Chain() {
			c := *s
			c.Cond = mapExpr(s.Cond, f)
			c.Then = mapStmt(s.Then, f).(*Block)
			if b, ok := s.Else.(*Block); ok {
				c.Else = mapStmt(b, f)
			}
			if last == nil {
				first = &c
			} else {
				last.Else = &c
			}
			last = &c
		}
		return first
	case *UnrollStmt:
		c := *s
		c.Count = mapExpr(s.Count, f)
		c.Body = mapStmt(s.Body, f).(*Block)
		return &c
	case *WhileStmt:
		c := *s
		c.Cond = mapExpr(s.Cond, f)
		c.Body = mapStmt(s.Body, f).(*Block)
		return &c
	case *JumpStmt:
		c := *s
		if s.Value != nil {
			c.Value = mapExpr(s.Value, f)
		}
		return &c
	case *LetStmt:
		c := *s
		c.Var = mapExpr(s.Var, f).(*Var)
		return &c
	case *ForStmt:
		c := *s
		c.Var = mapExpr(s.Var, f).(*Var)
		if s.Map != nil {
			c.Map = mapExpr(s.Map, f).(*MapExpr)
		} else {
			c.Start, c.End = mapExpr(s.Start, f), mapExpr(s.End, f)
		}
		c.Body = mapStmt(s.Body, f).(*Block)
		return &c
	}
	panic(fmt.Sprintf("mapStmt: unexpected %T", s))
}
