package lang

// The checker is gotrace's semantic analysis, modelled on bpftrace 0.17's
// semantic analyser: it resolves the type of every expression, checks
// every builtin and function against the probe it appears in, fills in
// Program.Maps and Program.NumParams and sets UnrollStmt.N. Its messages
// and their columns are bpftrace's.
//
// Like bpftrace, it works in passes: a map or a variable may be read in
// the source before the assignment that gives it its type (`@n = @n + 1`
// in one probe, `@n = 0` in BEGIN further down). Silent passes run until
// no map or variable type changes any more; a final pass reports errors.
// bpftrace makes some checks (binary operator types, printf arguments,
// lhist bounds ...) only in its last pass, which it never reaches when
// its first pass found an error; Check reports those (laterf) only when
// there are no others, so that it prints the errors bpftrace prints.
// String types grow to the largest string ever stored in a variable, a map
// value or a map key, so that every store fits.
//
// What each node's Type means after Check (codegen relies on these):
//
//   - IntLit: int64. StrLit: string[len+1] (the literal and its NUL).
//   - Var: the variable's type, the same at every use in a probe: the type
//     of its first assignment, with strings (also inside tuples) widened to
//     the largest one assigned. Integer variables keep their first type's
//     size (`$x = (uint8)1; $x = 300` stores 44).
//   - MapExpr: the map's value type (Program.Maps[name].Value); integer
//     values are 64-bit, signed as the first value stored. An aggregation
//     map has the aggregation kind (KindCount, KindHist ...).
//   - Map keys: MapInfo.Key is the key type; integer keys are 64-bit,
//     string keys are widened like values; several keys make a tuple.
//   - Builtin: pid, tid, uid, gid, cpu, nsecs, elapsed, rand, cgroup,
//     numaid, retval and argN are uint64 (USDT argN as bpftrace 0.17 types
//     them: unsigned; codegen reads them with the note's size and sign and
//     widens); cpid uint32; comm string[16]; probe KindProbe; func KindUsym;
//     ustack KindStack. A Builtin that names a stack mode inside ustack()
//     (perf, bpftrace) has KindNone; one that names a type inside sizeof()
//     (uint32) has that type.
//   - PositionalParam: $# and $N used as a number are int64 constants (a
//     missing $N is 0); $N as the first argument of str() is string[len+1]
//     of its text (a missing $N is ""), and that str() call is a constant.
//   - Binary: arithmetic, bitwise, comparison and logical operators on
//     integers give a 64-bit integer, signed only when both operands are
//     signed; pointer +/- integer keeps the pointer type; string == and !=
//     give uint64.
//   - Unary: ! keeps its operand's type; - and ~ give a 64-bit integer of
//     the operand's signedness; * gives the pointee (uint64 when
//     dereferencing a plain integer, like bpftrace).
//   - IncDec: the variable's or the map's integer type (int64 for a map
//     first created by ++/--).
//   - Ternary: two integers give a 64-bit integer signed when both are;
//     two strings give string[StrLen].
//   - Cast: Cast.To (struct sizes filled in from the script's definitions).
//   - Tuple: KindTuple with the element types. FieldAccess: the tuple
//     element or the struct field's type. IndexExpr: the element type.
//   - Call: str() string[StrLen] (str(p, n) reads at most n bytes into
//     it); buf(p, n) KindBuf with Size min(n, StrLen) data bytes, or
//     StrLen when n is not a constant; strftime() KindTimestamp; usym()
//     KindUsym; ntop() KindInet; ustack() KindStack; count() KindCount,
//     sum() KindSum ... lhist() KindLhist (only as a map's value); uptr(),
//     kptr() the pointer type given or int64; sizeof(), strncmp(),
//     kaddr(), uaddr(), reg() uint64; statements (printf, print, exit,
//     clear, zero, delete, time, join, cat, system, signal, override)
//     KindVoid.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Config holds the settings the checker needs from the command line and
// the environment.
type Config struct {
	// StrLen is the size of str()'s buffer (BPFTRACE_STRLEN); 0 means
	// DefaultStrLen.
	StrLen int
	// Params are the positional parameters $1, $2, ...
	Params []string
	// Unsafe allows system(), signal() and override() (--unsafe).
	Unsafe bool
	// MapKeysMax is the number of keys a map holds
	// (BPFTRACE_MAP_KEYS_MAX); 0 means DefaultMapKeysMax. Codegen sizes
	// the maps; the checker only validates it.
	MapKeysMax int
	// Child says a -c command is traced: cpid is only valid then.
	Child bool
}

// The defaults of Config, bpftrace 0.17's.
const (
	DefaultStrLen     = 64
	DefaultMapKeysMax = 4096
)

// MaxStrLen bounds Config.StrLen. bpftrace 0.17 stops at 200 because its
// strings live on the 512-byte BPF stack; gotrace keeps values in scratch
// maps and allows the 1024 later bpftrace versions default to, enough for
// Bitcoin Core's longest strings (128-byte messages, 68-byte Tor peers).
const MaxStrLen = 1024

// maxPasses bounds the silent passes. Each one can only settle more
// types, and a chain of maps each read before it is assigned needs one
// pass per link.
const maxPasses = 16

// Check checks p, annotates every expression with its type (see the
// comment at the top of checker.go for what each node's type means), and
// fills in p.Maps and p.NumParams. It returns an ErrorList with the
// problems bpftrace 0.17 reports, in source order, or nil; a bad Config is
// a plain error.
func Check(p *Program, cfg Config) error {
	if cfg.StrLen == 0 {
		cfg.StrLen = DefaultStrLen
	}
	if cfg.MapKeysMax == 0 {
		cfg.MapKeysMax = DefaultMapKeysMax
	}
	if cfg.StrLen < 0 || cfg.StrLen > MaxStrLen {
		return fmt.Errorf("check program: string length %d is outside 1..%d", cfg.StrLen, MaxStrLen)
	}
	if cfg.MapKeysMax < 0 {
		return fmt.Errorf("check program: map size %d is negative", cfg.MapKeysMax)
	}
	c := &checker{
		prog:    p,
		cfg:     cfg,
		maps:    map[string]*mapState{},
		vars:    map[*Probe]map[string]Type{},
		structs: map[string]*StructDef{},
		lines:   lineOffsets(p.Source),
		late:    map[*Error]bool{},
		symbols: map[[2]string]symbolSize{},
	}
	for _, s := range p.Structs {
		c.structs[s.Name] = s
	}
	for range maxPasses {
		c.changed = false
		c.run()
		if !c.changed {
			break
		}
	}
	c.final = true
	c.run()

	p.Maps = map[string]*MapInfo{}
	for name, m := range c.maps {
		p.Maps[name] = m.info
	}
	p.NumParams = c.numParams
	if len(c.errs) == 0 {
		return nil
	}
	if len(c.late) < len(c.errs) {
		c.errs = slices.DeleteFunc(c.errs, func(e *Error) bool { return c.late[e] })
	}
	slices.SortStableFunc(c.errs, func(a, b *Error) int {
		if d := cmp.Compare(a.Span.Start.Line, b.Span.Start.Line); d != 0 {
			return d
		}
		return cmp.Compare(a.Span.Start.Col, b.Span.Start.Col)
	})
	return c.errs
}

