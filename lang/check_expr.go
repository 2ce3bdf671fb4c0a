package lang

// This file types expressions: operators, casts, field access and
// indexing.

import (
	"math"
	"slices"
	"strings"
)

// expr checks e, sets its type (and its value when it is a constant)
// and returns its type.
func (c *checker) expr(e Expr, u use) Type {
	t := c.exprType(e, u)
	c.info.SetType(e, t)
	c.info.setConst(e, c.constValue(e))
	return t
}

// tupleType is the type of tuple e whose elements have types elems: an
// element with no value (a void call, an aggregation) has none.
func tupleType(e *Tuple, elems []Type) Type {
	t := Type{Kind: KindTuple, Names: e.Names, Elems: elems}
	for i, et := range elems {
		if et.Kind == KindVoid || et.IsAggregation() {
			elems[i] = Type{}
		}
	}
	return t
}

func (c *checker) exprType(e Expr, u use) Type {
	switch e := e.(type) {
	case *IntLit:
		if e.Bool {
			return Bool
		}
		if e.Enum != nil && c.prog.Newer {
			return enumType(e.Enum)
		}
		if e.Value > math.MaxInt64 && c.prog.Newer {
			// Current bpftrace types a literal that only fits unsigned
			// as uint64; 0.17 takes its bits as an int64.
			return Uint64
		}
		return Int64
	case *StrLit:
		return String(len(e.Value) + 1)
	case *Var:
		return c.varRead(e)
	case *MapExpr:
		m := c.mapAccess(e, e.Loc)
		t := c.mapValue(e, m, true)
		if t.Kind == KindArray {
			// Read where the map holds it: kernel memory, also through a
			// variable.
			t.Local = true
		}
		if u == useValue || u == useAssign {
			// An aggregation reads as the number it prints (bpftrace
			// 0.21, avg 0.22), as a loop over the map gives it.
			return LoopValue(t)
		}
		return t
	case *Builtin:
		return c.builtin(e)
	case *PositionalParam:
		return c.param(e)
	case *Call:
		t := c.call(e, u)
		if e.ID == FuncStrcontains {
			return c.newerBool(t)
		}
		return t
	case *Binary:
		return c.binary(e)
	case *Unary:
		t := c.unary(e)
		if e.Op == "!" {
			return c.newerBool(t)
		}
		return t
	case *IncDec:
		return c.incDec(e)
	case *Ternary:
		return c.ternary(e, u)
	case *Cast:
		return c.cast(e)
	case *Tuple:
		elems := make([]Type, len(e.Elems))
		for i, x := range e.Elems {
			elems[i] = c.expr(x, useAssign)
		}
		return tupleType(e, elems)
	case *FieldAccess:
		return c.field(e)
	case *IndexExpr:
		return c.index(e)
	case *BlockExpr:
		for _, s := range e.Stmts {
			c.stmt(s)
		}
		if e.Value == nil {
			return Type{Kind: KindVoid}
		}
		return c.expr(e.Value, u)
	}
	return Type{}
}

// binary types a binary operator. A long chain such as `1+1+...+1` nests
// to the left, so the chain's left spine is typed in a loop, innermost
// first, rather than by recursion: its length is bounded by the script's
// size, not by the stack.
func (c *checker) binary(e *Binary) Type {
	spine := e.LeftSpine()
	l := c.expr(spine[len(spine)-1].X, useValue)
	for i := len(spine) - 1; ; i-- {
		b := spine[i]
		r := c.expr(b.Y, useValue)
		t := c.binaryType(b.Op, l, r, b.Loc, b.OpLoc)
		c.warnSigns(b.Op, b.X, l, b.Y, r, b.OpLoc)
		c.warnLongLiteral(b, l, r)
		if isComparison(b.Op) {
			t = c.newerBool(t)
		}
		if i == 0 {
			// expr records the outermost one's type.
			return t
		}
		c.info.SetType(b, t)
		c.info.setConst(b, c.constValue(b))
		l = t
	}
}

