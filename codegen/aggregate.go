package codegen

import (
	"math/bits"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/lang"
)

// aggregate lowers `@m[k] = count()` and the other aggregations into an
// update of this CPU's value in a per-CPU hash map. Values (design.md):
// count and hist/lhist buckets a u64 count; sum an i64; min/max an i64
// plus a u64 "set" flag; avg/stats a u64 count plus an i64 total.
func (f *fn) aggregate(e *lang.MapExpr, call *lang.Call) error {
	m, index, err := f.mapOf(e, e.Name)
	if err != nil {
		return err
	}
	kind := m.Info.Value.Kind
	assert(kind == call.ID.Aggregation(), call, "an aggregation into a map of another kind")
	slot, err := f.pushSlot(call)
	if err != nil {
		return err
	}
	defer f.popSlot()
	if len(call.Args) > 0 {
		if err := f.intExpr(call.Args[0]); err != nil {
			return err
		}
		f.emit(asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
	}
	if m.Array && (kind == lang.KindHist || kind == lang.KindLhist) {
		return f.arrayHist(e, m, call, slot)
	}
	if kind == lang.KindTseries {
		return f.tseries(e, m, index, slot)
	}
	var koff keyAt
	if (kind == lang.KindHist || kind == lang.KindLhist) && len(e.Keys) == 0 && m.KeySize == 8 {
		// A key-less hist's key is just the bucket: it goes in the value's
		// stack slot once the value is read, not in scratch.
		koff = keyAt{f.fp, int(slot)}
	} else if koff, err = f.mapKey(e, m); err != nil {
		return err
	}
	switch kind {
	case lang.KindHist:
		f.emit(asm.LoadMem(asm.R0, f.fp, slot, asm.DWord))
		f.histBucket(m.HistBits)
		f.emit(memAt(asm.StoreMem(koff.base, 0, asm.R0, asm.DWord), koff.off+m.KeySize-8))
	case lang.KindLhist:
		p := m.Info.Lhist
		assert(p.Step > 0 && p.Max > p.Min, call, "lhist() with bounds the checker refuses")
		f.emit(asm.LoadMem(asm.R0, f.fp, slot, asm.DWord))
		f.lhistBucket(p)
		f.emit(memAt(asm.StoreMem(koff.base, 0, asm.R0, asm.DWord), koff.off+m.KeySize-8))
	}

	found, done := f.label("aggfound"), f.label("aggdone")
	f.lookup(e.Name, koff)
	f.emit(asm.JNE.Imm(asm.R0, 0, found))

	// A new element: its first value. R1 is the aggregated value, for the
	// kinds that add it rather than count.
	counts := kind == lang.KindCount || kind == lang.KindHist || kind == lang.KindLhist
	voff := f.alloc(m.ValueSize)
	if !counts {
		f.emit(asm.LoadMem(asm.R1, f.fp, slot, asm.DWord))
	}
	switch kind {
	case lang.KindCount, lang.KindHist, lang.KindLhist:
		f.emit(storeImm64(regScratch, voff, 1))
	case lang.KindSum:
		f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R1, asm.DWord), voff))
	case lang.KindMin, lang.KindMax:
		f.emit(
			memAt(asm.StoreMem(regScratch, 0, asm.R1, asm.DWord), voff),
			storeImm64(regScratch, voff+8, 1),
		)
	case lang.KindAvg, lang.KindStats:
		f.emit(
			storeImm64(regScratch, voff, 1),
			memAt(asm.StoreMem(regScratch, 0, asm.R1, asm.DWord), voff+8),
		)
	}
	f.update(e.Name, index, koff, voff)
	f.emit(asm.Ja.Label(done))

	// An existing element: update this CPU's value in place.
	f.place(found)
	if !counts {
		f.emit(asm.LoadMem(asm.R1, f.fp, slot, asm.DWord))
	}
	switch kind {
	case lang.KindCount, lang.KindHist, lang.KindLhist:
		f.emit(
			asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R2, 1),
			asm.StoreMem(asm.R0, 0, asm.R2, asm.DWord),
		)
	case lang.KindSum:
		f.emit(
			asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.StoreMem(asm.R0, 0, asm.R2, asm.DWord),
		)
	case lang.KindMin, lang.KindMax:
		keep := asm.JSGE // min: keep the current value when v >= it
		if kind == lang.KindMax {
			keep = asm.JSLE
		}
		f.updateExtreme(asm.R0, keep, done)
	case lang.KindAvg, lang.KindStats:
		f.emit(
			asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R2, 1),
			asm.StoreMem(asm.R0, 0, asm.R2, asm.DWord),
			asm.LoadMem(asm.R2, asm.R0, 8, asm.DWord),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.StoreMem(asm.R0, 8, asm.R2, asm.DWord),
		)
	}
	f.place(done)
	return nil
}

