package lang

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// The participle grammar. These structs stay private: Parse converts them
// into the AST of ast.go.

type gProgram struct {
	Items []*gItem `parser:"@@*"`
}

type gItem struct {
	Struct *gStruct `parser:"  @@"`
	Probe  *gProbe  `parser:"| @@"`
}

type gStruct struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   string    `parser:"'struct' @Ident '{'"`
	Fields []*gField `parser:"( @@ | ';' )* '}' ';'?"`
}

type gField struct {
	Pos   lexer.Position
	Words []string `parser:"@Ident+"`
	Stars []string `parser:"@'*'*"`
	Name  string   `parser:"@Ident?"`
	Dims  []string `parser:"('[' @Int ']')* ';'?"`
}

type gProbe struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Attach []*gAttach `parser:"@@ (',' @@?)*"`
	Pred   *gExpr     `parser:"('/' @@ EndPred)?"`
	Body   *gBlock    `parser:"@@"`
}

type gAttach struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Raw    string `parser:"@(Attach | Ident | Int)"`
}

type gBlock struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Stmts  []*gStmt `parser:"'{' @@* '}'"`
}

type gStmt struct {
	Pos    lexer.Position
	EndPos lexer.Position
	If     *gIf       `parser:"(  @@"`
	Unroll *gUnroll   `parser:" | @@"`
	While  *gWhile    `parser:" | @@"`
	Jump   string     `parser:" | @('break' | 'continue' | 'return')"`
	Expr   *gExprStmt `parser:" | @@ ) ';'*"`
}

type gIf struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Cond   *gExpr  `parser:"'if' '(' @@ ')'"`
	Then   *gBlock `parser:"@@"`
	ElseIf *gIf    `parser:"('else' ( @@"`
	Else   *gBlock `parser:"        | @@ ) )?"`
}

type gUnroll struct {
	Count *gExpr  `parser:"'unroll' '(' @@ ')'"`
	Body  *gBlock `parser:"@@"`
}

type gWhile struct {
	Cond *gExpr  `parser:"'while' '(' @@ ')'"`
	Body *gBlock `parser:"@@"`
}

type gExprStmt struct {
	X   *gExpr `parser:"@@"`
	Op  string `parser:"( @('=' | '+=' | '-=' | '*=' | '/=' | '%=' | '&=' | '|=' | '^=' | '<<=' | '>>=')"`
	RHS *gExpr `parser:"  @@ )?"`
}

// gExpr is a ternary over a flat list of binary operations; convert applies
// C's precedence to the list.
type gExpr struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Head   *gUnary    `parser:"@@"`
	Ops    []*gBinary `parser:"@@*"`
	Then   *gExpr     `parser:"( '?' @@"`
	Else   *gExpr     `parser:"  ':' @@ )?"`
}

type gBinary struct {
	Pos lexer.Position
	Op  string  `parser:"@('||' | '&&' | '|' | '^' | '&' | '==' | '!=' | '<=' | '>=' | '<' | '>' | '<<' | '>>' | '+' | '-' | '*' | '/':Punct | '%')"`
	Y   *gUnary `parser:"@@"`
}

type gUnary struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Op      string    `parser:"(  @('!' | '~' | '-' | '*' | '++' | '--')"`
	X       *gUnary   `parser:"   @@"`
	Cast    *gCast    `parser:" | @@"`
	Postfix *gPostfix `parser:" | @@ )"`
}

// gCast is a cast to an integer type, a struct or a pointer; a name other
// than an integer type needs a "*", so that (nsecs) stays an expression.
// The lookahead group decides before anything is consumed: participle's
// bounded lookahead could not back out of "(a *****b" once it took it for
// a cast. After "struct" any token names the struct, as in bpftrace, whose
// checker then reports "(struct 0)" as an unknown struct.
type gCast struct {
	Struct string   `parser:"(?= '(' ( 'struct' | 'int8' | 'int16' | 'int32' | 'int64' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | Ident '*'+ ')' ) ) '(' ( ( 'struct' @(Ident | Int | String | Var | Map | Param | ParamCount | Punct | Attach | EndPred)"`
	Int    string   `parser:"      | @('int8' | 'int16' | 'int32' | 'int64' | 'uint8' | 'uint16' | 'uint32' | 'uint64') )"`
	Stars  []string `parser:"    @'*'*"`
	Named  string   `parser:"  | @Ident"`
	NStars []string `parser:"    @'*'+ ) ')'"`
	X      *gUnary  `parser:"@@"`
}

type gPostfix struct {
	Pos  lexer.Position
	X    *gPrimary  `parser:"@@"`
	Suff []*gSuffix `parser:"@@*"`
}

type gSuffix struct {
	EndPos lexer.Position
	Index  *gExpr `parser:"(  '[' @@ ']'"`
	Arrow  bool   `parser:" | ( '.' | @'->' )"`
	Field  string `parser:"   @(Ident | Int)"`
	IncDec string `parser:" | @('++' | '--') )"`
}

