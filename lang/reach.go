package lang

// This file finds the statements no run of a probe reaches.

// warnUnreachable warns of the first statement of b that follows one
// that always ends the block (return, break, continue, exit(), an if whose
// every branch does), as current bpftrace does: code after it never runs.
func (c *checker) warnUnreachable(b *Block) {
	for i, s := range b.Stmts[:max(len(b.Stmts)-1, 0)] {
		if terminates(s) {
			c.warnf(b.Stmts[i+1].Span(), "Unreachable statement.")
			return
		}
	}
}

// terminates reports whether every run of s leaves the block it is in.
func terminates(s Stmt) bool {
	switch s := s.(type) {
	case *JumpStmt:
		return true
	case *ExprStmt:
		call, ok := s.X.(*Call)
		return ok && call.ID == FuncExit
	case *Block:
		for _, x := range s.Stmts {
			if terminates(x) {
				return true
			}
		}
	case *IfStmt:
		chain := s.Chain()
		last, ok := chain[len(chain)-1].Else.(*Block)
		if !ok || !terminates(last) {
			return false
		}
		for _, branch := range chain {
			if !terminates(branch.Then) {
				return false
			}
		}
		return true
	}
	return false
}