// updateExtreme stores R1 as the value of a min() or max() element at ptr
// and sets the "set" flag after it, unless the flag is set and keep,
// comparing R1 with the value, jumps to done. It clobbers R2.
func (f *fn) updateExtreme(ptr asm.Register, keep asm.JumpOp, done string) {
	set := f.label("aggset")
	f.emit(
		asm.LoadMem(asm.R2, ptr, 8, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, set),
		asm.LoadMem(asm.R2, ptr, 0, asm.DWord),
		keep.Reg(asm.R1, asm.R2, done),
	)
	f.place(set)
	f.emit(
		asm.StoreMem(ptr, 0, asm.R1, asm.DWord),
		storeImm64(ptr, 8, 1),
	)
}

// tseriesValueSize is the size of one CPU's value of a tseries map: the
// value, the aggregation's u64 beside it and the epoch (layout.MapTseries).
const tseriesValueSize = 24

// tseries lowers `@m[k] = tseries(v, interval, n[, agg])` with v in the
// stack slot: the interval the time falls in (its epoch, the time divided
// by the interval) picks the element of the key's epoch modulo n, which
// starts again from nothing when it held an older epoch and the values
// combine (avg, max, min, sum); without agg the last value wins, and the
// time it was set is kept to pick the latest across CPUs. The time is
// bpf_ktime_get_tai_ns's, which user space prints as wall-clock time, or
// the value of Options.TimeMap.
func (f *fn) tseries(e *lang.MapExpr, m userMap, index int, slot int16) error {
	p := m.Info.Tseries
	assert(p.Interval > 0 && p.Intervals > 0, e, "tseries() with arguments the checker refuses")
	koff, err := f.mapKey(e, m)
	if err != nil {
		return err
	}
	now, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	epoch, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	if err := f.tseriesNow(e); err != nil {
		return err
	}
	f.emit(
		asm.StoreMem(f.fp, now, asm.R0, asm.DWord),
		movImm(asm.R1, p.Interval),
		asm.Div.Reg(asm.R0, asm.R1),
		asm.StoreMem(f.fp, epoch, asm.R0, asm.DWord),
		movImm(asm.R1, p.Intervals),
		asm.Mod.Reg(asm.R0, asm.R1),
		asm.StoreMem(koff.base, int16(koff.off+m.KeySize-8), asm.R0, asm.DWord),
	)
	// R7 points to the element, in the map or, for a new one, in scratch
	// (the slot isNew set), zeroed and of this epoch. Not R8: in a map
	// loop's callback it is the frame pointer (regFrame).
	isNew, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	voff := f.alloc(m.ValueSize)
	found, update := f.label("tsfound"), f.label("tsupdate")
	f.lookup(e.Name, koff)
	f.emit(
		asm.Mov.Reg(asm.R7, asm.R0),
		storeImm64(f.fp, int(isNew), 0),
		asm.JNE.Imm(asm.R0, 0, found),
		storeImm64(f.fp, int(isNew), 1),
	)
	f.scratchPtr(asm.R7, voff)
	f.zero(asm.R7, 0, m.ValueSize)
	f.emit(
		asm.LoadMem(asm.R1, f.fp, epoch, asm.DWord),
		asm.StoreMem(asm.R7, 16, asm.R1, asm.DWord),
	)
	f.place(found)
	if p.Agg != "" {
		same := f.label("tssame")
		f.emit(
			asm.LoadMem(asm.R1, asm.R7, 16, asm.DWord),
			asm.LoadMem(asm.R2, f.fp, epoch, asm.DWord),
			asm.JEq.Reg(asm.R1, asm.R2, same),
			storeImm64(asm.R7, 0, 0),
			storeImm64(asm.R7, 8, 0),
		)
		f.place(same)
	}
	f.emit(asm.LoadMem(asm.R1, f.fp, slot, asm.DWord))
	switch p.Agg {
	case "":
		f.emit(
			asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord),
			asm.LoadMem(asm.R2, f.fp, now, asm.DWord),
			asm.StoreMem(asm.R7, 8, asm.R2, asm.DWord),
		)
	case "avg", "sum":
		f.emit(
			asm.LoadMem(asm.R2, asm.R7, 0, asm.DWord),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.StoreMem(asm.R7, 0, asm.R2, asm.DWord),
		)
		if p.Agg == "avg" {
			f.emit(
				asm.LoadMem(asm.R2, asm.R7, 8, asm.DWord),
				asm.Add.Imm(asm.R2, 1),
				asm.StoreMem(asm.R7, 8, asm.R2, asm.DWord),
			)
		}
	case "min", "max":
		keep := f.label("tskeep")
		// Keep the current value when v is not below it (min) or not
		// above it (max), compared with the values' sign.
		op := map[[2]bool]asm.JumpOp{
			{false, false}: asm.JGE, {false, true}: asm.JSGE,
			{true, false}: asm.JLE, {true, true}: asm.JSLE,
		}[[2]bool{p.Agg == "max", p.Signed}]
		f.updateExtreme(asm.R7, op, keep)
		f.place(keep)
	default:
		assert(false, e, "tseries() with an aggregation the checker refuses")
	}
	done := f.label("tsdone")
	f.emit(
		asm.LoadMem(asm.R1, f.fp, epoch, asm.DWord),
		asm.StoreMem(asm.R7, 16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, f.fp, isNew, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, update),
		asm.Ja.Label(done),
	)
	f.place(update)
	f.update(e.Name, index, koff, voff)
	f.place(done)
	return nil
}

