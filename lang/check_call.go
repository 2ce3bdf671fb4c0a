package lang

// This file checks function calls: arity, where a call may appear, each
// builtin function's arguments and the type it returns.

import (
	"errors"
	"fmt"
	"go/constant"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/gotrace/gotrace/internal/printf"
	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/internal/signals"
)

// call checks a function call used as u.
func (c *checker) call(e *Call, u use) Type {
	nameLoc := e.NameLoc
	sig := &builtins[e.ID]
	if e.ID == BuiltinInvalid || sig.support != supported {
		// Like bpftrace, leave the arguments of an unknown function alone.
		if e.ID != BuiltinInvalid {
			c.errorf(nameLoc, "The %s() function is not supported by gotrace", e.Name)
			return Type{}
		}
		hint := ""
		if near := ClosestName(e.Name, supportedNames(classFunc)); near != "" {
			hint = fmt.Sprintf("did you mean %s()?", near)
		}
		c.hintf(nameLoc, hint, "Unknown function: %s", e.Name)
		return Type{}
	}
	args := c.elementArgs(e)
	// In bpftrace 0.17's order: an unsafe function is reported before
	// its use.
	if sig.unsafe && !c.cfg.Unsafe {
		c.errorf(e.Loc, "%s() is an unsafe function being used in safe mode", e.Name)
	}
	if sig.void && u != useStmt {
		c.errorf(e.Loc, "%s() should not be used in an assignment or as a map key", e.Name)
	}
	if sig.agg != KindNone && u != useMapAssign {
		c.errorf(e.Loc, "%s() should be directly assigned to a map", e.Name)
	}
	if msg := arityError(e.Name, sig, len(args)); msg != "" {
		c.errorf(e.Loc, "%s", msg)
		for _, a := range args {
			c.expr(a, useValue)
		}
		return c.callResult(e, sig)
	}
	c.callArgs(e, args)
	return c.callResult(e, sig)
}

// callResult is the type a function returns, whatever its arguments.
func (c *checker) callResult(e *Call, sig *builtin) Type {
	switch {
	case sig.agg != KindNone:
		return Type{Kind: sig.agg}
	case sig.void:
		return Type{Kind: KindVoid}
	}
	switch e.ID {
	case FuncStr:
		c.warnTooLong(e)
		return String(c.cfg.StrLen)
	case FuncBuf:
		c.warnTooLong(e)
		return c.bufType(e)
	case FuncUstack, FuncKstack:
		return c.stackType(e)
	case FuncUaddr:
		return c.uaddrType(e)
	case FuncUptr, FuncKptr:
		if len(e.Args) == 1 && c.info.TypeOf(e.Args[0]).Kind == KindPointer {
			return c.info.TypeOf(e.Args[0])
		}
		return Int64
	case FuncPton:
		if a, ok := ptonAddress(e); ok {
			return Type{Kind: KindBuf, Size: len(a)}
		}
		return Type{Kind: KindBuf, Size: net.IPv4len}
	case FuncBswap:
		// The bytes of the argument's own width, reversed, unsigned.
		if len(e.Args) == 1 && c.info.TypeOf(e.Args[0]).Kind == KindInt {
			return Int(c.info.TypeOf(e.Args[0]).Size, false)
		}
		return Uint64
	}
	return sig.result
}

// warnTooLong warns that str(p, n) or buf(p, n) reads at most StrLen
// (BufLen) bytes when the constant n asks for more, in bpftrace 0.17's
// words for buf() (it says nothing of str()).
func (c *checker) warnTooLong(e *Call) {
	if len(e.Args) != 2 {
		return
	}
	limit, setting := c.cfg.StrLen, "BPFTRACE_STRLEN"
	if e.ID == FuncBuf && c.cfg.BufLen != c.cfg.StrLen {
		limit, setting = c.cfg.BufLen, "max_buflen"
	}
	if n, ok := c.info.ConstInt(e.Args[1]); ok && n > int64(limit) {
		c.warnf(e.Loc, "%s() length is too long and will be shortened to %d bytes (see %s)", e.Name, limit, setting)
	}
}

