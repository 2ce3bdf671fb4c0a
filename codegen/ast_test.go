package codegen

import (
	"github.com/gotrace/gotrace/lang/attachpoint"

	"github.com/gotrace/gotrace/internal/printf"
	"github.com/gotrace/gotrace/lang"
)

// Typed AST builders for tests that do not go through the checker.

func base(t lang.Type) lang.ExprBase {
	var b lang.ExprBase
	lang.SetType(&b, t)
	return b
}

func intLit(v int64) *lang.IntLit {
	return &lang.IntLit{ExprBase: base(lang.Int64), Value: uint64(v)}
}

func strLit(s string) *lang.StrLit {
	return &lang.StrLit{ExprBase: base(lang.String(len(s) + 1)), Value: s}
}

// call builds a call with what the checker records on it: its builtin
// and the parsed format of printf, system and cat.
func call(name string, t lang.Type, args ...lang.Expr) *lang.Call {
	c := &lang.Call{ExprBase: base(t), Name: name, Args: args, ID: lang.LookupFunc(name)}
	switch c.ID {
	case lang.FuncPrintf, lang.FuncSystem, lang.FuncCat:
		if lit, ok := args[0].(*lang.StrLit); ok {
			c.Format, _ = printf.Parse(lit.Value)
		}
	}
	return c
}

func void(name string, args ...lang.Expr) *lang.ExprStmt {
	return &lang.ExprStmt{X: call(name, lang.Type{Kind: lang.KindVoid}, args...)}
}

func bin(op string, t lang.Type, x, y lang.Expr) *lang.Binary {
	return &lang.Binary{ExprBase: base(t), Op: op, X: x, Y: y}
}

func builtinVar(name string, t lang.Type) *lang.Builtin {
	return &lang.Builtin{ExprBase: base(t), Name: name, ID: lang.LookupVar(name)}
}

func mapExpr(name string, t lang.Type, keys ...lang.Expr) *lang.MapExpr {
	return &lang.MapExpr{ExprBase: base(t), Name: name, Keys: keys}
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
