package codegen

import (
	"github.com/gotrace/gotrace/lang/attachpoint"

	"github.com/gotrace/gotrace/internal/printf"
	"github.com/gotrace/gotrace/lang"
)

// handAST builds typed ASTs by hand, for tests that do not go through the
// checker: each builder records its node's type in info, as the checker
// would, and Compile takes info with the program.
type handAST struct {
	info *lang.Info
}

func newHandAST() handAST { return handAST{info: lang.NewInfo()} }

// typed records e's type t and returns e.
func typed[E lang.Expr](a handAST, e E, t lang.Type) E {
	a.info.SetType(e, t)
	return e
}

func (a handAST) intLit(v int64) *lang.IntLit {
	return typed(a, &lang.IntLit{Value: uint64(v)}, lang.Int64)
}

func (a handAST) strLit(s string) *lang.StrLit {
	return typed(a, &lang.StrLit{Value: s}, lang.String(len(s)+1))
}

// call builds a call with what the checker records on it: its builtin
// and the parsed format of printf, system and cat.
func (a handAST) call(name string, t lang.Type, args ...lang.Expr) *lang.Call {
	c := typed(a, &lang.Call{Name: name, Args: args, ID: lang.LookupFunc(name)}, t)
	switch c.ID {
	case lang.FuncPrintf, lang.FuncSystem, lang.FuncCat:
		if lit, ok := args[0].(*lang.StrLit); ok {
			parts, _ := printf.Parse(lit.Value)
			a.info.SetFormat(c, parts)
		}
	}
	return c
}

func (a handAST) void(name string, args ...lang.Expr) *lang.ExprStmt {
	return &lang.ExprStmt{X: a.call(name, lang.Type{Kind: lang.KindVoid}, args...)}
}

func (a handAST) bin(op string, t lang.Type, x, y lang.Expr) *lang.Binary {
	return typed(a, &lang.Binary{Op: op, X: x, Y: y}, t)
}

func (a handAST) builtinVar(name string, t lang.Type) *lang.Builtin {
	return typed(a, &lang.Builtin{Name: name, ID: lang.LookupVar(name)}, t)
}

func (a handAST) mapExpr(name string, t lang.Type, keys ...lang.Expr) *lang.MapExpr {
	return typed(a, &lang.MapExpr{Name: name, Keys: keys}, t)
}

func assign(lhs, rhs lang.Expr) *lang.AssignStmt {
	return &lang.AssignStmt{Op: "=", LHS: lhs, RHS: rhs}
}

func probeBlock(ap *lang.AttachPoint, pred lang.Expr, body ...lang.Stmt) *lang.Probe {
	return &lang.Probe{Attach: []*lang.AttachPoint{ap}, Pred: pred, Body: &lang.Block{Stmts: body}}
}

func beginAP() *lang.AttachPoint {
	return &lang.AttachPoint{Raw: "BEGIN", Point: attachpoint.Point{Kind: lang.ProbeBegin}}
}
