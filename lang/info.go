package lang

import (
	"go/constant"

	"github.com/gotrace/gotrace/internal/printf"
)

// Info is what the resolve and check passes learned about a program, kept
// beside its AST rather than on it, as go/types keeps its results in
// types.Info: the AST stays what the parser and the desugaring passes
// made, and a node that no pass checked has no entry, which
// TestEveryExprTyped catches. Analyze fills one in; codegen reads it.
//
// The tables are keyed by the nodes themselves: a pass that copies a node
// (runtime's attach-point matching copies probes, never expressions)
// keeps its entries only while the expressions are shared.
type Info struct {
	// types is the checked type of each expression, by its number
	// (exprnum.go): an index rather than a hash, which a program of
	// 400,000 expressions notices (BenchmarkCheckLarge). Expressions of
	// the common scalar types share one copy of their type (internType),
	// so that an entry costs a pointer rather than a whole Type.
	types exprTable[*Type]
	// values is the value of each constant expression other than an
	// integer literal, whose value is its own (see constOf).
	values exprTable[constant.Value]
	// unrolls is the repeat count of each unroll statement the checker
	// accepted.
	unrolls map[*UnrollStmt]int
	// formats is the parsed format of each printf, system and cat call
	// whose format is a literal the checker could parse.
	formats map[*Call][]printf.Part
	// elems is the element a constant index selects in a tuple or an
	// array value (`$t[1]`, an *IndexExpr), folded by the checker, and
	// the element a record's field name selects (`$r.name`, a
	// *FieldAccess).
	elems map[Expr]int
	// elements is the map element each delete() and has_key() call the
	// checker accepted names (MapElement).
	elements map[*Call]*MapExpr

	// attach is the attach points of each probe as Resolve resolved them,
	// in the order written: copies of the parsed ones, which stay as
	// written (AttachPoints).
	attach map[*Probe][]*AttachPoint
	// exitsAfterBegin is whether the trace ends by itself once its begin
	// probes have run, as Resolve found from its resolved attach points
	// (ExitsAfterBegin).
	exitsAfterBegin bool

	// Maps is every map the program uses, by name ("@x", or "@" for the
	// anonymous map).
	Maps map[string]*MapInfo
	// NumParams is the highest positional parameter ($N) the script reads.
	NumParams int
	// Symbols are the data symbols uaddr() names, in the target of each
	// attach point of its probe, as the Host found them, so that the code
	// generator reads no file.
	Symbols map[SymbolRef]DataSymbol
	// KernelStructs are the kernel's structs and unions the script uses,
	// from the kernel's BTF.
	KernelStructs []*StructDef
	// TargetStructs are the structs and unions of uprobe targets' debug
	// information that a uprobe's args names (DebugInfoHost), after the
	// script's and before the kernel's.
	TargetStructs []*StructDef
	// Warnings are what the script asks for that gotrace cuts, such as a
	// buf() longer than BPFTRACE_STRLEN, for the caller to print as
	// bpftrace prints its warnings.
	Warnings ErrorList
}

// NewInfo returns an empty Info, for Analyze to fill in.
func NewInfo() *Info {
	return &Info{
		unrolls:  map[*UnrollStmt]int{},
		formats:  map[*Call][]printf.Part{},
		elems:    map[Expr]int{},
		elements: map[*Call]*MapExpr{},
		attach:   map[*Probe][]*AttachPoint{},
		Maps:     map[string]*MapInfo{},
		Symbols:  map[SymbolRef]DataSymbol{},
	}
}

// TypeOf returns the type the checker gave e, or the zero Type (KindNone)
// when it gave e none.
func (in *Info) TypeOf(e Expr) Type {
	t, _ := in.LookupType(e)
	return t
}

// LookupType returns the type the checker gave e and whether it gave it
// one, KindNone included (a stack mode inside ustack() has none, and
// says so).
func (in *Info) LookupType(e Expr) (Type, bool) {
	if t := in.types.get(e.exprBase()); t != nil {
		return *t, true
	}
	return Type{}, false
}

// Typed reports whether the checker recorded a type for e (LookupType).
func (in *Info) Typed(e Expr) bool {
	return in.types.get(e.exprBase()) != nil
}

// SetType records e's type: the checker's, and a test's that builds a
// typed AST by hand. Code generation never calls it: it asks for the
// typed nodes it needs (MemberOf), which codegen's TestNoUntypedNodes
// enforces.
func (in *Info) SetType(e Expr, t Type) { in.types.set(e.exprBase(), internType(t)) }

// setConst records e's value as a constant, or that it has none (nil).
// An integer literal's value is its own (constOf).
func (in *Info) setConst(e Expr, v constant.Value) {
	if _, ok := e.(*IntLit); ok {
		return
	}
	in.values.set(e.exprBase(), v)
}

// constOf returns the value of e when it is a constant: an integer
// literal's own, or what the checker recorded; nil for the others.
func (in *Info) constOf(e Expr) constant.Value {
	if lit, ok := e.(*IntLit); ok {
		return constant.MakeInt64(int64(lit.Value))
	}
	return in.values.get(e.exprBase())
}

