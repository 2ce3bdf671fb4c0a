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
// one walker of the AST, which passes that look at every node use.
func Inspect(n Node, visit func(Node)) {
	if n == nil {
		return
	}
	visit(n)
	switch n := n.(type) {
	case *Block:
		for _, s := range n.Stmts {
			Inspect(s, visit)
		}
	case *ExprStmt:
		Inspect(n.X, visit)
	case *AssignStmt:
		Inspect(n.LHS, visit)
		Inspect(n.RHS, visit)
	case *IfStmt:
		Inspect(n.Cond, visit)
		Inspect(n.Then, visit)
		if n.Else != nil {
			Inspect(n.Else, visit)
		}
	case *UnrollStmt:
		Inspect(n.Count, visit)
		Inspect(n.Body, visit)
	case *ForStmt:
		Inspect(n.Var, visit)
		Inspect(n.Start, visit)
		Inspect(n.End, visit)
		Inspect(n.Body, visit)
	case *WhileStmt:
		Inspect(n.Cond, visit)
		Inspect(n.Body, visit)
	case *MapExpr:
		for _, k := range n.Keys {
			Inspect(k, visit)
		}
	case *Call:
		for _, a := range n.Args {
			Inspect(a, visit)
		}
	case *Binary:
		Inspect(n.X, visit)
		Inspect(n.Y, visit)
	case *Unary:
		Inspect(n.X, visit)
	case *IncDec:
		Inspect(n.X, visit)
	case *Ternary:
		Inspect(n.Cond, visit)
		Inspect(n.Then, visit)
		Inspect(n.Else, visit)
	case *Cast:
		Inspect(n.X, visit)
	case *Tuple:
		for _, e := range n.Elems {
			Inspect(e, visit)
		}
	case *FieldAccess:
		Inspect(n.X, visit)
	case *IndexExpr:
		Inspect(n.X, visit)
		Inspect(n.Index, visit)
	case *BlockExpr:
		for _, s := range n.Stmts {
			Inspect(s, visit)
		}
		if n.Value != nil {
			Inspect(n.Value, visit)
		}
	}
}
