package codegen

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/lang"
)

// intExpr lowers an integer, pointer or struct-address expression into R0,
// as a 64-bit value sign- or zero-extended from its type. It clobbers
// R0-R5 and R7.
func (f *fn) intExpr(e lang.Expr) error {
	f.mark(e)
	switch e := e.(type) {
	case *lang.IntLit, *lang.PositionalParam:
		v, ok := lang.ConstInt(e)
		assert(ok, e, "an integer literal or parameter without a value")
		f.emit(movImm(asm.R0, v))
		return nil
	case *lang.Var:
		v, ok := f.vars[e.Name]
		if !ok || !isScalar(v.typ) {
			return f.c.errorf(e, "variable %s is not an integer", e.Name)
		}
		f.emit(asm.LoadMem(asm.R0, f.fp, v.slot, asm.DWord))
		return nil
	case *lang.MapExpr:
		return f.mapReadInt(e)
	case *lang.Builtin:
		return f.builtin(e)
	case *lang.Binary:
		return f.binary(e)
	case *lang.Unary:
		return f.unary(e)
	case *lang.IncDec:
		return f.incDec(e)
	case *lang.Ternary:
		return f.ternaryInt(e)
	case *lang.Cast:
		return f.cast(e)
	case *lang.FieldAccess:
		return f.fieldInt(e)
	case *lang.IndexExpr:
		return f.index(e)
	case *lang.Call:
		return f.intCall(e)
	case *lang.BlockExpr:
		if err := f.stmts(e.Stmts); err != nil {
			return err
		}
		return f.intExpr(e.Value)
	}
	return f.c.errorf(e, "%s is not an integer", lang.TypeOf(e))
}