// binaryType types `l op r`. whole is the expression's span, opSpan the
// operator's.
func (c *checker) binaryType(op string, l, r Type, whole, opSpan Span) Type {
	switch {
	case l.Kind == KindNone || r.Kind == KindNone:
		// Unresolved yet (a map assigned later), or already reported.
		// bpftrace types such arithmetic unsigned, which is how `@n += 1`
		// on a new map ends up uint64.
		if (l.Kind == KindNone || l.Kind == KindInt) && (r.Kind == KindNone || r.Kind == KindInt) {
			return Uint64
		}
		return Type{}
	case l.Kind == KindInt && r.Kind == KindInt:
		return Int(8, l.Signed && r.Signed)
	case l.Kind == KindPointer && r.Kind == KindInt && (op == "+" || op == "-"):
		return l
	case l.Kind == KindInt && r.Kind == KindPointer && op == "+":
		return r
	case isIntLike(l) && isIntLike(r) && (op == "&&" || op == "||"):
		// bpftrace takes no pointer in a logical operator.
		c.errorf(opSpan, "The %s operator can not be used on expressions of types %s, %s", op, typeName(l), typeName(r))
		return Type{}
	case isIntLike(l) && isIntLike(r) && !(l.Kind == KindPointer && r.Kind == KindPointer && !isComparison(op)):
		return Uint64
	case (l.Kind == KindString || l.Kind == KindBuf) && l.Kind == r.Kind && (op == "==" || op == "!="):
		return Uint64
	case isIntLike(l) && isIntLike(r):
		c.errorf(opSpan, "The %s operator can not be used on expressions of types %s, %s", op, typeName(l), typeName(r))
		return Type{}
	case l.Kind == r.Kind:
		c.laterf(opSpan, "The %s operator can not be used on expressions of types %s, %s", op, typeName(l), typeName(r))
		return Type{}
	}
	c.laterf(whole, "Type mismatch for '%s': comparing '%s' with '%s'", op, typeName(l), typeName(r))
	return Type{}
}

// warnSigns warns, as bpftrace does, of integers x and y, of types l and
// r, that op mixes in a way whose result depends on their signs:
// arithmetic or a comparison of a signed with an unsigned one, a division
// or modulo where either is signed (the program divides as unsigned). A literal or
// positional parameter that is not negative counts as either. x is nil
// for the variable or map of a compound assignment.
func (c *checker) warnSigns(op string, x Expr, l Type, y Expr, r Type, opSpan Span) {
	if l.Kind != KindInt || r.Kind != KindInt {
		return
	}
	lliteral, rliteral := c.nonNegativeLiteral(x), c.nonNegativeLiteral(y)
	mixed := l.Signed != r.Signed && !lliteral && !rliteral
	switch op {
	case "+", "-", "*", "/", "%":
		if mixed {
			c.warnf(opSpan, "arithmetic on integers of different signs: '%s' and '%s' can lead to undefined behavior", typeName(l), typeName(r))
		}
		if (op == "/" || op == "%") && (l.Signed && !lliteral || r.Signed && !rliteral) {
			c.warnf(opSpan, "signed operands for '%s' can lead to undefined behavior (cast to unsigned to silence warning)", op)
		}
	case "==", "!=", "<", "<=", ">", ">=":
		if mixed {
			c.warnf(opSpan, "comparison of integers of different signs: '%s' and '%s' can lead to undefined behavior", typeName(l), typeName(r))
		}
	}
}

// warnLongLiteral warns, as bpftrace does, of b, an == of a string of
// type l or r with a string literal longer than it holds: the condition
// is always false.
func (c *checker) warnLongLiteral(b *Binary, l, r Type) {
	if b.Op != "==" {
		return
	}
	lit, ok := b.Y.(*StrLit)
	other := l
	if !ok {
		lit, ok = b.X.(*StrLit)
		other = r
	}
	if !ok || other.Kind != KindString || isStrLit(b.X) && isStrLit(b.Y) {
		return
	}
	if len(lit.Value) > other.Size {
		c.warnf(b.Loc, "The literal is longer than the variable string (size=%d), condition will always be false", other.Size)
	}
}

