package codegen

// This file lowers what reads, writes and compares strings and buffers:
// str(), buf(), string comparison and strcontains(), string literals in
// the scratch area, strftime() and ntop() values.

import (
	"encoding/binary"
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

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
	xt, yt := f.typeOf(e.X), f.typeOf(e.Y)
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
	t := f.typeOf(e.Args[0])
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
	xt, yt := f.typeOf(x), f.typeOf(y)
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

// stringByte lowers s[i] on a string: its byte i, or 0 for an index
// outside the buffer.
func (f *fn) stringByte(e *lang.IndexExpr) error {
	xt := f.typeOf(e.X)
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

// strftime lowers strftime(format, nsecs) into a timestamp value at off
// (see timestampSize).
func (f *fn) strftime(e *lang.Call, off int) error {
	lit, ok := e.Args[0].(*lang.StrLit)
	assert(ok, e, "strftime()'s format is not a string literal")
	f.emit(storeImm64(regScratch, off, indexOf(&f.c.spec.TimeFormats, lit.Value)))
	if err := f.intExpr(e.Args[1]); err != nil {
		return err
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off+8))
	return nil
}

// cgroupPath lowers cgroup_path(id[, filter]) into its value at off (see
// cgroupPathSize): the id, then the index of the filter in
// Spec.CgroupFilters, which user space reads when it prints the value.
func (f *fn) cgroupPath(e *lang.Call, off int) error {
	filter := ""
	if len(e.Args) == 2 {
		lit, ok := e.Args[1].(*lang.StrLit)
		assert(ok, e, "cgroup_path()'s filter is not a string literal")
		filter = lit.Value
	}
	if err := f.intExpr(e.Args[0]); err != nil {
		return err
	}
	f.emit(
		memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off),
		storeImm64(regScratch, off+8, indexOf(&f.c.spec.CgroupFilters, filter)),
	)
	return nil
}

// indexOf returns the index of s in the Spec's table *list, appending it
// when it is not there yet: values carry the index, user space reads the
// text.
func indexOf(list *[]string, s string) int32 {
	i := slices.Index(*list, s)
	if i < 0 {
		i = len(*list)
		*list = append(*list, s)
	}
	return int32(i)
}

// ntop lowers ntop([af,] addr) into an inet value at off (see inetSize).
// Without af, a 16-byte address is IPv6 and anything else IPv4. An integer
// address is stored as its 8 little-endian bytes: IPv4 reads the first 4.
func (f *fn) ntop(e *lang.Call, off int) error {
	addr := e.Args[len(e.Args)-1]
	at := f.typeOf(addr)
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
		return f.readAt(addr, off+8, min(at.Size, 16))
	case lang.KindString, lang.KindBuf:
		data, err := f.dataOf(addr)
		if err != nil {
			return err
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

// dataOf lowers x, a string, a buf or an array value, into the scratch
// area and returns the offset of its bytes there (a buf's after its
// length).
func (f *fn) dataOf(x lang.Expr) (int, error) {
	t := f.typeOf(x)
	tmp := f.alloc(sizeOf(t))
	if err := f.valueInto(x, tmp); err != nil {
		return 0, err
	}
	if t.Kind == lang.KindBuf {
		return tmp + 8, nil
	}
	return tmp, nil
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
	t := f.typeOf(e)
	at := f.typeOf(e.Args[0])
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
	t := f.typeOf(e)
	at := f.typeOf(e.Args[0])
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
	t := f.typeOf(e)
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
	if st := f.typeOf(e.Args[0]); st.Kind == lang.KindString {
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

// structString reads a `char name[N]` struct member, a string of N
// bytes (NUL-terminated or not), into a zeroed buffer at scratch offset
// off.
func (f *fn) structString(e *lang.FieldAccess, off int) error {
	t := f.typeOf(e)
	field := f.structField(e)
	f.zero(regScratch, off, t.Size)
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	f.emit(asm.Mov.Reg(asm.R3, asm.R0))
	f.emit(addConst(asm.R3, int64(field.Offset))...)
	f.readToScratch(off, t.Size, f.inKernel(e.X))
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
	ht, nt := f.typeOf(e.Args[0]), f.typeOf(e.Args[1])
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