type gPrimary struct {
	Pos        lexer.Position
	EndPos     lexer.Position
	Int        *string  `parser:"(  @Int"`
	Str        *string  `parser:" | @String"`
	Var        string   `parser:" | @Var"`
	Param      string   `parser:" | @Param"`
	ParamCount bool     `parser:" | @ParamCount"`
	Map        *gMap    `parser:" | @@"`
	Call       *gCall   `parser:" | @@"`
	Paren      []*gExpr `parser:" | '(' @@ (',' @@)* ')' )"`
}

type gMap struct {
	Name string   `parser:"@Map"`
	Keys []*gExpr `parser:"( '[' @@ (',' @@)* ']' )?"`
}

type gCall struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   string   `parser:"@Ident"`
	Open   bool     `parser:"( @'('"`
	Args   []*gExpr `parser:"  ( @@ (',' @@)* )? ')' )?"`
}

// grammar is built on first use: building it takes about 10 ms, which
// commands that parse no script (-l, -V) should not pay.
var grammar = sync.OnceValue(func() *participle.Parser[gProgram] {
	return participle.MustBuild[gProgram](
		participle.Lexer(tokenDef{}),
		participle.UseLookahead(6),
	)
})

// Parse parses a bpftrace script. file is the name diagnostics use ("stdin"
// for -e). On bad input the error is an ErrorList.
func Parse(file, src string) (*Program, error) {
	toks, lerr := scan(file, src)
	if lerr != nil {
		return nil, ErrorList{lerr}
	}
	if serr := recognize(toks); serr != nil {
		return nil, ErrorList{serr}
	}
	stream := &tokenStream{toks: toks}
	peek, err := lexer.Upgrade(stream)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	g, err := grammar().ParseFromLexer(peek)
	if err != nil {
		return nil, ErrorList{syntaxError(toks, err)}
	}
	c := &converter{toks: toks}
	p := &Program{File: file, Source: src}
	for _, it := range g.Items {
		if it.Struct != nil {
			p.Structs = append(p.Structs, c.structDef(it.Struct))
			continue
		}
		p.Probes = append(p.Probes, c.probe(it.Probe))
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return p, nil
}

// syntaxError turns a participle error into a diagnostic. The recogniser
// runs first and FuzzParse checks that it refuses whatever the grammar
// refuses, so this is a safety net.
func syntaxError(toks []lexToken, err error) *Error {
	var perr participle.Error
	if !errors.As(err, &perr) {
		return &Error{Msg: err.Error()}
	}
	i := min(tokenIndex(toks, perr.Position().Offset), len(toks)-1)
	return &Error{Span: runSpan(toks[i]), Msg: "syntax error, unexpected " + tokenName(toks[i])}
}

// tokenName names a token the way bpftrace's parser does in its messages.
func tokenName(t lexToken) string {
	switch t.Type {
	case tokEOF:
		return "end of file"
	case tokIdent:
		if bisonKeywords[t.Value] {
			return t.Value
		}
		return identClass(t.Value)
	case tokInt:
		return "integer"
	case tokString:
		return "string"
	case tokVar:
		return "variable"
	case tokMap:
		return "map"
	case tokParam:
		return "positional parameter"
	case tokParamCount:
		return "$#"
	case tokAttach:
		return "path"
	case tokEndPred:
		return "end predicate"
	}
	if t.Value == "," {
		return `","`
	}
	return t.Value
}

func tokSpan(t lexToken) Span {
	return Span{Start: Pos{Line: t.Pos.Line, Col: t.Pos.Column}, End: Pos{Line: t.End.Line, Col: t.End.Column}}
}

// converter turns the grammar structs into the AST.
type converter struct {
	toks []lexToken
	errs ErrorList
	// structs and structAlign are the structs defined so far, for nested
	// struct fields.
	structs     map[string]*StructDef
	structAlign map[string]int
}

func (c *converter) errorf(s Span, format string, args ...any) {
	c.errs = append(c.errs, &Error{Span: s, Msg: fmt.Sprintf(format, args...)})
}

// span is the range from start to the end of the last token before end
// (participle's EndPos is the start of the following token).
func (c *converter) span(start, end lexer.Position) Span {
	i := tokenIndex(c.toks, end.Offset)
	e := Pos{Line: start.Line, Col: start.Column}
	if i > 0 {
		t := c.toks[i-1]
		if t.Pos.Offset >= start.Offset {
			e = Pos{Line: t.End.Line, Col: t.End.Column}
		}
	}
	return Span{Start: Pos{Line: start.Line, Col: start.Column}, End: e}
}

func (c *converter) probe(g *gProbe) *Probe {
	p := &Probe{Loc: c.span(g.Pos, g.EndPos)}
	for _, a := range g.Attach {
		if a == nil {
			continue
		}
		p.Attach = append(p.Attach, c.attach(a))
	}
	if g.Pred != nil {
		p.Pred = c.expr(g.Pred)
	}
	p.Body = c.block(g.Body)
	return p
}

func (c *converter) block(g *gBlock) *Block {
	b := &Block{Loc: c.span(g.Pos, g.EndPos)}
	for _, s := range g.Stmts {
		b.Stmts = append(b.Stmts, c.stmt(s))
	}
	return b
}

func (c *converter) stmt(g *gStmt) Stmt {
	loc := c.span(g.Pos, g.EndPos)
	switch {
	case g.If != nil:
		return c.ifStmt(g.If)
	case g.Unroll != nil:
		return &UnrollStmt{Loc: loc, Count: c.expr(g.Unroll.Count), Body: c.block(g.Unroll.Body)}
	case g.While != nil:
		return &WhileStmt{Loc: loc, Cond: c.expr(g.While.Cond), Body: c.block(g.While.Body)}
	case g.Jump != "":
		return &JumpStmt{Loc: tokSpan(c.toks[tokenIndex(c.toks, g.Pos.Offset)]), Kind: g.Jump}
	}
	x := c.expr(g.Expr.X)
	if g.Expr.Op == "" {
		return &ExprStmt{Loc: x.Span(), X: x}
	}
	// The recogniser has checked that x is a variable or a map.
	rhs := c.expr(g.Expr.RHS)
	return &AssignStmt{Loc: Span{Start: x.Span().Start, End: rhs.Span().End}, Op: g.Expr.Op, LHS: x, RHS: rhs}
}

func (c *converter) ifStmt(g *gIf) *IfStmt {
	s := &IfStmt{Loc: c.span(g.Pos, g.EndPos), Cond: c.expr(g.Cond), Then: c.block(g.Then)}
	switch {
	case g.ElseIf != nil:
		s.Else = c.ifStmt(g.ElseIf)
	case g.Else != nil:
		s.Else = c.block(g.Else)
	}
	return s
}

// binaryPrecedence of the binary operators, higher binds tighter.
var binaryPrecedence = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6,
	"<": 7, "<=": 7, ">": 7, ">=": 7,
	"<<": 8, ">>": 8,
	"+": 9, "-": 9,
	"*": 10, "/": 10, "%": 10,
}

