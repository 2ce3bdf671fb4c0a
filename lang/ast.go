// Package lang is gotrace's front end for the bpftrace language: it parses a
// script into a plain AST (this file), checks it and records the type of
// every expression in an Info beside the AST (check.go, info.go), and
// reports problems as positioned diagnostics in bpftrace's format
// (diag.go).
//
// The parser (parser.go) builds these nodes directly, each with its source
// span and the spans of its operators and parentheses, so that diagnostics
// never rescan the source.
package lang

import (
	"sort"

	"github.com/gotrace/gotrace/lang/attachpoint"
)

// Pos is a position in a script: 1-based line and 1-based byte column.
// Every node holds a few, so they are 32-bit: a script of 2 GiB is not
// parsed anyway.
type Pos struct {
	Line int32
	Col  int32
}

// Span is the source range of a node. End is the position just after the
// node's last character, so End.Col-1 is the column of its last character.
type Span struct {
	Start Pos
	End   Pos
}

// Node is implemented by every AST node.
type Node interface {
	Span() Span
}

// Program is a whole script.
type Program struct {
	// File is the name diagnostics use: the script's path, or "stdin" for -e.
	File string
	// Source is the script text, for diagnostics that quote a line.
	Source  string
	Structs []*StructDef
	Probes  []*Probe
	// Config is the script's config block, in order (config.go).
	Config []*ConfigSetting
	// MapDecls are the script's map declarations (letdecl.go).
	MapDecls []*MapDecl
	// Newer says that the script asks for current bpftrace's behaviour
	// where it differs from 0.17's, by naming a begin or end probe in
	// lower case (bpftrace 0.24's names; 0.17 knows only BEGIN and END).
	Newer bool

	// runs are the runs of characters without blanks that hold several
	// tokens, in source order; runStart looks them up.
	runs []tokenRun
	// numExprs is how many expression numbers have been given
	// (numberExprs).
	numExprs int
	// macros and enumValues are the script's macro definitions (by
	// macroKey) and enumerators as parsed, for the passes that replace
	// their uses (expandMacros, replaceEnumValues).
	macros     map[string]*macroDef
	enumValues map[string]enumerator
}

// runStart returns where bpftrace's diagnostics begin for a node starting
// at at: the start of the run of characters without blanks its first token
// belongs to ("$x" in "str($x" begins with "str").
func (p *Program) runStart(at Pos) Pos {
	// i is the first run starting after at.
	i := sort.Search(len(p.runs), func(i int) bool { return at.before(p.runs[i].start) })
	if i == 0 || p.runs[i-1].last.before(at) {
		return at
	}
	return p.runs[i-1].start
}

// before reports whether p comes before q.
func (p Pos) before(q Pos) bool {
	return p.Line < q.Line || p.Line == q.Line && p.Col < q.Col
}

// SymbolRef names a data symbol of an ELF file.
type SymbolRef struct {
	Path, Name string
}

// DataSymbol is a data symbol of a file, or the error of looking it up.
type DataSymbol struct {
	Addr, Size uint64
	Err        error
}

// MapInfo is what the checker learned about one map.
type MapInfo struct {
	Name string
	// Key is the key type; Kind is KindNone for a map without keys (@x).
	// A map indexed by several keys (@x[a, b]) has a tuple key.
	Key Type
	// Value is the value type: an integer, a string, a tuple or one of the
	// aggregation kinds (KindCount, KindHist, ...).
	Value Type
	// Lhist holds lhist(v, min, max, step)'s constant arguments when Value
	// is KindLhist.
	Lhist LhistParams
	// HistBits is hist(v, bits)'s bits when Value is KindHist: each power
	// of two has 2^HistBits buckets.
	HistBits int
	// Tseries holds tseries(v, interval, n[, agg])'s constant arguments
	// when Value is KindTseries.
	Tseries TseriesParams
	// Pos is where the map first appears.
	Pos Span
}

// LhistParams are the constant bounds of a linear histogram.
type LhistParams struct {
	Min, Max, Step int64
}

