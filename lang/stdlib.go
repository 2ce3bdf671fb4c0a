package lang

// taskField returns the member of real_parent that a builtin of
// bpftrace's standard library reads of the current task's parent
// (bpftrace 0.24: pcomm and ppid, and ppid(task) of a given task since
// 0.25), if name is one.
func taskField(name string) (string, bool) {
	switch name {
	case "ppid":
		return "tgid", true
	case "pcomm":
		return "comm", true
	}
	return "", false
}

// replaceTaskBuiltins replaces ppid, pcomm, ppid() and ppid(task) by the
// field accesses they stand for, task->real_parent->tgid with curtask as
// the default task, so that the checker's errors for a kernel without BTF
// are those of curtask's fields. Macros and enum values of the same name
// were replaced before.
func replaceTaskBuiltins(prog *Program) {
	parent := func(e Expr) Expr {
		var name string
		var task Expr
		switch c := e.(type) {
		case *Builtin:
			name = c.Name
		case *Call:
			name = c.Name
			switch len(c.Args) {
			case 0:
			case 1:
				task = c.Args[0]
			default:
				return e
			}
		default:
			return e
		}
		field, ok := taskField(name)
		if !ok {
			return e
		}
		loc := e.Span()
		if task == nil {
			task = &Builtin{ExprBase: ExprBase{Loc: loc}, Name: "curtask", ID: VarCurtask}
		}
		up := &FieldAccess{ExprBase: ExprBase{Loc: loc}, X: task, Field: "real_parent", Arrow: true}
		return &FieldAccess{ExprBase: ExprBase{Loc: loc}, X: up, Field: field, Arrow: true}
	}
	mapProbes(prog, parent)
}

// replaceAsserts replaces assert(cond, msg) (bpftrace 0.24's standard
// library) by what it stands for: when cond is false, a run-time error
// "assert failed: msg" at the call, and exit with status 1.
func replaceAsserts(prog *Program) {
	mapProbes(prog, func(e Expr) Expr {
		c, ok := e.(*Call)
		if !ok || c.Name != "assert" || len(c.Args) != 2 {
			return e
		}
		loc := c.Loc
		not := &Unary{ExprBase: ExprBase{Loc: loc}, Op: "!", OpLoc: loc, X: c.Args[0]}
		report := &Call{ExprBase: ExprBase{Loc: loc}, Name: "errorf", ID: FuncErrorf, NameLoc: c.NameLoc,
			Args: []Expr{&StrLit{ExprBase: ExprBase{Loc: loc}, Value: "assert failed: %s"}, c.Args[1]}}
		exit := &Call{ExprBase: ExprBase{Loc: loc}, Name: "exit", ID: FuncExit, NameLoc: c.NameLoc,
			Args: []Expr{&IntLit{ExprBase: ExprBase{Loc: loc}, Value: 1}}}
		then := &Block{Loc: loc, Stmts: []Stmt{&ExprStmt{Loc: loc, X: report}, &ExprStmt{Loc: loc, X: exit}}}
		return &BlockExpr{ExprBase: ExprBase{Loc: loc}, Stmts: []Stmt{&IfStmt{Loc: loc, Cond: not, Then: then}}}
	})
}
