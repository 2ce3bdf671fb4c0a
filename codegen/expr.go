package codegen

// This file lowers expressions by kind: integers into R0 (intExpr),
// values into the scratch area (valueInto, valueAs, convert), the
// ternary operator and casts. Operators, strings, typed memory and
// builtins have files of their own (expr_*.go).

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// intExpr lowers an integer, pointer or struct-address expression into R0,
// as a 64-bit value sign- or zero-extended from its type. It clobbers
// R0-R5 and R7.
func (f *fn) intExpr(e lang.Expr) error {
	f.mark(e)
	switch e := e.(type) {
	case *lang.IntLit, *lang.PositionalParam:
		v, ok := f.c.info.ConstInt(e)
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
	return f.c.errorf(e, "%s is not an integer", f.typeOf(e))
}

// logicalLabels are the labels of one && or || operator, made before its
// left operand is lowered.
type logicalLabels struct {
	short, end string
}

// maxUnrolled bounds the bytes of a string that strlen(), strcontains()
// and comparisons go through: their code has a step per byte, and the
// verifier follows jumps of at most 32,767 instructions and a million
// steps in all.
const maxUnrolled = 4096

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
	if !e.NoMiddle || !isScalar(f.typeOf(e)) {
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
	switch to := f.typeOf(e); {
	case to.Boolean:
		done := f.label("bool")
		f.emit(asm.JEq.Imm(asm.R0, 0, done), asm.Mov.Imm(asm.R0, 1))
		f.place(done)
	case to.Kind == lang.KindInt:
		f.emit(extend(asm.R0, to.Size, to.Signed)...)
	}
	return nil
}

// memSize is the load and store width of an integer of each size.
var memSize = map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}

// valueInto lowers a string, buf or tuple expression into the scratch
// area at off, writing all sizeOf(TypeOf(e)) bytes (padding zeroed).
func (f *fn) valueInto(e lang.Expr, off int) error {
	f.mark(e)
	t := f.typeOf(e)
	switch e := e.(type) {
	case *lang.StrLit:
		f.writeString(off, e.Value, t.Size)
		return nil
	case *lang.PositionalParam:
		s, ok := f.c.info.ConstString(e)
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
		return f.mapReadValue(e, off, t)
	case *lang.Builtin:
		switch e.ID {
		case lang.VarComm:
			f.zero(regScratch, off, t.Size)
			f.scratchPtr(asm.R1, off)
			f.emit(asm.Mov.Imm(asm.R2, int32(min(t.Size, 16))), asm.FnGetCurrentComm.Call())
			return nil
		case lang.VarProbetype:
			f.writeString(off, f.t.kind.TypeName(), t.Size)
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
			addr, ok := f.c.info.ConstString(e)
			assert(ok, e, "pton() without its address")
			f.emit(storeImm64(regScratch, off, int32(len(addr))))
			f.writeBytes(off+8, []byte(addr))
			return nil
		case lang.FuncStrftime:
			return f.strftime(e, off)
		case lang.FuncCgroupPath:
			return f.cgroupPath(e, off)
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
		if f.typeOf(e.X).Kind == lang.KindTuple {
			return f.tupleElemInto(e.X, f.c.info.FieldIndex(e), off, sizeOf(t))
		}
		if fld := f.tracepointField(e); fld != nil && t.Kind == lang.KindString {
			return f.tracepointString(e, fld, off)
		}
		if t.Kind == lang.KindString {
			return f.structString(e, off)
		}
	case *lang.IndexExpr:
		if f.typeOf(e.X).Kind == lang.KindTuple {
			return f.tupleElemInto(e.X, f.c.info.ElemIndex(e), off, sizeOf(t))
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

// Address families of ntop()'s value.
const (
	afInet  = 2
	afInet6 = 10
)

// valueAs lowers e into the scratch area at off as a value of type want,
// converting strings and tuples to want's sizes.
func (f *fn) valueAs(e lang.Expr, off int, want lang.Type) error {
	t := f.typeOf(e)
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
	case t.Kind == lang.KindStruct && want.Kind == lang.KindTuple && want.Names != nil:
		// A struct stored in a map (compiler.storedType): its members,
		// or another map's record of them.
		if m, ok := e.(*lang.MapExpr); ok {
			return f.mapReadValue(m, off, want)
		}
		return f.structInto(e, t, want, off)
	case t.Kind == lang.KindArray && want.Kind == lang.KindIntArray:
		// An array stored in a map or printed (compiler.storedType): its
		// bytes, or another map's copy of them.
		if m, ok := e.(*lang.MapExpr); ok {
			return f.mapReadValue(m, off, want)
		}
		return f.arrayInto(e, want, off)
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
