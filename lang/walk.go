package lang

// InspectProbe calls visit for every node of a probe's predicate and
// body, in source order.
func InspectProbe(probe *Probe, visit func(Node)) {
	if probe.Pred != nil {
		Inspect(probe.Pred, visit)
	}
	Inspect(probe.Body, visit)
}

// Inspect calls visit for n and every node below it, in source order: the
// one walker of the AST, which passes that look at every node use. It
// keeps the nodes still to visit on a stack of its own rather than
// recursing, so a chain of 500,000 operators is no deeper than one.
func Inspect(n Node, visit func(Node)) {
	todo := []Node{n}
	var children []Node
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch x := n.(type) {
		case nil:
			continue
		case *rightOperands:
			y := x.spine[x.next].Y
			if x.next--; x.next >= 0 {
				todo = append(todo, x)
			}
			todo = append(todo, y)
			continue
		case *Binary:
			if _, chain := x.X.(*Binary); chain {
				// A left-nested chain (1+1+...+1): its operators in
				// order, then its innermost left operand, then the
				// right operands innermost first, from one entry
				// here rather than one for each.
				spine := x.LeftSpine()
				for _, b := range spine {
					visit(b)
				}
				todo = append(todo, &rightOperands{spine: spine, next: len(spine) - 1}, spine[len(spine)-1].X)
				continue
			}
		}
		visit(n)
		children = appendChildren(children[:0], n)
		// Pushed last first, so that the first child is visited next.
		for i := len(children) - 1; i >= 0; i-- {
			todo = append(todo, children[i])
		}
	}
}

// rightOperands is Inspect's entry for the right operands of a chain
// still to visit: spine[next].Y and those of the operators outside it.
type rightOperands struct {
	spine []*Binary
	next  int
}

// Span is never called: rightOperands is a Node only to sit on
// Inspect's stack.
func (r *rightOperands) Span() Span { return Span{} }

// appendChildren appends n's children to out in source order.
func appendChildren(out []Node, n Node) []Node {
	switch n := n.(type) {
	case *Block:
		out = appendNodes(out, n.Stmts)
	case *ExprStmt:
		out = append(out, n.X)
	case *AssignStmt:
		out = append(out, n.LHS, n.RHS)
	case *IfStmt:
		out = append(out, n.Cond, n.Then)
		if n.Else != nil {
			out = append(out, n.Else)
		}
	case *UnrollStmt:
		out = append(out, n.Count, n.Body)
	case *ForStmt:
		out = append(out, n.Var)
		if n.Map != nil {
			out = append(out, n.Map)
		} else {
			out = append(out, n.Start, n.End)
		}
		out = append(out, n.Body)
	case *WhileStmt:
		out = append(out, n.Cond, n.Body)
	case *JumpStmt:
		if n.Value != nil {
			out = append(out, n.Value)
		}
	case *LetStmt:
		out = append(out, n.Var)
	case *MapExpr:
		out = appendNodes(out, n.Keys)
	case *Call:
		out = appendNodes(out, n.Args)
	case *Binary:
		out = append(out, n.X, n.Y)
	case *Unary:
		out = append(out, n.X)
	case *IncDec:
		out = append(out, n.X)
	case *Ternary:
		out = append(out, n.Cond, n.Then, n.Else)
	case *Cast:
		if n.TypeOf != nil {
			out = append(out, n.TypeOf)
		}
		out = append(out, n.X)
	case *Tuple:
		out = appendNodes(out, n.Elems)
	case *FieldAccess:
		out = append(out, n.X)
	case *IndexExpr:
		out = append(out, n.X, n.Index)
	case *BlockExpr:
		out = appendNodes(out, n.Stmts)
		if n.Value != nil {
			out = append(out, n.Value)
		}
	}
	return out
}

// appendNodes appends the statements or expressions xs to out, as nodes.
func appendNodes[T Node](out []Node, xs []T) []Node {
	for _, x := range xs {
		out = append(out, x)
	}
	return out
}