// bufType is buf(p[, n])'s type: n data bytes, at most BufLen.
func (c *checker) bufType(e *Call) Type {
	size := c.cfg.BufLen
	switch {
	case len(e.Args) == 2:
		if n, ok := c.info.ConstInt(e.Args[1]); ok && n >= 0 && n < int64(size) {
			size = int(n)
		}
	case len(e.Args) == 1:
		if t := c.info.TypeOf(e.Args[0]); t.Kind == KindArray && t.Size < size {
			size = t.Size
		}
	}
	return Type{Kind: KindBuf, Size: size}
}

// callArgs checks args, the arguments of call e as elementArgs gives
// them, when there is the right number of them.
func (c *checker) callArgs(e *Call, args []Expr) {
	name := e.Name
	for _, k := range c.probeKinds() {
		if b := &builtins[e.ID]; !b.probes.allows(k) {
			c.errorf(e.Loc, b.probeMsg, name, k.String(), k.TypeName())
		}
	}
	switch e.ID {
	case FuncLhist:
		c.intArg(e, args[0], "only supports integer arguments")
		c.lhistArgs(e)
	case FuncTseries:
		c.intArg(e, args[0], "only supports integer arguments")
		c.tseriesArgs(e)
	case FuncPrintf, FuncCat, FuncSystem, FuncErrorf, FuncWarnf:
		c.formatCall(e)
	case FuncPrint:
		c.printCall(e)
	case FuncClear, FuncZero:
		m, ok := c.mapArg(e, args[0])
		if !ok {
			return
		}
		c.mapRef(m)
		if len(m.Keys) > 0 {
			c.errorf(e.Loc, "The map passed to %s() should not be indexed by a key", name)
		}
	case FuncDelete, FuncHasKey:
		m, ok := c.mapArg(e, args[0])
		if !ok {
			return
		}
		ms := c.mapAccess(m, m.Loc)
		c.mapValue(m, ms, true)
		c.info.elements[e] = m
		if m != e.Args[0] {
			c.elementOperands(e, m)
		}
		if e.ID == FuncHasKey && len(m.Keys) == 0 {
			// bpftrace's message, without its hint to assign a key.
			c.errorf(e.Loc, "call to has_key() expects a map with explicit keys (non-scalar map)")
		}
	case FuncLen:
		m, ok := args[0].(*MapExpr)
		if !ok || len(m.Keys) > 0 {
			// len(ustack), len(kstack): the number of frames (bpftrace 0.23).
			if t := c.expr(args[0], useValue); t.Kind != KindStack && t.Kind != KindNone {
				c.errorf(e.Loc, "len() expects a map or a stack (ustack, kstack), not %s", typeName(t))
			}
			return
		}
		c.mapRef(m)
		if ms := c.maps[m.Name]; ms.keySet && ms.info.Key.Kind == KindNone {
			c.errorf(e.Loc, "call to len() expects a map with explicit keys (non-scalar map)")
		}
	case FuncJoin:
		t := c.expr(args[0], useValue)
		if !isIntLike(t) && t.Kind != KindNone {
			c.laterf(e.Loc, "join() only supports int or pointer arguments (%s provided)", formatTypeName(t))
		}
		if len(args) == 2 {
			c.literalArg(e, args[1])
		}
	case FuncSignal:
		c.signalCall(e)
	case FuncStr:
		c.strArg(e, args[0])
		if len(args) == 2 {
			c.intArg(e, args[1], "only supports integer arguments")
		}
	case FuncBuf:
		t := c.expr(args[0], useValue)
		if len(args) == 2 {
			c.intArg(e, args[1], "only supports integer arguments")
			if n, ok := c.info.ConstInt(args[1]); ok && n < 0 {
				c.errorf(e.Loc, "buf cannot use negative length (%d)", n)
			}
		} else if t.Kind != KindArray && t.Kind != KindNone {
			c.laterf(e.Loc, "buf() expects a length argument for non-array type %s", formatTypeName(t))
		}
	case FuncUstack, FuncKstack:
		c.ustackArgs(e)
	case FuncUsym, FuncKsym:
		if t := c.expr(args[0], useValue); !isIntLike(t) && t.Kind != KindNone {
			c.errorf(e.Loc, "%s() expects an integer or pointer argument", name)
		}
	case FuncReg:
		c.tableArgs(e)
		if lit, ok := args[0].(*StrLit); ok {
			if _, reg := ptregs.ByMember(lit.Value); !reg {
				c.errorf(e.Loc, "'%s' is not a valid register on this architecture (%s)", lit.Value, ptregs.Native.Arch)
			}
		}
	case FuncNtop:
		if len(args) == 2 {
			c.intArg(e, args[0], "only supports integer arguments")
		}
		addr := args[len(args)-1]
		c.ntopArg = addr
		t := c.expr(addr, useValue)
		c.ntopArg = nil
		switch t.Kind {
		case KindInt, KindPointer, KindNone:
		case KindString, KindBuf, KindArray:
			if t.Size != 4 && t.Size != 16 {
				c.errorf(e.Loc, "ntop() argument must be 4 or 16 bytes in size")
			}
		default:
			c.errorf(e.Loc, "ntop() expects an integer or array argument, got %s", formatTypeName(t))
		}
	case FuncMacaddr:
		c.macaddrArg(e, args[0])
	case FuncPton:
		c.ptonCall(e)
	case FuncHist:
		c.tableArgs(e)
		if len(args) == 2 {
			if bits, isConst := c.info.ConstInt(args[1]); isConst && (bits < 0 || bits > maxHistBits) {
				c.laterf(e.Loc, "hist: bits %d must be 0..%d", bits, maxHistBits)
			}
		}
	case FuncSizeof:
		if b, ok := args[0].(*Builtin); ok {
			if t, ok := intTypeByName(b.Name); ok {
				c.info.SetType(b, t)
				return
			}
			if t, ok := c.kernelSizeofName(b.Name); ok {
				c.info.SetType(b, t)
				return
			}
			if _, name, ok := strings.Cut(b.Name, " "); ok {
				if def := c.structDef(name); def != nil {
					c.info.SetType(b, Type{Kind: KindStruct, Struct: name, Size: def.Size})
					return
				}
			}
		}
		c.expr(args[0], useValue)
	case FuncNsecs:
		if len(args) == 1 {
			if b, ok := args[0].(*Builtin); !ok || !slices.Contains(nsecsClocks, b.Name) {
				c.errorf(args[0].exprBase().Loc, "Invalid timestamp mode: expected one of %s", strings.Join(nsecsClocks, ", "))
			} else {
				// A clock's name is no value: it has no type, as a
				// stack mode has none.
				c.info.SetType(b, Type{})
			}
		}
	case FuncStrncmp:
		c.tableArgs(e)
		if n, ok := c.info.ConstInt(args[2]); ok && n < 0 {
			c.laterf(e.Loc, "Builtin strncmp requires a non-negative size")
		}
	case FuncCgroupPath:
		c.tableArgs(e)
		if len(args) == 2 {
			if _, lit := args[1].(*StrLit); !lit && c.info.TypeOf(args[1]).Kind == KindString {
				// The filter picks hierarchies when the value prints,
				// in user space: it is the call's, not the value's.
				c.errorf(e.Loc, "cgroup_path() expects a string literal as its filter")
			}
		}
	case FuncUptr, FuncKptr:
		if t := c.expr(args[0], useValue); !isIntLike(t) && t.Kind != KindNone {
			c.errorf(e.Loc, "%s() only supports integer or pointer arguments (%s provided)", name, formatTypeName(t))
		}
	default:
		c.tableArgs(e)
	}
}

