package codegen

// This file lowers what tracepoint programs read: the fields of the
// record their context points to.

import (
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// tracepointField returns the field of the program's tracepoint that
// `args->name` reads, or nil when e is not such an access.
func (f *fn) tracepointField(e *lang.FieldAccess) *lang.TracepointField {
	b, ok := e.X.(*lang.Builtin)
	if !ok || b.ID != lang.VarArgs || f.t.tracepoint == nil {
		return nil
	}
	fld, ok := f.t.tracepoint.Field(e.Field)
	assert(ok, e, "a tracepoint field the record does not have")
	return fld
}

// tracepointInt loads an integer or pointer field of the record into R0.
// The verifier lets a tracepoint program read its record directly; a
// __data_loc field and an array field become the address of their data.
func (f *fn) tracepointInt(e *lang.FieldAccess, fld *lang.TracepointField) error {
	t := f.typeOf(e)
	if fld.DataLoc {
		f.emit(
			memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.Word), fld.Offset),
			asm.And.Imm(asm.R0, 0xffff),
			asm.Add.Reg(asm.R0, regCtx),
		)
		return nil
	}
	size, signed := 8, false
	if t.Kind == lang.KindInt {
		size, signed = t.Size, t.Signed
	}
	if f.t.tracepoint.IsKernelFunc() || f.t.tracepoint.IsUprobeFunc() {
		// An 8-byte slot of the context: a kernel function's argument,
		// or the register of a user function's parameter in pt_regs.
		return f.kfuncSlot(e, fld)
	}
	if t.Kind == lang.KindArray {
		// An array stays in the record, as a struct's array member
		// stays in the struct: its value is its address, which
		// indexing, ntop() and macaddr() read through
		// (bpf_probe_read_kernel takes the context's address).
		f.emit(asm.Mov.Reg(asm.R0, regCtx), asm.Add.Imm(asm.R0, int32(fld.Offset)))
		return nil
	}
	if t.Kind != lang.KindInt && t.Kind != lang.KindPointer {
		return f.c.errorf(e, "tracepoint field %s of type %s as an integer: %w", fld.Name, t, ErrUnsupported)
	}
	f.emit(asm.LoadMem(asm.R0, regCtx, int16(fld.Offset), sizeMode(size)))
	f.emit(extend(asm.R0, size, signed)...)
	return nil
}

// tracepointString copies a char array field of the record into a zeroed
// buffer at scratch offset off.
func (f *fn) tracepointString(e *lang.FieldAccess, fld *lang.TracepointField, off int) error {
	t := f.typeOf(e)
	f.zero(regScratch, off, t.Size)
	f.scratchPtr(asm.R1, off)
	f.emit(
		asm.Mov.Imm(asm.R2, int32(min(t.Size, fld.Size))),
		asm.Mov.Reg(asm.R3, regCtx),
		asm.Add.Imm(asm.R3, int32(fld.Offset)),
		asm.FnProbeReadKernel.Call(),
	)
	return nil
}

// sizeMode is the load width of an integer of size bytes.
func sizeMode(size int) asm.Size {
	switch size {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

// kfuncSlot loads a kernel function's parameter or return value, fld,
// into R0: the verifier lets a kfunc program read the 8-byte slots of
// its context, and the value is cut to its type's size and extended.
func (f *fn) kfuncSlot(e lang.Expr, fld *lang.TracepointField) error {
	t := f.typeOf(e)
	size, signed := 8, false
	switch t.Kind {
	case lang.KindInt:
		size, signed = t.Size, t.Signed
	case lang.KindPointer:
	default:
		return f.c.errorf(e, "%s of type %s as an integer: %w", fld.Name, t, ErrUnsupported)
	}
	f.emit(asm.LoadMem(asm.R0, regCtx, int16(fld.Offset), asm.DWord))
	f.emit(extend(asm.R0, size, signed)...)
	return nil
}