// binary lowers a binary operator. A left-nested chain of integer
// operators (1+1+...+1, a && b && c) is lowered in a loop rather than by
// recursion: down the chain to its innermost left operand, then each
// operator's right side, innermost first, so that its length is bounded by
// the script's size and not by the stack.
func (f *fn) binary(e *lang.Binary) error {
	xt, yt := lang.TypeOf(e.X), lang.TypeOf(e.Y)
	switch {
	case xt.Kind == lang.KindString || yt.Kind == lang.KindString:
		return f.strCompare(e)
	case xt.Kind == lang.KindBuf && yt.Kind == lang.KindBuf:
		return f.bufCompare(e)
	}
	chain := e.LeftSpine()
	// labels are those of the chain's && and || operators, by index: a
	// chain of 200,000 additions needs none.
	labels := map[int]logicalLabels{}
	for i, b := range chain {
		xt, yt := lang.TypeOf(b.X), lang.TypeOf(b.Y)
		if xt.Kind == lang.KindString || yt.Kind == lang.KindString || xt.Kind == lang.KindBuf && yt.Kind == lang.KindBuf {
			// Lowered by intExpr, as the chain's innermost operand.
			chain = chain[:i]
			break
		}
		if b != e {
			f.mark(b)
		}
		if b.Op == "&&" || b.Op == "||" {
			labels[i] = logicalLabels{short: f.label("short"), end: f.label("logend")}
		}
	}
	if err := f.intExpr(chain[len(chain)-1].X); err != nil {
		return err
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var err error
		if b := chain[i]; b.Op == "&&" || b.Op == "||" {
			err = f.logical(b, labels[i])
		} else {
			err = f.arithmetic(b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// arithmetic lowers an arithmetic, bitwise or comparison operator whose
// left operand is in R0.
func (f *fn) arithmetic(e *lang.Binary) error {
	xt, yt := lang.TypeOf(e.X), lang.TypeOf(e.Y)
	if lit, ok := e.Y.(*lang.IntLit); ok {
		// bpftrace's compiler folds these undefined operations to 0.
		if (e.Op == "/" || e.Op == "%") && lit.Value == 0 || (e.Op == "<<" || e.Op == ">>") && lit.Value >= 64 {
			f.emit(asm.Mov.Imm(asm.R0, 0))
			return nil
		}
		// A constant right side needs no spill.
		f.emit(movImm(asm.R1, int64(lit.Value)))
		return f.applyOp(e, e.Op, xt, yt)
	}
	slot, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.emit(asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
	if err := f.intExpr(e.Y); err != nil {
		return err
	}
	f.emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R0, f.fp, slot, asm.DWord),
	)
	return f.applyOp(e, e.Op, xt, yt)
}

// applyOp computes R0 = R0 op R1 with bpftrace 0.17's semantics, which
// are the BPF instructions': 64-bit arithmetic; / % and >> unsigned;
// x/0 is 0 and x%0 is x; shift counts are taken modulo 64; comparisons
// are signed only when both sides are signed; pointer +/- integer scales
// by the pointee size.
func (f *fn) applyOp(n lang.Node, op string, xt, yt lang.Type) error {
	switch op {
	case "+", "-":
		if xt.Kind == lang.KindPointer && yt.Kind != lang.KindPointer {
			if s := f.elemSize(xt); s != 1 {
				f.emit(asm.Mul.Imm(asm.R1, int32(s)))
			}
		} else if op == "+" && yt.Kind == lang.KindPointer && xt.Kind != lang.KindPointer {
			if s := f.elemSize(yt); s != 1 {
				f.emit(asm.Mul.Imm(asm.R0, int32(s)))
			}
		}
		if op == "+" {
			f.emit(asm.Add.Reg(asm.R0, asm.R1))
		} else {
			f.emit(asm.Sub.Reg(asm.R0, asm.R1))
		}
	case "*":
		f.emit(asm.Mul.Reg(asm.R0, asm.R1))
	case "&":
		f.emit(asm.And.Reg(asm.R0, asm.R1))
	case "|":
		f.emit(asm.Or.Reg(asm.R0, asm.R1))
	case "^":
		f.emit(asm.Xor.Reg(asm.R0, asm.R1))
	case "/":
		f.emit(asm.Div.Reg(asm.R0, asm.R1))
	case "%":
		f.emit(asm.Mod.Reg(asm.R0, asm.R1))
	case "<<":
		f.emit(asm.LSh.Reg(asm.R0, asm.R1))
	case ">>":
		f.emit(asm.RSh.Reg(asm.R0, asm.R1))
	case "==", "!=", "<", "<=", ">", ">=":
		signed := xt.Kind == lang.KindInt && yt.Kind == lang.KindInt && xt.Signed && yt.Signed
		j := compareJump(op, signed)
		yes, end := f.label("true"), f.label("cmpend")
		f.emit(j.Reg(asm.R0, asm.R1, yes), asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
		f.place(yes)
		f.emit(asm.Mov.Imm(asm.R0, 1))
		f.place(end)
	default:
		return f.c.errorf(n, "operator %s: %w", op, ErrUnsupported)
	}
	return nil
}

// compareJump is the jump taken when `a op b` holds.
func compareJump(op string, signed bool) asm.JumpOp {
	switch op {
	case "==":
		return asm.JEq
	case "!=":
		return asm.JNE
	case "<":
		if signed {
			return asm.JSLT
		}
		return asm.JLT
	case "<=":
		if signed {
			return asm.JSLE
		}
		return asm.JLE
	case ">":
		if signed {
			return asm.JSGT
		}
		return asm.JGT
	}
	if signed {
		return asm.JSGE
	}
	return asm.JGE
}

// logicalLabels are the labels of one && or || operator, made before its
// left operand is lowered.
type logicalLabels struct {
	short, end string
}

// logical lowers && and || with short-circuit evaluation, its left
// operand in R0; the result is 0 or 1.
func (f *fn) logical(e *lang.Binary, l logicalLabels) error {
	// &&: a false side decides (result 0); ||: a true side (result 1).
	jump, shortVal, fullVal := asm.JEq, int32(0), int32(1)
	if e.Op == "||" {
		jump, shortVal, fullVal = asm.JNE, 1, 0
	}
	f.emit(jump.Imm(asm.R0, 0, l.short))
	if err := f.intExpr(e.Y); err != nil {
		return err
	}
	f.emit(jump.Imm(asm.R0, 0, l.short), asm.Mov.Imm(asm.R0, fullVal), asm.Ja.Label(l.end))
	f.place(l.short)
	f.emit(asm.Mov.Imm(asm.R0, shortVal))
	f.place(l.end)
	return nil
}

// strCompare lowers == and != on strings: equal when the bytes up to the
// first NUL (or the end of the buffer) are equal.
func (f *fn) strCompare(e *lang.Binary) error {
	if e.Op != "==" && e.Op != "!=" {
		return f.c.errorf(e, "operator %s on strings: %w", e.Op, ErrUnsupported)
	}
	if e.Op == "!=" {
		return f.strEqual(e, e.X, e.Y, -1, 0, 1)
	}
	return f.strEqual(e, e.X, e.Y, -1, 1, 0)
}

// bufCompare lowers == and != on buffers: equal when their lengths and
// their bytes are, as bpftrace 0.17 compares them. The bytes past a
// buffer's length are zero, so comparing the capacity both have is
// comparing the bytes of the length.
func (f *fn) bufCompare(e *lang.Binary) error {
	if e.Op != "==" && e.Op != "!=" {
		return f.c.errorf(e, "operator %s on buffers: %w", e.Op, ErrUnsupported)
	}
	xt, yt := lang.TypeOf(e.X), lang.TypeOf(e.Y)
	if err := f.unrolled(e, "comparing buffers", min(sizeOf(xt), sizeOf(yt))); err != nil {
		return err
	}
	xo, yo := f.alloc(sizeOf(xt)), f.alloc(sizeOf(yt))
	if err := f.valueInto(e.X, xo); err != nil {
		return err
	}
	if err := f.valueInto(e.Y, yo); err != nil {
		return err
	}
	ne, end := f.label("bufne"), f.label("bufend")
	for i := 0; i < min(sizeOf(xt), sizeOf(yt)); i += 8 {
		f.emit(
			memAt(asm.LoadMem(asm.R1, regScratch, 0, asm.DWord), xo+i),
			memAt(asm.LoadMem(asm.R2, regScratch, 0, asm.DWord), yo+i),
			asm.JNE.Reg(asm.R1, asm.R2, ne),
		)
	}
	eqVal, neVal := int32(1), int32(0)
	if e.Op == "!=" {
		eqVal, neVal = 0, 1
	}
	f.emit(asm.Mov.Imm(asm.R0, eqVal), asm.Ja.Label(end))
	f.place(ne)
	f.emit(asm.Mov.Imm(asm.R0, neVal))
	f.place(end)
	return nil
}

// strlen lowers strlen(s): R0 counts the string's bytes up to its first
// NUL or the end of its buffer.
func (f *fn) strlen(e *lang.Call) error {
	t := lang.TypeOf(e.Args[0])
	if err := f.unrolled(e, "strlen()", t.Size); err != nil {
		return err
	}
	off := f.alloc(sizeOf(t))
	if err := f.valueInto(e.Args[0], off); err != nil {
		return err
	}
	end := f.label("strlen")
	f.emit(asm.Mov.Imm(asm.R0, 0))
	for i := 0; i < t.Size; i++ {
		f.emit(
			memAt(asm.LoadMem(asm.R1, regScratch, 0, asm.Byte), off+i),
			asm.JEq.Imm(asm.R1, 0, end),
			asm.Add.Imm(asm.R0, 1),
		)
	}
	f.place(end)
	return nil
}

// maxUnrolled bounds the bytes of a string that strlen(), strcontains()
// and comparisons go through: their code has a step per byte, and the
// verifier follows jumps of at most 32,767 instructions and a million
// steps in all.
const maxUnrolled = 4096

// unrolled refuses what would go through size bytes one instruction
// step at a time when size is more than maxUnrolled.
func (f *fn) unrolled(n lang.Node, what string, size int) error {
	if size > maxUnrolled {
		return f.c.errorf(n, "%s of %d bytes, more than %d (set a smaller max_strlen): %w", what, size, maxUnrolled, ErrUnsupported)
	}
	return nil
}

// strEqual sets R0 to eqVal when strings x and y are equal in their first
// limit bytes (limit < 0: all of them), up to the first NUL or the end of
// a buffer, and to neVal when they differ.
func (f *fn) strEqual(n lang.Node, x, y lang.Expr, limit int, eqVal, neVal int32) error {
	xt, yt := lang.TypeOf(x), lang.TypeOf(y)
	if xt.Kind != lang.KindString || yt.Kind != lang.KindString {
		return f.c.errorf(n, "comparing %s with %s", xt, yt)
	}
	common := min(xt.Size, yt.Size)
	if limit >= 0 {
		common = min(common, limit)
	}
	if err := f.unrolled(n, "comparing strings", common); err != nil {
		return err
	}
	xo, yo := f.alloc(sizeOf(xt)), f.alloc(sizeOf(yt))
	if err := f.valueInto(x, xo); err != nil {
		return err
	}
	if err := f.valueInto(y, yo); err != nil {
		return err
	}
	eq, ne, end := f.label("streq"), f.label("strne"), f.label("strend")
	for i := 0; i < common; i++ {
		f.emit(
			memAt(asm.LoadMem(asm.R1, regScratch, 0, asm.Byte), xo+i),
			memAt(asm.LoadMem(asm.R2, regScratch, 0, asm.Byte), yo+i),
			asm.JNE.Reg(asm.R1, asm.R2, ne),
			asm.JEq.Imm(asm.R1, 0, eq),
		)
	}
	// The shorter buffer ended within the limit: the longer string must
	// end there too.
	if limit < 0 || limit > common {
		if xt.Size > common {
			f.emit(memAt(asm.LoadMem(asm.R1, regScratch, 0, asm.Byte), xo+common), asm.JNE.Imm(asm.R1, 0, ne))
		} else if yt.Size > common {
			f.emit(memAt(asm.LoadMem(asm.R1, regScratch, 0, asm.Byte), yo+common), asm.JNE.Imm(asm.R1, 0, ne))
		}
	}
	f.place(eq)
	f.emit(asm.Mov.Imm(asm.R0, eqVal), asm.Ja.Label(end))
	f.place(ne)
	f.emit(asm.Mov.Imm(asm.R0, neVal))
	f.place(end)
	return nil
}

// unary lowers ! ~ -, the dereference * and the address-of &.
func (f *fn) unary(e *lang.Unary) error {
	if e.Op == "&" {
		return f.addressOf(e)
	}
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	switch e.Op {
	case "!":
		yes, end := f.label("not"), f.label("notend")
		f.emit(asm.JEq.Imm(asm.R0, 0, yes), asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
		f.place(yes)
		f.emit(asm.Mov.Imm(asm.R0, 1))
		f.place(end)
	case "~":
		f.emit(asm.Xor.Imm(asm.R0, -1))
	case "-":
		f.emit(asm.Neg.Imm(asm.R0, 0))
	case "*":
		xt := lang.TypeOf(e.X)
		switch xt.Kind {
		case lang.KindPointer:
			return f.load(e, f.pointee(xt), f.inKernel(e.X))
		case lang.KindInt:
			// An integer is an address of a u64, as in bpftrace.
			return f.load(e, lang.Uint64, false)
		}
		return f.c.errorf(e, "dereferencing %s, not a pointer", xt)
	default:
		return f.c.errorf(e, "operator %s: %w", e.Op, ErrUnsupported)
	}
	return nil
}

// addressOf lowers `&$x` into R0: the address of the variable's stack
// slot, or of its place in the scratch area.
func (f *fn) addressOf(e *lang.Unary) error {
	x, ok := e.X.(*lang.Var)
	if !ok {
		return f.c.errorf(e, "the address of %s: %w", lang.TypeOf(e.X), ErrUnsupported)
	}
	v, declared := f.vars[x.Name]
	if !declared {
		return f.c.errorf(e, "the address of undeclared %s: %w", x.Name, ErrUnsupported)
	}
	if isScalar(v.typ) {
		f.emit(asm.Mov.Reg(asm.R0, f.fp), asm.Add.Imm(asm.R0, int32(v.slot)))
		return nil
	}
	f.scratchPtr(asm.R0, v.off)
	return nil
}

// derefInto lowers `*p` of a string, tuple or other value kept in memory
// into the scratch area at off: the pointee's bytes, read as load reads.
func (f *fn) derefInto(e *lang.Unary, off int) error {
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	f.emit(asm.Mov.Reg(asm.R3, asm.R0))
	f.scratchPtr(asm.R1, off)
	f.emit(asm.Mov.Imm(asm.R2, int32(sizeOf(lang.TypeOf(e)))), readHelper(f.inKernel(e.X)).Call())
	return nil
}

// pointee returns the type a pointer points to (an unsigned integer of
// the pointer's Size when Elem is nil, a byte for void *).
func (f *fn) pointee(t lang.Type) lang.Type {
	if t.Elem != nil {
		return *t.Elem
	}
	if t.Size > 0 && t.Size <= 8 {
		return lang.Int(t.Size, false)
	}
	return lang.Int(1, false)
}

// elemSize is the size of what pointer or array type t points to.
func (f *fn) elemSize(t lang.Type) int {
	e := f.pointee(t)
	switch e.Kind {
	case lang.KindInt, lang.KindArray, lang.KindString:
		return max(e.Size, 1)
	case lang.KindStruct:
		if sd := f.structDef(e.Struct); sd != nil && sd.Size > 0 {
			return sd.Size
		}
		return 1
	}
	return 8
}

// structDef finds a struct of the script or the kernel.
func (f *fn) structDef(name string) *lang.StructDef { return f.c.prog.StructDef(name) }

// load replaces the address in R0 with the value of type t stored there:
// integers and pointers are read with probe_read_user (see readHelper for
// memory of kernel types) into a zeroed slot and extended; a struct or an
// array stays an address.
func (f *fn) load(n lang.Node, t lang.Type, kernel bool) error {
	size, signed := 8, false
	switch t.Kind {
	case lang.KindStruct, lang.KindArray:
		return nil
	case lang.KindInt:
		size, signed = t.Size, t.Signed
	default:
		if !isScalar(t) || t.IsAggregation() || t.Kind == lang.KindNone {
			return f.c.errorf(n, "reading a %s through a pointer: %w", t, ErrUnsupported)
		}
	}
	slot, err := f.pushSlot(n)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.emit(
		asm.Mov.Reg(asm.R3, asm.R0),
		storeImm64(f.fp, int(slot), 0),
		asm.Mov.Reg(asm.R1, f.fp),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(size)),
		readHelper(kernel).Call(),
		asm.LoadMem(asm.R0, f.fp, slot, asm.DWord),
	)
	f.emit(extend(asm.R0, size, signed)...)
	return nil
}

// incDec lowers ++ and -- on a variable or a map element.
func (f *fn) incDec(e *lang.IncDec) error {
	// A pointer steps by the size of what it points to, as in 0.17.
	delta := int32(1)
	if t := lang.TypeOf(e.X); t.Kind == lang.KindPointer {
		delta = int32(f.elemSize(t))
	}
	if e.Op == "--" {
		delta = -delta
	}
	switch x := e.X.(type) {
	case *lang.Var:
		v, ok := f.vars[x.Name]
		if !ok || !isScalar(v.typ) {
			return f.c.errorf(e, "%s on %s, not an integer variable", e.Op, x.Name)
		}
		f.emit(
			asm.LoadMem(asm.R0, f.fp, v.slot, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Add.Imm(asm.R1, delta),
		)
		if v.typ.Kind == lang.KindInt {
			f.emit(extend(asm.R1, v.typ.Size, v.typ.Signed)...)
		}
		f.emit(asm.StoreMem(f.fp, v.slot, asm.R1, asm.DWord))
		if !e.Post {
			f.emit(asm.Mov.Reg(asm.R0, asm.R1))
		}
		return nil
	case *lang.MapExpr:
		return f.mapIncDec(e, x, delta)
	}
	return f.c.errorf(e, "%s on %T", e.Op, e.X)
}

// ternaryInt lowers an integer `c ? a : b`.
func (f *fn) ternaryInt(e *lang.Ternary) error {
	return f.ternary(e, f.intExpr)
}

// ternary lowers `c ? a : b` with branch lowering a and b.
func (f *fn) ternary(e *lang.Ternary, branch func(lang.Expr) error) error {
	if err := f.intExpr(e.Cond); err != nil {
		return err
	}
	elseL, end := f.label("telse"), f.label("tend")
	f.emit(asm.JEq.Imm(asm.R0, 0, elseL))
	// In `a ?: b` R0 already holds a, which is not evaluated again.
	if !e.NoMiddle || !isScalar(lang.TypeOf(e)) {
		if err := branch(e.Then); err != nil {
			return err
		}
	}
	f.emit(asm.Ja.Label(end))
	f.place(elseL)
	if err := branch(e.Else); err != nil {
		return err
	}
	f.place(end)
	return nil
}

// cast lowers an integer or pointer cast: integers are truncated and
// extended to the new type; pointers keep the value.
func (f *fn) cast(e *lang.Cast) error {
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	switch {
	case e.To.Boolean:
		done := f.label("bool")
		f.emit(asm.JEq.Imm(asm.R0, 0, done), asm.Mov.Imm(asm.R0, 1))
		f.place(done)
	case e.To.Kind == lang.KindInt:
		f.emit(extend(asm.R0, e.To.Size, e.To.Signed)...)
	}
	return nil
}

// fieldInt lowers `t.N` of a tuple and `s.f` / `p->f` of a struct to an
// integer, pointer or struct address.
func (f *fn) fieldInt(e *lang.FieldAccess) error {
	xt := lang.TypeOf(e.X)
	if xt.Kind == lang.KindTuple {
		off, err := f.tupleField(e.X, e.Index)
		if err != nil {
			return err
		}
		f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, asm.DWord), off))
		return nil
	}
	if fld := f.tracepointField(e); fld != nil {
		return f.tracepointInt(e, fld)
	}
	field := f.structField(e)
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	if field.Offset != 0 {
		f.emit(asm.Add.Imm(asm.R0, int32(field.Offset)))
	}
	if field.Bits == 0 {
		return f.load(e, field.Type, f.inKernel(e.X))
	}
	// A bitfield: the bytes that hold it, shifted and masked.
	size := 1
	for size*8 < field.BitShift+field.Bits {
		size *= 2
	}
	if err := f.load(e, lang.Int(size, false), f.inKernel(e.X)); err != nil {
		return err
	}
	if field.BitShift > 0 {
		f.emit(asm.RSh.Imm(asm.R0, int32(field.BitShift)))
	}
	if field.Bits < 32 {
		f.emit(asm.And.Imm(asm.R0, int32(1)<<field.Bits-1))
	} else if field.Bits < 64 {
		f.emit(asm.LSh.Imm(asm.R0, int32(64-field.Bits)), asm.RSh.Imm(asm.R0, int32(64-field.Bits)))
	}
	return nil
}

// inKernel reports whether the memory x addresses (the struct it is or
// points to, the array it is, what it points to) is the kernel's: x is a
// kernel struct, a pointer to one, or read out of one.
func (f *fn) inKernel(x lang.Expr) bool {
	if f.t.kernelFunc() {
		// Pointers there are the kernel's, or user memory a syscall
		// was handed: bpf_probe_read reads either.
		return true
	}
	if fa, ok := x.(*lang.FieldAccess); ok && f.tracepointField(fa) != nil {
		// A syscall's pointer arguments point to user memory; other
		// tracepoints hand over kernel pointers.
		return f.t.tracepoint.Category != "syscalls"
	}
	t := lang.TypeOf(x)
	if t.Local {
		return true
	}
	if t.Kind == lang.KindPointer && t.Elem != nil {
		t = *t.Elem
	}
	if t.Kind == lang.KindStruct {
		if sd := f.structDef(t.Struct); sd != nil && sd.Kernel {
			return true
		}
	}
	switch x := x.(type) {
	case *lang.FieldAccess:
		return lang.TypeOf(x.X).Kind != lang.KindTuple && f.inKernel(x.X)
	case *lang.IndexExpr:
		return f.inKernel(x.X)
	}
	return false
}

// readHelper is the helper that reads memory a kernel type describes
// (kernel) or user memory. A kernel type may describe user memory too (a
// syscall's pointer argument cast to struct __kernel_timespec *), so its
// reads use bpf_probe_read, which reads either by the address, as
// bpftrace 0.17's do on x86-64.
func readHelper(kernel bool) asm.BuiltinFunc {
	if kernel {
		return asm.FnProbeRead
	}
	return asm.FnProbeReadUser
}

// structField finds the member a struct field access names.
func (f *fn) structField(e *lang.FieldAccess) lang.StructField {
	xt := lang.TypeOf(e.X)
	st := xt
	if xt.Kind == lang.KindPointer {
		st = f.pointee(xt)
	}
	assert(st.Kind == lang.KindStruct, e, "a field of what is not a struct")
	sd := f.structDef(st.Struct)
	assert(sd != nil, e, "a field of an undefined struct")
	for _, fld := range sd.Fields {
		if fld.Name == e.Field {
			return fld
		}
	}
	assert(false, e, "a field the struct does not have")
	return lang.StructField{}
}

// tupleField evaluates tuple x (of `x.N` or `x[N]`) and returns the
// scratch offset of element n.
func (f *fn) tupleField(x lang.Expr, n int) (int, error) {
	xt := lang.TypeOf(x)
	fields, _ := Layout(xt.Elems...)
	assert(n >= 0 && n < len(fields), x, "a tuple index out of range")
	if v, ok := x.(*lang.Var); ok {
		if vv, ok := f.vars[v.Name]; ok && vv.typ.Kind == lang.KindTuple {
			vf, _ := Layout(vv.typ.Elems...)
			if vv.typ.Elems[n].Equal(xt.Elems[n]) {
				return vv.off + vf[n].Offset, nil
			}
		}
	}
	tmp := f.alloc(sizeOf(xt))
	if err := f.valueInto(x, tmp); err != nil {
		return 0, err
	}
	return tmp + fields[n].Offset, nil
}

// tupleElemInto copies element n of tuple x, size bytes, into the
// scratch area at off.
func (f *fn) tupleElemInto(x lang.Expr, n, off, size int) error {
	src, err := f.tupleField(x, n)
	if err != nil {
		return err
	}
	f.copyMem(regScratch, off, regScratch, src, size)
	return nil
}

// stringByte lowers s[i] on a string: its byte i, or 0 for an index
// outside the buffer.
func (f *fn) stringByte(e *lang.IndexExpr) error {
	xt := lang.TypeOf(e.X)
	tmp := f.alloc(sizeOf(xt))
	if err := f.valueInto(e.X, tmp); err != nil {
		return err
	}
	if err := f.intExpr(e.Index); err != nil {
		return err
	}
	inside, done := f.label("strindex"), f.label("strindex_end")
	f.emit(
		asm.JLT.Imm(asm.R0, int32(xt.Size), inside),
		asm.Mov.Imm(asm.R0, 0),
		asm.Ja.Label(done),
	)
	f.place(inside)
	f.emit(
		asm.Mov.Reg(asm.R1, regScratch),
		asm.Add.Imm(asm.R1, int32(tmp)),
		asm.Add.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R0, asm.R1, 0, asm.Byte),
		// A char is signed.
		asm.LSh.Imm(asm.R0, 56),
		asm.ArSh.Imm(asm.R0, 56),
	)
	f.place(done)
	return nil
}

// index lowers p[i] on a pointer or an array: the element at
// p + i*size.
func (f *fn) index(e *lang.IndexExpr) error {
	xt := lang.TypeOf(e.X)
	switch xt.Kind {
	case lang.KindTuple:
		off, err := f.tupleField(e.X, e.TupleIndex)
		if err != nil {
			return err
		}
		f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, asm.DWord), off))
		return nil
	case lang.KindString:
		return f.stringByte(e)
	case lang.KindIntArray:
		return f.arrayElem(e)
	}
	assert(xt.Kind == lang.KindPointer || xt.Kind == lang.KindArray, e, "indexing what is neither a pointer nor an array")
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	slot, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.emit(asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
	if err := f.intExpr(e.Index); err != nil {
		return err
	}
	if s := f.elemSize(xt); s != 1 {
		f.emit(asm.Mul.Imm(asm.R0, int32(s)))
	}
	f.emit(
		asm.LoadMem(asm.R1, f.fp, slot, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R1),
	)
	return f.load(e, f.pointee(xt), f.inKernel(e.X))
}