func (c *converter) expr(g *gExpr) Expr {
	operands := []Expr{c.unary(g.Head)}
	var ops []string
	reduce := func() {
		n := len(operands)
		x, y := operands[n-2], operands[n-1]
		op := ops[len(ops)-1]
		ops = ops[:len(ops)-1]
		b := &Binary{Op: op, X: x, Y: y}
		b.Loc = Span{Start: x.Span().Start, End: y.Span().End}
		operands = append(operands[:n-2], b)
	}
	for _, b := range g.Ops {
		for len(ops) > 0 && binaryPrecedence[ops[len(ops)-1]] >= binaryPrecedence[b.Op] {
			reduce()
		}
		ops = append(ops, b.Op)
		operands = append(operands, c.unary(b.Y))
	}
	for len(ops) > 0 {
		reduce()
	}
	x := operands[0]
	if g.Then == nil {
		return x
	}
	t := &Ternary{Cond: x, Then: c.expr(g.Then), Else: c.expr(g.Else)}
	t.Loc = Span{Start: x.Span().Start, End: t.Else.Span().End}
	return t
}

func (c *converter) unary(g *gUnary) Expr {
	loc := c.span(g.Pos, g.EndPos)
	switch {
	case g.Op == "++" || g.Op == "--":
		e := &IncDec{Op: g.Op, X: c.unary(g.X)}
		e.Loc = loc
		return e
	case g.Op != "":
		e := &Unary{Op: g.Op, X: c.unary(g.X)}
		e.Loc = loc
		return e
	case g.Cast != nil:
		return c.cast(g.Cast, loc)
	}
	return c.postfix(g.Postfix)
}

// castIntTypes are the integer type names a cast may use.
var castIntTypes = map[string]Type{
	"int8": Int(1, true), "int16": Int(2, true), "int32": Int(4, true), "int64": Int(8, true),
	"uint8": Int(1, false), "uint16": Int(2, false), "uint32": Int(4, false), "uint64": Int(8, false),
}

func (c *converter) cast(g *gCast, loc Span) Expr {
	e := &Cast{X: c.unary(g.X)}
	e.Loc = loc
	var to Type
	stars := g.Stars
	switch {
	case g.Struct != "":
		e.TypeName = "struct " + g.Struct
		to = Type{Kind: KindStruct, Struct: g.Struct}
	case g.Int != "":
		e.TypeName = g.Int
		to = castIntTypes[g.Int]
	default:
		// bpftrace reads `(char *)` as a pointer to a struct named char; the
		// checker reports the unknown struct.
		e.TypeName = g.Named
		to = Type{Kind: KindStruct, Struct: g.Named}
		stars = g.NStars
	}
	for range stars {
		elem := to
		to = Type{Kind: KindPointer, Size: 8, Elem: &elem}
	}
	if len(stars) > 0 {
		e.TypeName += " " + strings.Repeat("*", len(stars))
	}
	e.To = to
	return e
}

func (c *converter) postfix(g *gPostfix) Expr {
	x := c.primary(g.X)
	for _, s := range g.Suff {
		loc := c.span(g.Pos, s.EndPos)
		switch {
		case s.IncDec != "":
			e := &IncDec{Op: s.IncDec, Post: true, X: x}
			e.Loc = loc
			x = e
		case s.Index != nil:
			e := &IndexExpr{X: x, Index: c.expr(s.Index)}
			e.Loc = loc
			x = e
		default:
			e := &FieldAccess{X: x}
			e.Loc = loc
			if s.Field[0] >= '0' && s.Field[0] <= '9' {
				n, err := parseInt(s.Field)
				if err != nil || n > 1<<31 {
					c.errorf(loc, "invalid tuple index %s", s.Field)
				}
				e.Index = int(n)
			} else {
				e.Field = s.Field
				e.Arrow = s.Arrow
			}
			x = e
		}
	}
	return x
}