// checker is the state of one Check.
type checker struct {
	prog *Program
	cfg  Config
	// final is set for the last pass, the one that reports errors.
	final bool
	// changed records that a pass learned a map or variable type.
	changed bool
	errs    ErrorList
	// late marks the errors of bpftrace's final pass (see laterf).
	late map[*Error]bool
	maps map[string]*mapState
	// vars holds each probe's variable types, kept across passes.
	vars    map[*Probe]map[string]Type
	structs map[string]*StructDef
	lines   []int

	// The probe being checked, the variables assigned so far in it, and
	// how many loops enclose the current statement.
	probe     *Probe
	defined   map[string]bool
	loops     int
	numParams int
	// symbols caches uaddr()'s symbol sizes by file and name.
	symbols map[[2]string]symbolSize
}

// symbolSize is a symbol's size, or the error of looking it up.
type symbolSize struct {
	size uint64
	err  error
}

// mapState is what the checker knows about one map.
type mapState struct {
	info     *MapInfo
	keySet   bool
	valueSet bool
	lhistSet bool
}

// use says where an expression appears, for the functions that are only
// allowed in some places.
type use int

const (
	// useValue: an operand, an argument, a condition.
	useValue use = iota
	// useStmt: an expression statement (printf(...);).
	useStmt
	// useAssign: the value of an assignment or a map key.
	useAssign
	// useMapAssign: the whole right-hand side of `@m = ...`, where
	// aggregations go.
	useMapAssign
)

// errorf records an error that bpftrace 0.17 finds in its first pass.
func (c *checker) errorf(s Span, format string, args ...any) {
	c.report(s, "", false, format, args...)
}

// laterf records an error that bpftrace 0.17 only looks for in its final
// pass, which it does not reach when its first pass found errors: Check
// reports these only when there are no others.
func (c *checker) laterf(s Span, format string, args ...any) {
	c.report(s, "", true, format, args...)
}

// hintf records a first-pass error with a hint.
func (c *checker) hintf(s Span, hint, format string, args ...any) {
	c.report(s, hint, false, format, args...)
}

// report records an error in the final pass only, once per position and
// message.
func (c *checker) report(s Span, hint string, late bool, format string, args ...any) {
	if !c.final {
		return
	}
	msg := fmt.Sprintf(format, args...)
	s.Start = c.tokenStart(s.Start)
	for _, e := range c.errs {
		if e.Span == s && e.Msg == msg {
			return
		}
	}
	e := &Error{Span: s, Msg: msg, Hint: hint}
	c.errs = append(c.errs, e)
	if late {
		c.late[e] = true
	}
}

func (c *checker) run() {
	c.numParams = 0
	for _, pr := range c.prog.Probes {
		c.probe = pr
		c.defined = map[string]bool{}
		c.loops = 0
		if c.vars[pr] == nil {
			c.vars[pr] = map[string]Type{}
		}
		if pr.Pred != nil {
			t := c.expr(pr.Pred, useValue)
			if !isIntLike(t) && t.Kind != KindNone {
				span := pr.Pred.Span()
				span.End = c.find(span.End, "/").End
				c.laterf(span, "Invalid type for predicate: %s", formatTypeName(t))
			}
		}
		if pr.Body != nil {
			c.block(pr.Body)
		}
	}
}

func (c *checker) block(b *Block) {
	for _, s := range b.Stmts {
		c.stmt(s)
	}
}

func (c *checker) stmt(s Stmt) {
	switch s := s.(type) {
	case *Block:
		c.block(s)
	case *ExprStmt:
		c.expr(s.X, useStmt)
	case *AssignStmt:
		c.assign(s)
	case *IfStmt:
		t := c.expr(s.Cond, useValue)
		if t.Kind != KindInt && t.Kind != KindNone {
			// bpftrace 0.17 reports this at 1:1; gotrace points at the
			// condition.
			c.laterf(s.Cond.Span(), "Invalid condition in if(): %s", condName(t))
		}
		c.block(s.Then)
		if s.Else != nil {
			c.stmt(s.Else)
		}
	case *UnrollStmt:
		c.unroll(s)
	case *WhileStmt:
		t := c.expr(s.Cond, useValue)
		if !isIntLike(t) && t.Kind != KindNone && t.Kind != KindString {
			c.laterf(s.Cond.Span(), "Invalid condition in while(): %s", formatTypeName(t))
		}
		c.loops++
		c.block(s.Body)
		c.loops--
	case *JumpStmt:
		if (s.Kind == "break" || s.Kind == "continue") && c.loops == 0 {
			c.errorf(s.Loc, "%s used outside of a loop", s.Kind)
		}
	}
}

// unroll checks `unroll (N)`: N is a constant from 1 to 100.
func (c *checker) unroll(s *UnrollStmt) {
	c.expr(s.Count, useValue)
	span := Span{Start: s.Loc.Start, End: c.find(s.Count.Span().End, ")").End}
	s.N = 0
	n, ok := c.constInt(s.Count)
	switch {
	case c.badParam(s.Count):
		c.errorf(span, "invalid unroll value")
	case !ok:
		c.errorf(span, "unroll count must be an integer literal or a positional parameter")
	case n < 1:
		c.errorf(span, "unroll minimum value is 1")
	case n > 100:
		c.errorf(span, "unroll maximum value is 100")
	default:
		s.N = int(n)
	}
	c.block(s.Body)
}

// assign checks `LHS op RHS`.
func (c *checker) assign(s *AssignStmt) {
	opSpan := c.find(s.LHS.Span().End, s.Op)
	switch lhs := s.LHS.(type) {
	case *Var:
		var t Type
		if s.Op == "=" {
			t = c.expr(s.RHS, useAssign)
		} else {
			cur := c.varRead(lhs)
			r := c.expr(s.RHS, useValue)
			if !isIntLike(cur) && cur.Kind != KindNone {
				// bpftrace checks `$s += 1` as the assignment of an
				// unsigned result to $s.
				c.errorf(s.Loc, "Type mismatch for %s: trying to assign value of type '%s' when variable already contains a value of type '%s'", lhs.Name, typeName(Uint64), typeName(cur))
				SetType(lhs, cur)
				return
			}
			t = c.binaryType(strings.TrimSuffix(s.Op, "="), cur, r, s.Loc, opSpan)
		}
		c.varAssign(lhs, t, opSpan)
	case *MapExpr:
		m := c.mapAccess(lhs, lhs.Span())
		var t Type
		if s.Op == "=" {
			u := useAssign
			if _, ok := s.RHS.(*Call); ok {
				u = useMapAssign
			}
			t = c.expr(s.RHS, u)
		} else {
			cur := c.mapValue(lhs, m, false)
			if !m.valueSet {
				// bpftrace takes a new map in `@m op= v` as unsigned.
				cur = Uint64
			}
			r := c.expr(s.RHS, useValue)
			if !isIntLike(cur) && cur.Kind != KindNone {
				t = Uint64 // reported by mapStore, as bpftrace does
			} else {
				t = c.binaryType(strings.TrimSuffix(s.Op, "="), cur, r, s.Loc, opSpan)
			}
		}
		c.mapStore(lhs, m, t, opSpan)
		if call, ok := s.RHS.(*Call); ok && t.Kind == KindLhist {
			c.lhistStore(lhs.Name, m, call)
		}
		SetType(lhs, m.info.Value)
	default:
		c.expr(s.LHS, useValue)
		c.expr(s.RHS, useValue)
		c.errorf(s.LHS.Span(), "Invalid assignment: the left-hand side must be a variable or a map")
	}
}