// arrayElem lowers `a[N]` of an array value into R0: the element the
// checker's constant index selects, extended from its size.
func (f *fn) arrayElem(e *lang.IndexExpr) error {
	xt := lang.TypeOf(e.X)
	tmp := f.alloc(sizeOf(xt))
	if err := f.valueInto(e.X, tmp); err != nil {
		return err
	}
	size := xt.Elem.Size
	f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, memSize[size]), tmp+e.TupleIndex*size))
	f.emit(extend(asm.R0, size, xt.Elem.Signed)...)
	return nil
}

// memSize is the load and store width of an integer of each size.
var memSize = map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}

// arrayCast lowers a cast to an array value into the scratch area at
// off: the bytes of the string, or of the integer as it is stored (eight
// bytes, little-endian, of which the array takes its size).
func (f *fn) arrayCast(e *lang.Cast, off int) error {
	if lang.TypeOf(e.X).Kind == lang.KindString {
		return f.valueInto(e.X, off)
	}
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
	return nil
}

// valueInto lowers a string, buf or tuple expression into the scratch
// area at off, writing all sizeOf(TypeOf(e)) bytes (padding zeroed).
func (f *fn) valueInto(e lang.Expr, off int) error {
	f.mark(e)
	t := lang.TypeOf(e)
	switch e := e.(type) {
	case *lang.StrLit:
		f.writeString(off, e.Value, t.Size)
		return nil
	case *lang.PositionalParam:
		s, ok := lang.ConstString(e)
		assert(ok, e, "a parameter read as a string without its text")
		f.writeString(off, s, t.Size)
		return nil
	case *lang.Var:
		v, ok := f.vars[e.Name]
		if !ok {
			return f.c.errorf(e, "undefined variable %s", e.Name)
		}
		return f.convert(regScratch, off, t, regScratch, v.off, v.typ)
	case *lang.MapExpr:
		return f.mapReadValue(e, off)
	case *lang.Builtin:
		switch e.ID {
		case lang.VarComm:
			f.zero(regScratch, off, t.Size)
			f.scratchPtr(asm.R1, off)
			f.emit(asm.Mov.Imm(asm.R2, int32(min(t.Size, 16))), asm.FnGetCurrentComm.Call())
			return nil
		case lang.VarProbetype:
			name := f.t.kind.String()
			if f.t.kind == lang.ProbeBegin || f.t.kind == lang.ProbeEnd {
				name = "special"
			}
			f.writeString(off, name, t.Size)
			return nil
		}
	case *lang.Call:
		switch e.ID {
		case lang.FuncStr:
			return f.str(e, off)
		case lang.FuncBuf, lang.FuncHash256:
			return f.buf(e, off)
		case lang.FuncNtop:
			return f.ntop(e, off)
		case lang.FuncPton:
			// A buf of the address's bytes, which the checker knows.
			addr, ok := lang.ConstString(e)
			assert(ok, e, "pton() without its address")
			f.emit(storeImm64(regScratch, off, int32(len(addr))))
			f.writeBytes(off+8, []byte(addr))
			return nil
		case lang.FuncStrftime:
			return f.strftime(e, off)
		}
	case *lang.Ternary:
		return f.ternary(e, func(x lang.Expr) error { return f.valueAs(x, off, t) })
	case *lang.BlockExpr:
		if err := f.stmts(e.Stmts); err != nil {
			return err
		}
		return f.valueInto(e.Value, off)
	case *lang.Tuple:
		fields, _ := Layout(t.Elems...)
		for i, el := range e.Elems {
			if err := f.valueAs(el, off+fields[i].Offset, t.Elems[i]); err != nil {
				return err
			}
		}
		return nil
	case *lang.FieldAccess:
		if lang.TypeOf(e.X).Kind == lang.KindTuple {
			return f.tupleElemInto(e.X, e.Index, off, sizeOf(t))
		}
		if fld := f.tracepointField(e); fld != nil && t.Kind == lang.KindString {
			return f.tracepointString(e, fld, off)
		}
		if t.Kind == lang.KindString {
			return f.structString(e, off)
		}
	case *lang.IndexExpr:
		if lang.TypeOf(e.X).Kind == lang.KindTuple {
			return f.tupleElemInto(e.X, e.TupleIndex, off, sizeOf(t))
		}
	case *lang.Unary:
		if e.Op == "*" {
			return f.derefInto(e, off)
		}
	case *lang.Cast:
		if t.Kind == lang.KindIntArray {
			return f.arrayCast(e, off)
		}
	}
	return f.c.errorf(e, "%T of type %s as a value: %w", e, t, ErrUnsupported)
}

