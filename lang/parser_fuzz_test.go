package lang

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, always returns either a program
// or an ErrorList whose diagnostics can be printed, and stays fast; and that
// a program it accepts is a well-formed tree (checkSpans) that survives a
// round trip: printed back as source and parsed again, its probes give the
// same tree.
func FuzzParse(f *testing.F) {
	for _, pat := range []string{"testdata/parse/*.bt", "testdata/parse/good/*.bt", "../scripts/*.bt", "../testdata/scripts/*.bt"} {
		files, _ := filepath.Glob(pat)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(string(b))
			}
		}
	}
	f.Add("BEGIN { $x = (1, \"a\").1; @m[$x, 2]++; printf(\"%d\\n\", *(uint8*)($x + 1)); }")
	f.Add("usdt:./b:p:n /arg0 > 1 ? 1:0/ { unroll(3) { if (1) { break } else if (2) { } else { } } }")
	f.Add("struct S { int a; char b[4]; struct S *n; } u:/b:\"f(int, char)\" { $s = (struct S *)arg0; $s->n->a; }")
	f.Add("#define A 1\n#define B (A + \\\n A)\n#define R R\n#undef A\n#include <x.h>\nBEGIN { $x = B + R; }")
	f.Add("BEGIN { $x = -(1 + 2) * ((3)); @[(1, 2)] = ($x ? \"a\\t\\\"\" : \"\\001\"); ($x)++; --@; (@m)[1]; unroll(-2) { } }")
	f.Add("begin { let $a; $b = &$a; _ = (x = 1, y = (2, \"s\")).y; $c = if ($a) { 1 } else if (2) { $d = 3; $d } else { 4 }; $e = { if (1) { 5 } else { 6 } }; $f = $a ?: 7; let $g: uint16 = 5; $h:int8; let $i: typeof($g + 1) = 2; $j:typeof($c); return $c; }")
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		p, err := Parse("fuzz.bt", src)
		if d := time.Since(start); d > 5*time.Second && len(src) < 1<<16 {
			t.Errorf("Parse took %v on %d bytes", d, len(src))
		}
		if err == nil {
			if p == nil {
				t.Fatal("Parse returned neither a program nor an error")
			}
			checkSpans(t, p)
			checkRoundTrip(t, p)
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("Parse error %v is not a non-empty ErrorList", err)
		}
		var b bytes.Buffer
		list.Write(&b, "fuzz.bt", src)
	})
}

// checkRoundTrip prints p's probes as source, parses that and compares the
// two trees' dumps. Struct definitions are left out: the parser keeps only
// their layout.
func checkRoundTrip(t *testing.T, p *Program) {
	t.Helper()
	p.Structs = nil
	src := sourceOf(p)
	q, err := Parse("printed.bt", src)
	if err != nil {
		t.Fatalf("the printed program does not parse: %v\n%s", err, src)
	}
	var want, got bytes.Buffer
	Dump(&want, p, nil)
	Dump(&got, q, nil)
	if want.String() != got.String() {
		t.Fatalf("the printed program parses differently:\n%s\nwant\n%s\ngot\n%s", src, want.String(), got.String())
	}
}

// sourceOf prints p's probes as bpftrace source.
func sourceOf(p *Program) string {
	var b strings.Builder
	for _, pr := range p.Probes {
		for i, a := range pr.Attach {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.Raw)
		}
		if pr.Pred != nil {
			b.WriteString(" /" + exprSource(pr.Pred, precTernary) + "/")
		}
		b.WriteString(" " + blockSource(pr.Body) + "\n")
	}
	return b.String()
}

func blockSource(blk *Block) string {
	var b strings.Builder
	b.WriteString("{")
	for _, s := range blk.Stmts {
		b.WriteString(" " + stmtSource(s))
	}
	b.WriteString(" }")
	return b.String()
}

