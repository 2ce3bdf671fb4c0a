package lang

// The checker is gotrace's semantic analysis, modelled on bpftrace 0.17's
// semantic analyser: it resolves the type of every expression, checks
// every builtin and function against the probe it appears in, records
// the maps, the positional parameters read, the unroll counts, the
// parsed formats and the selected tuple elements in the Info, never on
// the AST. Its messages and their columns are bpftrace's.
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
// What each node's type (Info.TypeOf) means after Check (codegen relies
// on these):
//
//   - IntLit: int64. StrLit: string[len+1] (the literal and its NUL).
//   - Var: the variable's type, the same at every use in a probe: the type
//     of its first assignment, with strings (also inside tuples) widened to
//     the largest one assigned. Integer variables keep their first type's
//     size (`$x = (uint8)1; $x = 300` stores 44).
//   - MapExpr: the map's value type (Info.Maps[name].Value); integer
//     values are 64-bit, signed as the first value stored. An aggregation
//     map has the aggregation kind (KindCount, KindHist ...).
//   - Map keys: MapInfo.Key is the key type; integer keys are 64-bit,
//     string keys are widened like values; several keys make a tuple.
//   - Builtin: pid, tid, uid, gid, cpu, nsecs, elapsed, rand, cgroup,
//     numaid, retval and argN are uint64 (USDT argN as bpftrace 0.17 types
//     them: unsigned; codegen reads them with the note's size and sign and
//     widens); cpid uint32; comm string[16]; probe KindProbe; func KindUsym;
//     ustack KindStack. A Builtin that names a stack mode inside ustack()
//     (perf, bpftrace) or a clock inside nsecs() (tai) has KindNone; one
//     that names a type inside sizeof() (uint32) has that type.
//   - PositionalParam: $# and $N used as a number are int64 constants (a
//     missing $N is 0); $N as the first argument of str() is string[len+1]
//     of its text (a missing $N is ""), and that str() call is a constant.
//   - Constants: integer literals, positional parameters and their
//     negations carry their int64 value (Info.ConstInt, setConst), and
//     $N inside str($N) its text (Info.ConstString); codegen evaluates nothing
//     itself.
//   - Builtin and Call: ID, set by the parser, is the builtin the name
//     denotes (builtins.go).
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
//   - Cast: Cast.To, or the type of Cast.TypeOf (struct sizes filled in
//     from the script's definitions).
//   - Tuple: KindTuple with the element types. FieldAccess: the tuple
//     element or the struct field's type. IndexExpr: the element type.
//   - Call: str() string[StrLen] (str(p, n) reads at most n bytes into
//     it); buf(p, n) KindBuf with Size min(n, BufLen) data bytes, or
//     BufLen when n is not a constant; strftime() KindTimestamp; usym()
//     KindUsym; ntop() KindInet; ustack() KindStack; count() KindCount,
//     sum() KindSum ... lhist() KindLhist (only as a map's value); uptr(),
//     kptr() the pointer type given or int64; sizeof(), strncmp(),
//     kaddr(), uaddr(), reg() uint64; statements (printf, print, exit,
//     clear, zero, delete, time, join, cat, system, signal, override)
//     KindVoid.

import (
	"fmt"
	"slices"

	"github.com/gotrace/gotrace/internal/settings"
)

// Config holds the settings the checker needs from the command line and
// the environment.
type Config struct {
	// Values are the trace's settings (internal/settings): StrLen, the
	// size of str()'s buffer; BufLen, the most data buf() holds (0:
	// StrLen); MapKeysMax, which the checker only validates and codegen
	// sizes the maps with. Zero values mean the defaults.
	settings.Values
	// Params are the positional parameters $1, $2, ...
	Params []string
	// Unsafe allows system(), signal() and override() (--unsafe).
	Unsafe bool
	// Child says a -c command is traced: cpid is only valid then.
	Child bool
	// Host finds bare targets (Resolve) and uaddr()'s symbols (Check);
	// with none, a bare target stays as written and uaddr() resolves
	// nothing.
	Host Host
	// Kernel gives the kernel's types (struct task_struct, curtask);
	// with none, the script knows only its own structs.
	Kernel Kernel
}

// maxPasses bounds the silent passes. Each one can only settle more
// types, and a chain of maps each read before it is assigned needs one
// pass per link.
const maxPasses = 16