// mapArg returns the first argument of call e, arg, when it is a map, as
// clear(), zero(), delete() and has_key() want; else it checks arg as a
// value and says that e wants a map.
func (c *checker) mapArg(e *Call, arg Expr) (*MapExpr, bool) {
	m, ok := arg.(*MapExpr)
	if !ok {
		c.expr(arg, useValue)
		c.errorf(e.Loc, "%s() expects a map to be provided", e.Name)
	}
	return m, ok
}

// elementArgs returns the arguments call e is checked with. They are
// e's own but for the newer calls on one map element, delete(@m, k) and
// has_key(@m, k) (bpftrace 0.21 and 0.22; several keys, or a tuple of
// them, for a map of several keys), which are checked as 0.17's
// delete(@m[k]) is: with one argument, the element @m[k], which the
// checker makes (beside the AST, never in it) and records for codegen
// (Info.MapElement). A call whose first argument is not a map, or a map
// without keys, is checked with that argument alone, which callArgs
// refuses. The decision is made once, on the first pass, and kept for
// the later ones, so that what a later pass learns of the map cannot
// change the form the call was read in.
func (c *checker) elementArgs(e *Call) []Expr {
	if e.ID != FuncDelete && e.ID != FuncHasKey || len(e.Args) < 2 {
		return e.Args
	}
	if args, ok := c.elementCalls[e]; ok {
		return args
	}
	args := c.elementOf(e)
	c.elementCalls[e] = args
	return args
}