// strftime lowers strftime(format, nsecs) into a timestamp value at off
// (see timestampSize).
func (f *fn) strftime(e *lang.Call, off int) error {
	lit, ok := e.Args[0].(*lang.StrLit)
	assert(ok, e, "strftime()'s format is not a string literal")
	index := slices.Index(f.c.spec.TimeFormats, lit.Value)
	if index < 0 {
		index = len(f.c.spec.TimeFormats)
		f.c.spec.TimeFormats = append(f.c.spec.TimeFormats, lit.Value)
	}
	f.emit(storeImm64(regScratch, off, int32(index)))
	if err := f.intExpr(e.Args[1]); err != nil {
		return err
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off+8))
	return nil
}

// Address families of ntop()'s value.
const (
	afInet  = 2
	afInet6 = 10
)

// ntop lowers ntop([af,] addr) into an inet value at off (see inetSize).
// Without af, a 16-byte address is IPv6 and anything else IPv4. An integer
// address is stored as its 8 little-endian bytes: IPv4 reads the first 4.
func (f *fn) ntop(e *lang.Call, off int) error {
	addr := e.Args[len(e.Args)-1]
	at := lang.TypeOf(addr)
	f.zero(regScratch, off, inetSize)
	if len(e.Args) == 2 {
		if err := f.intExpr(e.Args[0]); err != nil {
			return err
		}
		f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
	} else {
		af := int32(afInet)
		if at.Size == 16 {
			af = afInet6
		}
		f.emit(storeImm64(regScratch, off, af))
	}
	switch at.Kind {
	case lang.KindArray:
		// An array in the traced process's memory: addr's value is
		// where it starts.
		if err := f.intExpr(addr); err != nil {
			return err
		}
		f.emit(asm.Mov.Reg(asm.R3, asm.R0))
		f.scratchPtr(asm.R1, off+8)
		f.emit(asm.Mov.Imm(asm.R2, int32(min(at.Size, 16))), asm.FnProbeReadUser.Call())
		return nil
	case lang.KindString, lang.KindBuf:
		tmp := f.alloc(sizeOf(at))
		if err := f.valueInto(addr, tmp); err != nil {
			return err
		}
		data := tmp
		if at.Kind == lang.KindBuf {
			data += 8 // after the length
		}
		f.copyMem(regScratch, off+8, regScratch, data, min(at.Size, 16))
		return nil
	}
	if err := f.intExpr(addr); err != nil {
		return err
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off+8))
	return nil
}