// isStrLit reports whether e is a string literal.
func isStrLit(e Expr) bool {
	_, ok := e.(*StrLit)
	return ok
}

// nonNegativeLiteral reports whether e is an integer literal or a
// positional parameter, negated or not, whose value is not negative.
func (c *checker) nonNegativeLiteral(e Expr) bool {
	x := e
	if u, ok := x.(*Unary); ok && u.Op == "-" {
		x = u.X
	}
	switch x.(type) {
	case *IntLit, *PositionalParam:
		n, ok := c.info.ConstInt(e)
		return ok && n >= 0
	}
	return false
}

// newerBool is the type current bpftrace gives a comparison, a logical
// operator, ! and strcontains(): bool, where 0.17 gives the integer type
// t, which a script gets unless it selects the newer behaviour.
func (c *checker) newerBool(t Type) Type {
	if c.prog.Newer && t.Kind == KindInt {
		return Bool
	}
	return t
}

func isComparison(op string) bool {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=", "&&", "||":
		return true
	}
	return false
}

func (c *checker) unary(e *Unary) Type {
	if e.Op == "&" {
		return c.addressOf(e)
	}
	t := c.expr(e.X, useValue)
	opSpan := e.OpLoc
	if t.Kind == KindNone {
		return Type{}
	}
	switch e.Op {
	case "!":
		if t.Kind == KindInt {
			return t
		}
	case "-", "~":
		if t.Kind == KindInt {
			return Int(8, t.Signed)
		}
		if t.Kind == KindPointer {
			return Uint64
		}
	case "*":
		switch {
		case t.Kind == KindPointer && t.Elem != nil:
			return c.resolve(*t.Elem)
		case isIntLike(t):
			return Uint64
		}
		c.laterf(opSpan, "The dereference operator can not be used on expressions of type '%s'", typeName(t))
		return Type{}
	}
	c.laterf(opSpan, "The %s operator can not be used on expressions of type '%s'", e.Op, typeName(t))
	return Type{}
}

// addressOf types `&$x`: a pointer to the variable (bpftrace 0.22). The
// parser lets only a variable or a map follow the `&`.
func (c *checker) addressOf(e *Unary) Type {
	t := c.expr(e.X, useValue)
	if _, ok := e.X.(*MapExpr); ok {
		c.errorf(e.Loc, "the address of a map (&@map) is not supported by gotrace")
		return Type{}
	}
	if t.Kind == KindNone {
		return Type{}
	}
	return Type{Kind: KindPointer, Size: 8, Elem: &t, Local: true}
}

func (c *checker) incDec(e *IncDec) Type {
	switch x := e.X.(type) {
	case *Var:
		t := c.varRead(x)
		if !isIntLike(t) && t.Kind != KindNone {
			c.laterf(e.Loc, "The %s operator can not be used on expressions of type '%s'", e.Op, typeName(t))
		}
		return t
	case *MapExpr:
		m := c.mapAccess(x, x.Loc)
		if !m.valueSet {
			c.mapStore(x, m, Int64, x.Loc)
		}
		t := c.mapValue(x, m, false)
		if !isIntLike(t) && t.Kind != KindNone {
			c.laterf(e.Loc, "The %s operator can not be used on expressions of type '%s'", e.Op, typeName(t))
		}
		return t
	}
	c.expr(e.X, useValue)
	c.errorf(e.Loc, "The %s operator must be applied to a map or variable", e.Op)
	return Type{}
}