// ConstInt returns the value the checker recorded for e when e is an
// integer constant.
func (in *Info) ConstInt(e Expr) (int64, bool) {
	if lit, ok := e.(*IntLit); ok {
		return int64(lit.Value), true
	}
	v := in.constOf(e)
	if v == nil || v.Kind() != constant.Int {
		return 0, false
	}
	return constant.Int64Val(v)
}

// ConstString returns the value the checker recorded for e when e is a
// string constant: a positional parameter read as text by str().
func (in *Info) ConstString(e Expr) (string, bool) {
	v := in.constOf(e)
	if v == nil || v.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(v), true
}

// AttachPoints returns the attach points of pr as Resolve resolved them
// (parameters substituted, bare targets found, the tracepoints and
// kernel functions they match, as far as Resolve got), in the order
// written; pr's own when Resolve recorded none: before it runs, or for a
// probe a later stage made, whose attach points are resolved already.
func (in *Info) AttachPoints(pr *Probe) []*AttachPoint {
	if aps, ok := in.attach[pr]; ok {
		return aps
	}
	return pr.Attach
}

// ExitsAfterBegin reports whether the trace ends by itself once its
// begin probes have run: a script that selects current bpftrace's
// behaviour (Program.Newer) whose probes are all begin or end. Resolve
// records it, so that the runtime reads a value instead of walking the
// program again.
func (in *Info) ExitsAfterBegin() bool { return in.exitsAfterBegin }

// ResolvedProgram returns p as the stages after the front end see it:
// a Program whose probes attach to the attach points Resolve resolved
// (AttachPoints). The probes are copies sharing their predicates and
// bodies with p, so that what Info records about expressions still
// applies, and p itself stays as parsed. Calling it on its own result
// gives the same attach points.
func (in *Info) ResolvedProgram(p *Program) *Program {
	rp := *p
	rp.Probes = make([]*Probe, len(p.Probes))
	for i, pr := range p.Probes {
		copied := *pr
		copied.Attach = in.AttachPoints(pr)
		rp.Probes[i] = &copied
	}
	return &rp
}

// UnrollCount returns how many times the checker found unroll statement
// s repeats its body: 0 when it refused the count.
func (in *Info) UnrollCount(s *UnrollStmt) int { return in.unrolls[s] }

// Format returns the parsed format of a printf, system or cat call, nil
// when its format is not a literal the checker parsed.
func (in *Info) Format(call *Call) []printf.Part { return in.formats[call] }

// SetFormat records the parsed format of call: the checker's, and a
// test's that builds a checked AST by hand.
func (in *Info) SetFormat(call *Call, parts []printf.Part) { in.formats[call] = parts }

// ElemIndex returns the element the constant index of e selects when e
// indexes a tuple or an array value, as the checker folded it.
func (in *Info) ElemIndex(e *IndexExpr) int { return in.elems[e] }

// FieldIndex returns the element of a tuple that e selects: the index
// written in `$t.N`, or for a record's `$r.name` the index of the field
// the checker found by that name.
func (in *Info) FieldIndex(e *FieldAccess) int {
	if e.Field == "" {
		return e.Index
	}
	return in.elems[e]
}

// MapElement returns the map element that call, a delete() or has_key()
// the checker accepted, names: its argument in bpftrace 0.17's form
// delete(@m[k]); for the newer delete(@m, k...) and has_key(@m, k...),
// the element @m[k...] the checker made of the map and the keys (a
// tuple's elements for a tuple of keys) and typed, which is in no AST.
// It is nil for any other call.
func (in *Info) MapElement(call *Call) *MapExpr { return in.elements[call] }

// addTargetStructs records the structs of a uprobe target's debug
// information that no struct of p's or of an earlier lookup has the name
// of.
func (in *Info) addTargetStructs(p *Program, structs []*StructDef) {
	for _, sd := range structs {
		if in.StructDef(p, sd.Name) == nil {
			in.TargetStructs = append(in.TargetStructs, sd)
		}
	}
}

// StructDef returns the struct called name: p's own, else one of a
// uprobe target's (TargetStructs), else one of the kernel's the checker
// looked up, else nil.
func (in *Info) StructDef(p *Program, name string) *StructDef {
	for _, list := range [][]*StructDef{p.Structs, in.TargetStructs, in.KernelStructs} {
		for _, sd := range list {
			if sd.Name == name {
				return sd
			}
		}
	}
	return nil
}

// MemberOf returns, typed in in, the expression x.field that reads member
// field of type t of the struct value x: what print() of a struct reads
// member by member. Code generation asks for it here rather than build
// an expression the checker never saw.
func (in *Info) MemberOf(x Expr, field string, t Type) *FieldAccess {
	member := &FieldAccess{ExprBase: ExprBase{Loc: x.Span()}, X: x, Field: field}
	in.SetType(member, t)
	return member
}