// valueAs lowers e into the scratch area at off as a value of type want,
// converting strings and tuples to want's sizes.
func (f *fn) valueAs(e lang.Expr, off int, want lang.Type) error {
	t := lang.TypeOf(e)
	if isScalar(want) {
		if err := f.intExpr(e); err != nil {
			return err
		}
		f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
		return nil
	}
	switch {
	case t.Equal(want):
		return f.valueInto(e, off)
	case t.Kind == lang.KindString && want.Kind == lang.KindString && t.Size < want.Size:
		if err := f.valueInto(e, off); err != nil {
			return err
		}
		f.zero(regScratch, off+sizeOf(t), sizeOf(want)-sizeOf(t))
		return nil
	}
	if tup, ok := e.(*lang.Tuple); ok && want.Kind == lang.KindTuple && len(want.Elems) == len(tup.Elems) {
		fields, _ := Layout(want.Elems...)
		at := fieldPlaces(want, t)
		// The elements are evaluated in source order, each into its
		// place in want.
		for i, el := range tup.Elems {
			if err := f.valueAs(el, off+fields[at[i]].Offset, want.Elems[at[i]]); err != nil {
				return err
			}
		}
		return nil
	}
	tmp := f.alloc(sizeOf(t))
	if err := f.valueInto(e, tmp); err != nil {
		return err
	}
	return f.convert(regScratch, off, want, regScratch, tmp, t)
}

// fieldPlaces returns, for each element of tuple or record from, the
// index of the element of to it goes into: the same index, but for a
// record of the same names in another order (lang.FieldOrder).
func fieldPlaces(to, from lang.Type) []int {
	places := make([]int, len(from.Elems))
	for i := range places {
		places[i] = i
	}
	for i, j := range lang.FieldOrder(to, from) {
		places[j] = i
	}
	return places
}