// TseriesParams are a time series' constant arguments and the sign of
// its values.
type TseriesParams struct {
	// Interval is an interval's length in nanoseconds; Intervals is how
	// many the series keeps.
	Interval, Intervals int64
	// Agg is how the values of one interval combine: "" keeps the last,
	// or one of TseriesAggs.
	Agg string
	// Signed says whether the values are signed.
	Signed bool
}

// TseriesAggs are the names of tseries()'s aggregations, as bpftrace
// lists them in its message for another name.
var TseriesAggs = []string{"avg", "max", "min", "sum"}

// StructDef is a C struct definition in the script, such as
// `struct CBlockIndex { const uint8_t *phashBlock; int nHeight; }`.
type StructDef struct {
	Loc    Span
	Name   string
	Fields []StructField
	// Size is the struct's size in bytes, computed with C's x86-64 layout.
	Size int
	// Kernel says the struct is one of the kernel's, from its BTF: its
	// members are read as kernel memory is (codegen's readHelper).
	Kernel bool
}

// StructField is one member of a StructDef.
type StructField struct {
	Name   string
	Type   Type
	Offset int
	// Bits is a bitfield's width, 0 for other members; a bitfield's value
	// is Bits bits from bit BitShift of the bytes at Offset.
	Bits, BitShift int
}

// ProbeKind says what an attach point attaches to; package attachpoint
// owns the kinds and their names.
type ProbeKind = attachpoint.Kind

// The probe kinds gotrace parses, by their names in lang (see
// attachpoint.Kind).
const (
	ProbeUnknown    = attachpoint.Unknown
	ProbeBegin      = attachpoint.Begin
	ProbeEnd        = attachpoint.End
	ProbeUSDT       = attachpoint.USDT
	ProbeUprobe     = attachpoint.Uprobe
	ProbeUretprobe  = attachpoint.Uretprobe
	ProbeInterval   = attachpoint.Interval
	ProbeProfile    = attachpoint.Profile
	ProbeTracepoint = attachpoint.Tracepoint
	ProbeKprobe     = attachpoint.Kprobe
	ProbeKretprobe  = attachpoint.Kretprobe
	ProbeSoftware   = attachpoint.Software
	ProbeHardware   = attachpoint.Hardware
	ProbeWatchpoint = attachpoint.Watchpoint
	ProbeKfunc      = attachpoint.Kfunc
	ProbeKretfunc   = attachpoint.Kretfunc
)

// Probe is one probe block: attach points, an optional predicate and a body.
type Probe struct {
	Loc    Span
	Attach []*AttachPoint
	// Pred is the predicate between slashes, or nil.
	Pred Expr
	// PredEnd is the end of the predicate's closing slash.
	PredEnd Pos
	Body    *Block
}

// AttachPoint is one attach point, split into its fields as
// attachpoint.Point describes them.
//
// The parser's attach points stay as written: a positional parameter
// (usdt:$1:net:inbound_message) is kept, here Target="$1". Resolve
// records resolved copies in the Info (Info.AttachPoints), the only ones
// with Tracepoints.
type AttachPoint struct {
	// Loc ends with the attach point and starts, as bpftrace's location
	// does, where the token before it ends (1:1 for the first one), so it
	// may take in blanks, comments and earlier lines.
	Loc Span
	// Raw is the attach point as written.
	Raw string
	// Point holds the fields: Kind, Target, Provider, Func, Unit, Freq,
	// FreqParam and Address.
	attachpoint.Point
	// Tracepoints are the tracepoints a tracepoint attach point matches
	// (Target is the category, Func the name), with their typed fields,
	// or the kernel functions a kfunc attach point matches, as Resolve
	// found them through the Host: set on resolved attach points only.
	Tracepoints []*Tracepoint
	// PerfEvent is the event a software or hardware attach point counts
	// (its kernel config and default count), and WatchAccess the
	// kernel's HW_BREAKPOINT_* bits of a watchpoint's mode: set on
	// resolved attach points only, by Resolve, so that what attaches
	// reads them instead of parsing the attach point again.
	PerfEvent   attachpoint.PerfEvent
	WatchAccess uint32
	// Function is the function field of a uprobe or uretprobe attach
	// point split into function, offset or address
	// (attachpoint.ParseFunc): set on resolved attach points only, by
	// Resolve after the parameters are substituted (uprobe:BIN:$1 with
	// $1 an address is one only then), so that the plan parses no
	// field again.
	Function attachpoint.Func
}