// elementOf is elementArgs's decision for a delete() or has_key() call
// of two arguments or more.
func (c *checker) elementOf(e *Call) []Expr {
	m, ok := e.Args[0].(*MapExpr)
	switch {
	case !ok:
		// Not a map: callArgs says so.
		return e.Args[:1]
	case len(m.Keys) > 0:
		// delete(@m[k], x): arityError says so.
		return e.Args
	}
	if ms := c.maps[m.Name]; ms != nil && ms.keySet && ms.info.Key.Kind == KindNone {
		// A map without keys: callArgs says so.
		return e.Args[:1]
	}
	keys := e.Args[1:]
	if t, ok := keys[0].(*Tuple); ok && len(keys) == 1 {
		keys = t.Elems
	}
	elem := &MapExpr{Name: m.Name, Keys: keys}
	elem.Loc = Span{Start: m.Loc.Start, End: e.Args[len(e.Args)-1].exprBase().Loc.End}
	return []Expr{elem}
}

// elementOperands types what of a newer delete(@m, k) or has_key(@m, k)
// the element the checker made of it leaves out: the map @m, as its
// element is typed (the map's value), and a tuple (a, b) whose elements
// are the element's keys, as the tuple of their types.
func (c *checker) elementOperands(e *Call, elem *MapExpr) {
	c.info.SetType(e.Args[0], c.info.TypeOf(elem))
	if t, ok := e.Args[1].(*Tuple); ok && len(e.Args) == 2 {
		elems := make([]Type, len(t.Elems))
		for i, x := range t.Elems {
			elems[i] = c.info.TypeOf(x)
		}
		c.info.SetType(t, tupleType(t, elems))
	}
}

// nsecsClocks are the clocks nsecs() reads. sw_tai is bpftrace's
// approximation of TAI for kernels without bpf_ktime_get_tai_ns, which
// gotrace reads as tai.
var nsecsClocks = []string{"monotonic", "boot", "tai", "sw_tai"}

// tableArgs checks a call's arguments as the builtins table describes
// them (builtin.args); those it does not describe may be any value.
func (c *checker) tableArgs(e *Call) {
	kinds := builtins[e.ID].args
	for i, a := range e.Args {
		kind := argAny
		if i < len(kinds) {
			kind = kinds[i]
		}
		switch kind {
		case argAny:
			c.expr(a, useValue)
		case argInt:
			c.intArg(e, a, "only supports integer arguments")
		case argString:
			if t := c.expr(a, useValue); t.Kind != KindString && t.Kind != KindNone {
				c.laterf(e.Loc, "%s() only supports string arguments (%s provided)", e.Name, formatTypeName(t))
			}
		case argLiteral:
			c.literalArg(e, a)
		case argConst:
			c.constArg(e, a)
		}
	}
}

