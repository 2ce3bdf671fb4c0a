package lang

// This file holds the one rewriter of the AST, which the desugaring passes
// use: mapExpr and mapStmt copy a tree, replacing each expression, children
// first, by what a function makes of it (Inspect, in walk.go, is the one
// walker that only looks).

import "fmt"

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

// mapProbes replaces every expression of every probe's predicate and
// body by what f makes of it, children first. A probe where f replaces
// nothing is left as it is rather than copied: f is asked about each of
// its nodes first, which allocates nothing where nothing matches, so a
// script of 400,000 nodes is not copied once for every replacement.
func mapProbes(prog *Program, f func(Expr) Expr) {
	for _, pr := range prog.Probes {
		if !replacesAny(pr, f) {
			continue
		}
		if pr.Pred != nil {
			pr.Pred = mapExpr(pr.Pred, f)
		}
		pr.Body = mapStmt(pr.Body, f).(*Block)
	}
}

// replacesAny reports whether f replaces any expression of the probe as
// it stands. Nodes whose children f does not replace are copied unchanged
// by mapExpr, so a probe where this is false maps to itself.
func replacesAny(pr *Probe, f func(Expr) Expr) bool {
	found := false
	InspectProbe(pr, func(n Node) {
		if e, ok := n.(Expr); ok && !found && f(e) != e {
			found = true
		}
	})
	return found
}
