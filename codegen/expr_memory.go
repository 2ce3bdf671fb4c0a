package codegen

// This file lowers what reads memory through types: pointers and
// dereferences, struct fields (user and kernel), tuple elements, array
// and string indexing, casts to arrays, sizeof and C layout.

import (
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// addressOf lowers `&$x` into R0: the address of the variable's stack
// slot, or of its place in the scratch area.
func (f *fn) addressOf(e *lang.Unary) error {
	x, ok := e.X.(*lang.Var)
	if !ok {
		return f.c.errorf(e, "the address of %s: %w", f.typeOf(e.X), ErrUnsupported)
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
	return f.readAt(e.X, off, sizeOf(f.typeOf(e)))
}

// readAt reads size bytes at the address x evaluates to (a pointer, an
// integer, an array or struct the code holds by its address) into the
// scratch area at off, from kernel or user memory as inKernel says of x.
func (f *fn) readAt(x lang.Expr, off, size int) error {
	if err := f.intExpr(x); err != nil {
		return err
	}
	f.emit(asm.Mov.Reg(asm.R3, asm.R0))
	f.readToScratch(off, size, f.inKernel(x))
	return nil
}

// readToScratch reads size bytes at the address in R3, of kernel memory
// or user memory as readHelper says, into the scratch area at off.
func (f *fn) readToScratch(off, size int, kernel bool) {
	f.scratchPtr(asm.R1, off)
	f.emit(asm.Mov.Imm(asm.R2, int32(size)), readHelper(kernel).Call())
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
func (f *fn) structDef(name string) *lang.StructDef { return f.c.info.StructDef(f.c.prog, name) }

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

// fieldInt lowers `t.N` of a tuple and `s.f` / `p->f` of a struct to an
// integer, pointer or struct address.
func (f *fn) fieldInt(e *lang.FieldAccess) error {
	xt := f.typeOf(e.X)
	if xt.Kind == lang.KindTuple {
		off, err := f.tupleField(e.X, f.c.info.FieldIndex(e))
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
		// An array field is in the record, the kernel's memory. A
		// syscall's pointer arguments, and a user function's, point to
		// user memory; other tracepoints hand over kernel pointers.
		tp := f.t.tracepoint
		return f.typeOf(fa).Kind == lang.KindArray || (tp.Category != "syscalls" && !tp.IsUprobeFunc())
	}
	t := f.typeOf(x)
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
		return f.typeOf(x.X).Kind != lang.KindTuple && f.inKernel(x.X)
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
	xt := f.typeOf(e.X)
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
	xt := f.typeOf(x)
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

// index lowers p[i] on a pointer or an array: the element at
// p + i*size.
func (f *fn) index(e *lang.IndexExpr) error {
	xt := f.typeOf(e.X)
	switch xt.Kind {
	case lang.KindTuple:
		off, err := f.tupleField(e.X, f.c.info.ElemIndex(e))
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
	xt := f.typeOf(e.X)
	tmp := f.alloc(sizeOf(xt))
	if err := f.valueInto(e.X, tmp); err != nil {
		return err
	}
	size := xt.Elem.Size
	f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, memSize[size]), tmp+f.c.info.ElemIndex(e)*size))
	f.emit(extend(asm.R0, size, xt.Elem.Signed)...)
	return nil
}

// arrayCast lowers a cast to an array value into the scratch area at
// off: the bytes of the string, or of the integer as it is stored (eight
// bytes, little-endian, of which the array takes its size).
func (f *fn) arrayCast(e *lang.Cast, off int) error {
	if f.typeOf(e.X).Kind == lang.KindString {
		return f.valueInto(e.X, off)
	}
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
	return nil
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
		if size, _, ok := f.cLayout(t); ok {
			return size, nil
		}
		return sizeOf(t), nil
	}
	return 0, f.c.errorf(n, "sizeof(%s): %w", t, ErrUnsupported)
}

// cLayout returns the size and alignment of a value of type t laid out as
// C lays it out, which is what bpftrace 0.17's sizeof() gives for a tuple
// (a struct of its elements: sizeof(((int8)1, (int16)1, (int32)1)) is 8,
// and with a struct of two ints, ((int32)1, s), 12, a struct unaligned);
// ok is false for a type it does not cover, whose scratch size serves.
func (f *fn) cLayout(t lang.Type) (size, align int, ok bool) {
	switch t.Kind {
	case lang.KindInt:
		return t.Size, t.Size, true
	case lang.KindPointer:
		return 8, 8, true
	case lang.KindString:
		return t.Size, 1, true
	case lang.KindStruct:
		// Its definition's size, unaligned: bpftrace places a struct
		// in a tuple right after the element before it,
		// ((int8)1, s, (int8)1) of a struct of two ints is 10 bytes.
		sd := f.structDef(t.Struct)
		if sd == nil || sd.Size == 0 {
			return 0, 0, false
		}
		return sd.Size, 1, true
	case lang.KindTuple:
		align = 1
		for _, e := range t.Elems {
			s, a, ok := f.cLayout(e)
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