// convert copies a value of type st at *(src+srcOff) to *(dst+dstOff) as
// type dt: strings are truncated (keeping a NUL) or zero-padded, tuples
// converted element by element.
func (f *fn) convert(dst asm.Register, dstOff int, dt lang.Type, src asm.Register, srcOff int, st lang.Type) error {
	switch {
	case dt.Equal(st):
		f.copyMem(dst, dstOff, src, srcOff, sizeOf(dt))
	case isScalar(dt) && isScalar(st):
		f.copyMem(dst, dstOff, src, srcOff, 8)
	case dt.Kind == lang.KindString && st.Kind == lang.KindString:
		if st.Size <= dt.Size {
			f.copyMem(dst, dstOff, src, srcOff, st.Size)
			f.zero(dst, dstOff+sizeOf(st), sizeOf(dt)-sizeOf(st))
			return nil
		}
		f.copyMem(dst, dstOff, src, srcOff, dt.Size)
		for i := dt.Size - 1; i < sizeOf(dt); i++ {
			f.emit(memAt(asm.StoreImm(dst, 0, 0, asm.Byte), dstOff+i))
		}
	case dt.Kind == lang.KindBuf && st.Kind == lang.KindBuf && st.Size <= dt.Size && dt.Hash == st.Hash:
		// The length and the data, into a larger buffer.
		f.copyMem(dst, dstOff, src, srcOff, sizeOf(st))
		f.zero(dst, dstOff+sizeOf(st), sizeOf(dt)-sizeOf(st))
	case dt.Kind == lang.KindTuple && st.Kind == lang.KindTuple && len(dt.Elems) == len(st.Elems):
		df, _ := Layout(dt.Elems...)
		sf, _ := Layout(st.Elems...)
		for i, j := range fieldPlaces(st, dt) {
			if err := f.convert(dst, dstOff+df[j].Offset, dt.Elems[j], src, srcOff+sf[i].Offset, st.Elems[i]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("convert %s to %s: %w", st, dt, ErrUnsupported)
	}
	return nil
}

// writeString stores s as a NUL-terminated string in a buffer of size
// bytes at scratch offset off, zero-padded to a multiple of 8.
func (f *fn) writeString(off int, s string, size int) {
	if len(s) > size-1 {
		s = s[:max(size-1, 0)]
	}
	buf := make([]byte, align8(size))
	copy(buf, s)
	f.writeBytes(off, buf)
}

// writeBytes stores data at scratch+off, in 8-byte stores of constants
// (data padded with zeroes to a multiple of 8).
func (f *fn) writeBytes(off int, data []byte) {
	buf := make([]byte, align8(len(data)))
	copy(buf, data)
	for i := 0; i < len(buf); i += 8 {
		lo := int32(binary.LittleEndian.Uint32(buf[i:]))
		hi := int32(binary.LittleEndian.Uint32(buf[i+4:]))
		if lo == 0 && hi == 0 {
			f.emit(storeImm64(regScratch, off+i, 0))
			continue
		}
		f.emit(
			memAt(asm.StoreImm(regScratch, 0, int64(lo), asm.Word), off+i),
			memAt(asm.StoreImm(regScratch, 0, int64(hi), asm.Word), off+i+4),
		)
	}
}

// str lowers str(p[, n]): at most n bytes (and at most the buffer) of the
// NUL-terminated user-space string at p, into a zeroed buffer. str(s, n)
// of a string s keeps its first n bytes.
func (f *fn) str(e *lang.Call, off int) error {
	t := lang.TypeOf(e)
	at := lang.TypeOf(e.Args[0])
	if at.Kind == lang.KindString && len(e.Args) == 1 {
		return f.valueAs(e.Args[0], off, t)
	}
	f.zero(regScratch, off, t.Size)
	return f.readStr(e, func() { f.scratchPtr(asm.R1, off) })
}

// readStr emits the read of str(p[, n]) (or str(s, n)) into the buffer
// whose address dst sets in R1, which is zeroed already. The helper
// returns in R0.
func (f *fn) readStr(e *lang.Call, dst func()) error {
	t := lang.TypeOf(e)
	at := lang.TypeOf(e.Args[0])
	var slot int16
	if len(e.Args) == 2 {
		if err := f.intExpr(e.Args[1]); err != nil {
			return err
		}
		ok := f.label("strlen")
		f.emit(
			asm.Add.Imm(asm.R0, 1),
			asm.JLE.Imm(asm.R0, int32(t.Size), ok),
			asm.Mov.Imm(asm.R0, int32(t.Size)),
		)
		f.place(ok)
		var err error
		if slot, err = f.pushSlot(e); err != nil {
			return err
		}
		defer f.popSlot()
		f.emit(asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
	}
	read := asm.FnProbeReadUserStr
	if at.Kind == lang.KindString {
		// The string is in the scratch area: a kernel address.
		tmp := f.alloc(sizeOf(at))
		if err := f.valueInto(e.Args[0], tmp); err != nil {
			return err
		}
		f.scratchPtr(asm.R3, tmp)
		read = asm.FnProbeReadKernelStr
	} else {
		if err := f.intExpr(e.Args[0]); err != nil {
			return err
		}
		f.emit(asm.Mov.Reg(asm.R3, asm.R0))
		if f.t.kind == lang.ProbeTracepoint || f.t.kernelFunc() {
			// A tracepoint's pointers are to user memory (a syscall's
			// arguments) or to the kernel's (a __data_loc string, other
			// events' fields): the original helper reads either on
			// x86-64, as bpftrace 0.17 reads them.
			read = asm.FnProbeReadStr
		}
	}
	if len(e.Args) == 2 {
		ok := f.label("strlen")
		f.emit(
			asm.LoadMem(asm.R2, f.fp, slot, asm.DWord),
			asm.JLE.Imm(asm.R2, int32(t.Size), ok),
			asm.Mov.Imm(asm.R2, int32(t.Size)),
		)
		f.place(ok)
	} else {
		f.emit(asm.Mov.Imm(asm.R2, int32(t.Size)))
	}
	dst()
	f.emit(read.Call())
	return nil
}

// buf lowers buf(p, n): a u64 length min(n, capacity) followed by that
// many bytes read from user space at p, the rest zeroed.
func (f *fn) buf(e *lang.Call, off int) error {
	t := lang.TypeOf(e)
	f.zero(regScratch, off, sizeOf(t))
	switch {
	case e.ID == lang.FuncHash256:
		// hash256(p) is buf(p, 32).
		f.emit(asm.Mov.Imm(asm.R0, int32(t.Size)))
	case len(e.Args) != 2:
		return f.c.errorf(e, "buf() takes 2 arguments")
	default:
		if err := f.intExpr(e.Args[1]); err != nil {
			return err
		}
	}
	f.capBufLen(t, true)
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
	read := asm.FnProbeReadUser
	if st := lang.TypeOf(e.Args[0]); st.Kind == lang.KindString {
		// A string's bytes are copied from the scratch area, as 0.17
		// copies them from where it keeps the string; past its end
		// they are zeros, as in 0.17's zero-filled string buffers.
		size := max(sizeOf(st), align8(t.Size))
		tmp := f.alloc(size)
		if err := f.valueInto(e.Args[0], tmp); err != nil {
			return err
		}
		f.zero(regScratch, tmp+sizeOf(st), size-sizeOf(st))
		f.scratchPtr(asm.R3, tmp)
		read = asm.FnProbeReadKernel
	} else {
		if err := f.intExpr(e.Args[0]); err != nil {
			return err
		}
		f.emit(asm.Mov.Reg(asm.R3, asm.R0))
	}
	ok2 := f.label("buflen")
	f.emit(
		memAt(asm.LoadMem(asm.R2, regScratch, 0, asm.DWord), off),
		asm.JLE.Imm(asm.R2, int32(t.Size), ok2),
		asm.Mov.Imm(asm.R2, int32(t.Size)),
	)
	f.place(ok2)
	f.scratchPtr(asm.R1, off+8)
	f.emit(read.Call())
	return nil
}

// capBufLen caps the length in R0 of a buf of type t at its size. With
// count, the length is the one asked for, and the cut of a large buf is
// counted (Counters.BufCut). It clobbers R1 and R2.
func (f *fn) capBufLen(t lang.Type, count bool) {
	ok := f.label("buflen")
	f.emit(
		asm.JLE.Imm(asm.R0, int32(t.Size), ok),
		asm.Mov.Imm(asm.R0, int32(t.Size)),
	)
	if count && largeBuf(t) {
		f.incrementCounter(f.c.spec.bufCutCounter())
	}
	f.place(ok)
}

// builtin lowers an integer builtin variable.
func (f *fn) builtin(e *lang.Builtin) error {
	switch e.ID {
	case lang.VarNsecs:
		f.emit(asm.FnKtimeGetNs.Call())
	case lang.VarElapsed:
		slot, err := f.pushSlot(e)
		if err != nil {
			return err
		}
		defer f.popSlot()
		done := f.label("elapsed")
		f.emit(asm.FnKtimeGetNs.Call(), asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
		f.lookupZeroKey(startMapName)
		f.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.LoadMem(asm.R0, f.fp, slot, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, done),
			asm.LoadMem(asm.R1, asm.R1, 0, asm.DWord),
			asm.Sub.Reg(asm.R0, asm.R1),
		)
		f.place(done)
	case lang.VarPid:
		f.emit(asm.FnGetCurrentPidTgid.Call(), asm.RSh.Imm(asm.R0, 32))
	case lang.VarTid:
		f.emit(asm.FnGetCurrentPidTgid.Call(), asm.Mov.Reg32(asm.R0, asm.R0))
	case lang.VarUID, lang.VarUsername:
		f.emit(asm.FnGetCurrentUidGid.Call(), asm.Mov.Reg32(asm.R0, asm.R0))
	case lang.VarGID:
		f.emit(asm.FnGetCurrentUidGid.Call(), asm.RSh.Imm(asm.R0, 32))
	case lang.VarCPU:
		f.emit(asm.FnGetSmpProcessorId.Call())
	case lang.VarJiffies:
		f.emit(asm.FnJiffies64.Call())
	case lang.VarNcpus:
		f.emit(movImm(asm.R0, int64(f.c.opts.CPUs)))
	case lang.VarUsermode:
		return f.usermode()
	case lang.VarRand:
		f.emit(asm.FnGetPrandomU32.Call())
	case lang.VarCgroup:
		f.emit(asm.FnGetCurrentCgroupId.Call())
	case lang.VarCurtask:
		f.emit(asm.FnGetCurrentTask.Call())
	case lang.VarNumaid:
		f.emit(asm.FnGetNumaNodeId.Call())
	case lang.VarUstack, lang.VarKstack:
		return f.ustack(e, lang.TypeOf(e))
	case lang.VarProbe:
		f.emit(asm.Mov.Imm(asm.R0, int32(f.t.index)))
	case lang.VarArgs:
		// A tracepoint's record is its context.
		f.emit(asm.Mov.Reg(asm.R0, regCtx))
	case lang.VarCpid:
		f.emit(movImm(asm.R0, int64(f.c.opts.ChildPID)))
	case lang.VarFunc:
		switch f.t.kind {
		case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
			f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), ptregs.IP))
		case lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
			// A kretprobe's ip is where the function returns to: the
			// helper gives the function's own address in all four.
			f.emit(asm.Mov.Reg(asm.R1, regCtx), asm.FnGetFuncIp.Call())
		default:
			return f.c.errorf(e, "func is not available in %s", f.t.probeName)
		}
	case lang.VarRetval:
		switch {
		case f.t.kind == lang.ProbeUretprobe || f.t.kind == lang.ProbeKretprobe:
			f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), ptregs.AX))
		case f.t.kind == lang.ProbeKretfunc && f.t.tracepoint.Retval != nil:
			return f.kfuncSlot(e, f.t.tracepoint.Retval)
		default:
			return f.c.errorf(e, "retval is not available in %s", f.t.probeName)
		}
	case lang.VarArg:
		return f.arg(e, e.ArgIndex())
	case lang.VarSarg:
		return f.stackArg(e, e.ArgIndex())
	default:
		return f.c.errorf(e, "builtin %s as an integer: %w", e.Name, ErrUnsupported)
	}
	return nil
}