// Stmt is a statement.
type Stmt interface {
	Node
	stmtNode()
}

// Block is a braced list of statements.
type Block struct {
	Loc   Span
	Stmts []Stmt
	// Bare says that no ";" follows the last statement: in a macro's
	// body, an expression statement there is the macro's value.
	Bare bool
}

// ExprStmt is an expression used as a statement, usually a call.
type ExprStmt struct {
	Loc Span
	X   Expr
}

// AssignStmt is `LHS Op RHS` where Op is "=" or a compound operator such as
// "+=" or "<<=". LHS is a *Var or a *MapExpr.
type AssignStmt struct {
	Loc   Span
	Op    string
	OpLoc Span
	LHS   Expr
	RHS   Expr
}

// IfStmt is `if (Cond) Then [else Else]`; Else is nil, a *Block or an *IfStmt.
type IfStmt struct {
	Loc  Span
	Cond Expr
	Then *Block
	Else Stmt
}

// Chain returns s and the else-if statements that follow it, in source
// order: the passes walk an else-if chain in a loop, however long it is.
func (s *IfStmt) Chain() []*IfStmt {
	chain := []*IfStmt{s}
	for next, ok := s.Else.(*IfStmt); ok; next, ok = next.Else.(*IfStmt) {
		chain = append(chain, next)
	}
	return chain
}

// UnrollStmt is `unroll (Count) Body`. The checker records the constant
// repeat count in the Info (Info.UnrollCount).
type UnrollStmt struct {
	Loc Span
	// Head is `unroll (Count)`, without the body.
	Head  Span
	Count Expr
	Body  *Block
}

// WhileStmt is `while (Cond) Body`.
type WhileStmt struct {
	Loc  Span
	Cond Expr
	Body *Block
}

// ForStmt is `for ($i : Start..End) Body` (bpftrace 0.24): Var takes each
// integer from Start up to End, End excluded; both are evaluated once.
// With Map set it is `for ($kv : @m) Body` (bpftrace 0.20), Start and End
// nil: Var takes each element of the map as a tuple (key, value).
type ForStmt struct {
	Loc        Span
	Var        *Var
	Start, End Expr
	Map        *MapExpr
	Body       *Block
}

// JumpStmt is `break`, `continue` or `return`.
type JumpStmt struct {
	Loc  Span
	Kind string
	// Value is the value of `return VALUE` (bpftrace 0.24), or nil. A
	// probe's return value means nothing to gotrace: it is evaluated for
	// its side effects and dropped, as bpftrace does.
	Value Expr
}

// LetStmt is `let $x;` (bpftrace 0.22): it declares Var, whose type the
// assignments that follow give it; before the first it reads as zero.
type LetStmt struct {
	Loc Span
	Var *Var
}

func (s *Block) Span() Span      { return s.Loc }
func (s *ExprStmt) Span() Span   { return s.Loc }
func (s *AssignStmt) Span() Span { return s.Loc }
func (s *IfStmt) Span() Span     { return s.Loc }
func (s *UnrollStmt) Span() Span { return s.Loc }
func (s *WhileStmt) Span() Span  { return s.Loc }
func (s *JumpStmt) Span() Span   { return s.Loc }
func (s *ForStmt) Span() Span    { return s.Loc }
func (s *LetStmt) Span() Span    { return s.Loc }

func (*Block) stmtNode()      {}
func (*ExprStmt) stmtNode()   {}
func (*AssignStmt) stmtNode() {}
func (*IfStmt) stmtNode()     {}
func (*UnrollStmt) stmtNode() {}
func (*WhileStmt) stmtNode()  {}
func (*JumpStmt) stmtNode()   {}
func (*ForStmt) stmtNode()    {}
func (*LetStmt) stmtNode()    {}