// varRead types a read of a scratch variable.
func (c *checker) varRead(v *Var) Type {
	if !c.defined[v.Name] {
		c.errorf(v.Loc, "Undefined or undeclared variable: %s", v.Name)
		SetType(v, Type{})
		return Type{}
	}
	t := c.vars[c.probe][v.Name]
	SetType(v, t)
	return t
}

// varAssign records that v is assigned a value of type t.
func (c *checker) varAssign(v *Var, t Type, opSpan Span) {
	c.defined[v.Name] = true
	vars := c.vars[c.probe]
	cur, ok := vars[v.Name]
	switch {
	case t.Kind == KindNone:
	case !ok || cur.Kind == KindNone:
		vars[v.Name] = t
		c.changed = true
	default:
		merged, ok := mergeTypes(cur, t)
		switch {
		case !ok && cur.Kind == KindTuple && t.Kind == KindTuple:
			c.laterf(opSpan, "Tuple type mismatch: %s != %s.", typeName(cur), typeName(t))
		case !ok:
			c.errorf(opSpan, "Type mismatch for %s: trying to assign value of type '%s' when variable already contains a value of type '%s'", v.Name, typeName(t), typeName(cur))
		case !merged.Equal(cur):
			vars[v.Name] = merged
			c.changed = true
		}
	}
	SetType(v, vars[v.Name])
}

// mapState returns the state of the map called name, creating it at its
// first appearance.
func (c *checker) mapState(name string, at Span) *mapState {
	m := c.maps[name]
	if m == nil {
		m = &mapState{info: &MapInfo{Name: name, Pos: at}}
		c.maps[name] = m
	}
	return m
}

// mapAccess checks the keys of m and their agreement with the map's key
// type; mismatches are reported at span.
func (c *checker) mapAccess(e *MapExpr, span Span) *mapState {
	m := c.mapState(e.Name, e.Loc)
	var key Type
	switch len(e.Keys) {
	case 0:
	case 1:
		key = c.keyType(e.Keys[0], e)
	default:
		key = Type{Kind: KindTuple}
		for _, k := range e.Keys {
			key.Elems = append(key.Elems, c.keyType(k, e))
		}
	}
	if hasNone(key) && len(e.Keys) > 0 {
		return m
	}
	if !m.keySet {
		m.keySet = true
		m.info.Key = key
		c.changed = true
		return m
	}
	merged, ok := mergeTypes(m.info.Key, key)
	if !ok {
		c.laterf(span, "Argument mismatch for %s: trying to access with arguments: [%s] when map expects arguments: [%s]", e.Name, keyArgs(key), keyArgs(m.info.Key))
		return m
	}
	if !merged.Equal(m.info.Key) {
		m.info.Key = merged
		c.changed = true
	}
	return m
}

// keyType checks one map key expression and returns its key type.
func (c *checker) keyType(k Expr, e *MapExpr) Type {
	t := c.expr(k, useAssign)
	switch {
	case t.Kind == KindTuple:
		c.errorf(e.Loc, "tuple cannot be used as a map key. Try a multi-key associative array instead (eg `@map[$1, $2] = ...)`.")
		return Type{}
	case t.Kind == KindInt:
		return Int(8, t.Signed)
	case t.Kind == KindVoid || t.IsAggregation():
		return Type{}
	}
	return t
}

// hasNone reports whether t is or contains an unresolved type.
func hasNone(t Type) bool {
	if t.Kind == KindNone {
		return true
	}
	for _, e := range t.Elems {
		if hasNone(e) {
			return true
		}
	}
	return false
}

// keyArgs lists key types the way bpftrace 0.17's "Argument mismatch"
// message does: integers of any size as "unsigned int64".
func keyArgs(key Type) string {
	var elems []Type
	switch key.Kind {
	case KindNone:
		return ""
	case KindTuple:
		elems = key.Elems
	default:
		elems = []Type{key}
	}
	parts := make([]string, len(elems))
	for i, t := range elems {
		if t.Kind == KindInt {
			parts[i] = "unsigned int64"
		} else {
			parts[i] = typeName(t)
		}
	}
	return strings.Join(parts, ", ")
}

// mapValue types a read of map e's value.
func (c *checker) mapValue(e *MapExpr, m *mapState, report bool) Type {
	if !m.valueSet {
		if report {
			c.laterf(e.Loc, "Undefined map: %s", e.Name)
		}
		SetType(e, Type{})
		return Type{}
	}
	SetType(e, m.info.Value)
	return m.info.Value
}

// mapStore records that map e is assigned a value of type t.
func (c *checker) mapStore(e *MapExpr, m *mapState, t Type, opSpan Span) {
	if t.Kind == KindInt {
		t = Int(8, t.Signed)
	}
	switch {
	case t.Kind == KindNone || t.Kind == KindVoid:
	case !m.valueSet:
		m.valueSet = true
		m.info.Value = t
		c.changed = true
	default:
		merged, ok := mergeTypes(m.info.Value, t)
		switch {
		case !ok && m.info.Value.Kind == KindTuple && t.Kind == KindTuple:
			c.laterf(opSpan, "Tuple type mismatch: %s != %s.", typeName(m.info.Value), typeName(t))
		case !ok:
			// bpftrace 0.17 leaves the last quote out.
			c.errorf(e.Loc, "Type mismatch for %s: trying to assign value of type '%s' when map already contains a value of type '%s", e.Name, typeName(t), typeName(m.info.Value))
		case !merged.Equal(m.info.Value):
			m.info.Value = merged
			c.changed = true
		}
	}
}

// lhistStore checks that every lhist() stored in a map has the same
// bounds.
func (c *checker) lhistStore(name string, m *mapState, call *Call) {
	p, ok := c.lhistParams(call)
	if !ok || m.info.Value.Kind != KindLhist {
		return
	}
	if !m.lhistSet {
		m.lhistSet = true
		m.info.Lhist = p
		return
	}
	if m.info.Lhist != p {
		c.laterf(call.Loc, "Different lhist bounds in a single map unsupported")
	}
}

