package lang

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Dump writes p as an indented tree, one node per line, one space of
// indentation per level. Expressions info gives a type end in ":: TYPE";
// info is nil before the checker. Attach points are printed as info
// records them resolved, once Resolve has run. The output is stable, for golden tests
// and `gotrace -d ast`.
func Dump(w io.Writer, p *Program, info *Info) {
	d := &dumper{w: w, info: info}
	d.line(0, "Program")
	for _, s := range p.Structs {
		d.line(1, "struct %s size %d", s.Name, s.Size)
		for _, f := range s.Fields {
			d.line(2, "%s %s offset %d", f.Name, f.Type, f.Offset)
		}
	}
	for _, pr := range p.Probes {
		d.line(1, "probe")
		for _, a := range d.attachPoints(pr) {
			d.line(2, "%s", attachString(a))
		}
		if pr.Pred != nil {
			d.line(2, "predicate")
			d.expr(3, pr.Pred)
		}
		d.stmts(2, pr.Body.Stmts)
	}
}

// attachString describes an attach point by its parsed fields.
func attachString(a *AttachPoint) string {
	parts := []string{a.Kind.String()}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	add("target", a.Target)
	add("provider", a.Provider)
	add("func", a.Func)
	if a.Address != 0 {
		parts = append(parts, fmt.Sprintf("address=%#x", a.Address))
	}
	if a.Unit != "" {
		parts = append(parts, fmt.Sprintf("unit=%s freq=%d", a.Unit, a.Freq))
	}
	return strings.Join(parts, " ")
}

type dumper struct {
	w io.Writer
	// info gives the expressions' types; nil before the checker.
	info *Info
}

// typeOf returns e's type, none before the checker.
func (d *dumper) typeOf(e Expr) Type {
	if d.info == nil {
		return Type{}
	}
	return d.info.TypeOf(e)
}

// attachPoints returns pr's attach points as resolved when Resolve has
// run, else as parsed.
func (d *dumper) attachPoints(pr *Probe) []*AttachPoint {
	if d.info == nil {
		return pr.Attach
	}
	return d.info.AttachPoints(pr)
}

// unrollCount returns the repeat count the checker found for s, 0 before
// the checker.
func (d *dumper) unrollCount(s *UnrollStmt) int {
	if d.info == nil {
		return 0
	}
	return d.info.UnrollCount(s)
}

func (d *dumper) line(depth int, format string, args ...any) {
	fmt.Fprintf(d.w, "%s%s\n", strings.Repeat(" ", depth), fmt.Sprintf(format, args...))
}

func (d *dumper) stmts(depth int, stmts []Stmt) {
	for _, s := range stmts {
		d.stmt(depth, s)
	}
}

func (d *dumper) stmt(depth int, s Stmt) {
	switch s := s.(type) {
	case *Block:
		d.line(depth, "block")
		d.stmts(depth+1, s.Stmts)
	case *ExprStmt:
		d.expr(depth, s.X)
	case *AssignStmt:
		d.line(depth, "%s", s.Op)
		d.exprs(depth+1, s.LHS, s.RHS)
	case *IfStmt:
		// Each else-if is a level deeper, printed in a loop.
		for _, s := range s.Chain() {
			d.line(depth, "if")
			d.expr(depth+1, s.Cond)
			d.line(depth+1, "then")
			d.stmts(depth+2, s.Then.Stmts)
			if s.Else != nil {
				d.line(depth+1, "else")
			}
			if b, ok := s.Else.(*Block); ok {
				d.stmts(depth+2, b.Stmts)
			}
			depth += 2
		}
	case *UnrollStmt:
		if n := d.unrollCount(s); n > 0 {
			d.line(depth, "unroll %d", n)
		} else {
			d.line(depth, "unroll")
		}
		d.expr(depth+1, s.Count)
		d.line(depth+1, "body")
		d.stmts(depth+2, s.Body.Stmts)
	case *ForStmt:
		d.line(depth, "for")
		if s.Map != nil {
			d.exprs(depth+1, s.Var, s.Map)
		} else {
			d.exprs(depth+1, s.Var, s.Start, s.End)
		}
		d.line(depth+1, "body")
		d.stmts(depth+2, s.Body.Stmts)
	case *WhileStmt:
		d.line(depth, "while")
		d.expr(depth+1, s.Cond)
		d.line(depth+1, "body")
		d.stmts(depth+2, s.Body.Stmts)
	case *JumpStmt:
		d.line(depth, "%s", s.Kind)
		if s.Value != nil {
			d.expr(depth+1, s.Value)
		}
	case *LetStmt:
		d.line(depth, "let")
		d.expr(depth+1, s.Var)
	default:
		d.line(depth, "?stmt %T", s)
	}
}