// structString reads a `char name[N]` struct member, a string of N
// bytes (NUL-terminated or not), into a zeroed buffer at scratch offset
// off.
func (f *fn) structString(e *lang.FieldAccess, off int) error {
	t := lang.TypeOf(e)
	field := f.structField(e)
	f.zero(regScratch, off, t.Size)
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	f.emit(asm.Mov.Reg(asm.R3, asm.R0))
	f.emit(addConst(asm.R3, int64(field.Offset))...)
	f.scratchPtr(asm.R1, off)
	f.emit(asm.Mov.Imm(asm.R2, int32(t.Size)), readHelper(f.inKernel(e.X)).Call())
	return nil
}

// bswap lowers bswap(x): the bytes of x's width in reverse order, zero-
// extended (a byte comes back as it is).
func (f *fn) bswap(e *lang.Call) error {
	if err := f.intExpr(e.Args[0]); err != nil {
		return err
	}
	switch lang.TypeOf(e).Size {
	case 1:
		f.emit(asm.And.Imm(asm.R0, 0xff))
	case 2:
		f.emit(asm.HostTo(asm.BE, asm.R0, asm.Half))
	case 4:
		f.emit(asm.HostTo(asm.BE, asm.R0, asm.Word))
	default:
		f.emit(asm.HostTo(asm.BE, asm.R0, asm.DWord))
	}
	return nil
}

// strContains lowers strcontains(haystack, needle): 1 when needle occurs
// in haystack (an empty needle always does), else 0. A bounded loop tries
// each start in the haystack and compares eight bytes at a time without
// branches, through a mask that is 0xff for each needle byte before its
// NUL and 0 after it: the verifier then walks one short path per start.
// The haystack is followed by zeros as long as the needle, so every read
// is in bounds; the loads are unaligned, which the verifier allows in the
// per-CPU scratch map's value (x86-64) but not on the stack. No helper is called:
// R0-R5 hold the indexes, words and addresses.
func (f *fn) strContains(e *lang.Call) error {
	ht, nt := lang.TypeOf(e.Args[0]), lang.TypeOf(e.Args[1])
	assert(ht.Kind == lang.KindString && nt.Kind == lang.KindString, e, "strcontains() of what is not a string")
	if err := f.unrolled(e, "strcontains()", max(ht.Size, nt.Size)); err != nil {
		return err
	}
	f.unalignedScratch = true
	width := sizeOf(nt)
	hay, needle, mask := f.alloc(sizeOf(ht)+width), f.alloc(width), f.alloc(width)
	if err := f.valueInto(e.Args[0], hay); err != nil {
		return err
	}
	f.zero(regScratch, hay+sizeOf(ht), width)
	if err := f.valueInto(e.Args[1], needle); err != nil {
		return err
	}
	// mask[j] = 0xff when needle[j] and every byte before it are not NUL.
	f.emit(asm.Mov.Imm(asm.R1, 0xff))
	for j := 0; j < width; j++ {
		f.emit(
			memAt(asm.LoadMem(asm.R2, regScratch, 0, asm.Byte), needle+j),
			// (c | -c) >> 63 is 1 when c is not NUL.
			asm.Mov.Reg(asm.R3, asm.R2),
			asm.Neg.Imm(asm.R3, 0),
			asm.Or.Reg(asm.R3, asm.R2),
			asm.RSh.Imm(asm.R3, 63),
			asm.Mul.Reg(asm.R1, asm.R3),
			memAt(asm.StoreMem(regScratch, 0, asm.R1, asm.Byte), mask+j),
		)
	}
	start, found, missing, end := f.label("scstart"), f.label("scfound"), f.label("scmissing"), f.label("scend")
	f.emit(asm.Mov.Imm(asm.R1, 0)) // R1: start in the haystack
	f.place(start)
	f.emit(
		asm.Mov.Reg(asm.R5, regScratch),
		asm.Add.Reg(asm.R5, asm.R1),
		asm.Mov.Imm(asm.R0, 0), // R0: the bits of every mismatch
	)
	for k := 0; k < width; k += 8 {
		f.emit(
			memAt(asm.LoadMem(asm.R3, asm.R5, 0, asm.DWord), hay+k),
			memAt(asm.LoadMem(asm.R4, regScratch, 0, asm.DWord), needle+k),
			asm.Xor.Reg(asm.R3, asm.R4),
			memAt(asm.LoadMem(asm.R4, regScratch, 0, asm.DWord), mask+k),
			asm.And.Reg(asm.R3, asm.R4),
			asm.Or.Reg(asm.R0, asm.R3),
		)
	}
	f.emit(
		asm.JEq.Imm(asm.R0, 0, found),
		memAt(asm.LoadMem(asm.R3, asm.R5, 0, asm.Byte), hay),
		asm.JEq.Imm(asm.R3, 0, missing),
		asm.Add.Imm(asm.R1, 1),
		asm.JLT.Imm(asm.R1, int32(ht.Size), start),
	)
	f.place(missing)
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
	f.place(found)
	f.emit(asm.Mov.Imm(asm.R0, 1))
	f.place(end)
	return nil
}