// mergeTypes returns the type that holds values of both a (the type
// already recorded) and b: strings and buffers grow to the larger size,
// integers keep a's type, tuples merge element by element. ok is false
// when no such type exists.
func mergeTypes(a, b Type) (Type, bool) {
	if a.Kind != b.Kind {
		return a, false
	}
	switch a.Kind {
	case KindInt:
		return a, true
	case KindString, KindBuf:
		if b.Size > a.Size {
			a.Size = b.Size
		}
		return a, true
	case KindTuple:
		if len(a.Elems) != len(b.Elems) {
			return a, false
		}
		elems := make([]Type, len(a.Elems))
		for i := range a.Elems {
			m, ok := mergeTypes(a.Elems[i], b.Elems[i])
			if !ok {
				return a, false
			}
			elems[i] = m
		}
		a.Elems = elems
		return a, true
	case KindPointer, KindStruct, KindArray:
		return a, a.Equal(b)
	}
	return a, true
}

// isIntLike reports whether t is an integer or a pointer: what conditions
// and integer arguments accept.
func isIntLike(t Type) bool { return t.Kind == KindInt || t.Kind == KindPointer }

// expr checks e, sets its type and returns it.
func (c *checker) expr(e Expr, u use) Type {
	t := c.exprType(e, u)
	SetType(e, t)
	return t
}

func (c *checker) exprType(e Expr, u use) Type {
	switch e := e.(type) {
	case *IntLit:
		return Int64
	case *StrLit:
		return String(len(e.Value) + 1)
	case *Var:
		return c.varRead(e)
	case *MapExpr:
		m := c.mapAccess(e, e.Loc)
		return c.mapValue(e, m, true)
	case *Builtin:
		return c.builtin(e)
	case *PositionalParam:
		return c.param(e)
	case *Call:
		return c.call(e, u)
	case *Binary:
		l := c.expr(e.X, useValue)
		r := c.expr(e.Y, useValue)
		return c.binaryType(e.Op, l, r, e.Loc, c.find(e.X.Span().End, e.Op))
	case *Unary:
		return c.unary(e)
	case *IncDec:
		return c.incDec(e)
	case *Ternary:
		return c.ternary(e)
	case *Cast:
		return c.cast(e)
	case *Tuple:
		t := Type{Kind: KindTuple}
		for _, x := range e.Elems {
			et := c.expr(x, useAssign)
			if et.Kind == KindVoid || et.IsAggregation() {
				et = Type{}
			}
			t.Elems = append(t.Elems, et)
		}
		return t
	case *FieldAccess:
		return c.field(e)
	case *IndexExpr:
		return c.index(e)
	}
	return Type{}
}

// builtin types a builtin variable and checks that the probe allows it.
func (c *checker) builtin(e *Builtin) Type {
	if n := argIndex(e.Name); n >= 0 {
		for _, k := range c.probeKinds() {
			switch k {
			case ProbeUSDT:
				// Any argN the probe's note describes; codegen checks N
				// against the note.
			case ProbeUprobe, ProbeKprobe:
				if n >= maxRegisterArgs {
					c.errorf(e.Loc, "x86_64 doesn't support %s", e.Name)
				}
			default:
				c.errorf(e.Loc, "The %s builtin can only be used with 'kprobes', 'uprobes' and 'usdt' probes", e.Name)
			}
		}
		return Uint64
	}
	t, ok := builtinVars[e.Name]
	if !ok {
		if unsupportedBuiltins[e.Name] {
			c.errorf(e.Loc, "The %s builtin is not supported by gotrace", e.Name)
		} else {
			hint := ""
			if near := ClosestName(e.Name, sortedNames(builtinVars)); near != "" {
				hint = "did you mean " + near + "?"
			}
			c.hintf(e.Loc, hint, "Unknown identifier: '%s'", e.Name)
		}
		return Type{}
	}
	if e.Name == "cpid" && !c.cfg.Child {
		c.errorf(e.Loc, "cpid cannot be used without child command")
	}
	for _, k := range c.probeKinds() {
		switch e.Name {
		case "retval":
			if k != ProbeUretprobe && k != ProbeKretprobe {
				c.errorf(e.Loc, "The retval builtin can only be used with 'kretprobe' and 'uretprobe' and 'kfunc' probes")
			}
		case "func":
			if k != ProbeUprobe && k != ProbeUretprobe && k != ProbeKprobe && k != ProbeKretprobe {
				c.errorf(e.Loc, "The func builtin can not be used with '%s' probes", probeKindNames[k])
			}
		}
	}
	return t
}

// probeKinds lists the distinct kinds of the current probe's attach
// points, in order.
func (c *checker) probeKinds() []ProbeKind {
	var kinds []ProbeKind
	for _, a := range c.probe.Attach {
		if !slices.Contains(kinds, a.Kind) {
			kinds = append(kinds, a.Kind)
		}
	}
	return kinds
}

// param types $N or $# used as a number.
func (c *checker) param(e *PositionalParam) Type {
	if e.Count {
		return Int64
	}
	c.numParams = max(c.numParams, e.N)
	if v, ok := c.paramValue(e.N); ok {
		if _, err := parseParamInt(v); err != nil {
			c.laterf(e.Loc, "$%d used numerically but given %q. Try using str($%d).", e.N, v, e.N)
		}
	}
	return Int64
}

// paramValue returns $n's text, and false when it was not given.
func (c *checker) paramValue(n int) (string, bool) {
	if n < 1 || n > len(c.cfg.Params) {
		return "", false
	}
	return c.cfg.Params[n-1], true
}

// badParam reports whether e is a positional parameter given a value that
// is not a number, where a constant integer is needed; it reports that as
// bpftrace 0.17 does in such places.
func (c *checker) badParam(e Expr) bool {
	p, ok := e.(*PositionalParam)
	if !ok || p.Count {
		return false
	}
	v, given := c.paramValue(p.N)
	if !given {
		return false
	}
	if _, err := parseParamInt(v); err == nil {
		return false
	}
	c.errorf(p.Loc, "$%d used numerically but given %q", p.N, v)
	return true
}

// parseParamInt reads a positional parameter used as a number: decimal,
// 0x hex or 0 octal, as bpftrace 0.17 accepts them.
func parseParamInt(s string) (int64, error) {
	if strings.ContainsAny(s, "_oObB") {
		return 0, errors.New("not a number")
	}
	return strconv.ParseInt(s, 0, 64)
}