// ternary types `cond ? a : b`. As a statement, its branches may be
// statements too (`nsecs ? printf("y") : printf("n")`), as in 0.17.
func (c *checker) ternary(e *Ternary, u use) Type {
	branches := useValue
	if u == useStmt {
		branches = useStmt
	}
	cond := c.expr(e.Cond, useValue)
	a := c.expr(e.Then, branches)
	b := c.expr(e.Else, branches)
	if cond.Kind != KindInt && cond.Kind != KindNone {
		c.laterf(e.Loc, "Invalid condition in ternary: %s", condName(cond))
	}
	switch {
	case a.Kind == KindNone:
		return b
	case b.Kind == KindNone:
		return a
	case a.Kind == KindVoid && b.Kind == KindVoid:
		return a
	case a.Boolean && b.Boolean:
		return Bool
	case a.Kind == KindInt && b.Kind == KindInt:
		return Int(8, a.Signed && b.Signed)
	case a.Kind == KindString && b.Kind == KindString:
		return String(c.cfg.StrLen)
	case a.Equal(b):
		return a
	case a.Kind == KindTuple && b.Kind == KindTuple || a.Kind == KindBuf && b.Kind == KindBuf:
		// Tuples and buffers of different sizes, which bpftrace 0.17
		// refuses, take the larger sizes, as in later bpftrace.
		if t, ok := mergeTypes(a, b); ok {
			return t
		}
		if a.Kind == KindTuple {
			c.errorf(e.Loc, "Ternary return type unsupported tuple")
			return Type{}
		}
	}
	c.laterf(e.Loc, "Ternary operator must return the same type: have '%s' and '%s'", formatTypeName(a), formatTypeName(b))
	return Type{}
}

func (c *checker) cast(e *Cast) Type {
	written := e.To
	if e.TypeOf != nil {
		written = c.expr(e.TypeOf, useValue)
		if written.Kind != KindInt && written.Kind != KindNone {
			c.errorf(e.TypeLoc, "gotrace declares variables of integer types and bool only, not %s", typeName(written))
		}
	}
	x := c.expr(e.X, useValue)
	to := c.resolve(written)
	if !c.prog.Newer {
		to.Enum = nil // 0.17 prints enum values as numbers
	}
	// bpftrace underlines the parenthesized type only.
	span := e.TypeLoc
	base := to
	for base.Kind == KindPointer && base.Elem != nil {
		base = *base.Elem
	}
	if base.Kind == KindStruct && c.structDef(base.Struct) == nil {
		name := strings.TrimSpace(strings.TrimRight(e.TypeName, "* "))
		c.errorf(span, "Unknown struct/union: '%s'", name)
		return Type{}
	}
	if to.Kind == KindStruct {
		c.errorf(span, "Cannot cast to \"%s\"", typeName(to))
		return Type{}
	}
	if to.Kind == KindIntArray {
		return c.arrayCast(e, x, to)
	}
	if x.Kind != KindNone && !isIntLike(x) {
		c.errorf(span, "Casts are not supported for type: \"%s\"", typeName(x))
		return Type{}
	}
	// A cast pointer still points where & pointed.
	to.Local = to.Kind == KindPointer && x.Kind == KindPointer && x.Local
	return to
}

// arrayCast types a cast of an integer or a string to an array of
// integers: the bytes of the value, as many elements as fit when the
// length is not written, which must then fill the value exactly.
func (c *checker) arrayCast(e *Cast, x, to Type) Type {
	var size int
	switch x.Kind {
	case KindNone:
		return Type{}
	case KindInt, KindString:
		size = x.Size
	default:
		c.errorf(e.TypeLoc, "Cannot cast from \"%s\" to \"%s\"", typeName(x), e.TypeName)
		return Type{}
	}
	if to.Len == 0 && size%to.Elem.Size == 0 {
		to.Len = size / to.Elem.Size
	}
	if to.Len*to.Elem.Size != size {
		c.errorf(e.TypeLoc, "Cannot cast from \"%s\" to \"%s\": the sizes differ (%d and %d bytes)", typeName(x), e.TypeName, size, to.Len*to.Elem.Size)
		return Type{}
	}
	to.Size = size
	return to
}

// foldInt evaluates a checked integer expression of constants and +, -
// and *.
func (c *checker) foldInt(e Expr) (int64, bool) {
	if v, ok := c.info.ConstInt(e); ok {
		return v, true
	}
	b, ok := e.(*Binary)
	if !ok {
		return 0, false
	}
	l, lok := c.foldInt(b.X)
	r, rok := c.foldInt(b.Y)
	if !lok || !rok {
		return 0, false
	}
	switch b.Op {
	case "+":
		return l + r, true
	case "-":
		return l - r, true
	case "*":
		return l * r, true
	}
	return 0, false
}

