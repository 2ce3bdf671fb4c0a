package lang

// This file checks function calls: arity, where a call may appear, each
// builtin function's arguments and the type it returns.

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/printf"
)

// symbolSize is a symbol's size, or the error of looking it up.
type symbolSize struct {
	size uint64
	err  error
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
		if lit, ok := c.literalArg(e, args[0]); ok {
			if _, reg := ptregs.ByMember(lit); !reg {
				c.errorf(e.Loc, "'%s' is not a valid register on this architecture (x86_64)", lit)
			}
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

// signalCall checks signal(SIG): a signal number or name.
func (c *checker) signalCall(e *Call) {
	for _, k := range c.probeKinds() {
		switch k {
		case ProbeBegin, ProbeEnd, ProbeInterval:
			c.errorf(e.Loc, "signal can not be used with \"%s\" probes", k.String())
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
			c.errorf(e.Loc, "%s can not be used with \"%s\" probes", e.Name, k.String())
		}
	}
}