// constInt returns the value of a constant integer expression: a literal,
// a negated literal or a positional parameter.
func (c *checker) constInt(e Expr) (int64, bool) {
	switch e := e.(type) {
	case *IntLit:
		return int64(e.Value), true
	case *Unary:
		if e.Op == "-" {
			if v, ok := c.constInt(e.X); ok {
				return -v, true
			}
		}
	case *PositionalParam:
		if e.Count {
			return int64(len(c.cfg.Params)), true
		}
		v, ok := c.paramValue(e.N)
		if !ok {
			return 0, true
		}
		n, err := parseParamInt(v)
		return n, err == nil
	}
	return 0, false
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

// condName names a condition's type in bpftrace's "Invalid condition"
// messages.
func condName(t Type) string {
	if t.Kind == KindPointer {
		return "pointer"
	}
	return formatTypeName(t)
}

func isComparison(op string) bool {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=", "&&", "||":
		return true
	}
	return false
}

func (c *checker) unary(e *Unary) Type {
	t := c.expr(e.X, useValue)
	opSpan := Span{Start: e.Loc.Start, End: Pos{Line: e.Loc.Start.Line, Col: e.Loc.Start.Col + len(e.Op)}}
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

func (c *checker) incDec(e *IncDec) Type {
	switch x := e.X.(type) {
	case *Var:
		t := c.varRead(x)
		if t.Kind != KindInt && t.Kind != KindNone {
			c.laterf(e.Loc, "The %s operator can not be used on expressions of type '%s'", e.Op, typeName(t))
		}
		return t
	case *MapExpr:
		m := c.mapAccess(x, x.Loc)
		if !m.valueSet {
			c.mapStore(x, m, Int64, x.Loc)
		}
		t := c.mapValue(x, m, false)
		if t.Kind != KindInt && t.Kind != KindNone {
			c.laterf(e.Loc, "The %s operator can not be used on expressions of type '%s'", e.Op, typeName(t))
		}
		return t
	}
	c.expr(e.X, useValue)
	c.errorf(e.Loc, "The %s operator must be applied to a map or variable", e.Op)
	return Type{}
}

func (c *checker) ternary(e *Ternary) Type {
	cond := c.expr(e.Cond, useValue)
	a := c.expr(e.Then, useValue)
	b := c.expr(e.Else, useValue)
	if cond.Kind != KindInt && cond.Kind != KindNone {
		c.laterf(e.Loc, "Invalid condition in ternary: %s", condName(cond))
	}
	switch {
	case a.Kind == KindNone:
		return b
	case b.Kind == KindNone:
		return a
	case a.Kind == KindInt && b.Kind == KindInt:
		return Int(8, a.Signed && b.Signed)
	case a.Kind == KindString && b.Kind == KindString:
		return String(c.cfg.StrLen)
	case a.Kind == KindTuple && b.Kind == KindTuple:
		c.errorf(e.Loc, "Ternary return type unsupported tuple")
		return Type{}
	case a.Equal(b):
		return a
	}
	c.laterf(e.Loc, "Ternary operator must return the same type: have '%s' and '%s'", formatTypeName(a), formatTypeName(b))
	return Type{}
}

func (c *checker) cast(e *Cast) Type {
	x := c.expr(e.X, useValue)
	to := c.resolve(e.To)
	// bpftrace underlines the parenthesized type only.
	span := e.Loc
	if i := strings.LastIndexByte(c.prog.Source[:c.offset(e.X.Span().Start)], ')'); i >= c.offset(e.Loc.Start) {
		span.End = c.position(i + 1)
	}
	base := to
	for base.Kind == KindPointer && base.Elem != nil {
		base = *base.Elem
	}
	if base.Kind == KindStruct && c.structs[base.Struct] == nil {
		name := strings.TrimSpace(strings.TrimRight(e.TypeName, "* "))
		c.errorf(span, "Unknown struct/union: '%s'", name)
		return Type{}
	}
	if to.Kind == KindStruct {
		c.errorf(span, "Cannot cast to \"%s\"", typeName(to))
		return Type{}
	}
	if x.Kind != KindNone && !isIntLike(x) {
		c.errorf(span, "Casts are not supported for type: \"%s\"", typeName(x))
		return Type{}
	}
	return to
}

// resolve fills in the sizes of script structs in t.
func (c *checker) resolve(t Type) Type {
	switch t.Kind {
	case KindStruct:
		if def := c.structs[t.Struct]; def != nil {
			t.Size = def.Size
		}
	case KindPointer, KindArray:
		if t.Elem != nil {
			elem := c.resolve(*t.Elem)
			t.Elem = &elem
		}
	}
	return t
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
	st := x
	switch {
	case e.Arrow && x.Kind == KindPointer && x.Elem != nil && x.Elem.Kind == KindStruct:
		st = *x.Elem
	case !e.Arrow && x.Kind == KindPointer && x.Elem != nil && x.Elem.Kind == KindStruct:
		c.errorf(e.Loc, "Can not access field '%s' on type '%s'. Try dereferencing it first, or using '->'", e.Field, typeName(x))
		return Type{}
	case !e.Arrow && x.Kind == KindStruct:
	default:
		c.errorf(e.Loc, "Can not access field '%s' on expression of type '%s'", e.Field, typeName(x))
		return Type{}
	}
	def := c.structs[st.Struct]
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
	case (x.Kind == KindPointer || x.Kind == KindArray) && x.Elem != nil:
		return c.resolve(*x.Elem)
	case x.Kind == KindPointer:
		return Int(1, false)
	}
	c.laterf(e.Loc, "The array index operator [] can only be used on arrays and pointers, found %s.", formatTypeName(x))
	return Type{}
}

