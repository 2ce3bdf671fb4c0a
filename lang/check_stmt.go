package lang

// This file checks statements.

import "strings"

func (c *checker) block(b *Block) {
	for _, s := range b.Stmts {
		c.stmt(s)
	}
	c.warnUnreachable(b)
}

func (c *checker) stmt(s Stmt) {
	switch s := s.(type) {
	case *Block:
		c.block(s)
	case *ExprStmt:
		c.expr(s.X, useStmt)
	case *AssignStmt:
		c.assign(s)
	case *IfStmt:
		// An else-if chain is checked in a loop: it may be thousands
		// of branches long.
		for _, s := range s.Chain() {
			t := c.expr(s.Cond, useValue)
			if t.Kind != KindInt && t.Kind != KindNone {
				// bpftrace 0.17 reports this at 1:1; gotrace points at
				// the condition.
				c.laterf(s.Cond.Span(), "Invalid condition in if(): %s", condName(t))
			}
			c.block(s.Then)
			if b, ok := s.Else.(*Block); ok {
				c.block(b)
			}
		}
	case *UnrollStmt:
		c.unroll(s)
	case *WhileStmt:
		t := c.expr(s.Cond, useValue)
		if !isIntLike(t) && t.Kind != KindNone && t.Kind != KindString {
			c.laterf(s.Cond.Span(), "Invalid condition in while(): %s", formatTypeName(t))
		}
		c.loops++
		c.block(s.Body)
		c.loops--
	case *ForStmt:
		if s.Map != nil {
			c.mapLoop(s)
			return
		}
		for _, x := range []Expr{s.Start, s.End} {
			if t := c.expr(x, useValue); t.Kind != KindInt && t.Kind != KindNone {
				c.errorf(x.Span(), "Loop range requires an integer, got %s", typeName(t))
			}
		}
		c.varAssign(s.Var, Int64, s.Var.Loc)
		c.loops++
		c.block(s.Body)
		c.loops--
	case *JumpStmt:
		if (s.Kind == "break" || s.Kind == "continue") && c.loops == 0 {
			c.errorf(s.Loc, "%s used outside of a loop", s.Kind)
		}
		if s.Value != nil {
			c.expr(s.Value, useValue)
		}
	case *LetStmt:
		c.defined[s.Var.Name] = true
		t := c.vars[c.probe][s.Var.Name]
		c.info.SetType(s.Var, t)
		if t.Kind == KindNone {
			// The passes are done: no assignment gave it a type.
			c.laterf(s.Var.Loc, "Could not resolve the type of this variable")
		}
	}
}

// unroll checks `unroll (N)`: N is a constant from 1 to 100.
func (c *checker) unroll(s *UnrollStmt) {
	c.expr(s.Count, useValue)
	span := s.Head
	n, ok := c.info.ConstInt(s.Count)
	switch {
	case c.badParam(s.Count):
		c.errorf(span, "invalid unroll value")
	case !ok:
		c.errorf(span, "unroll count must be an integer literal or a positional parameter")
	case n < 1:
		c.errorf(span, "unroll minimum value is 1")
	case n > 100:
		c.errorf(span, "unroll maximum value is 100")
	default:
		c.info.unrolls[s] = int(n)
	}
	c.block(s.Body)
}

// assign checks `LHS op RHS`.
func (c *checker) assign(s *AssignStmt) {
	opSpan := s.OpLoc
	switch lhs := s.LHS.(type) {
	case *Var:
		var t Type
		if s.Op == "=" {
			t = c.expr(s.RHS, useAssign)
		} else {
			cur := c.varRead(lhs)
			r := c.expr(s.RHS, useValue)
			if !isIntLike(cur) && cur.Kind != KindNone {
				// bpftrace checks `$s += 1` as the assignment of an
				// unsigned result to $s.
				c.errorf(s.Loc, "Type mismatch for %s: trying to assign value of type '%s' when variable already contains a value of type '%s'", lhs.Name, typeName(Uint64), typeName(cur))
				c.info.SetType(lhs, cur)
				return
			}
			op := strings.TrimSuffix(s.Op, "=")
			t = c.binaryType(op, cur, r, s.Loc, opSpan)
			c.warnSigns(op, nil, cur, s.RHS, r, opSpan)
		}
		c.varAssign(lhs, t, opSpan)
	case *MapExpr:
		m := c.mapAccess(lhs, lhs.Span())
		var t Type
		if s.Op == "=" {
			u := useAssign
			if ValueCall(s.RHS) != nil {
				u = useMapAssign
			}
			t = c.expr(s.RHS, u)
			if b, ok := s.RHS.(*Builtin); ok && b.ID == VarArgs && t.Kind != KindNone {
				// args is the program's context (a tracepoint's record,
				// a uprobe's registers), which lives only while the
				// probe runs.
				c.errorf(opSpan, "context cannot be assigned to a map")
				return
			}
		} else {
			cur := c.mapValue(lhs, m, false)
			if !m.valueSet {
				// bpftrace takes a new map in `@m op= v` as unsigned.
				cur = Uint64
			}
			r := c.expr(s.RHS, useValue)
			if !isIntLike(cur) && cur.Kind != KindNone {
				t = Uint64 // reported by mapStore, as bpftrace does
			} else {
				op := strings.TrimSuffix(s.Op, "=")
				t = c.binaryType(op, cur, r, s.Loc, opSpan)
				c.warnSigns(op, nil, cur, s.RHS, r, opSpan)
			}
		}
		c.mapStore(lhs, m, t, opSpan)
		if call, ok := s.RHS.(*Call); ok && t.Kind == KindLhist {
			c.lhistStore(lhs.Name, m, call)
		}
		if call, ok := s.RHS.(*Call); ok && t.Kind == KindTseries {
			c.tseriesStore(m, call)
		}
		if call, ok := s.RHS.(*Call); ok && t.Kind == KindHist {
			c.histStore(m, call)
		}
		c.info.SetType(lhs, m.info.Value)
	default:
		c.expr(s.LHS, useValue)
		c.expr(s.RHS, useValue)
		c.errorf(s.LHS.Span(), "Invalid assignment: the left-hand side must be a variable or a map")
	}
}