// Expr is an expression. The checker records the type of every expression
// in an Info; Info.TypeOf reads it.
type Expr interface {
	Node
	exprBase() *ExprBase
}

// ExprBase holds what every expression has: its span and, for the few
// that have them, its parentheses. Its type and constant value are in
// the Info of the program (info.go).
type ExprBase struct {
	// Loc is the expression without the parentheses around it, which
	// bpftrace's diagnostics leave out too.
	Loc Span
	// num is the expression's number, 1 up, unique in its program, for
	// the Info's tables (exprnum.go); 0 for an expression built outside
	// the parser and the desugaring passes.
	num int32
	// more is what only some expressions have, nil for the others, so
	// that an operator or a literal costs 32 bytes here.
	more *exprMore
}

// exprMore is what only some expressions have. Copies of an expression
// (macro expansion) share it, so it is replaced, never changed.
type exprMore struct {
	// parens is the expression with its outermost parentheses, if
	// hasParens.
	parens    Span
	hasParens bool
}

// Span returns the expression's source span.
func (e *ExprBase) Span() Span          { return e.Loc }
func (e *ExprBase) exprBase() *ExprBase { return e }

// ParenLoc returns the expression with its outermost parentheses, and
// whether it is parenthesized.
func (e *ExprBase) ParenLoc() (Span, bool) {
	if e.more == nil {
		return Span{}, false
	}
	return e.more.parens, e.more.hasParens
}

// setMore replaces e's exprMore by a copy changed by change.
func (e *ExprBase) setMore(change func(*exprMore)) {
	var m exprMore
	if e.more != nil {
		m = *e.more
	}
	change(&m)
	e.more = &m
}

// setParenLoc records the outermost parentheses around e.
func (e *ExprBase) setParenLoc(s Span) {
	e.setMore(func(m *exprMore) { m.parens, m.hasParens = s, true })
}

// IntLit is an integer literal (decimal, hex, octal, with _ separators, or
// the 1e6 form).
type IntLit struct {
	ExprBase
	Value uint64
	// Bool says the literal is true (Value 1) or false (0), of the bool
	// type (bpftrace 0.24).
	Bool bool
	// Enum is the enum of an enumerator the literal replaced.
	Enum *Enum
}

// StrLit is a string literal with C escapes already decoded.
type StrLit struct {
	ExprBase
	Value string
}

// Var is a scratch variable; Name includes the '$' ("$x").
type Var struct {
	ExprBase
	Name string
}

// MapExpr is a map access: `@x`, `@`, `@x[k]` or `@x[k1, k2]`. Name includes
// the '@'. Keys is nil for a map without keys.
type MapExpr struct {
	ExprBase
	Name string
	Keys []Expr
}

// Builtin is a builtin variable such as nsecs, pid, comm, probe, retval or
// argN. Name is as written ("arg3").
type Builtin struct {
	ExprBase
	Name string
	// ID is the builtin variable Name denotes (LookupVar), set with Name
	// by whoever builds the node: the parser, a desugaring pass.
	ID BuiltinID
}

// PositionalParam is `$N` (N >= 1) or, with Count set, `$#`.
type PositionalParam struct {
	ExprBase
	N     int
	Count bool
}

// Call is a function call such as printf(...), str(arg0) or count().
type Call struct {
	ExprBase
	Name string
	// NameLoc is the span of the function name alone: bpftrace underlines
	// only the name for "Unknown function".
	NameLoc Span
	Args    []Expr
	// ID is the function Name denotes (LookupFunc), set with Name by
	// whoever builds the node: the parser, a desugaring pass. The format of
	// printf, system and cat, which the checker parses to check the
	// arguments, is in the Info (Info.Format).
	ID BuiltinID
}

// Binary is `X Op Y` for the arithmetic, bitwise, comparison and logical
// operators.
type Binary struct {
	ExprBase
	Op    string
	OpLoc Span
	X     Expr
	Y     Expr
}