// Check checks p and records in info the type of every expression (see
// the comment at the top of check.go for what each node's type means),
// the constants' values, the maps, the positional parameters read, the
// symbols and kernel structs used and the warnings. It returns an ErrorList with the
// problems bpftrace 0.17 reports, in source order, or nil; a bad Config is
// a plain error.
func Check(p *Program, cfg Config, info *Info) error {
	if cfg.StrLen == 0 {
		cfg.StrLen = settings.DefaultStrLen
	}
	if cfg.MapKeysMax == 0 {
		cfg.MapKeysMax = settings.DefaultMapKeysMax
	}
	if cfg.BufLen == 0 {
		cfg.BufLen = cfg.StrLen
	}
	if cfg.StrLen < 0 || cfg.StrLen > settings.MaxStrLen {
		return fmt.Errorf("check program: string length %d is outside 1..%d", cfg.StrLen, settings.MaxStrLen)
	}
	if cfg.BufLen < 0 || cfg.BufLen > settings.MaxStrLen {
		return fmt.Errorf("check program: buf length %d is outside 1..%d", cfg.BufLen, settings.MaxStrLen)
	}
	if cfg.MapKeysMax < 0 {
		return fmt.Errorf("check program: map size %d is negative", cfg.MapKeysMax)
	}
	// Every numbered expression gets a type: its table is sized once.
	info.types.grow(p.numExprs + 1)
	c := &checker{
		prog:         p,
		info:         info,
		cfg:          cfg,
		maps:         map[string]*mapState{},
		vars:         map[*Probe]map[string]Type{},
		structs:      map[string]*StructDef{},
		late:         map[*Error]bool{},
		elementCalls: map[*Call][]Expr{},
	}
	for _, s := range info.TargetStructs {
		c.structs[s.Name] = s
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
	for _, d := range p.MapDecls {
		if _, used := c.maps[d.Name]; !used {
			// Current bpftrace's warning; a declared map no probe uses
			// is most likely misspelled where it is used.
			c.warnf(d.Loc, "Unused map: %s", d.Name)
		}
	}

	clear(info.Maps)
	for name, m := range c.maps {
		info.Maps[name] = m.info
	}
	info.NumParams = c.numParams
	if len(c.errs) == 0 {
		return nil
	}
	if len(c.late) < len(c.errs) {
		c.errs = slices.DeleteFunc(c.errs, func(e *Error) bool { return c.late[e] })
	}
	c.errs.Sort()
	return c.errs
}

// checker is the state of one Check.
type checker struct {
	prog *Program
	// info is where the checker records what it learns (info.go).
	info *Info
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

	// The probe being checked, its attach points as resolved, the
	// variables assigned so far in it, and how many loops enclose the
	// current statement.
	probe     *Probe
	attach    []*AttachPoint
	defined   map[string]bool
	loops     int
	numParams int
	// ntopArg is the argument of the ntop() being checked, where pton()
	// may appear.
	ntopArg Expr
	// elementCalls holds the arguments each delete() and has_key() call
	// of two arguments or more is checked with (elementArgs), decided on
	// the first pass.
	elementCalls map[*Call][]Expr
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
	s.Start = c.prog.runStart(s.Start)
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

// warnf records a warning in the final pass, once per position and
// message.
func (c *checker) warnf(s Span, format string, args ...any) {
	if !c.final {
		return
	}
	w := &Error{Span: Span{Start: c.prog.runStart(s.Start), End: s.End}, Msg: fmt.Sprintf(format, args...)}
	for _, e := range c.info.Warnings {
		if *e == *w {
			return
		}
	}
	c.info.Warnings = append(c.info.Warnings, w)
}

func (c *checker) run() {
	c.numParams = 0
	for _, pr := range c.prog.Probes {
		c.probe, c.attach = pr, c.info.AttachPoints(pr)
		c.defined = map[string]bool{}
		c.loops = 0
		if c.vars[pr] == nil {
			c.vars[pr] = map[string]Type{}
		}
		if pr.Pred != nil {
			t := c.expr(pr.Pred, useValue)
			if !isIntLike(t) && t.Kind != KindNone {
				span := Span{Start: pr.Pred.Span().Start, End: pr.PredEnd}
				c.laterf(span, "Invalid type for predicate: %s", formatTypeName(t))
			}
		}
		if pr.Body != nil {
			c.block(pr.Body)
		}
	}
}

// probeKinds lists the distinct kinds of the current probe's attach
// points, in order.
func (c *checker) probeKinds() []ProbeKind {
	var kinds []ProbeKind
	for _, a := range c.attach {
		if !slices.Contains(kinds, a.Kind) {
			kinds = append(kinds, a.Kind)
		}
	}
	return kinds
}