func (c *converter) primary(g *gPrimary) Expr {
	loc := c.span(g.Pos, g.EndPos)
	switch {
	case g.Int != nil:
		v, _ := parseInt(*g.Int) // validated by the lexer
		e := &IntLit{Value: v}
		e.Loc = loc
		return e
	case g.Str != nil:
		s, errs := unquoteC(c.toks[tokenIndex(c.toks, g.Pos.Offset)])
		c.errs = append(c.errs, errs...)
		e := &StrLit{Value: s}
		e.Loc = loc
		return e
	case g.Var != "":
		e := &Var{Name: g.Var}
		e.Loc = loc
		return e
	case g.Param != "":
		n, err := strconv.Atoi(g.Param[1:])
		if err != nil || n < 1 {
			c.errorf(loc, "param %s is out of integer range [1, %d]", g.Param, math.MaxInt64)
		}
		e := &PositionalParam{N: n}
		e.Loc = loc
		return e
	case g.ParamCount:
		e := &PositionalParam{Count: true}
		e.Loc = loc
		return e
	case g.Map != nil:
		e := &MapExpr{Name: g.Map.Name}
		for _, k := range g.Map.Keys {
			e.Keys = append(e.Keys, c.expr(k))
		}
		e.Loc = loc
		return e
	case g.Call != nil:
		if !g.Call.Open {
			e := &Builtin{Name: g.Call.Name}
			e.Loc = loc
			return e
		}
		e := &Call{Name: g.Call.Name}
		e.Loc = loc
		e.NameLoc = tokSpan(c.toks[tokenIndex(c.toks, g.Call.Pos.Offset)])
		for _, a := range g.Call.Args {
			e.Args = append(e.Args, c.expr(a))
		}
		return e
	}
	if len(g.Paren) == 1 {
		// Parentheses only group; the inner expression keeps its own span.
		return c.expr(g.Paren[0])
	}
	e := &Tuple{}
	for _, x := range g.Paren {
		e.Elems = append(e.Elems, c.expr(x))
	}
	e.Loc = loc
	return e
}

// identClass says how bpftrace 0.17's lexer classes an identifier, for
// syntax error messages: "builtin" for builtin variables, "call" for
// function names (whether or not a "(" follows), "call_builtin" for kstack
// and ustack, "stack_mode" for ustack's modes, and "identifier" for the
// rest. Parse makes every identifier
// that is not called a *Builtin; the checker reports the unknown ones.
func identClass(name string) string {
	return lexClass(name)
}

// parseInt reads an integer literal as the lexer cut it (numberLen): hex,
// octal with a leading 0, decimal with "_" separators, or the 1e6 form.
func parseInt(s string) (uint64, error) {
	var v uint64
	var err error
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		v, err = strconv.ParseUint(s[2:], 16, 64)
	case strings.ContainsAny(s, "eE"):
		// bpftrace allows a one-digit coefficient and exponents up to 18.
		m, e, _ := strings.Cut(strings.ToLower(s), "e")
		if v, err = strconv.ParseUint(strings.ReplaceAll(m, "_", ""), 10, 64); err != nil || v > 9 {
			return 0, fmt.Errorf("Coefficient part of scientific literal must be in range (0,9), got: %s", m)
		}
		exp, err := strconv.Atoi(e)
		if err != nil || exp > 18 {
			return 0, fmt.Errorf("Exponent will overflow integer range: %s", e)
		}
		for range exp {
			v *= 10
		}
	case len(s) > 1 && s[0] == '0':
		if strings.ContainsAny(s, "89") {
			return 0, errors.New("Found trailing non-numeric characters")
		}
		v, err = strconv.ParseUint(strings.ReplaceAll(s[1:], "_", ""), 8, 64)
	default:
		v, err = strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 10, 64)
	}
	if err != nil {
		return 0, fmt.Errorf("integer literal out of range: %s", s)
	}
	return v, nil
}