func (d *dumper) exprs(depth int, es ...Expr) {
	for _, e := range es {
		d.expr(depth, e)
	}
}

// typed writes a line for e: text and e's type when it has one.
func (d *dumper) typed(depth int, e Expr, text string) {
	if t := d.typeOf(e); t.Kind != KindNone {
		text += " :: " + t.String()
	}
	d.line(depth, "%s", text)
}

func (d *dumper) expr(depth int, e Expr) {
	typed := func(format string, args ...any) {
		d.typed(depth, e, fmt.Sprintf(format, args...))
	}
	switch e := e.(type) {
	case *IntLit:
		if e.Bool {
			typed("bool %t", e.Value == 1)
			break
		}
		typed("int %d", e.Value)
	case *StrLit:
		typed("string %s", strconv.Quote(e.Value))
	case *Var:
		typed("variable %s", e.Name)
	case *MapExpr:
		typed("map %s", e.Name)
		d.exprs(depth+1, e.Keys...)
	case *Builtin:
		typed("builtin %s", e.Name)
	case *PositionalParam:
		if e.Count {
			typed("param $#")
		} else {
			typed("param $%d", e.N)
		}
	case *Call:
		typed("call %s", e.Name)
		d.exprs(depth+1, e.Args...)
	case *Binary:
		// A left-nested chain (1+1+...+1) is printed in loops: the
		// operators down its left side, then the right operands back up.
		spine := e.LeftSpine()
		for i, b := range spine {
			d.typed(depth+i, b, b.Op)
		}
		d.expr(depth+len(spine), spine[len(spine)-1].X)
		for i := len(spine) - 1; i >= 0; i-- {
			d.expr(depth+i+1, spine[i].Y)
		}
	case *Unary:
		typed("unary %s", e.Op)
		d.expr(depth+1, e.X)
	case *IncDec:
		if e.Post {
			typed("post %s", e.Op)
		} else {
			typed("pre %s", e.Op)
		}
		d.expr(depth+1, e.X)
	case *Ternary:
		typed("?:")
		d.exprs(depth+1, e.Cond, e.Then, e.Else)
	case *Cast:
		typed("cast (%s)", e.TypeName)
		if e.TypeOf != nil {
			d.expr(depth+1, e.TypeOf)
		}
		d.expr(depth+1, e.X)
	case *Tuple:
		if e.Names != nil {
			typed("record (%s)", strings.Join(e.Names, ", "))
		} else {
			typed("tuple")
		}
		d.exprs(depth+1, e.Elems...)
	case *FieldAccess:
		switch {
		case e.Field == "":
			typed(".%d", e.Index)
		case e.Arrow:
			typed("->%s", e.Field)
		default:
			typed(".%s", e.Field)
		}
		d.expr(depth+1, e.X)
	case *IndexExpr:
		typed("[]")
		d.exprs(depth+1, e.X, e.Index)
	case *BlockExpr:
		typed("block")
		d.stmts(depth+1, e.Stmts)
		if e.Value != nil {
			d.expr(depth+1, e.Value)
		}
	default:
		d.line(depth, "?expr %T", e)
	}
}