// tseriesNow sets R0 to the time tseries() files values under: TAI
// nanoseconds, or the u64 in the key-less map Options.TimeMap names (as
// bpftrace's BPFTRACE_DUMMY_TS_MAP, which its tests set to make the
// intervals known in advance).
func (f *fn) tseriesNow(n lang.Node) error {
	name := f.c.opts.TimeMap
	if name == "" {
		f.emit(asm.FnKtimeGetTaiNs.Call())
		return nil
	}
	m, _, err := f.mapOf(n, name)
	if err != nil {
		return err
	}
	if m.Kind != layout.MapValue || len(m.KeyFields) != 0 || m.Info.Value.Kind != lang.KindInt || m.Info.Value.Signed {
		return f.c.errorf(n, "time map %s: want a map without keys of unsigned integers, not of %s", name, m.Info.Value)
	}
	f.lookupInt(name, keyAt{f.fp, slotZero})
	return nil
}

// arrayHist counts the value in the stack slot into a key-less hist or
// lhist kept in a per-CPU array: the element at the bucket's index, and
// the last element set to 1 to say the map holds a histogram.
func (f *fn) arrayHist(e *lang.MapExpr, m userMap, call *lang.Call, slot int16) error {
	f.emit(asm.LoadMem(asm.R0, f.fp, slot, asm.DWord))
	if m.Info.Value.Kind == lang.KindHist {
		f.histBucket(m.HistBits)
	} else {
		f.lhistBucket(m.Info.Lhist)
	}
	done := f.label("histdone")
	key := keyAt{f.fp, int(slot)}
	f.emit(asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
	f.lookup(e.Name, key)
	f.emit(
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		storeImm64(f.fp, int(slot), int32(m.buckets)),
	)
	f.lookup(e.Name, key)
	f.emit(
		asm.JEq.Imm(asm.R0, 0, done),
		storeImm64(asm.R0, 0, 1),
	)
	f.place(done)
	return nil
}

// histBucket replaces the value in R0 with its hist() bucket: 0 for
// v < 0, 1 for v == 0, k+2 for 2^k <= v < 2^(k+1). log2 is a binary
// search over shifts, without loops. With bits, each power of two has
// 2^bits buckets: v+1 for 0 <= v < 2^bits, and above, for the highest set
// bit l of v, ((l-bits+1) << bits) + the bits bits below l, + 1. It
// clobbers R1 to R3.
func (f *fn) histBucket(bits int) {
	done := f.label("histdone")
	mask := int32(1)<<bits - 1
	f.emit(
		asm.Mov.Imm(asm.R1, 0),
		asm.JSLT.Imm(asm.R0, 0, done),
	)
	if bits == 0 {
		f.emit(
			asm.Mov.Imm(asm.R1, 1),
			asm.JEq.Imm(asm.R0, 0, done),
			asm.Mov.Imm(asm.R1, 2),
		)
	} else {
		f.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Add.Imm(asm.R1, 1),
			asm.JLE.Imm(asm.R0, mask, done),
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Imm(asm.R1, 0),
		)
	}
	for _, s := range []int32{32, 16, 8, 4, 2, 1} {
		skip := f.label("histskip")
		f.emit(
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.RSh.Imm(asm.R2, s),
			asm.JEq.Imm(asm.R2, 0, skip),
			asm.Mov.Reg(asm.R0, asm.R2),
			asm.Add.Imm(asm.R1, s),
		)
		f.place(skip)
	}
	if bits > 0 {
		// R1 is l: the bucket is ((l-bits+1) << bits) +
		// ((v >> (l-bits)) & mask) + 1.
		f.emit(
			asm.Sub.Imm(asm.R1, int32(bits)),
			asm.RSh.Reg(asm.R3, asm.R1),
			asm.And.Imm(asm.R3, mask),
			asm.Add.Imm(asm.R1, 1),
			asm.LSh.Imm(asm.R1, int32(bits)),
			asm.Add.Reg(asm.R1, asm.R3),
			asm.Add.Imm(asm.R1, 1),
		)
	}
	f.place(done)
	f.emit(asm.Mov.Reg(asm.R0, asm.R1))
}