func (c *checker) field(e *FieldAccess) Type {
	x := c.expr(e.X, useValue)
	if x.Kind == KindNone {
		return Type{}
	}
	if e.Field == "" {
		if x.Kind != KindTuple {
			c.laterf(e.Loc, "Can not access index %d on expression of type '%s'", e.Index, typeName(x))
			return Type{}
		}
		if e.Index < 0 || e.Index >= len(x.Elems) {
			c.laterf(e.Loc, "Invalid tuple index: %d. Found %d elements in tuple.", e.Index, len(x.Elems))
			return Type{}
		}
		return x.Elems[e.Index]
	}
	if x.Kind == KindTuple && x.Names != nil && !e.Arrow {
		i := slices.Index(x.Names, e.Field)
		if i < 0 {
			c.errorf(e.Loc, "Record does not contain a field named '%s'", e.Field)
			return Type{}
		}
		c.info.elems[e] = i
		return x.Elems[i]
	}
	if c.tracepointArgs(e.X) {
		return c.argsField(e)
	}
	st := x
	switch {
	case x.Kind == KindPointer && x.Elem != nil && x.Elem.Kind == KindStruct:
		// p.f as p->f: bpftrace 0.25 dereferences a pointer to a struct
		// for `.` (0.17: "Can not access field 'f' on type 'struct S *'.
		// Try dereferencing it first, or using '->'").
		st = *x.Elem
	case !e.Arrow && x.Kind == KindStruct:
	default:
		c.errorf(e.Loc, "Can not access field '%s' on expression of type '%s'", e.Field, typeName(x))
		return Type{}
	}
	def := c.structDef(st.Struct)
	if def == nil {
		c.errorf(e.Loc, "Unknown struct/union: '%s'", typeName(st))
		return Type{}
	}
	for _, f := range def.Fields {
		if f.Name == e.Field {
			return c.resolve(f.Type)
		}
	}
	c.errorf(e.Loc, "Struct/union of type '%s' does not contain a field named '%s'", typeName(st), e.Field)
	return Type{}
}

func (c *checker) index(e *IndexExpr) Type {
	x := c.expr(e.X, useValue)
	i := c.expr(e.Index, useValue)
	if i.Kind != KindInt && i.Kind != KindNone {
		c.laterf(e.Index.Span(), "The array index must be an integer, found %s", formatTypeName(i))
	}
	switch {
	case x.Kind == KindNone:
		return Type{}
	case x.Kind == KindIntArray:
		n, ok := c.foldInt(e.Index)
		if !ok {
			c.laterf(e.Index.Span(), "The index of an array value must be a constant integer")
			return Type{}
		}
		if n < 0 || n >= int64(x.Len) {
			c.laterf(e.Loc, "the index %d is out of bounds for array of size %d", n, x.Len)
			return Type{}
		}
		c.info.elems[e] = int(n)
		return *x.Elem
	case (x.Kind == KindPointer || x.Kind == KindArray) && x.Elem != nil:
		return c.resolve(*x.Elem)
	case x.Kind == KindPointer:
		return Int(1, false)
	case x.Kind == KindString:
		// A string's byte, a C char (bpftrace 0.21).
		return Int(1, true)
	case x.Kind == KindTuple:
		// bpftrace 0.21: the index picks the element's type, so it is a
		// constant.
		n, ok := c.foldInt(e.Index)
		if !ok {
			c.laterf(e.Index.Span(), "The index of a tuple must be a constant integer")
			return Type{}
		}
		if n < 0 || n >= int64(len(x.Elems)) {
			c.laterf(e.Loc, "Invalid tuple index: %d. Found %d elements in tuple.", n, len(x.Elems))
			return Type{}
		}
		c.info.elems[e] = int(n)
		return x.Elems[n]
	}
	c.laterf(e.Loc, "The array index operator [] can only be used on arrays and pointers, found %s.", formatTypeName(x))
	return Type{}
}