// intCall lowers a call with an integer value.
func (f *fn) intCall(e *lang.Call) error {
	switch e.ID {
	case lang.FuncUptr, lang.FuncKptr, lang.FuncUsym, lang.FuncKsym, lang.FuncStrerror, lang.FuncSignalName, lang.FuncSyscallName:
		return f.intExpr(e.Args[0])
	case lang.FuncKaddr, lang.FuncCgroupid:
		v, ok := lang.ConstInt(e)
		assert(ok, e, e.Name+"() without the value the checker resolved")
		f.emit(movImm(asm.R0, v))
		return nil
	case lang.FuncSizeof:
		size, err := f.sizeofType(e, lang.TypeOf(e.Args[0]))
		if err != nil {
			return err
		}
		f.emit(movImm(asm.R0, int64(size)))
		return nil
	case lang.FuncStrncmp:
		n, ok := lang.ConstInt(e.Args[2])
		assert(ok, e, "strncmp()'s length is not a constant")
		// bpftrace's strncmp is 0 when equal, 1 otherwise.
		return f.strEqual(e, e.Args[0], e.Args[1], int(max(n, 0)), 0, 1)
	case lang.FuncBswap:
		return f.bswap(e)
	case lang.FuncStrcontains:
		return f.strContains(e)
	case lang.FuncDelete:
		return f.deleted(e)
	case lang.FuncStrlen:
		return f.strlen(e)
	case lang.FuncNsecs:
		clock := asm.FnKtimeGetNs
		if len(e.Args) == 1 {
			switch b, _ := e.Args[0].(*lang.Builtin); b.Name {
			case "boot":
				clock = asm.FnKtimeGetBootNs
			case "tai", "sw_tai":
				clock = asm.FnKtimeGetTaiNs
			}
		}
		f.emit(clock.Call())
		return nil
	case lang.FuncHasKey:
		return f.hasKey(e)
	case lang.FuncLen:
		return f.mapLen(e)
	case lang.FuncReg:
		return f.reg(e)
	case lang.FuncUaddr:
		return f.uaddr(e)
	case lang.FuncUstack, lang.FuncKstack:
		return f.ustack(e, lang.TypeOf(e))
	}
	return f.c.errorf(e, "%s() as an integer value: %w", e.Name, ErrUnsupported)
}

// sizeofType is the C size of a value of type t.
func (f *fn) sizeofType(n lang.Node, t lang.Type) (int, error) {
	switch t.Kind {
	case lang.KindInt, lang.KindString, lang.KindArray, lang.KindBuf:
		return t.Size, nil
	case lang.KindPointer:
		return 8, nil
	case lang.KindStruct:
		if sd := f.structDef(t.Struct); sd != nil {
			return sd.Size, nil
		}
	case lang.KindTuple:
		if size, _, ok := cLayout(t); ok {
			return size, nil
		}
		return sizeOf(t), nil
	}
	return 0, f.c.errorf(n, "sizeof(%s): %w", t, ErrUnsupported)
}

// cLayout returns the size and alignment of a value of type t laid out as
// C lays it out, which is what bpftrace 0.17's sizeof() gives for a tuple
// (a struct of its elements: sizeof(((int8)1, (int16)1, (int32)1)) is 8);
// ok is false for a type it does not cover, whose scratch size serves.
func cLayout(t lang.Type) (size, align int, ok bool) {
	switch t.Kind {
	case lang.KindInt:
		return t.Size, t.Size, true
	case lang.KindPointer:
		return 8, 8, true
	case lang.KindString:
		return t.Size, 1, true
	case lang.KindTuple:
		align = 1
		for _, e := range t.Elems {
			s, a, ok := cLayout(e)
			if !ok {
				return 0, 0, false
			}
			size = alignUp(size, a) + s
			align = max(align, a)
		}
		return alignUp(size, align), align, true
	}
	return 0, 0, false
}

// alignUp rounds n up to a multiple of align.
func alignUp(n, align int) int { return (n + align - 1) / align * align }

// reg lowers reg("name"): a register of the probed thread.
func (f *fn) reg(e *lang.Call) error {
	lit, ok := e.Args[0].(*lang.StrLit)
	assert(ok, e, "reg() of what is not a string literal")
	switch f.t.kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe, lang.ProbeKprobe, lang.ProbeKretprobe:
	default:
		return f.c.errorf(e, "reg() is not available in %s", f.t.probeName)
	}
	r, ok := ptregs.ByMember(lit.Value)
	assert(ok, e, "reg() of an unknown register")
	f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), r.Offset))
	return nil
}

// usermode lowers usermode: whether the probe interrupted user-space
// code. A uprobe always does, and so do BEGIN, END and interval, which
// gotrace's own process runs (bpftrace's BEGIN is a uprobe too); profile
// and watchpoint (which the kernel's own accesses to user memory fire)
// read the privilege level of the interrupted code segment.
func (f *fn) usermode() error {
	switch f.t.kind {
	case lang.ProbeProfile, lang.ProbeWatchpoint:
		cs, ok := ptregs.ByMember("cs")
		assert(ok, nil, "pt_regs without cs")
		f.emit(
			memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), cs.Offset),
			asm.And.Imm(asm.R0, 3),
			asm.RSh.Imm(asm.R0, 1),
		)
	case lang.ProbeTracepoint, lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		f.emit(asm.Mov.Imm(asm.R0, 0))
	default:
		f.emit(asm.Mov.Imm(asm.R0, 1))
	}
	return nil
}

// uaddr lowers uaddr("sym"): the address of a data symbol in the ELF file
// of the program's target, a constant the checker looked up
// (lang.Program.Symbols).
func (f *fn) uaddr(e *lang.Call) error {
	lit, ok := e.Args[0].(*lang.StrLit)
	assert(ok, e, "uaddr() of what is not a string literal")
	sym, ok := f.c.prog.Symbols[lang.SymbolRef{Path: f.t.path, Name: lit.Value}]
	if !ok || sym.Err != nil {
		return f.c.errorf(e, "Could not resolve symbol: %s:%s", f.t.path, lit.Value)
	}
	f.emit(movImm(asm.R0, int64(sym.Addr)))
	return nil
}