// lhistBucket replaces the value in R0 with its lhist() bucket: 0 below
// min, 1+(v-min)/step inside, (max-min)/step+1 at or above max. It
// clobbers R1.
func (f *fn) lhistBucket(p lang.LhistParams) {
	done, ge, in := f.label("lhistdone"), f.label("lhistge"), f.label("lhistin")
	f.emit(jumpIfConst(asm.JSGE, asm.R0, p.Min, ge)...)
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	f.place(ge)
	f.emit(jumpIfConst(asm.JSLT, asm.R0, p.Max, in)...)
	f.emit(movImm(asm.R0, (p.Max-p.Min)/p.Step+1), asm.Ja.Label(done))
	f.place(in)
	// min <= v < max: v-min is not negative, so the unsigned division
	// (or a shift by a power of two) is exact.
	f.emit(addConst(asm.R0, -p.Min)...)
	switch {
	case p.Step == 1:
	case p.Step&(p.Step-1) == 0:
		f.emit(asm.RSh.Imm(asm.R0, int32(bits.TrailingZeros64(uint64(p.Step)))))
	case p.Step < 1<<31:
		f.emit(asm.Div.Imm(asm.R0, int32(p.Step)))
	default:
		f.emit(movImm(asm.R1, p.Step), asm.Div.Reg(asm.R0, asm.R1))
	}
	f.emit(asm.Add.Imm(asm.R0, 1))
	f.place(done)
}

// jumpIfConst jumps to label when r compares to the constant v with op,
// using an immediate when v fits one and R1 otherwise.
func jumpIfConst(op asm.JumpOp, r asm.Register, v int64, label string) asm.Instructions {
	if v >= -1<<31 && v < 1<<31 {
		return asm.Instructions{op.Imm(r, int32(v), label)}
	}
	return asm.Instructions{movImm(asm.R1, v), op.Reg(r, asm.R1, label)}
}