// typeName names t as bpftrace 0.17 does in its messages ("unsigned
// int8 *", "buffer[9]").
func typeName(t Type) string {
	switch t.Kind {
	case KindInt:
		if t.Signed {
			return fmt.Sprintf("int%d", t.Size*8)
		}
		return fmt.Sprintf("unsigned int%d", t.Size*8)
	case KindBuf:
		return fmt.Sprintf("buffer[%d]", t.Size+1)
	case KindPointer:
		if t.Elem == nil {
			return "void *"
		}
		return typeName(*t.Elem) + " *"
	case KindArray:
		if t.Elem != nil {
			return fmt.Sprintf("%s[%d]", typeName(*t.Elem), t.Len)
		}
	case KindTuple:
		parts := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			parts[i] = typeName(e)
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	return t.String()
}

// call checks a function call used as u.
func (c *checker) call(e *Call, u use) Type {
	nameLoc := e.NameLoc
	sig, ok := funcs[e.Name]
	if !ok {
		// Like bpftrace, leave the arguments of an unknown function alone.
		if unsupportedFuncs[e.Name] {
			c.errorf(nameLoc, "The %s() function is not supported by gotrace", e.Name)
			return Type{}
		}
		hint := ""
		if near := ClosestName(e.Name, sortedNames(funcs)); near != "" {
			hint = fmt.Sprintf("did you mean %s()?", near)
		}
		c.hintf(nameLoc, hint, "Unknown function: %s", e.Name)
		return Type{}
	}
	if sig.void && u != useStmt {
		c.errorf(e.Loc, "%s() should not be used in an assignment or as a map key", e.Name)
	}
	if sig.agg != KindNone && u != useMapAssign {
		c.errorf(e.Loc, "%s() should be directly assigned to a map", e.Name)
	}
	if sig.unsafe && !c.cfg.Unsafe {
		c.errorf(e.Loc, "%s() is an unsafe function being used in safe mode", e.Name)
	}
	if msg := arityError(e.Name, sig, len(e.Args)); msg != "" {
		c.errorf(e.Loc, "%s", msg)
		for _, a := range e.Args {
			c.expr(a, useValue)
		}
		return c.callResult(e, sig)
	}
	c.callArgs(e)
	return c.callResult(e, sig)
}

// callResult is the type a function returns, whatever its arguments.
func (c *checker) callResult(e *Call, sig funcSig) Type {
	switch {
	case sig.agg != KindNone:
		return Type{Kind: sig.agg}
	case sig.void:
		return Type{Kind: KindVoid}
	}
	switch e.Name {
	case "str":
		return String(c.cfg.StrLen)
	case "buf":
		return c.bufType(e)
	case "strftime":
		return Type{Kind: KindTimestamp}
	case "ustack":
		return c.stackType(e)
	case "usym":
		return Type{Kind: KindUsym}
	case "strerror":
		return Type{Kind: KindErrno}
	case "ntop":
		return Type{Kind: KindInet}
	case "uaddr":
		return c.uaddrType(e)
	case "uptr", "kptr":
		if len(e.Args) == 1 && TypeOf(e.Args[0]).Kind == KindPointer {
			return TypeOf(e.Args[0])
		}
		return Int64
	case "bswap":
		// The bytes of the argument's own width, reversed, unsigned.
		if len(e.Args) == 1 && TypeOf(e.Args[0]).Kind == KindInt {
			return Int(TypeOf(e.Args[0]).Size, false)
		}
	}
	return Uint64
}

// bufType is buf(p[, n])'s type: n data bytes, at most StrLen.
func (c *checker) bufType(e *Call) Type {
	size := c.cfg.StrLen
	switch {
	case len(e.Args) == 2:
		if n, ok := c.constInt(e.Args[1]); ok && n >= 0 && n < int64(size) {
			size = int(n)
		}
	case len(e.Args) == 1:
		if t := TypeOf(e.Args[0]); t.Kind == KindArray && t.Size < size {
			size = t.Size
		}
	}
	return Type{Kind: KindBuf, Size: size}
}

// callArgs checks the arguments of a call with the right number of them.
func (c *checker) callArgs(e *Call) {
	args := e.Args
	name := e.Name
	switch name {
	case "count", "exit":
	case "sum", "avg", "min", "max", "stats", "hist":
		c.intArg(e, args[0], "only supports integer arguments")
	case "lhist":
		c.intArg(e, args[0], "only supports integer arguments")
		c.lhistArgs(e)
	case "printf", "cat", "system":
		c.formatCall(e)
	case "print":
		c.printCall(e)
	case "clear", "zero":
		m, ok := args[0].(*MapExpr)
		if !ok {
			c.expr(args[0], useValue)
			c.errorf(e.Loc, "%s() expects a map to be provided", name)
			return
		}
		c.mapRef(m)
		if len(m.Keys) > 0 {
			c.errorf(e.Loc, "The map passed to %s() should not be indexed by a key", name)
		}
	case "delete":
		m, ok := args[0].(*MapExpr)
		if !ok {
			c.expr(args[0], useValue)
			c.errorf(e.Loc, "delete() expects a map to be provided")
			return
		}
		ms := c.mapAccess(m, m.Loc)
		c.mapValue(m, ms, true)
	case "time":
		if len(args) == 1 {
			c.literalArg(e, args[0])
		}
	case "join":
		t := c.expr(args[0], useValue)
		if !isIntLike(t) && t.Kind != KindNone {
			c.laterf(e.Loc, "join() only supports int or pointer arguments (%s provided)", formatTypeName(t))
		}
		if len(args) == 2 {
			c.literalArg(e, args[1])
		}
	case "signal":
		c.signalCall(e)
	case "override":
		c.intArg(e, args[0], "only supports integer arguments")
		for _, k := range c.probeKinds() {
			if k != ProbeKprobe {
				c.errorf(e.Loc, "override can only be used with kprobes.")
			}
		}
	case "str":
		c.strArg(e, args[0])
		if len(args) == 2 {
			c.intArg(e, args[1], "only supports integer arguments")
		}
	case "buf":
		t := c.expr(args[0], useValue)
		if len(args) == 2 {
			c.intArg(e, args[1], "only supports integer arguments")
		} else if t.Kind != KindArray && t.Kind != KindNone {
			c.laterf(e.Loc, "buf() expects a length argument for non-array type %s", formatTypeName(t))
		}
	case "strftime":
		c.literalArg(e, args[0])
		c.intArg(e, args[1], "only supports integer arguments")
	case "ustack":
		c.ustackArgs(e)
	case "usym":
		if t := c.expr(args[0], useValue); !isIntLike(t) && t.Kind != KindNone {
			c.errorf(e.Loc, "usym() expects an integer or pointer argument")
		}
	case "uaddr":
		c.userProbeOnly(e)
		c.literalArg(e, args[0])
	case "kaddr":
		c.literalArg(e, args[0])
	case "reg":
		c.userProbeOnly(e)
		if lit, ok := c.literalArg(e, args[0]); ok && !x86Registers[lit] {
			c.errorf(e.Loc, "'%s' is not a valid register on this architecture (x86_64)", lit)
		}
	case "ntop":
		if len(args) == 2 {
			c.intArg(e, args[0], "only supports integer arguments")
		}
		addr := args[len(args)-1]
		t := c.expr(addr, useValue)
		switch t.Kind {
		case KindInt, KindPointer, KindNone:
		case KindString, KindBuf, KindArray:
			if t.Size != 4 && t.Size != 16 {
				c.errorf(e.Loc, "ntop() argument must be 4 or 16 bytes in size")
			}
		default:
			c.errorf(e.Loc, "ntop() expects an integer or array argument, got %s", formatTypeName(t))
		}
	case "sizeof":
		if b, ok := args[0].(*Builtin); ok {
			if t, ok := intTypeByName(b.Name); ok {
				SetType(b, t)
				return
			}
		}
		c.expr(args[0], useValue)
	case "strncmp":
		for _, a := range args[:2] {
			if t := c.expr(a, useValue); t.Kind != KindString && t.Kind != KindNone {
				c.laterf(e.Loc, "strncmp() only supports string arguments (%s provided)", formatTypeName(t))
			}
		}
		if n, ok := c.constArg(e, args[2]); ok && n < 0 {
			c.laterf(e.Loc, "Builtin strncmp requires a non-negative size")
		}
	case "bswap", "strerror":
		c.intArg(e, args[0], "only supports integer arguments")
	case "strcontains":
		for _, a := range args {
			if t := c.expr(a, useValue); t.Kind != KindString && t.Kind != KindNone {
				c.laterf(e.Loc, "strcontains() only supports string arguments (%s provided)", formatTypeName(t))
			}
		}
	case "uptr", "kptr":
		if t := c.expr(args[0], useValue); !isIntLike(t) && t.Kind != KindNone {
			c.errorf(e.Loc, "%s() only supports integer or pointer arguments (%s provided)", name, formatTypeName(t))
		}
	}
}

// intArg checks an argument that must be an integer; msg completes
// "NAME() msg (TYPE provided)".
func (c *checker) intArg(e *Call, a Expr, msg string) {
	t := c.expr(a, useValue)
	if !isIntLike(t) && t.Kind != KindNone {
		c.laterf(e.Loc, "%s() %s (%s provided)", e.Name, msg, formatTypeName(t))
	}
}

// literalArg checks an argument that must be a string literal and returns
// its value.
func (c *checker) literalArg(e *Call, a Expr) (string, bool) {
	t := c.expr(a, useValue)
	lit, ok := a.(*StrLit)
	if !ok {
		report := c.errorf
		if e.Name == "strftime" || e.Name == "join" {
			report = c.laterf
		}
		report(e.Loc, "%s() expects a string literal (%s provided)", e.Name, formatTypeName(t))
		return "", false
	}
	return lit.Value, true
}

// constArg checks an argument that must be a constant integer.
func (c *checker) constArg(e *Call, a Expr) (int64, bool) {
	t := c.expr(a, useValue)
	n, ok := c.constInt(a)
	if !ok {
		c.errorf(e.Loc, "%s() expects a integer literal (%s provided)", e.Name, argCategory(a, t))
	}
	return n, ok
}

// argCategory names an argument's type in "expects a ... literal"
// messages, where a stack mode is one more category.
func argCategory(a Expr, t Type) string {
	if b, ok := a.(*Builtin); ok && isStackMode(b.Name) {
		return "stack mode"
	}
	return formatTypeName(t)
}

func isStackMode(name string) bool { return name == "perf" || name == "bpftrace" }

// strArg checks str()'s first argument: an integer, a pointer, or a
// positional parameter, which str() reads as text.
func (c *checker) strArg(e *Call, a Expr) {
	if p, ok := a.(*PositionalParam); ok && !p.Count {
		c.numParams = max(c.numParams, p.N)
		v, _ := c.paramValue(p.N)
		SetType(p, String(len(v)+1))
		return
	}
	t := c.expr(a, useValue)
	if !isIntLike(t) && t.Kind != KindNone {
		c.errorf(e.Loc, "str() expects an integer or a pointer type as first argument (%s provided)", typeName(t))
	}
}

// lhistArgs checks lhist()'s constant bounds.
func (c *checker) lhistArgs(e *Call) {
	var vals [3]int64
	ok := true
	for i, a := range e.Args[1:] {
		if c.badParam(a) {
			// bpftrace also gives the usual message here, in its first
			// pass.
			p := a.(*PositionalParam)
			v, _ := c.paramValue(p.N)
			c.errorf(p.Loc, "$%d used numerically but given %q. Try using str($%d).", p.N, v, p.N)
			c.errorf(e.Loc, "lhist: invalid %s value", [3]string{"min", "max", "step"}[i])
			SetType(a, Int64)
			ok = false
			continue
		}
		v, isConst := c.constArg(e, a)
		vals[i] = v
		ok = ok && isConst
	}
	if !ok {
		return
	}
	lo, hi, step := vals[0], vals[1], vals[2]
	if lo < 0 {
		c.laterf(e.Loc, "lhist() min must be non-negative (provided min %d)", lo)
	}
	if step < 1 {
		c.laterf(e.Loc, "lhist() step must be >= 1 (%d provided)", step)
		return
	}
	if lo > hi {
		c.laterf(e.Loc, "lhist() min must be less than max (provided min %d and max %d)", lo, hi)
	}
	switch n := (hi - lo) / step; {
	case n < 1:
		c.laterf(e.Loc, "lhist() step is too large for the given range (provided step %d for range %d)", step, hi-lo)
	case n > 1000:
		c.laterf(e.Loc, "lhist() too many buckets, must be <= 1000 (would need %d)", n)
	}
}

// lhistParams returns a valid lhist() call's constant bounds.
func (c *checker) lhistParams(e *Call) (LhistParams, bool) {
	if len(e.Args) != 4 {
		return LhistParams{}, false
	}
	var vals [3]int64
	for i, a := range e.Args[1:] {
		v, ok := c.constInt(a)
		if !ok {
			return LhistParams{}, false
		}
		vals[i] = v
	}
	return LhistParams{Min: vals[0], Max: vals[1], Step: vals[2]}, true
}

// formatCall checks printf(), cat() and system(): a literal format and
// arguments that match its verbs.
func (c *checker) formatCall(e *Call) {
	format, isLit := c.literalArg(e, e.Args[0])
	var types []Type
	for _, a := range e.Args[1:] {
		types = append(types, c.expr(a, useValue))
	}
	if !isLit {
		return
	}
	parts, err := ParseFormat(format)
	if err != nil {
		c.errorf(e.Loc, "%s: %v", e.Name, err)
		return
	}
	var verbs []*FormatVerb
	for _, p := range parts {
		if p.Verb != nil {
			verbs = append(verbs, p.Verb)
		}
	}
	switch {
	case len(types) < len(verbs):
		c.laterf(e.Loc, "%s: Not enough arguments for format string (%d supplied, %d expected)", e.Name, len(types), len(verbs))
	case len(types) > len(verbs):
		c.laterf(e.Loc, "%s: Too many arguments for format string (%d supplied, %d expected)", e.Name, len(types), len(verbs))
	default:
		for i, v := range verbs {
			t := types[i]
			if t.Kind == KindNone || t.IsAggregation() && isCall(e.Args[i+1]) {
				continue // already reported
			}
			if msg := v.Mismatch(t); msg != "" {
				c.laterf(e.Loc, "%s: %s", e.Name, msg)
			}
		}
	}
}

func isCall(e Expr) bool {
	_, ok := e.(*Call)
	return ok
}

// printCall checks print(@m[, top[, div]]) and print(value).
func (c *checker) printCall(e *Call) {
	m, isMap := e.Args[0].(*MapExpr)
	if !isMap {
		c.expr(e.Args[0], useValue)
		for _, a := range e.Args[1:] {
			c.expr(a, useValue)
		}
		if len(e.Args) > 1 {
			c.errorf(e.Loc, "Non-map print() only takes 1 argument, %d found", len(e.Args))
		}
		return
	}
	c.mapRef(m)
	if len(m.Keys) > 0 {
		c.errorf(e.Loc, "The map passed to print() should not be indexed by a key")
	}
	for _, a := range e.Args[1:] {
		t := c.expr(a, useValue)
		if _, ok := c.constInt(a); !ok {
			c.laterf(e.Loc, "print() expects a integer literal (%s provided)", formatTypeName(t))
		}
	}
}

// mapRef types a whole map passed to print(), clear() or zero(): its keys
// are not checked against the map's.
func (c *checker) mapRef(m *MapExpr) {
	ms := c.mapState(m.Name, m.Loc)
	for _, k := range m.Keys {
		c.expr(k, useValue)
	}
	c.mapValue(m, ms, true)
}

// signalCall checks signal(SIG): a signal number or name.
func (c *checker) signalCall(e *Call) {
	for _, k := range c.probeKinds() {
		switch k {
		case ProbeBegin, ProbeEnd, ProbeInterval:
			c.errorf(e.Loc, "signal can not be used with \"%s\" probes", probeKindNames[k])
		}
	}
	a := e.Args[0]
	t := c.expr(a, useValue)
	if lit, ok := a.(*StrLit); ok {
		name := lit.Value
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		if unix.SignalNum(name) == 0 {
			c.errorf(e.Loc, "%s is not a valid signal", lit.Value)
		}
		return
	}
	if t.Kind != KindInt && t.Kind != KindNone {
		c.errorf(e.Loc, "signal only accepts string literals or integers")
		return
	}
	if n, ok := c.constInt(a); ok && (n < 1 || n > maxSignal) {
		c.errorf(e.Loc, "%d is not a valid signal, allowed range: [1,%d]", n, maxSignal)
	}
}

// maxSignal is the largest signal number signal() sends (SIGRTMAX).
const maxSignal = 64

// ustackArgs checks ustack([mode][, limit]).
func (c *checker) ustackArgs(e *Call) {
	args := e.Args
	if len(args) == 2 {
		if b, ok := args[0].(*Builtin); ok && isStackMode(b.Name) {
			SetType(b, Type{})
		} else {
			t := c.expr(args[0], useValue)
			c.errorf(e.Loc, "ustack() expects a stack mode literal (%s provided)", formatTypeName(t))
		}
		c.stackLimit(e, args[1])
		return
	}
	if len(args) == 1 {
		if b, ok := args[0].(*Builtin); ok && isStackMode(b.Name) {
			SetType(b, Type{})
			return
		}
		c.stackLimit(e, args[0])
	}
}

// stackType is ustack([mode][, limit])'s type, with its frame limit and
// mode.
func (c *checker) stackType(e *Call) Type {
	t := Type{Kind: KindStack, StackFrames: DefaultStackFrames}
	for _, a := range e.Args {
		if b, ok := a.(*Builtin); ok && isStackMode(b.Name) {
			t.StackPerf = b.Name == "perf"
		} else if n, ok := c.constInt(a); ok && n > 0 {
			t.StackFrames = int(n)
		}
	}
	return t
}

// stackLimit checks ustack()'s frame count: a constant integer.
func (c *checker) stackLimit(e *Call, a Expr) {
	if b, ok := a.(*Builtin); ok && isStackMode(b.Name) {
		SetType(b, Type{})
		c.errorf(e.Loc, "ustack() expects a integer literal (stack mode provided)")
		return
	}
	c.constArg(e, a)
}

// uaddrType resolves uaddr("sym") in the file of the probe's first
// attach point: a pointer to a signed integer of the symbol's size (1, 2
// or 4 bytes, else 8), as bpftrace 0.17 types it.
func (c *checker) uaddrType(e *Call) Type {
	elem := Int64
	if len(e.Args) != 1 {
		return Type{Kind: KindPointer, Elem: &elem}
	}
	lit, ok := e.Args[0].(*StrLit)
	if !ok {
		return Type{Kind: KindPointer, Elem: &elem}
	}
	path := ""
	if len(c.probe.Attach) > 0 {
		path = c.probe.Attach[0].Target
	}
	key := [2]string{path, lit.Value}
	sym, ok := c.symbols[key]
	if !ok {
		_, sym.size, sym.err = ObjectSymbol(path, lit.Value)
		c.symbols[key] = sym
	}
	if sym.err != nil {
		c.errorf(e.Loc, "Could not resolve symbol: %s:%s", path, lit.Value)
	}
	switch sym.size {
	case 1, 2, 4:
		elem = Int(int(sym.size), true)
	}
	return Type{Kind: KindPointer, Elem: &elem}
}

// userProbeOnly reports uaddr() and reg() outside the probes that run in a
// user process.
func (c *checker) userProbeOnly(e *Call) {
	for _, k := range c.probeKinds() {
		switch k {
		case ProbeBegin, ProbeEnd, ProbeInterval, ProbeProfile:
			c.errorf(e.Loc, "%s can not be used with \"%s\" probes", e.Name, probeKindNames[k])
		}
	}
}

// tokenStart returns where bpftrace 0.17 says the token at p starts.
// Its lexer only moves the start of a location on white space, so a token
// right after others ("str($x" or "$y=1+$x") begins where that run of
// characters begins.
func (c *checker) tokenStart(p Pos) Pos {
	if p.Line < 1 || p.Line > len(c.lines) {
		return p
	}
	line := c.prog.Source[c.lines[p.Line-1]:]
	col := min(p.Col, len(line)+1)
	for col > 1 && !isSpace(line[col-2]) {
		col--
	}
	return Pos{Line: p.Line, Col: col}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// lineOffsets returns the byte offset at which each line of src starts.
func lineOffsets(src string) []int {
	offs := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			offs = append(offs, i+1)
		}
	}
	return offs
}

// offset converts a position to a byte offset in the source, clamped.
func (c *checker) offset(p Pos) int {
	if p.Line < 1 || p.Line > len(c.lines) {
		return len(c.prog.Source)
	}
	return min(c.lines[p.Line-1]+p.Col-1, len(c.prog.Source))
}

// position converts a byte offset to a position.
func (c *checker) position(off int) Pos {
	line, _ := slices.BinarySearch(c.lines, off+1)
	return Pos{Line: line, Col: off - c.lines[line-1] + 1}
}

// find returns the span of the first token tok at or after from, skipping
// blanks, comments and closing parentheses: the position of an operator
// that the AST does not record. Without source it returns an empty span
// at from.
func (c *checker) find(from Pos, tok string) Span {
	src := c.prog.Source
	i := c.offset(from)
	for i < len(src) {
		switch {
		case strings.HasPrefix(src[i:], tok):
			return Span{Start: c.position(i), End: c.position(i + len(tok))}
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return Span{Start: from, End: from}
			}
			i += end + 4
		case isSpace(src[i]) || src[i] == ')':
			i++
		default:
			return Span{Start: from, End: from}
		}
	}
	return Span{Start: from, End: from}
}