// ptonCall checks pton(s): s a literal IPv4 or IPv6 address (its bytes
// in network order are the call's constant, constValue). Its value is
// bpftrace's array of int8, which gotrace has only as ntop()'s argument
// (a buf of those bytes there).
func (c *checker) ptonCall(e *Call) {
	c.expr(e.Args[0], useValue)
	lit, ok := e.Args[0].(*StrLit)
	switch _, valid := ptonAddress(e); {
	case !ok:
		// bpftrace 0.17's message, which leaves the type out.
		c.errorf(e.Loc, "pton() expects an string argument of an IPv4/IPv6 address, got ")
	case !strings.ContainsAny(lit.Value, ".:"):
		// Neither family's separator: 0.17 takes it for no address.
		c.errorf(e.Loc, "pton() expects an string argument of an IPv4/IPv6 address, got %s", lit.Value)
	case !valid:
		c.errorf(e.Loc, "pton() expects a valid IPv4/IPv6 address, got %s", lit.Value)
	case e != c.ntopArg:
		c.errorf(e.Loc, "pton() is only supported by gotrace as the argument of ntop()")
	}
}

// macaddrArg checks macaddr(x): x is an address to read six bytes at (an
// integer or a pointer) or six bytes itself (an array, or a string or buf
// of six bytes), as in bpftrace 0.17, which reports a literal string
// twice when it has another size.
func (c *checker) macaddrArg(e *Call, x Expr) {
	t := c.expr(x, useValue)
	switch t.Kind {
	case KindInt, KindPointer, KindNone:
	case KindArray, KindIntArray, KindString, KindBuf:
		if t.Size != MacaddrLen {
			c.errorf(e.Loc, "macaddr() argument must be %d bytes in size", MacaddrLen)
		}
		if _, lit := x.(*StrLit); lit {
			c.errorf(e.Loc, "macaddr() does not support literal string arguments")
		}
	case KindTuple:
		c.errorf(e.Loc, "macaddr() only supports array or pointer arguments (tuple provided)")
	default:
		c.errorf(e.Loc, "macaddr() only supports array or pointer arguments (%s provided)", t)
	}
}

// MacaddrLen is the length of a MAC address in bytes, what macaddr()
// reads.
const MacaddrLen = 6