func stmtSource(s Stmt) string {
	switch s := s.(type) {
	case *ExprStmt:
		if _, ok := s.X.(*BlockExpr); ok {
			return "(" + exprSource(s.X, precTernary) + ");" // "{" starts no statement
		}
		return exprSource(s.X, precTernary) + ";"
	case *AssignStmt:
		if c, ok := s.RHS.(*Cast); ok && c.TypeOf != nil {
			return exprSource(s.LHS, precTernary) + ": typeof(" + exprSource(c.TypeOf, precTernary) + ") = " + exprSource(c.X, precTernary) + ";"
		}
		return exprSource(s.LHS, precTernary) + " " + s.Op + " " + exprSource(s.RHS, precTernary) + ";"
	case *IfStmt:
		out := "if (" + exprSource(s.Cond, precTernary) + ") " + blockSource(s.Then)
		if s.Else != nil {
			out += " else " + stmtSource(s.Else)
		}
		return out
	case *Block:
		return blockSource(s)
	case *UnrollStmt:
		count := exprSource(s.Count, precTernary)
		if u, ok := s.Count.(*Unary); ok {
			count = "-" + exprSource(u.X, precPrimary) // the grammar takes no parentheses here
		}
		return "unroll (" + count + ") " + blockSource(s.Body)
	case *WhileStmt:
		return "while (" + exprSource(s.Cond, precTernary) + ") " + blockSource(s.Body)
	case *ForStmt:
		if s.Map != nil {
			return "for (" + s.Var.Name + " : " + s.Map.Name + ") " + blockSource(s.Body)
		}
		return "for (" + s.Var.Name + " : " + exprSource(s.Start, precTernary) + ".." + exprSource(s.End, precTernary) + ") " + blockSource(s.Body)
	case *JumpStmt:
		if s.Value != nil {
			return s.Kind + " " + exprSource(s.Value, precTernary) + ";"
		}
		return s.Kind + ";"
	case *LetStmt:
		return "let " + s.Var.Name + ";"
	}
	return fmt.Sprintf("?%T", s)
}

// Precedences for printing above the binary operators' (1 to 10): the
// ternary binds loosest, then the binary operators, prefix operators and
// casts, postfix forms, and primary expressions.
const (
	precTernary = 0
	precPrefix  = 11
	precPostfix = 12
	precPrimary = 13
)

// exprSource prints e as an operand of at least precedence prec, in
// parentheses if it binds more loosely. Parentheses go only where they are
// needed: "(int64 % 2)" would be a cast.
func exprSource(e Expr, prec int) string {
	s, own := exprText(e)
	if own < prec {
		return "(" + s + ")"
	}
	return s
}

// exprText prints e and returns its precedence.
func exprText(e Expr) (string, int) {
	switch e := e.(type) {
	case *IntLit:
		if e.Bool {
			return fmt.Sprint(e.Value == 1), precPrimary
		}
		return fmt.Sprint(e.Value), precPrimary
	case *StrLit:
		return cQuote(e.Value), precPrimary
	case *Var:
		return e.Name, precPrimary
	case *Builtin:
		return e.Name, precPrimary
	case *PositionalParam:
		if e.Count {
			return "$#", precPrimary
		}
		return fmt.Sprintf("$%d", e.N), precPrimary
	case *MapExpr:
		if e.Keys == nil {
			return e.Name, precPrimary
		}
		return e.Name + "[" + exprsSource(e.Keys) + "]", precPrimary
	case *Call:
		return e.Name + "(" + exprsSource(e.Args) + ")", precPrimary
	case *Tuple:
		if e.Names != nil {
			fields := make([]string, len(e.Elems))
			for i, x := range e.Elems {
				fields[i] = e.Names[i] + " = " + exprSource(x, precTernary)
			}
			return "(" + strings.Join(fields, ", ") + ")", precPrimary
		}
		return "(" + exprsSource(e.Elems) + ")", precPrimary
	case *Binary:
		p := binaryPrecedence(e.Op)
		return exprSource(e.X, p) + " " + e.Op + " " + exprSource(e.Y, p+1), p
	case *Unary:
		return e.Op + " " + exprSource(e.X, precPrefix), precPrefix
	case *IncDec:
		if !e.Post {
			return e.Op + " " + exprSource(e.X, precPrefix), precPrefix
		}
		// bpftrace takes ++ and -- after primary expressions only.
		return exprSource(e.X, precPrimary) + e.Op, precPostfix
	case *Ternary:
		if e.NoMiddle {
			return exprSource(e.Cond, 1) + " ?: " + exprSource(e.Else, precTernary), precTernary
		}
		return exprSource(e.Cond, 1) + " ? " + exprSource(e.Then, precTernary) + " : " + exprSource(e.Else, precTernary), precTernary
	case *Cast:
		return "(" + e.TypeName + ")" + exprSource(e.X, precPrefix), precPrefix
	case *FieldAccess:
		field := e.Field
		if field == "" {
			field = fmt.Sprint(e.Index)
		}
		dot := "."
		if e.Arrow {
			dot = "->"
		}
		return exprSource(e.X, precPostfix) + dot + field, precPostfix
	case *IndexExpr:
		x := exprSource(e.X, precPostfix)
		if _, ok := e.X.(*MapExpr); ok {
			x = "(" + x + ")" // a map's "[" takes keys
		}
		return x + "[" + exprSource(e.Index, precTernary) + "]", precPostfix
	case *BlockExpr:
		var b strings.Builder
		b.WriteString("{")
		for _, s := range e.Stmts {
			b.WriteString(" " + stmtSource(s))
		}
		if e.Value != nil {
			b.WriteString(" " + exprSource(e.Value, precTernary))
		}
		return b.String() + " }", precPrimary
	}
	return fmt.Sprintf("?%T", e), precPrimary
}

