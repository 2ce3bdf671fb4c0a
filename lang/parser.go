package lang

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// The parser is the grammar's one encoding: a recursive-descent parser over
// the scanner's tokens (lexer.go) that builds the AST of ast.go directly.
// It follows bpftrace 0.17's bison grammar closely enough to fail where
// bison fails, and reports the first syntax error as bpftrace does:
// "syntax error, unexpected X[, expecting Y]", placed on the offending
// token from the start of its run (lexToken.Run). Problems that are not
// syntax errors (bad escapes, attach points, struct layouts) are collected
// and reported together once the whole script has parsed.
//
// A new syntax form is one more case in the function for its context
// (parse for top-level items, block for statements, operand, postfix or
// primary for expressions) that consumes its tokens with next and expect,
// fails with bison's expectation where bpftrace has one, and returns its
// node; its spans come from span(start) and the tokens it consumed.

// Parse parses a bpftrace script. file is the name diagnostics use ("stdin"
// for -e). On bad input the error is an ErrorList.
func Parse(file, src string) (*Program, error) {
	if len(src) >= math.MaxInt32 {
		// Positions are 32-bit (Pos).
		return nil, ErrorList{{Span: Span{Start: Pos{1, 1}, End: Pos{1, 1}}, Msg: fmt.Sprintf("script too large: %d bytes, the limit is 2 GiB", len(src))}}
	}
	s := newScanner(src)
	p := &parser{s: s}
	prog := &Program{File: file, Source: src}
	serr := p.parse(prog)
	// A lexical error anywhere in the script is reported rather than a
	// syntax error before it.
	s.drain()
	if s.err != nil {
		return nil, ErrorList{s.err}
	}
	if serr != nil {
		return nil, ErrorList{serr}
	}
	if p.noAttach {
		// bpftrace places this error at 1:1, wherever the probe is.
		return nil, ErrorList{{Span: Span{Start: Pos{1, 1}, End: Pos{1, 1}}, Msg: "No attach points for probe"}}
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	prog.runs = s.runs
	// Uses of macros and enumerators are replaced by their passes.
	prog.macros, prog.enumValues = p.macros, p.enumValues
	numberExprs(prog)
	return prog, nil
}

// syntaxBail carries the first syntax error out of the parser.
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
// input cannot exhaust the stack of the parser or of the passes after it.
const maxNesting = 200

// parser walks the tokens by recursive descent; it panics with a
// syntaxBail at the first syntax error.
type parser struct {
	s *scanner
	// taken counts the tokens consumed, and prevEnd is where the last of
	// them ends.
	taken   int
	prevEnd position
	depth   int
	// noAttach is set by a probe without attach points.
	noAttach bool
	// errs are the problems found in well-formed syntax.
	errs ErrorList
	// structs and structAlign are the structs defined so far, for nested
	// struct fields.
	structs     map[string]*StructDef
	structAlign map[string]int
	// macros are the macro definitions, by macroKey.
	macros map[string]*macroDef
	// enumValues are the enumerators of the script's enums, and enums
	// its named enums (enumdef.go).
	enumValues map[string]enumerator
	enums      map[string]*Enum
	// returnValue is the syntax error bpftrace 0.17 reports at the first
	// `return VALUE`, a form of the newer language only: parse reports it
	// when the script does not select that (Program.Newer).
	returnValue *Error
}

// parse fills prog with the script's items and returns the first syntax
// error, or nil.
func (p *parser) parse(prog *Program) (err *Error) {
	defer func() {
		if v := recover(); v != nil {
			b, ok := v.(syntaxBail)
			if !ok {
				panic(v)
			}
			err = b.err
		}
	}()
	for p.tok().Type != tokEOF {
		if p.is("struct") || p.is("union") {
			prog.Structs = append(prog.Structs, p.structDef()...)
			continue
		}
		if p.is("macro") && p.peek(1).Type == tokIdent {
			p.macroDef()
			continue
		}
		if p.is("let") && p.peek(1).Type == tokMap {
			p.mapDecl(prog)
			continue
		}
		if p.is("config") && p.peek(1).Value == "=" {
			p.configBlock(prog)
			continue
		}
		if p.is("enum") && (p.peek(1).Type == tokIdent || p.peek(1).Value == "{") {
			p.enumDef()
			continue
		}
		pr := p.probe()
		for _, ap := range pr.Attach {
			if ap.Raw == "begin" || ap.Raw == "end" {
				prog.Newer = true
			}
		}
		prog.Probes = append(prog.Probes, pr)
	}
	if !prog.Newer && p.returnValue != nil {
		return p.returnValue
	}
	return nil
}

func (p *parser) errorf(s Span, format string, args ...any) {
	p.errs = append(p.errs, &Error{Span: s, Msg: fmt.Sprintf(format, args...)})
}

// enter notes one more level of nesting; every enter has a leave.
func (p *parser) enter() {
	p.depth++
	if p.depth > maxNesting {
		panic(syntaxBail{&Error{Span: runSpan(p.tok()), Msg: fmt.Sprintf("nested too deeply: more than %d levels", maxNesting)}})
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) tok() lexToken { return p.peek(0) }

// peek returns the token n places after the current one, or the end of
// the script's; it stops the parse at a lexical error, which Parse then
// reports.
func (p *parser) peek(n int) lexToken {
	p.s.fill(n + 1)
	waiting := p.s.toks[p.s.head:]
	if n < len(waiting) {
		return waiting[n]
	}
	if p.s.err != nil {
		panic(syntaxBail{p.s.err})
	}
	return waiting[len(waiting)-1]
}

func (p *parser) is(val string) bool {
	t := p.tok()
	return (t.Type == tokPunct || t.Type == tokIdent) && t.Value == val
}

func (p *parser) next() {
	if t := p.tok(); t.Type != tokEOF {
		p.prevEnd = t.End
		p.taken++
		p.s.take()
	}
}

// fail reports the current token as unexpected.
func (p *parser) fail(expect string) {
	panic(syntaxBail{p.syntaxError(expect)})
}

// syntaxError is bison's error at the current token.
func (p *parser) syntaxError(expect string) *Error {
	t := p.tok()
	msg := "syntax error, unexpected " + tokenName(t)
	if expect != "" {
		msg += ", expecting " + expect
	}
	return &Error{Span: runSpan(t), Msg: msg}
}

// expect consumes the token val and returns its span, or fails.
func (p *parser) expect(val, expect string) Span {
	if !p.is(val) {
		p.fail(expect)
	}
	s := tokSpan(p.tok())
	p.next()
	return s
}

// take consumes a token of type typ and returns it, or fails.
func (p *parser) take(typ tokenType, expect string) lexToken {
	t := p.tok()
	if t.Type != typ {
		p.fail(expect)
	}
	p.next()
	return t
}

// span is the range from the start of token start to the end of the last
// token consumed.
func (p *parser) span(start lexToken) Span {
	end := p.prevEnd
	return Span{Start: posAt(start.Pos), End: posAt(end)}
}

// tokenName names a token the way bpftrace's parser does in its messages.
func tokenName(t lexToken) string {
	switch t.Type {
	case tokEOF:
		return "end of file"
	case tokIdent:
		if bisonKeyword(t.Value) {
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
	return Span{Start: posAt(t.Pos), End: posAt(t.End)}
}

// runSpan is where bison places an error on t: from the start of the run
// t belongs to, to the end of t.
func runSpan(t lexToken) Span {
	return Span{Start: posAt(t.Run), End: posAt(t.End)}
}

// bisonKeyword reports whether bpftrace's lexer turns the identifier s
// into a keyword token, which messages name by itself ("unexpected
// else"). The parser's tables are switches rather than maps: a map is
// built by lang's initialiser at every start of gotrace, whatever the
// script (issue 24).
func bisonKeyword(s string) bool {
	switch s {
	case "if", "else", "unroll", "while", "return", "break", "continue", "struct":
		return true
	}
	return false
}

// fieldDecl is a struct member as written: its type words, stars, name and
// array dimensions; structDef lays it out.
type fieldDecl struct {
	loc   Span
	words []string
	stars int
	name  string
	dims  []string
}

// structDef parses a struct or union definition, struct NAME { members }
// or union NAME { members }, and returns it after the structs defined in
// place in its members, in the order they are needed.
func (p *parser) structDef() []*StructDef {
	start := p.tok()
	union := p.is("union")
	p.next()
	if p.tok().Type != tokIdent {
		p.fail(expectNothing)
	}
	name := p.tok().Value
	p.next()
	defs := p.structBody(start, name, union)
	if p.is(";") {
		p.next()
	}
	return defs
}

// structBody parses the members of struct name, { members }, whose
// definition begins at start, and lays it out. A member whose struct is
// defined in place, as C allows (struct { int m; } y; struct inner { int
// n; } a;), has that struct defined first, an anonymous one named after
// the struct it is in and where it begins, a name no script can write.
// It returns the structs defined, the named one last. A union's members
// all start at its start.
func (p *parser) structBody(start lexToken, name string, union bool) []*StructDef {
	p.expect("{", "{")
	var fields []fieldDecl
	var defs []*StructDef
	for !p.is("}") {
		if p.is(";") { // C allows empty declarations
			p.next()
			continue
		}
		if p.tok().Type != tokIdent {
			p.fail(expectNothing)
		}
		f := fieldDecl{loc: tokSpan(p.tok())}
		for p.tok().Type == tokIdent && !p.is("{") {
			f.words = append(f.words, p.tok().Value)
			p.next()
		}
		if p.is("{") && len(f.words) > 0 && len(f.words) <= 2 && (f.words[0] == "struct" || f.words[0] == "union") {
			inner := fmt.Sprintf("%s::(anonymous at %d:%d)", name, p.tok().Pos.Line, p.tok().Pos.Column)
			if len(f.words) == 2 {
				inner = f.words[1]
			}
			defs = append(defs, p.structBody(p.tok(), inner, f.words[0] == "union")...)
			f.words = []string{"struct", inner}
		}
		for p.is("*") {
			f.stars++
			p.next()
		}
		if p.tok().Type == tokIdent {
			f.name = p.tok().Value
			p.next()
		}
		for p.is("[") {
			p.next()
			if p.tok().Type != tokInt {
				p.fail(expectNothing)
			}
			f.dims = append(f.dims, p.tok().Value)
			p.next()
			p.expect("]", "]")
		}
		if !p.is("}") { // C allows the last field without ";"
			p.expect(";", ";")
		}
		fields = append(fields, f)
	}
	p.next()
	return append(defs, p.layout(name, p.span(start), fields, union))
}

func (p *parser) probe() *Probe {
	start := p.tok()
	pr := &Probe{}
	// A probe without attach points parses; the program is refused once
	// it has parsed, as bpftrace does.
	empty := p.is("{") || p.is("/") || p.tok().Type == tokEndPred
	p.noAttach = p.noAttach || empty
	for !empty {
		t := p.tok()
		if t.Type != tokAttach && t.Type != tokInt && (t.Type != tokIdent || bisonKeyword(t.Value)) {
			p.fail("{")
		}
		// bpftrace's attach point location starts where the token before
		// it ends, or at 1:1.
		loc := tokSpan(t)
		loc.Start = Pos{Line: 1, Col: 1}
		if p.taken > 0 {
			loc.Start = posAt(p.prevEnd)
		}
		p.next()
		// A positional parameter written against a word is part of the
		// attach point, and so is what follows it without a blank
		// (BEG$1, as bpftrace 0.17 reads it): Resolve parses it once
		// the parameters are in.
		raw := t.Value
		for n := p.tok(); n.Pos.Offset == p.prevEnd.Offset && (n.Type == tokParam || strings.Contains(raw, "$") && (n.Type == tokIdent || n.Type == tokInt || n.Type == tokAttach)); n = p.tok() {
			raw += n.Value
			p.next()
		}
		loc.End = posAt(p.prevEnd)
		pr.Attach = append(pr.Attach, p.attach(raw, loc))
		// bpftrace glues words after an attach point onto it ("BEGIN
		// exit(" fails at the "("), unless a "{", "," or "/" follows the
		// word, which points at a missing comma. Either way the probe
		// fails to parse.
		for t := p.tok(); t.Type == tokIdent || t.Type == tokInt || t.Type == tokString; t = p.tok() {
			if n := p.peek(1); n.Type == tokEndPred || n.Type == tokPunct && (n.Value == "{" || n.Value == "," || n.Value == "/") {
				break
			}
			p.next()
		}
		if !p.is(",") {
			break
		}
		p.next()
		if p.is("{") || p.is("/") || p.tok().Type == tokEndPred {
			break // bpftrace ignores an empty last attach point
		}
	}
	if p.tok().Type == tokEOF {
		end := p.tok()
		panic(syntaxBail{&Error{Span: Span{Start: posAt(start.Pos), End: posAt(end.Pos)}, Msg: "unexpected end of file, expected {"}})
	}
	if p.is("/") {
		p.next()
		pr.Pred, _ = p.expr(expectEndPred)
		if p.tok().Type != tokEndPred {
			p.fail(expectEndPred)
		}
		pr.PredEnd = tokSpan(p.tok()).End
		p.next()
	}
	pr.Body = p.block()
	pr.Loc = p.span(start)
	return pr
}

func (p *parser) block() *Block {
	p.enter()
	start := p.tok()
	p.expect("{", "{")
	b := &Block{}
	for !p.is("}") {
		var s Stmt
		switch t := p.tok(); {
		case p.is("if"):
			b.Stmts = append(b.Stmts, p.ifStmt())
			continue
		case p.is("while"):
			p.next()
			p.expect("(", "(")
			cond, _ := p.expr(expectParen)
			p.expect(")", expectParen)
			body := p.block()
			b.Stmts = append(b.Stmts, &WhileStmt{Loc: p.span(t), Cond: cond, Body: body})
			continue
		case p.is("unroll"):
			b.Stmts = append(b.Stmts, p.unroll())
			continue
		case p.is("let") && p.peek(1).Type == tokVar:
			s = p.letStmt()
		case t.Type == tokVar && (p.peek(1).Value == ":" || p.peek(1).Type == tokAttach && strings.HasPrefix(p.peek(1).Value, ":")):
			// A typed variable (bpftrace 0.22): $x: uint8 = 1.
			s = p.declaration(t, p.take(tokVar, "variable"))
		case p.is("for") && p.peek(1).Value == "(" && p.peek(2).Type == tokVar:
			b.Stmts = append(b.Stmts, p.forStmt())
			continue
		case p.is("break") || p.is("continue") || p.is("return"):
			j := &JumpStmt{Loc: tokSpan(t), Kind: t.Value}
			p.next()
			// bpftrace 0.24 takes `return VALUE`; 0.17's syntax
			// error stays the default.
			if j.Kind == "return" && p.operandStart() {
				if p.returnValue == nil {
					p.returnValue = p.syntaxError(expectStmt)
				}
				j.Value, _ = p.expr(expectStmt)
				j.Loc = p.span(t)
			}
			s = j
		case t.Type == tokIdent && t.Value == "_" && p.peek(1).Value == "=":
			// `_ = VALUE` (bpftrace 0.24) drops a value on purpose.
			p.next()
			p.next()
			x, _ := p.expr(expectStmt)
			s = &ExprStmt{Loc: p.span(t), X: x}
		case p.operandStart():
			s = p.simpleStmt()
		default:
			p.fail(expectStmt)
		}
		b.Stmts = append(b.Stmts, s)
		if p.is("}") {
			b.Bare = true
			break
		}
		p.expect(";", expectStmt)
	}
	p.next()
	b.Loc = p.span(start)
	p.leave()
	return b
}

// unroll parses `unroll (N) { ... }`, where bpftrace's grammar takes only
// an integer, a negative integer or a positional parameter as N.
func (p *parser) unroll() *UnrollStmt {
	start := p.tok()
	p.next()
	p.expect("(", "(")
	s := &UnrollStmt{}
	switch t := p.tok(); {
	case t.Type == tokInt || t.Type == tokParam || t.Type == tokParamCount:
		s.Count, _ = p.primary()
	case p.is("-") && p.peek(1).Type == tokInt:
		op := tokSpan(t)
		p.next()
		x, _ := p.primary()
		u := &Unary{Op: "-", OpLoc: op, X: x}
		u.Loc = p.span(t)
		s.Count = u
	default:
		p.fail("$# or - or positional parameter or integer")
	}
	p.expect(")", expectParen)
	s.Head = p.span(start)
	s.Body = p.block()
	s.Loc = p.span(start)
	return s
}

// forStmt parses `for ($i : START..END) { ... }` and `for ($kv : @m) { ... }`.
func (p *parser) forStmt() *ForStmt {
	start := p.tok()
	p.next()
	p.next()
	v := p.tok()
	p.next()
	s := &ForStmt{Var: &Var{ExprBase: ExprBase{Loc: tokSpan(v)}, Name: v.Value}}
	p.expect(":", ":")
	if p.tok().Type == tokMap && p.peek(1).Value == ")" {
		m := p.tok()
		p.next()
		p.next()
		s.Map = &MapExpr{ExprBase: ExprBase{Loc: tokSpan(m)}, Name: m.Value}
	} else {
		s.Start, _ = p.expr("..")
		p.expect("..", "..")
		s.End, _ = p.expr(expectParen)
		p.expect(")", expectParen)
	}
	s.Body = p.block()
	s.Loc = p.span(start)
	return s
}

// ifStmt parses an if statement and its else-if chain, which counts as
// one level of nesting however long it is (bpftrace takes thousands of
// branches).
func (p *parser) ifStmt() *IfStmt {
	p.enter()
	defer p.leave()
	var chain []*IfStmt
	var starts []lexToken
	for {
		starts = append(starts, p.tok())
		p.next()
		p.expect("(", "(")
		cond, _ := p.expr(expectParen)
		p.expect(")", expectParen)
		s := &IfStmt{Cond: cond, Then: p.block()}
		if len(chain) > 0 {
			chain[len(chain)-1].Else = s
		}
		chain = append(chain, s)
		if !p.is("else") {
			break
		}
		p.next()
		if p.is("if") {
			continue
		}
		if !p.is("{") {
			p.fail("{ or if")
		}
		s.Else = p.block()
		break
	}
	// Each if of the chain spans to the chain's end.
	for i, s := range chain {
		s.Loc = p.span(starts[i])
	}
	return chain[0]
}

// assignOp reports whether op is an assignment operator.
func assignOp(op string) bool {
	switch op {
	case "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=":
		return true
	}
	return false
}

// simpleStmt parses an expression statement or an assignment, whose
// left-hand side must be a bare variable or map.
func (p *parser) simpleStmt() Stmt {
	x, assignable := p.expr(expectStmt)
	if t := p.tok(); t.Type == tokPunct && assignOp(t.Value) && assignable {
		p.next()
		rhs, _ := p.expr(expectStmt)
		return &AssignStmt{Loc: Span{Start: x.Span().Start, End: rhs.Span().End}, Op: t.Value, OpLoc: tokSpan(t), LHS: x, RHS: rhs}
	}
	return &ExprStmt{Loc: x.Span(), X: x}
}

// operandStart reports whether the current token can start an expression.
func (p *parser) operandStart() bool {
	t := p.tok()
	switch t.Type {
	case tokInt, tokString, tokVar, tokMap, tokParam, tokParamCount:
		return true
	case tokIdent:
		return !bisonKeyword(t.Value)
	case tokPunct:
		switch t.Value {
		case "(", "!", "~", "-", "*", "++", "--":
			return true
		}
	}
	return false
}

// binaryPrecedence is the precedence of the binary operator op, higher
// binding tighter, or 0 when op is none.
func binaryPrecedence(op string) int {
	switch op {
	case "||":
		return 1
	case "&&":
		return 2
	case "|":
		return 3
	case "^":
		return 4
	case "&":
		return 5
	case "==", "!=":
		return 6
	case "<", "<=", ">", ">=":
		return 7
	case "<<", ">>":
		return 8
	case "+", "-":
		return 9
	case "*", "/", "%":
		return 10
	}
	return 0
}

// expr parses an expression: binary operators over operands, then
// optionally a ternary. After it the caller checks the token that follows,
// and reports expect if it does not fit. It also says whether the
// expression is a bare variable or map, which may be assigned to.
func (p *parser) expr(expect string) (Expr, bool) {
	p.enter()
	defer p.leave()
	x, assignable := p.operand()
	if p.precedence() > 0 {
		x, assignable = p.binary(x, 1), false
	}
	if !p.is("?") {
		return x, assignable
	}
	t := &Ternary{Cond: x, QuestionLoc: tokSpan(p.tok())}
	p.next()
	if p.is(":") {
		// bpftrace 0.26: `a ?: b` is `a ? a : b`, a evaluated once.
		t.Then = mapExpr(x, keep)
		t.NoMiddle = true
	} else {
		t.Then, _ = p.expr(expectColon)
	}
	t.ColonLoc = p.expect(":", expectColon)
	t.Else, _ = p.expr(expect)
	t.Loc = Span{Start: x.Span().Start, End: t.Else.Span().End}
	return t, false
}

// precedence is the current token's binary precedence, 0 if it is not a
// binary operator.
func (p *parser) precedence() int {
	if t := p.tok(); t.Type == tokPunct {
		return binaryPrecedence(t.Value)
	}
	return 0
}

// binary parses the binary operators of at least precedence prec after x,
// left-associative; it recurses once per level, not per operator.
func (p *parser) binary(x Expr, prec int) Expr {
	for {
		oprec := p.precedence()
		if oprec < prec {
			return x
		}
		op := p.tok()
		p.next()
		y, _ := p.operand()
		y = p.binary(y, oprec+1)
		b := &Binary{Op: op.Value, OpLoc: tokSpan(op), X: x, Y: y}
		b.Loc = Span{Start: x.Span().Start, End: y.Span().End}
		x = b
	}
}

// operand parses a prefix operator, a cast or a postfix expression. The
// grammar nests a level for each prefix operator and cast.
func (p *parser) operand() (Expr, bool) {
	depth := p.depth
	defer func() { p.depth = depth }()
	start := p.tok()
	if start.Type == tokPunct {
		switch op := start.Value; op {
		case "!", "~", "-", "*", "++", "--":
			p.enter()
			p.next()
			x, _ := p.operand()
			if op == "++" || op == "--" {
				e := &IncDec{Op: op, OpLoc: tokSpan(start), X: x}
				e.Loc = p.span(start)
				return e, false
			}
			e := &Unary{Op: op, OpLoc: tokSpan(start), X: x}
			e.Loc = p.span(start)
			return e, false
		}
	}
	if p.is("&") {
		// bpftrace 0.22's address-of takes only a variable or a map.
		p.next()
		var x Expr
		if t := p.tok(); t.Type == tokVar || t.Type == tokMap {
			x, _ = p.primary()
		} else {
			x, _ = p.operand()
			p.errorf(p.span(start), "address-of operator (&) can only be used on a map or variable")
		}
		e := &Unary{Op: "&", OpLoc: tokSpan(start), X: x}
		e.Loc = p.span(start)
		return e, false
	}
	if p.isCast() {
		p.enter()
		return p.cast(), false
	}
	return p.postfix()
}

// isCast reports whether a cast starts here: "(" followed by an integer type,
// "struct", or a type name and "*".
func (p *parser) isCast() bool {
	if !p.is("(") || p.peek(1).Type != tokIdent {
		return false
	}
	name := p.peek(1).Value
	if _, ok := castIntType(name); ok || name == "struct" || name == "union" || name == "enum" && p.peek(2).Type == tokIdent {
		return true
	}
	n := 2
	for p.peek(n).Type == tokPunct && p.peek(n).Value == "*" {
		n++
	}
	return n > 2 && p.peek(n).Type == tokPunct && p.peek(n).Value == ")"
}

// castIntType returns the integer type a cast to name gives, if name is
// one a cast may use.
func castIntType(name string) (Type, bool) {
	if name == "bool" {
		return Bool, true
	}
	if size, signed, ok := fixedWidthInt(name); ok {
		return Int(size, signed), true
	}
	return Type{}, false
}

// fixedWidthInt returns the size and signedness of the integer type
// names int8 to int64 and uint8 to uint64.
func fixedWidthInt(name string) (size int, signed bool, ok bool) {
	switch name {
	case "int8", "uint8":
		size = 1
	case "int16", "uint16":
		size = 2
	case "int32", "uint32":
		size = 4
	case "int64", "uint64":
		size = 8
	default:
		return 0, false, false
	}
	return size, name[0] == 'i', true
}

// cast parses a cast to an integer type, a struct or a pointer. After
// "struct" any token names the struct, as in bpftrace, whose checker then
// reports "(struct 0)" as an unknown struct. bpftrace reads `(char *)` as a
// pointer to a struct named char; the checker reports the unknown struct.
func (p *parser) cast() *Cast {
	start := p.tok()
	p.next()
	e := &Cast{}
	if p.is("struct") || p.is("union") {
		keyword := p.tok().Value
		p.next()
		e.TypeName = keyword + " " + p.tok().Value
		e.To = Type{Kind: KindStruct, Struct: p.tok().Value}
	} else if p.is("enum") {
		// An enum's values are C ints, which bpftrace widens to 64 bits.
		p.next()
		def := p.enums[p.tok().Value]
		if def == nil {
			p.errorf(tokSpan(p.tok()), "Unknown enum: %s", p.tok().Value)
		}
		e.TypeName, e.To = "enum "+p.tok().Value, enumType(def)
	} else if it, ok := castIntType(p.tok().Value); ok {
		e.TypeName, e.To = p.tok().Value, it
	} else {
		e.TypeName = p.tok().Value
		e.To = Type{Kind: KindStruct, Struct: p.tok().Value}
	}
	p.next()
	if p.is("[") && e.To.Kind == KindInt {
		// A cast to an array (bpftrace 0.19): (int8[8]), or (int8[])
		// whose length the checker takes from the value's size.
		p.next()
		elem := e.To
		e.To = Type{Kind: KindIntArray, Elem: &elem}
		if t := p.tok(); t.Type == tokInt {
			n, err := parseInt(t.Value)
			if err != nil || n < 1 || n > 4096 {
				p.errorf(tokSpan(t), "array length %s is outside 1..4096", t.Value)
			}
			e.To.Len = int(n)
			e.TypeName += "[" + t.Value + "]"
			p.next()
		} else {
			e.TypeName += "[]"
		}
		p.expect("]", "]")
		p.expect(")", expectArgs)
		e.TypeLoc = p.span(start)
		e.X, _ = p.operand()
		e.Loc = p.span(start)
		return e
	}
	expect, stars := expectArgs, 0
	for p.is("*") {
		p.next()
		expect = ") or *"
		elem := e.To
		e.To = Type{Kind: KindPointer, Size: 8, Elem: &elem}
		stars++
	}
	if stars > 0 {
		e.TypeName += " " + strings.Repeat("*", stars)
	}
	p.expect(")", expect)
	e.TypeLoc = p.span(start)
	e.X, _ = p.operand()
	e.Loc = p.span(start)
	return e
}

// postfix parses an operand followed by indexes, field accesses and a
// postfix ++ or --.
func (p *parser) postfix() (Expr, bool) {
	start := p.tok()
	x, assignable := p.primary()
	for suffixed := false; ; suffixed = true {
		switch {
		case p.is("["):
			p.next()
			e := &IndexExpr{X: x}
			e.Index, _ = p.expr(expectIndex)
			p.expect("]", expectIndex)
			e.Loc = p.span(start)
			x = e
		case p.is(".") || p.is("->"):
			arrow := p.is("->")
			p.next()
			t := p.tok()
			if t.Type != tokIdent && (t.Type != tokInt || arrow) {
				p.fail(expectNothing)
			}
			p.next()
			e := &FieldAccess{X: x}
			e.Loc = p.span(start)
			if t.Type == tokInt {
				n, err := parseInt(t.Value)
				if err != nil || n > 1<<31 {
					p.errorf(e.Loc, "invalid tuple index %s", t.Value)
				}
				e.Index = int(n)
			} else {
				e.Field, e.Arrow = t.Value, arrow
			}
			x = e
		case (p.is("++") || p.is("--")) && !suffixed:
			// bpftrace takes ++ and -- after an operand, not after
			// an index or a field.
			e := &IncDec{Op: p.tok().Value, OpLoc: tokSpan(p.tok()), Post: true, X: x}
			p.next()
			e.Loc = p.span(start)
			x = e
		default:
			return x, assignable
		}
		assignable = false
	}
}

// primary parses a literal, variable, map, positional parameter, builtin,
// call, parenthesized expression or tuple, and says whether it is a
// variable or a map.
func (p *parser) primary() (Expr, bool) {
	t := p.tok()
	loc := tokSpan(t)
	switch t.Type {
	case tokInt:
		p.next()
		v, _ := parseInt(t.Value) // validated by the lexer
		return &IntLit{ExprBase: ExprBase{Loc: loc}, Value: v}, false
	case tokString:
		p.next()
		s, errs := unquoteC(t)
		p.errs = append(p.errs, errs...)
		return &StrLit{ExprBase: ExprBase{Loc: loc}, Value: s}, false
	case tokParam:
		p.next()
		n, err := strconv.Atoi(t.Value[1:])
		if err != nil || n < 1 {
			p.errorf(loc, "param %s is out of integer range [1, %d]", t.Value, math.MaxInt64)
		}
		return &PositionalParam{ExprBase: ExprBase{Loc: loc}, N: n}, false
	case tokParamCount:
		p.next()
		return &PositionalParam{ExprBase: ExprBase{Loc: loc}, Count: true}, false
	case tokVar:
		p.next()
		return &Var{ExprBase: ExprBase{Loc: loc}, Name: t.Value}, true
	case tokMap:
		p.next()
		e := &MapExpr{Name: t.Value}
		if p.is("[") {
			p.next()
			e.Keys = p.list("]", expectKeys)
		}
		e.Loc = p.span(t)
		return e, true
	case tokIdent:
		if t.Value == "if" {
			return p.ifExpr(), false
		}
		if bisonKeyword(t.Value) {
			break
		}
		p.next()
		if p.is("(") {
			p.next()
			if p.is(")") && LookupFunc(t.Value) == BuiltinInvalid && LookupVar(t.Value) != BuiltinInvalid {
				// bpftrace 0.24's call syntax for builtin variables:
				// comm() is comm.
				p.next()
				return &Builtin{ExprBase: ExprBase{Loc: p.span(t)}, Name: t.Value, ID: LookupVar(t.Value)}, false
			}
			e := &Call{Name: t.Value, NameLoc: loc, ID: LookupFunc(t.Value)}
			if t.Value == "sizeof" && (p.is("struct") || p.is("union")) {
				// sizeof(struct X): the type's name is a Builtin, as
				// sizeof(uint32)'s is, which the checker types.
				start := p.tok()
				p.next()
				arg := &Builtin{Name: start.Value + " "}
				if !p.is(")") {
					arg.Name += p.tok().Value
					p.next()
				}
				e.Args = []Expr{arg}
				p.expect(")", expectArgs)
				// bpftrace underlines the closing parenthesis too.
				arg.Loc = p.span(start)
				e.Loc = p.span(t)
				return e, false
			}
			if !p.is(")") {
				e.Args = p.list(")", expectArgs)
			} else {
				p.next()
			}
			e.Loc = p.span(t)
			return e, false
		}
		if t.Value == "true" || t.Value == "false" {
			v := uint64(0)
			if t.Value == "true" {
				v = 1
			}
			return &IntLit{ExprBase: ExprBase{Loc: loc}, Value: v, Bool: true}, false
		}
		// A function name must be called; bpftrace only lets ++ and --
		// follow it otherwise.
		if identClass(t.Value) == "call" && !p.is("++") && !p.is("--") {
			p.fail("++ or --")
		}
		// Every identifier that is not called is a Builtin; the checker
		// reports the unknown ones.
		return &Builtin{ExprBase: ExprBase{Loc: loc}, Name: t.Value, ID: LookupVar(t.Value)}, false
	case tokPunct:
		if t.Value == "{" {
			return blockExpr(p.block()), false
		}
		if t.Value == "(" {
			if p.peek(1).Type == tokIdent && p.peek(2).Type == tokPunct && p.peek(2).Value == "=" && LookupVar(p.peek(1).Value) == BuiltinInvalid {
				return p.record(), false
			}
			p.next()
			xs := p.list(")", expectArgs)
			if len(xs) == 1 {
				// Parentheses only group; the inner expression keeps
				// its own span and notes the outermost parentheses.
				xs[0].exprBase().setParenLoc(p.span(t))
				return xs[0], false
			}
			e := &Tuple{Elems: xs}
			e.Loc = p.span(t)
			return e, false
		}
	}
	p.fail(expectNothing)
	return nil, false
}

// blockExpr makes a block expression of b: an expression statement
// without ";" after it at the end is its value, and so is an if with an
// else at the end whose branches have values (bpftrace 0.24).
func blockExpr(b *Block) *BlockExpr {
	e := &BlockExpr{Stmts: b.Stmts}
	e.Loc = b.Loc
	n := len(b.Stmts)
	if n == 0 {
		return e
	}
	switch last := b.Stmts[n-1].(type) {
	case *ExprStmt:
		if b.Bare {
			e.Stmts, e.Value = b.Stmts[:n-1], last.X
		}
	case *IfStmt:
		if x := ifValue(last); x != nil {
			e.Stmts, e.Value = b.Stmts[:n-1], x
		}
	}
	return e
}

// ifValue returns an if statement whose every branch ends in a value as
// the ternary of its branches' block expressions, or nil.
func ifValue(s *IfStmt) Expr {
	var elseX Expr
	switch els := s.Else.(type) {
	case *Block:
		if v := blockExpr(els); v.Value != nil {
			elseX = v
		}
	case *IfStmt:
		elseX = ifValue(els)
	}
	then := blockExpr(s.Then)
	if elseX == nil || then.Value == nil {
		return nil
	}
	t := ifTernary(s.Cond, then, elseX)
	t.Loc = s.Loc
	return t
}

// ifTernary makes the ternary of an if expression. It has no ? and :, so
// their spans are empty, where the condition and the first branch end.
func ifTernary(cond Expr, then *BlockExpr, els Expr) *Ternary {
	return &Ternary{
		Cond: cond, Then: then, Else: els,
		QuestionLoc: Span{Start: cond.Span().End, End: cond.Span().End},
		ColonLoc:    Span{Start: then.Loc.End, End: then.Loc.End},
	}
}

// ifExpr parses `if (COND) { ... } else { ... }` as an expression
// (bpftrace 0.24): the ternary of its branches' block expressions. An
// else is required, and may be another if.
func (p *parser) ifExpr() Expr {
	p.enter()
	defer p.leave()
	start := p.tok()
	p.next()
	p.expect("(", "(")
	cond, _ := p.expr(expectParen)
	p.expect(")", expectParen)
	then := blockExpr(p.block())
	p.expect("else", "else")
	var els Expr
	if p.is("if") {
		els = p.ifExpr()
	} else {
		els = blockExpr(p.block())
	}
	t := ifTernary(cond, then, els)
	t.Loc = p.span(start)
	return t
}

// record parses `(NAME = VALUE, ...)` (bpftrace 0.25), a tuple whose
// elements have names.
func (p *parser) record() *Tuple {
	start := p.tok()
	p.next()
	e := &Tuple{}
	for {
		name := p.take(tokIdent, "identifier")
		if slices.Contains(e.Names, name.Value) {
			p.errorf(tokSpan(name), "Named argument list already contains name: %s", name.Value)
		}
		p.expect("=", "=")
		x, _ := p.expr(expectArgs)
		e.Names = append(e.Names, name.Value)
		e.Elems = append(e.Elems, x)
		if !p.is(",") {
			break
		}
		p.next()
	}
	p.expect(")", expectArgs)
	e.Loc = p.span(start)
	return e
}

// list parses "expr (, expr)* close".
func (p *parser) list(close, expect string) []Expr {
	var xs []Expr
	for {
		x, _ := p.expr(expect)
		xs = append(xs, x)
		if p.is(",") {
			p.next()
			continue
		}
		p.expect(close, expect)
		return xs
	}
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
	if ns, ok := attachpoint.ParseDuration(s); ok {
		return ns, nil
	}
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
	start := posAt(tok.Run)
	body := lit[1 : len(lit)-1]
	// escEnd is the column just after body[:k].
	escEnd := func(k int) Pos { return Pos{Line: int32(tok.Pos.Line), Col: int32(tok.Pos.Column + 1 + k)} }
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

// attach splits the attach point raw, written at loc, into its fields.
func (p *parser) attach(raw string, loc Span) *AttachPoint {
	pt, errs := attachpoint.Parse(raw)
	if kind, _, _ := strings.Cut(raw, ":"); len(errs) > 0 && strings.Contains(kind, "$") {
		// A parameter in the probe type (BEG$1): Resolve parses the
		// attach point after substituting it.
		return &AttachPoint{Loc: loc, Raw: raw}
	}
	for _, err := range errs {
		p.errorf(loc, "%v", err)
	}
	return &AttachPoint{Loc: loc, Raw: raw, Point: pt}
}

// cType returns the C scalar type that struct definitions may use called
// name, by its words in canonical order (signed and int dropped where C
// allows).
func cType(name string) (Type, bool) {
	switch name {
	case "char", "signed char", "int8_t", "s8", "__s8", "int8":
		return Int(1, true), true
	case "unsigned char", "bool", "_Bool", "uint8_t", "u8", "__u8", "uint8":
		return Int(1, false), true
	case "short", "int16_t", "s16", "__s16", "int16":
		return Int(2, true), true
	case "unsigned short", "uint16_t", "u16", "__u16", "uint16":
		return Int(2, false), true
	case "int", "int32_t", "s32", "__s32", "pid_t", "int32":
		return Int(4, true), true
	case "unsigned", "uint32_t", "u32", "__u32", "uid_t", "gid_t", "uint32":
		return Int(4, false), true
	case "long", "long long", "int64_t", "s64", "__s64", "ssize_t", "intptr_t", "int64":
		return Int(8, true), true
	case "unsigned long", "unsigned long long", "uint64_t", "u64", "__u64", "size_t", "uintptr_t", "uint64":
		return Int(8, false), true
	}
	return Type{}, false
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

// layout lays out struct name's fields with C's x86-64 rules.
func (p *parser) layout(name string, loc Span, fields []fieldDecl, union bool) *StructDef {
	def := &StructDef{Loc: loc, Name: name}
	if p.structs == nil {
		p.structs = map[string]*StructDef{}
	}
	if p.structs[name] != nil {
		p.errorf(loc, "redefinition of struct %s", name)
	}
	off, align := 0, 1
	seen := map[string]bool{}
	for _, f := range fields {
		floc := f.loc
		words, fname := f.words, f.name
		if fname == "" {
			if len(words) < 2 {
				p.errorf(floc, "struct %s: field needs a type and a name", name)
				continue
			}
			words, fname = words[:len(words)-1], words[len(words)-1]
		}
		if seen[fname] {
			p.errorf(floc, "struct %s: duplicate field %s", name, fname)
		}
		seen[fname] = true
		var t Type
		size, falign := 0, 1
		if words[0] == "struct" || words[0] == "union" {
			if len(words) != 2 {
				p.errorf(floc, "struct %s: bad field type %s", name, strings.Join(words, " "))
				continue
			}
			t = Type{Kind: KindStruct, Struct: words[1]}
			if f.stars == 0 {
				inner := p.structs[words[1]]
				if inner == nil {
					p.errorf(floc, "struct %s: field %s uses struct %s before its definition", name, fname, words[1])
					continue
				}
				size, falign = inner.Size, p.structAlign[words[1]]
				t.Size = size
			}
		} else {
			tn := cTypeName(words)
			switch it, ok := cType(tn); {
			case ok:
				t = it
				size, falign = it.Size, it.Size
			case tn == "void" && f.stars > 0:
				t = Type{Kind: KindPointer, Size: 8}
			default:
				p.errorf(floc, "struct %s: unknown type %s", name, tn)
				continue
			}
		}
		for i := range f.stars {
			if i == 0 && t.Kind == KindPointer && t.Elem == nil {
				continue // void *
			}
			elem := t
			t = Type{Kind: KindPointer, Size: 8, Elem: &elem}
		}
		if f.stars > 0 {
			size, falign = 8, 8
		}
		for i := len(f.dims) - 1; i >= 0; i-- {
			n, err := parseInt(f.dims[i])
			if err != nil || n == 0 || n > 1<<20 {
				p.errorf(floc, "struct %s: bad array size %s", name, f.dims[i])
				n = 1
			}
			if t.Kind == KindInt && t.Size == 1 && t.Signed && i == len(f.dims)-1 && cTypeName(words) == "char" {
				t = String(int(n))
			} else {
				elem := t
				t = Type{Kind: KindArray, Elem: &elem, Len: int(n), Size: size * int(n)}
			}
			size *= int(n)
		}
		align = max(align, falign)
		if union {
			def.Fields = append(def.Fields, StructField{Name: fname, Type: t})
			off = max(off, size)
			continue
		}
		off = (off + falign - 1) / falign * falign
		def.Fields = append(def.Fields, StructField{Name: fname, Type: t, Offset: off})
		off += size
	}
	def.Size = (off + align - 1) / align * align
	p.structs[name] = def
	if p.structAlign == nil {
		p.structAlign = map[string]int{}
	}
	p.structAlign[name] = align
	return def
}