// ptonAddress returns the bytes, in network order, of the address that
// pton(s)'s literal names: 16 for an IPv6 address (one with a colon), 4
// for an IPv4 one.
func ptonAddress(e *Call) ([]byte, bool) {
	if len(e.Args) != 1 {
		return nil, false
	}
	lit, ok := e.Args[0].(*StrLit)
	if !ok {
		return nil, false
	}
	addr, err := netip.ParseAddr(lit.Value)
	switch {
	case err != nil || addr.Zone() != "":
		return nil, false
	case strings.Contains(lit.Value, ":"):
		b := addr.As16()
		return b[:], true
	}
	b := addr.As4()
	return b[:], true
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
		if e.ID == FuncStrftime || e.ID == FuncJoin {
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
	n, ok := c.info.ConstInt(a)
	if !ok {
		c.errorf(e.Loc, "%s() expects a integer literal (%s provided)", e.Name, argCategory(a, t))
	}
	return n, ok
}

// argCategory names an argument's type in "expects a ... literal"
// messages, where a stack mode is one more category.
func argCategory(a Expr, t Type) string {
	if stackMode(a) != BuiltinInvalid {
		return "stack mode"
	}
	return formatTypeName(t)
}

// strArg checks str()'s first argument: an integer, a pointer, or a
// positional parameter, which str() reads as text.
func (c *checker) strArg(e *Call, a Expr) {
	if p, ok := a.(*PositionalParam); ok && !p.Count {
		c.numParams = max(c.numParams, p.N)
		v, _ := c.paramValue(p.N)
		c.info.SetType(p, String(len(v)+1))
		c.info.setConst(p, constant.MakeString(v))
		return
	}
	t := c.expr(a, useValue)
	if !isIntLike(t) && t.Kind != KindNone {
		c.errorf(e.Loc, "str() expects an integer or a pointer type as first argument (%s provided)", typeName(t))
	}
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
	parts, err := printf.Parse(format)
	if err != nil {
		c.errorf(e.Loc, "%s: %v", e.Name, err)
		return
	}
	c.info.SetFormat(e, parts)
	var verbs []*printf.Verb
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
			if msg := formatMismatch(v, t); msg != "" {
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
	// print(@m[k]) prints the element's value, as bpftrace 0.21 does.
	if !isMap || len(m.Keys) > 0 {
		t := c.expr(e.Args[0], useValue)
		if t.Kind == KindStruct {
			// Printed member by member: codegen needs every nested
			// struct's definition.
			c.memberStructs(t.Struct, map[string]bool{})
		}
		if c.tracepointArgs(e.Args[0]) {
			// bpftrace 0.17 prints no record; later versions print it as a struct.
			c.errorf(e.Loc, "(ctx) %s type passed to print() is not printable", typeName(t))
		}
		for _, a := range e.Args[1:] {
			c.expr(a, useValue)
		}
		if len(e.Args) > 1 {
			c.errorf(e.Loc, "Non-map print() only takes 1 argument, %d found", len(e.Args))
		}
		return
	}
	c.mapRef(m)
	for _, a := range e.Args[1:] {
		t := c.expr(a, useValue)
		if _, ok := c.info.ConstInt(a); !ok {
			c.laterf(e.Loc, "print() expects a integer literal (%s provided)", formatTypeName(t))
		}
	}
	if ms := c.maps[m.Name]; len(e.Args) > 1 && ms != nil && ms.info.Value.Kind == KindStats {
		// A stats() map prints count, average and total whatever they
		// say (warnf reports in the final pass, when the map is typed).
		c.warnf(e.Loc, "print()'s top and div arguments are ignored when used on stats() maps.")
	}
}

// memberStructs looks up the structs that the members of struct name
// are, and theirs, so that Program.StructDef knows them all.
func (c *checker) memberStructs(name string, seen map[string]bool) {
	sd := c.structDef(name)
	if sd == nil || seen[name] {
		return
	}
	seen[name] = true
	for _, m := range sd.Fields {
		if m.Type.Kind == KindStruct {
			c.memberStructs(m.Type.Struct, seen)
		}
	}
}

// signalCall checks signal(SIG): a signal number or name.
func (c *checker) signalCall(e *Call) {
	a := e.Args[0]
	t := c.expr(a, useValue)
	if lit, ok := a.(*StrLit); ok {
		if signals.Number(lit.Value) == 0 {
			c.errorf(e.Loc, "%s is not a valid signal", lit.Value)
		}
		return
	}
	if t.Kind != KindInt && t.Kind != KindNone {
		c.errorf(e.Loc, "signal only accepts string literals or integers")
		return
	}
	if n, ok := c.info.ConstInt(a); ok && (n < 1 || n > signals.Max) {
		c.errorf(e.Loc, "%d is not a valid signal, allowed range: [1,%d]", n, signals.Max)
	}
}

// stackMode resolves a stack mode argument of ustack(): it returns its
// id, or BuiltinInvalid for an expression that is no stack mode. The
// call's type says which mode it is (Type.StackPerf).
func stackMode(a Expr) BuiltinID {
	b, ok := a.(*Builtin)
	if !ok {
		return BuiltinInvalid
	}
	return lookupBuiltin(classStackMode, b.Name)
}

// ustackArgs checks ustack([mode][, limit]) and kstack's.
func (c *checker) ustackArgs(e *Call) {
	args := e.Args
	if len(args) == 2 {
		if b, ok := args[0].(*Builtin); ok && stackMode(b) != BuiltinInvalid {
			c.info.SetType(b, Type{})
		} else {
			t := c.expr(args[0], useValue)
			c.errorf(e.Loc, "%s() expects a stack mode literal (%s provided)", e.Name, formatTypeName(t))
		}
		c.stackLimit(e, args[1])
		return
	}
	if len(args) == 1 {
		if b, ok := args[0].(*Builtin); ok && stackMode(b) != BuiltinInvalid {
			c.info.SetType(b, Type{})
			return
		}
		c.stackLimit(e, args[0])
	}
}

// stackType is ustack([mode][, limit])'s type, or kstack's, with its
// frame limit and mode.
func (c *checker) stackType(e *Call) Type {
	t := Type{Kind: KindStack, StackFrames: DefaultStackFrames, StackKernel: e.ID == FuncKstack}
	for _, a := range e.Args {
		if mode := stackMode(a); mode != BuiltinInvalid {
			t.StackPerf = mode == ModePerf
		} else if n, ok := c.info.ConstInt(a); ok && n > 0 {
			t.StackFrames = int(n)
		}
	}
	return t
}

// stackLimit checks ustack()'s or kstack()'s frame count: a constant
// integer, from 1 to MaxStackFrames. bpftrace 0.17 refuses one above
// with this message; 0 it took, and then failed to create the stack map
// ("Invalid argument").
func (c *checker) stackLimit(e *Call, a Expr) {
	if b, ok := a.(*Builtin); ok && stackMode(b) != BuiltinInvalid {
		c.info.SetType(b, Type{})
		c.errorf(e.Loc, "%s() expects a integer literal (stack mode provided)", e.Name)
		return
	}
	c.constArg(e, a)
	// Read as unsigned, as 0.17 does: -1 is past the limit.
	n, ok := c.info.ConstInt(a)
	switch {
	case !ok:
	case uint64(n) > MaxStackFrames:
		c.errorf(e.Loc, "%s([int limit]): limit shouldn't exceed %d, %d given", e.Name, MaxStackFrames, uint64(n))
	case n == 0:
		c.errorf(e.Loc, "%s([int limit]): limit should be at least 1, 0 given", e.Name)
	}
}

// uaddrType resolves uaddr("sym") through the Host in the target of each
// attach point of the probe, for the code generator (Info.Symbols). It
// is a pointer to a signed integer of the symbol's size (1, 2 or 4 bytes,
// else 8) in the target of the first one, as bpftrace 0.17 types it.
func (c *checker) uaddrType(e *Call) Type {
	elem := Int64
	if len(e.Args) != 1 {
		return Type{Kind: KindPointer, Elem: &elem}
	}
	lit, ok := e.Args[0].(*StrLit)
	if !ok {
		return Type{Kind: KindPointer, Elem: &elem}
	}
	for _, ap := range c.attach {
		c.dataSymbol(SymbolRef{ap.Target, lit.Value})
	}
	path := ""
	if len(c.attach) > 0 {
		path = c.attach[0].Target
	}
	sym := c.dataSymbol(SymbolRef{path, lit.Value})
	if sym.Err != nil {
		c.errorf(e.Loc, "Could not resolve symbol: %s:%s", path, lit.Value)
	}
	switch sym.Size {
	case 1, 2, 4:
		elem = Int(int(sym.Size), true)
	}
	return Type{Kind: KindPointer, Elem: &elem}
}

// errNoHost is the error of a symbol looked up without a Host.
var errNoHost = errors.New("no host to read files")

// dataSymbol returns the data symbol ref, looked up through the Host once
// and recorded in Info.Symbols.
func (c *checker) dataSymbol(ref SymbolRef) DataSymbol {
	sym, ok := c.info.Symbols[ref]
	if ok {
		return sym
	}
	sym.Err = errNoHost
	if c.cfg.Host != nil {
		sym.Addr, sym.Size, sym.Err = c.cfg.Host.ObjectSymbol(ref.Path, ref.Name)
	}
	c.info.Symbols[ref] = sym
	return sym
}