func exprsSource(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = exprSource(e, precTernary)
	}
	return strings.Join(parts, ", ")
}

// cQuote writes s as a bpftrace string literal.
func cQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// checkSpans checks that every node's span lies within its parent's and
// that operators lie between their operands.
func checkSpans(t *testing.T, p *Program) {
	t.Helper()
	within := func(what string, inner, outer Span) {
		if inner.Start.before(outer.Start) || outer.End.before(inner.End) || inner.End.before(inner.Start) {
			t.Fatalf("%s: span %v is not within %v", what, inner, outer)
		}
	}
	ordered := func(what string, spans ...Span) {
		for i := 1; i < len(spans); i++ {
			if spans[i].Start.before(spans[i-1].End) {
				t.Fatalf("%s: span %v starts before %v ends", what, spans[i], spans[i-1])
			}
		}
	}
	var expr func(e Expr, outer Span)
	expr = func(e Expr, outer Span) {
		loc := e.Span()
		within(fmt.Sprintf("%T", e), loc, outer)
		if pl, ok := e.exprBase().ParenLoc(); ok {
			within("parentheses", loc, pl)
		}
		switch e := e.(type) {
		case *MapExpr:
			for _, k := range e.Keys {
				expr(k, loc)
			}
		case *Call:
			within("call name", e.NameLoc, loc)
			for _, a := range e.Args {
				expr(a, loc)
			}
		case *Tuple:
			for _, x := range e.Elems {
				expr(x, loc)
			}
		case *Binary:
			expr(e.X, loc)
			expr(e.Y, loc)
			ordered("binary", e.X.Span(), e.OpLoc, e.Y.Span())
		case *Unary:
			expr(e.X, loc)
			ordered("unary", e.OpLoc, e.X.Span())
		case *IncDec:
			expr(e.X, loc)
			if e.Post {
				ordered("post", e.X.Span(), e.OpLoc)
			} else {
				ordered("pre", e.OpLoc, e.X.Span())
			}
		case *Ternary:
			expr(e.Cond, loc)
			expr(e.Then, loc)
			expr(e.Else, loc)
			if e.Then.Span() == e.Cond.Span() {
				// a ?: b: Then is a copy of the condition, at its place.
				ordered("ternary", e.Cond.Span(), e.QuestionLoc, e.ColonLoc, e.Else.Span())
			} else {
				ordered("ternary", e.Cond.Span(), e.QuestionLoc, e.Then.Span(), e.ColonLoc, e.Else.Span())
			}
		case *Cast:
			within("cast type", e.TypeLoc, loc)
			expr(e.X, loc)
			ordered("cast", e.TypeLoc, e.X.Span())
		case *FieldAccess:
			expr(e.X, loc)
		case *IndexExpr:
			expr(e.X, loc)
			expr(e.Index, loc)
		}
	}
	var stmt func(s Stmt, outer Span)
	stmt = func(s Stmt, outer Span) {
		loc := s.Span()
		within(fmt.Sprintf("%T", s), loc, outer)
		switch s := s.(type) {
		case *Block:
			for _, x := range s.Stmts {
				stmt(x, loc)
			}
		case *ExprStmt:
			expr(s.X, loc)
		case *AssignStmt:
			expr(s.LHS, loc)
			expr(s.RHS, loc)
			if c, ok := s.RHS.(*Cast); ok && c.Decl {
				// $x: TYPE = VALUE: the cast's type comes before the "=".
				ordered("declaration", s.LHS.Span(), c.TypeLoc, s.OpLoc, c.X.Span())
			} else {
				ordered("assignment", s.LHS.Span(), s.OpLoc, s.RHS.Span())
			}
		case *IfStmt:
			expr(s.Cond, loc)
			stmt(s.Then, loc)
			if s.Else != nil {
				stmt(s.Else, loc)
			}
		case *UnrollStmt:
			within("unroll head", s.Head, loc)
			expr(s.Count, s.Head)
			stmt(s.Body, loc)
			ordered("unroll", s.Head, s.Body.Span())
		case *WhileStmt:
			expr(s.Cond, loc)
			stmt(s.Body, loc)
		}
	}
	for _, pr := range p.Probes {
		if pr.Pred != nil {
			expr(pr.Pred, pr.Loc)
			ordered("predicate", pr.Pred.Span(), Span{Start: pr.PredEnd, End: pr.PredEnd}, pr.Body.Span())
		}
		stmt(pr.Body, pr.Loc)
	}
}