// LeftSpine returns e and the binary operators nested as the left operand
// of each, outermost first: the chain the passes walk in a loop where
// recursion would nest once per operator of `1+1+...+1`.
func (e *Binary) LeftSpine() []*Binary {
	// Counted first, so that a chain of 200,000 operators is one
	// allocation of its size rather than a slice grown many times.
	n := 1
	for x, ok := e.X.(*Binary); ok; x, ok = x.X.(*Binary) {
		n++
	}
	spine := make([]*Binary, 0, n)
	spine = append(spine, e)
	for x, ok := e.X.(*Binary); ok; x, ok = x.X.(*Binary) {
		spine = append(spine, x)
	}
	return spine
}

// Unary is a prefix operator: "!", "~", "-", "*" (dereference) or "&"
// (bpftrace 0.22: the address of a variable or map, X).
type Unary struct {
	ExprBase
	Op    string
	OpLoc Span
	X     Expr
}

// IncDec is `++X`, `--X`, `X++` or `X--`.
type IncDec struct {
	ExprBase
	Op    string
	OpLoc Span
	Post  bool
	X     Expr
}

// Ternary is `Cond ? Then : Else`.
type Ternary struct {
	ExprBase
	Cond        Expr
	QuestionLoc Span
	Then        Expr
	ColonLoc    Span
	Else        Expr
	// NoMiddle says the ternary was written `Cond ?: Else` (bpftrace
	// 0.26): Then is a copy of Cond, for the passes that type it, and the
	// code generator takes Cond's value rather than evaluating it again.
	NoMiddle bool
}

// Cast is `(TypeName)X`, such as `(uint32)arg0`, `(uint8 *)$p` or
// `(struct CBlockIndex *)arg3`. To is the written type, as the parser
// read it; the type the cast gives, struct sizes filled in (and for a
// declaration's typeof, TypeOf's type), is the cast's type in the Info.
type Cast struct {
	ExprBase
	TypeName string
	// TypeLoc is the parenthesized type.
	TypeLoc Span
	To      Type
	X       Expr
	// Decl says the cast converts the value of a typed declaration,
	// `$x: TYPE = X`, whose type is written before the "=".
	Decl bool
	// TypeOf is EXPR of a declaration's `typeof(EXPR)`: the cast is to
	// its type, which the checker finds; it is not evaluated.
	TypeOf Expr
}

// Tuple is `(a, b, ...)` with at least two elements, or a record
// (bpftrace 0.25), `(a = 1, b = "x")`, whose elements have Names.
type Tuple struct {
	ExprBase
	Elems []Expr
	// Names are a record's field names, one per element; nil for a tuple.
	Names []string
}

// FieldAccess is `X.N` on a tuple (Index set, Field empty), or `X.f` /
// `X->f` on a struct or a record (Field set; Arrow for ->). Index stays
// as written: the element a record's field name selects is the
// checker's (Info.FieldIndex).
type FieldAccess struct {
	ExprBase
	X     Expr
	Index int
	Field string
	Arrow bool
}

// BlockExpr is `{ Stmts; Value }`: the statements run, then Value is
// the expression's value (a void call or nil for none). A macro call
// becomes one (macrodef.go).
type BlockExpr struct {
	ExprBase
	Stmts []Stmt
	Value Expr
}

// ValueCall returns the call that gives e its value: e itself, or the
// value of a block expression (`@m = { let $a = 1; avg($a) }`, bpftrace
// 0.24), innermost first; nil for other expressions.
func ValueCall(e Expr) *Call {
	for {
		switch x := e.(type) {
		case *Call:
			return x
		case *BlockExpr:
			e = x.Value
		default:
			return nil
		}
	}
}

// IndexExpr is `X[I]` on a pointer or array (maps use MapExpr).
type IndexExpr struct {
	ExprBase
	X Expr
	// Index is the index; when X is a tuple or an array value
	// (KindIntArray) it is a constant, and the element it selects is in
	// the Info (Info.ElemIndex).
	Index Expr
}