// unquoteC decodes the string literal tok with C escapes: \n \t \r \\ \"
// \0, octal \NNN (at most \377) and hex \xH or \xHH. Other escapes are
// errors that span, as bpftrace's do, from the start of the token's run to
// the end of the escape.
func unquoteC(tok lexToken) (string, ErrorList) {
	lit := tok.Value
	start := Pos{Line: tok.Run.Line, Col: tok.Run.Column}
	body := lit[1 : len(lit)-1]
	// escEnd is the column just after body[:k].
	escEnd := func(k int) Pos { return Pos{Line: tok.Pos.Line, Col: tok.Pos.Column + 1 + k} }
	var b strings.Builder
	var errs ErrorList
	for i := 0; i < len(body); i++ {
		ch := body[i]
		if ch != '\\' {
			b.WriteByte(ch)
			continue
		}
		j := i + 1
		if j >= len(body) {
			break
		}
		esc := body[j]
		switch {
		case esc == 'n':
			b.WriteByte('\n')
		case esc == 't':
			b.WriteByte('\t')
		case esc == 'r':
			b.WriteByte('\r')
		case esc == '\\':
			b.WriteByte('\\')
		case esc == '"':
			b.WriteByte('"')
		case esc >= '0' && esc <= '7':
			k := j
			v := 0
			for k < len(body) && k < j+3 && body[k] >= '0' && body[k] <= '7' {
				v = v*8 + int(body[k]-'0')
				k++
			}
			if v > 0377 {
				errs = append(errs, &Error{Span: Span{Start: start, End: escEnd(k)}, Msg: fmt.Sprintf("octal escape sequence out of range '\\%s'", body[j:k])})
			}
			b.WriteByte(byte(v))
			j = k - 1
		case esc == 'x':
			k := j + 1
			v := 0
			for k < len(body) && k < j+3 && isHex(body[k]) {
				v = v*16 + hexVal(body[k])
				k++
			}
			if k == j+1 {
				errs = append(errs, &Error{Span: Span{Start: start, End: escEnd(k)}, Msg: "invalid escape character '\\x'"})
			}
			b.WriteByte(byte(v))
			j = k - 1
		default:
			errs = append(errs, &Error{Span: Span{Start: start, End: escEnd(j + 1)}, Msg: fmt.Sprintf("invalid escape character '\\%c'", esc)})
		}
		i = j
	}
	return b.String(), errs
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

func (c *converter) attach(g *gAttach) *AttachPoint {
	loc := c.span(g.Pos, g.EndPos)
	// bpftrace's attach point location starts where the token before it
	// ends, or at 1:1.
	loc.Start = Pos{Line: 1, Col: 1}
	if i := tokenIndex(c.toks, g.Pos.Offset); i > 0 {
		loc.Start = Pos{Line: c.toks[i-1].End.Line, Col: c.toks[i-1].End.Column}
	}
	pt, errs := attachpoint.Parse(g.Raw)
	for _, err := range errs {
		c.errorf(loc, "%v", err)
	}
	return &AttachPoint{
		Loc: loc, Raw: g.Raw, Kind: pt.Kind, Target: pt.Target, Provider: pt.Provider, Func: pt.Func,
		Unit: pt.Unit, Freq: pt.Freq, FreqParam: pt.FreqParam, Address: pt.Address,
	}
}

// cTypes are the C scalar types struct definitions may use, by their words
// in canonical order (signed and int dropped where C allows).
var cTypes = map[string]Type{
	"char": Int(1, true), "signed char": Int(1, true), "unsigned char": Int(1, false),
	"short": Int(2, true), "unsigned short": Int(2, false),
	"int": Int(4, true), "unsigned": Int(4, false),
	"long": Int(8, true), "unsigned long": Int(8, false),
	"long long": Int(8, true), "unsigned long long": Int(8, false),
	"bool": Int(1, false), "_Bool": Int(1, false),
	"int8_t": Int(1, true), "int16_t": Int(2, true), "int32_t": Int(4, true), "int64_t": Int(8, true),
	"uint8_t": Int(1, false), "uint16_t": Int(2, false), "uint32_t": Int(4, false), "uint64_t": Int(8, false),
	"s8": Int(1, true), "s16": Int(2, true), "s32": Int(4, true), "s64": Int(8, true),
	"u8": Int(1, false), "u16": Int(2, false), "u32": Int(4, false), "u64": Int(8, false),
	"__s8": Int(1, true), "__s16": Int(2, true), "__s32": Int(4, true), "__s64": Int(8, true),
	"__u8": Int(1, false), "__u16": Int(2, false), "__u32": Int(4, false), "__u64": Int(8, false),
	"size_t": Int(8, false), "ssize_t": Int(8, true), "uintptr_t": Int(8, false), "intptr_t": Int(8, true),
	"pid_t": Int(4, true), "uid_t": Int(4, false), "gid_t": Int(4, false),
	"int8": Int(1, true), "int16": Int(2, true), "int32": Int(4, true), "int64": Int(8, true),
	"uint8": Int(1, false), "uint16": Int(2, false), "uint32": Int(4, false), "uint64": Int(8, false),
}

// cTypeName canonicalises C type words: qualifiers go, "signed" and "int"
// go where they are redundant ("unsigned long int" is "unsigned long").
func cTypeName(words []string) string {
	var keep []string
	for _, w := range words {
		switch w {
		case "const", "volatile":
			continue
		}
		keep = append(keep, w)
	}
	if len(keep) > 1 && keep[len(keep)-1] == "int" {
		keep = keep[:len(keep)-1]
	}
	if len(keep) > 1 && keep[0] == "signed" && keep[1] != "char" {
		keep = keep[1:]
	}
	if len(keep) == 1 && keep[0] == "signed" {
		return "int"
	}
	return strings.Join(keep, " ")
}

func (c *converter) structDef(g *gStruct) *StructDef {
	loc := c.span(g.Pos, g.EndPos)
	def := &StructDef{Loc: loc, Name: g.Name}
	if c.structs == nil {
		c.structs = map[string]*StructDef{}
	}
	if c.structs[g.Name] != nil {
		c.errorf(loc, "redefinition of struct %s", g.Name)
	}
	off, align := 0, 1
	seen := map[string]bool{}
	for _, f := range g.Fields {
		floc := tokSpan(c.toks[tokenIndex(c.toks, f.Pos.Offset)])
		words, name := f.Words, f.Name
		if name == "" {
			if len(words) < 2 {
				c.errorf(floc, "struct %s: field needs a type and a name", g.Name)
				continue
			}
			words, name = words[:len(words)-1], words[len(words)-1]
		}
		if seen[name] {
			c.errorf(floc, "struct %s: duplicate field %s", g.Name, name)
		}
		seen[name] = true
		var t Type
		size, falign := 0, 1
		if words[0] == "struct" {
			if len(words) != 2 {
				c.errorf(floc, "struct %s: bad field type %s", g.Name, strings.Join(words, " "))
				continue
			}
			t = Type{Kind: KindStruct, Struct: words[1]}
			if len(f.Stars) == 0 {
				inner := c.structs[words[1]]
				if inner == nil {
					c.errorf(floc, "struct %s: field %s uses struct %s before its definition", g.Name, name, words[1])
					continue
				}
				size, falign = inner.Size, c.structAlign[words[1]]
				t.Size = size
			}
		} else {
			tn := cTypeName(words)
			switch it, ok := cTypes[tn]; {
			case ok:
				t = it
				size, falign = it.Size, it.Size
			case tn == "void" && len(f.Stars) > 0:
				t = Type{Kind: KindPointer, Size: 8}
			default:
				c.errorf(floc, "struct %s: unknown type %s", g.Name, tn)
				continue
			}
		}
		for i := range f.Stars {
			if i == 0 && t.Kind == KindPointer && t.Elem == nil {
				continue // void *
			}
			elem := t
			t = Type{Kind: KindPointer, Size: 8, Elem: &elem}
		}
		if len(f.Stars) > 0 {
			size, falign = 8, 8
		}
		for i := len(f.Dims) - 1; i >= 0; i-- {
			n, err := parseInt(f.Dims[i])
			if err != nil || n == 0 || n > 1<<20 {
				c.errorf(floc, "struct %s: bad array size %s", g.Name, f.Dims[i])
				n = 1
			}
			if t.Kind == KindInt && t.Size == 1 && t.Signed && i == len(f.Dims)-1 && cTypeName(words) == "char" {
				t = String(int(n))
			} else {
				elem := t
				t = Type{Kind: KindArray, Elem: &elem, Len: int(n), Size: size * int(n)}
			}
			size *= int(n)
		}
		off = (off + falign - 1) / falign * falign
		def.Fields = append(def.Fields, StructField{Name: name, Type: t, Offset: off})
		off += size
		align = max(align, falign)
	}
	def.Size = (off + align - 1) / align * align
	c.structs[g.Name] = def
	if c.structAlign == nil {
		c.structAlign = map[string]int{}
	}
	c.structAlign[g.Name] = align
	return def
}

// Syntax errors. participle cannot say what it expected the way bison does,
// so before building the tree Parse runs a small recogniser over the tokens
// that follows bpftrace's grammar and reports the first syntax error as
// bpftrace 0.17 does: "syntax error, unexpected X[, expecting Y]", placed on
// the offending token from the start of its run of non-blank characters.

// syntaxBail carries the first syntax error out of the recogniser.
type syntaxBail struct{ err *Error }

// Expectations bison lists after a complete expression, by context.
const (
	expectStmt    = "}"
	expectArgs    = `) or ","`
	expectKeys    = `] or ","`
	expectIndex   = "]"
	expectParen   = ")"
	expectColon   = ":"
	expectEndPred = "end predicate"
	expectNothing = ""
)

// maxNesting bounds how deeply blocks, else-if chains, parentheses,
// brackets, prefix operators, casts and ternaries may nest, so that hostile
// input cannot exhaust the stack of the recogniser or of participle.
const maxNesting = 200

// recognizer walks the tokens by recursive descent without building
// anything; it panics with a syntaxBail at the first error.
type recognizer struct {
	toks  []lexToken
	i     int
	depth int
	// noAttach is set by a probe without attach points.
	noAttach bool
}

// enter notes one more level of nesting; every enter has a leave.
func (r *recognizer) enter() {
	r.depth++
	if r.depth > maxNesting {
		panic(syntaxBail{&Error{Span: runSpan(r.tok()), Msg: fmt.Sprintf("nested too deeply: more than %d levels", maxNesting)}})
	}
}

func (r *recognizer) leave() { r.depth-- }

// recognize checks toks against the grammar and returns the first syntax
// error, or nil.
func recognize(toks []lexToken) (err *Error) {
	r := &recognizer{toks: toks}
	defer func() {
		if v := recover(); v != nil {
			b, ok := v.(syntaxBail)
			if !ok {
				panic(v)
			}
			err = b.err
		}
	}()
	r.program()
	if r.noAttach {
		// bpftrace places this error at 1:1, wherever the probe is.
		return &Error{Span: Span{Start: Pos{1, 1}, End: Pos{1, 1}}, Msg: "No attach points for probe"}
	}
	return nil
}

func (r *recognizer) tok() lexToken { return r.toks[r.i] }

func (r *recognizer) peek(n int) lexToken {
	if r.i+n < len(r.toks) {
		return r.toks[r.i+n]
	}
	return r.toks[len(r.toks)-1]
}

func (r *recognizer) is(val string) bool {
	t := r.tok()
	return (t.Type == tokPunct || t.Type == tokIdent) && t.Value == val
}

func (r *recognizer) next() {
	if r.tok().Type != tokEOF {
		r.i++
	}
}

// fail reports the current token as unexpected.
func (r *recognizer) fail(expect string) {
	t := r.tok()
	msg := "syntax error, unexpected " + tokenName(t)
	if expect != "" {
		msg += ", expecting " + expect
	}
	panic(syntaxBail{&Error{Span: runSpan(t), Msg: msg}})
}

func (r *recognizer) expect(val, expect string) {
	if !r.is(val) {
		r.fail(expect)
	}
	r.next()
}

// runSpan is where bison places an error on t: from the start of the run
// of non-blank characters t belongs to, to the end of t.
func runSpan(t lexToken) Span {
	return Span{Start: Pos{Line: t.Run.Line, Col: t.Run.Column}, End: Pos{Line: t.End.Line, Col: t.End.Column}}
}

// bisonKeywords are the identifiers bpftrace's lexer turns into keyword
// tokens, which messages name by themselves ("unexpected else").
var bisonKeywords = map[string]bool{
	"if": true, "else": true, "unroll": true, "while": true, "return": true,
	"break": true, "continue": true, "struct": true,
}

func (r *recognizer) program() {
	for r.tok().Type != tokEOF {
		if r.is("struct") {
			r.structDef()
			continue
		}
		r.probe()
	}
}

func (r *recognizer) structDef() {
	r.next()
	if r.tok().Type != tokIdent {
		r.fail(expectNothing)
	}
	r.next()
	r.expect("{", "{")
	for !r.is("}") {
		if r.is(";") { // C allows empty declarations
			r.next()
			continue
		}
		if r.tok().Type != tokIdent {
			r.fail(expectNothing)
		}
		for r.tok().Type == tokIdent {
			r.next()
		}
		for r.is("*") {
			r.next()
		}
		if r.tok().Type == tokIdent {
			r.next()
		}
		for r.is("[") {
			r.next()
			if r.tok().Type != tokInt {
				r.fail(expectNothing)
			}
			r.next()
			r.expect("]", "]")
		}
		if !r.is("}") { // C allows the last field without ";"
			r.expect(";", ";")
		}
	}
	r.next()
	if r.is(";") {
		r.next()
	}
}

func (r *recognizer) probe() {
	start := r.tok()
	// A probe without attach points parses; the program is refused once
	// it has parsed, as bpftrace does.
	empty := r.is("{") || r.is("/") || r.tok().Type == tokEndPred
	r.noAttach = r.noAttach || empty
	for !empty {
		if t := r.tok(); t.Type != tokAttach && t.Type != tokInt && (t.Type != tokIdent || bisonKeywords[t.Value]) {
			r.fail("{")
		}
		r.next()
		// bpftrace glues words after an attach point onto it ("BEGIN
		// exit(" fails at the "("), unless a "{", "," or "/" follows the
		// word, which points at a missing comma.
		for t := r.tok(); t.Type == tokIdent || t.Type == tokInt || t.Type == tokString; t = r.tok() {
			if n := r.peek(1); n.Type == tokEndPred || n.Type == tokPunct && (n.Value == "{" || n.Value == "," || n.Value == "/") {
				break
			}
			r.next()
		}
		if !r.is(",") {
			break
		}
		r.next()
		if r.is("{") || r.is("/") || r.tok().Type == tokEndPred {
			break // bpftrace ignores an empty last attach point
		}
	}
	if r.tok().Type == tokEOF {
		end := r.tok()
		panic(syntaxBail{&Error{Span: Span{Start: Pos{start.Pos.Line, start.Pos.Column}, End: Pos{end.Pos.Line, end.Pos.Column}}, Msg: "unexpected end of file, expected {"}})
	}
	if r.is("/") {
		r.next()
		r.expr(expectEndPred)
		if r.tok().Type != tokEndPred {
			r.fail(expectEndPred)
		}
		r.next()
	}
	r.block()
}

func (r *recognizer) block() {
	r.enter()
	defer r.leave()
	r.expect("{", "{")
	for !r.is("}") {
		switch {
		case r.is("if"):
			r.ifStmt()
			continue
		case r.is("while"):
			r.next()
			r.expect("(", "(")
			r.expr(expectParen)
			r.expect(")", expectParen)
			r.block()
			continue
		case r.is("unroll"):
			r.next()
			r.expect("(", "(")
			switch t := r.tok(); {
			case t.Type == tokInt || t.Type == tokParam || t.Type == tokParamCount:
				r.next()
			case r.is("-") && r.peek(1).Type == tokInt:
				r.next()
				r.next()
			default:
				r.fail("$# or - or positional parameter or integer")
			}
			r.expect(")", expectParen)
			r.block()
			continue
		case r.is("break") || r.is("continue") || r.is("return"):
			r.next()
		case r.operandStart():
			lvalue := r.expr(expectStmt)
			if r.tok().Type == tokPunct && assignOps[r.tok().Value] && lvalue {
				r.next()
				r.expr(expectStmt)
			}
		default:
			r.fail(expectStmt)
		}
		if r.is("}") {
			break
		}
		r.expect(";", expectStmt)
	}
	r.next()
}

func (r *recognizer) ifStmt() {
	r.enter()
	defer r.leave()
	r.next()
	r.expect("(", "(")
	r.expr(expectParen)
	r.expect(")", expectParen)
	r.block()
	if !r.is("else") {
		return
	}
	r.next()
	switch {
	case r.is("if"):
		r.ifStmt()
	case r.is("{"):
		r.block()
	default:
		r.fail("{ or if")
	}
}

var assignOps = map[string]bool{
	"=": true, "+=": true, "-=": true, "*=": true, "/=": true, "%=": true,
	"&=": true, "|=": true, "^=": true, "<<=": true, ">>=": true,
}

// operandStart reports whether the current token can start an expression.
func (r *recognizer) operandStart() bool {
	t := r.tok()
	switch t.Type {
	case tokInt, tokString, tokVar, tokMap, tokParam, tokParamCount:
		return true
	case tokIdent:
		return !bisonKeywords[t.Value]
	case tokPunct:
		switch t.Value {
		case "(", "!", "~", "-", "*", "++", "--":
			return true
		}
	}
	return false
}

// expr recognises an expression; after it the caller checks the token that
// follows, and reports expect if it does not fit. It returns whether the
// expression was a bare variable or map, which may be assigned to.
func (r *recognizer) expr(expect string) bool {
	r.enter()
	defer r.leave()
	lvalue := r.operand()
	for {
		t := r.tok()
		if t.Type == tokPunct && binaryPrecedence[t.Value] > 0 {
			r.next()
			r.operand()
			lvalue = false
			continue
		}
		break
	}
	if r.is("?") {
		r.next()
		r.expr(expectColon)
		r.expect(":", expectColon)
		r.expr(expect)
		return false
	}
	return lvalue
}

func (r *recognizer) operand() bool {
	// The grammar nests a level for each prefix operator and cast.
	depth := r.depth
	defer func() { r.depth = depth }()
	prefixed := false
	for r.tok().Type == tokPunct {
		switch r.tok().Value {
		case "!", "~", "-", "*", "++", "--":
			r.enter()
			r.next()
			prefixed = true
			continue
		}
		break
	}
	if r.isCast() {
		r.enter()
		r.next()
		if r.is("struct") {
			r.next()
		}
		r.next()
		expect := expectArgs
		for r.is("*") {
			r.next()
			expect = ") or *"
		}
		r.expect(")", expect)
		r.operand()
		return false
	}
	lvalue := r.primary() && !prefixed
	for suffixed := false; ; suffixed = true {
		switch {
		case r.is("["):
			r.next()
			r.expr(expectIndex)
			r.expect("]", expectIndex)
		case r.is(".") || r.is("->"):
			r.next()
			if t := r.tok(); t.Type != tokIdent && (t.Type != tokInt || r.toks[r.i-1].Value == "->") {
				r.fail(expectNothing)
			}
			r.next()
		case (r.is("++") || r.is("--")) && !suffixed:
			// bpftrace takes ++ and -- after an operand, not after
			// an index or a field.
			r.next()
		default:
			return lvalue
		}
		lvalue = false
	}
}

// isCast reports whether a cast starts here: "(" followed by an integer type,
// "struct", or a type name and "*".
func (r *recognizer) isCast() bool {
	if !r.is("(") || r.peek(1).Type != tokIdent {
		return false
	}
	name := r.peek(1).Value
	if _, ok := castIntTypes[name]; ok || name == "struct" {
		return true
	}
	n := 2
	for r.peek(n).Type == tokPunct && r.peek(n).Value == "*" {
		n++
	}
	return n > 2 && r.peek(n).Type == tokPunct && r.peek(n).Value == ")"
}

// primary recognises an operand and reports whether it is a variable or a
// map.
func (r *recognizer) primary() bool {
	t := r.tok()
	switch t.Type {
	case tokInt, tokString, tokParam, tokParamCount:
		r.next()
		return false
	case tokVar:
		r.next()
		return true
	case tokMap:
		r.next()
		if r.is("[") {
			r.next()
			r.list("]", expectKeys)
		}
		return true
	case tokIdent:
		if bisonKeywords[t.Value] {
			break
		}
		r.next()
		if r.is("(") {
			r.next()
			if !r.is(")") {
				r.list(")", expectArgs)
			} else {
				r.next()
			}
			return false
		}
		// A function name must be called; bpftrace only lets ++ and --
		// follow it otherwise.
		if identClass(t.Value) == "call" && !r.is("++") && !r.is("--") {
			r.fail("++ or --")
		}
		return false
	case tokPunct:
		if t.Value == "(" {
			r.next()
			r.list(")", expectArgs)
			return false
		}
	}
	r.fail(expectNothing)
	return false
}

// list recognises "expr (, expr)* close".
func (r *recognizer) list(close, expect string) {
	for {
		r.expr(expect)
		if r.is(",") {
			r.next()
			continue
		}
		r.expect(close, expect)
		return
	}
}
