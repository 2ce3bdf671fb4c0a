package codegen

import (
	"fmt"
	"math"
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// Register use in every program:
//
//	R6  the context (pt_regs for uprobes and USDT)
//	R9  the per-CPU scratch area (strings, tuples, keys, records)
//	R8  in a map loop's callback, the probe program's frame pointer (fn.fp)
//	R0  the value of the integer expression just lowered
//	R1-R5, R7  short-lived, within one lowering step
//
// Integer temporaries and integer variables live in 8-byte stack slots;
// everything larger lives in the scratch area at offsets fixed at compile
// time.
const (
	regCtx     = asm.R6
	regScratch = asm.R9
	regFrame   = asm.R8
)

// Fixed stack slots.
const (
	// slotZero always holds a u64 zero: the key of one-entry arrays and
	// of key-less maps.
	slotZero = -8
	// slotCookie holds the attach cookie of a USDT program with several
	// argument layouts.
	slotCookie = -16
	// slotIndex holds a u32 key for counter arrays.
	slotIndex = -24
	// firstFreeSlot is where variables and temporaries start.
	firstFreeSlot = -24
)

// fn builds one program.
type fn struct {
	c     *compiler
	t     *target
	insns asm.Instructions

	// stack is the lowest stack offset in use (negative), stackLow the
	// lowest it has been.
	stack, stackLow int16
	// scratch is the first free byte of the scratch area, scratchMax the
	// area's high-water mark; zerosMax the largest zero source needed.
	scratch    int
	scratchMax int
	// unalignedScratch is set when the code reads the scratch area at
	// unaligned offsets (strcontains): it must then be the per-CPU map's
	// value, as the verifier refuses unaligned stack reads.
	unalignedScratch bool
	zerosMax         int

	vars map[string]variable
	// varNames are the variables in declaration (name) order.
	varNames []string

	labels  int
	pending string
	// dead is set after an unconditional jump: what follows is
	// unreachable until the next label.
	dead bool
	// refs are the labels that emitted jumps refer to; alias maps a
	// label placed where another was already pending to that one.
	refs    map[string]bool
	alias   map[string]string
	comment string
	loops   []loopLabels

	// fp addresses the stack slots: R10 in the probe's program, and
	// regFrame in the callback of a map loop, which keeps its variables
	// and temporaries in the probe program's frame (see forMap).
	fp asm.Register
	// loop is the innermost map loop whose callback is being lowered,
	// nil outside callbacks.
	loop *mapLoop
	// callbacks are the instructions of the map loops' callbacks, which
	// follow the program's own.
	callbacks asm.Instructions
	// countCallback is the symbol of the callback len() iterates with,
	// once one is emitted.
	countCallback string
	// unwindSteps are the symbols of the eh_frame walk's step callbacks
	// (unwind.go), by the frames limit of their stacks.
	unwindSteps map[int]string
}

// variable is a scratch variable: an integer in a stack slot or a larger
// value in the scratch area.
type variable struct {
	typ  lang.Type
	slot int16
	off  int
}

// loopLabels are the targets of break and continue; in a map loop's
// callback, whose break and continue are returns, callback is set instead.
type loopLabels struct {
	brk, cont string
	callback  bool
}

func newFn(c *compiler, t *target) *fn {
	return &fn{c: c, t: t, fp: asm.RFP, stack: firstFreeSlot, stackLow: firstFreeSlot, vars: map[string]variable{}, refs: map[string]bool{}, alias: map[string]string{}}
}

// emit appends instructions, attaching a pending label and source comment
// to the first one. Instructions after an unconditional jump or an exit
// are dropped until a label makes the code reachable again: the verifier
// refuses unreachable instructions (code after exit(), say).
func (f *fn) emit(insns ...asm.Instruction) {
	for _, ins := range insns {
		if off, ok := ins.Metadata.Get(farOffset{}).(int); ok {
			ins.Metadata.Set(farOffset{}, nil)
			base := ins.Dst
			if ins.OpCode.Class() == asm.LdXClass {
				base = ins.Src
			}
			f.emit(asm.Add.Imm(base, int32(off)), ins, asm.Add.Imm(base, -int32(off)))
			continue
		}
		if f.pending != "" {
			ins = ins.WithSymbol(f.pending)
			f.pending = ""
			f.dead = false
		}
		if f.dead {
			continue
		}
		if to, ok := f.alias[ins.Reference()]; ok {
			ins = ins.WithReference(to)
		}
		if ins.Reference() != "" {
			f.refs[ins.Reference()] = true
		}
		if op := ins.OpCode.JumpOp(); ins.OpCode.Class().IsJump() && (op == asm.Ja || op == asm.Exit) {
			f.dead = true
		}
		if f.comment != "" {
			// The comment becomes BTF line info, whose strings end at
			// a NUL: a script's NUL byte is written escaped.
			ins = ins.WithSource(asm.Comment(strings.ReplaceAll(f.comment, "\x00", `\x00`)))
			f.comment = ""
		}
		f.insns = append(f.insns, ins)
	}
}

// label makes a fresh label name.
func (f *fn) label(prefix string) string {
	f.labels++
	return fmt.Sprintf("%s_%d", prefix, f.labels)
}

// place puts label l on the next instruction emitted. In dead code a
// label no jump refers to changes nothing.
func (f *fn) place(l string) {
	if f.dead && f.pending == "" && !f.refs[l] {
		return
	}
	if f.pending != "" {
		// Two labels on one spot: l becomes another name of the pending
		// one. Jumps emitted from now on take the pending name at once;
		// those emitted before are renamed once, at the end
		// (resolveAliases): renaming them here rescanned the program at
		// every such label, quadratic in the script's length.
		f.alias[l] = f.pending
		return
	}
	f.pending = l
}

// resolveAliases renames the references to labels that became another
// name of a label placed at the same spot.
func (f *fn) resolveAliases() {
	if len(f.alias) == 0 {
		return
	}
	for i := range f.insns {
		if to, ok := f.alias[f.insns[i].Reference()]; ok {
			f.insns[i] = f.insns[i].WithReference(to)
		}
	}
}

// mark records where the lowering of node n starts, for the comment on
// its first instruction. When an enclosing statement or expression starts
// at the same instruction, its comment wins.
func (f *fn) mark(n lang.Node) {
	if f.comment != "" {
		return
	}
	s := n.Span()
	f.comment = fmt.Sprintf("%s:%d:%d: %s", f.c.prog.File, s.Start.Line, s.Start.Col, f.c.snippet(n))
}

// pushSlot reserves an 8-byte stack slot.
func (f *fn) pushSlot(n lang.Node) (int16, error) {
	if int(f.stack)-8 < -stackSize {
		return 0, f.c.errorf(n, "expression too complex: out of BPF stack (%d bytes)", stackSize)
	}
	f.stack -= 8
	f.stackLow = min(f.stackLow, f.stack)
	return f.stack, nil
}

// popSlot releases the most recent stack slot.
func (f *fn) popSlot() { f.stack += 8 }

// pushSlots reserves n 8-byte stack slots, which popSlots(n) releases.
func (f *fn) pushSlots(node lang.Node, n int) ([]int16, error) {
	slots := make([]int16, n)
	for i := range slots {
		slot, err := f.pushSlot(node)
		if err != nil {
			f.popSlots(i)
			return nil, err
		}
		slots[i] = slot
	}
	return slots, nil
}

// popSlots releases the n most recent stack slots.
func (f *fn) popSlots(n int) { f.stack += int16(8 * n) }

// alloc reserves size bytes of scratch, 8-aligned. Statements release
// their temporaries by resetting f.scratch.
func (f *fn) alloc(size int) int {
	off := f.scratch
	f.scratch += align8(size)
	f.scratchMax = max(f.scratchMax, f.scratch)
	return off
}

func align8(n int) int { return (n + 7) &^ 7 }

// farOffset is the metadata key of a load or store whose offset from its
// base register is beyond the reach of an instruction's 16-bit field (a
// field after a string of more than 32 KiB): emit moves the base register
// there for that one instruction and back.
type farOffset struct{}

// memAt returns ins, a load or store, at offset off from its base register:
// in the instruction's field when it fits, else noted for emit.
func memAt(ins asm.Instruction, off int) asm.Instruction {
	if off >= math.MinInt16 && off <= math.MaxInt16 {
		ins.Offset = int16(off)
		return ins
	}
	ins.Offset = 0
	ins.Metadata.Set(farOffset{}, off)
	return ins
}

// storeImm64 stores a 64-bit zero-or-small constant to *(dst+off): the
// ST|DW|IMM instruction that asm.StoreImm refuses to build.
func storeImm64(dst asm.Register, off int, v int32) asm.Instruction {
	return memAt(asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Constant: int64(v)}, off)
}

// movImm loads a 64-bit constant into r.
func movImm(r asm.Register, v int64) asm.Instruction {
	if v >= -1<<31 && v < 1<<31 {
		return asm.Mov.Imm(r, int32(v))
	}
	return asm.LoadImm(r, v, asm.DWord)
}

// extend sign- or zero-extends the low size bytes of r to 64 bits.
func extend(r asm.Register, size int, signed bool) asm.Instructions {
	if size >= 8 || size <= 0 {
		return nil
	}
	shift := int32(64 - 8*size)
	if signed {
		return asm.Instructions{asm.LSh.Imm(r, shift), asm.ArSh.Imm(r, shift)}
	}
	return asm.Instructions{asm.LSh.Imm(r, shift), asm.RSh.Imm(r, shift)}
}

// scratchPtr sets r to the scratch area plus off.
func (f *fn) scratchPtr(r asm.Register, off int) {
	f.emit(asm.Mov.Reg(r, regScratch))
	if off != 0 {
		f.emit(asm.Add.Imm(r, int32(off)))
	}
}

// zero clears size bytes at *(base+off), where base is the scratch
// register or a map value pointer kept in R7.
func (f *fn) zero(base asm.Register, off, size int) {
	size = align8(size)
	if size <= 256 {
		for i := 0; i < size; i += 8 {
			f.emit(storeImm64(base, off+i, 0))
		}
		return
	}
	f.zerosMax = max(f.zerosMax, size)
	ok := f.label("zeros")
	f.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(ZerosMapName),
		asm.Mov.Reg(asm.R2, f.fp),
		asm.Add.Imm(asm.R2, slotZero),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, ok),
	)
	// The zeros map always has its entry; this path only calms the verifier.
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	f.place(ok)
	f.emit(
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Mov.Reg(asm.R1, base),
		asm.Add.Imm(asm.R1, int32(off)),
		asm.Mov.Imm(asm.R2, int32(size)),
		asm.FnProbeReadKernel.Call(),
	)
}

// copyMem copies size bytes from *(src+srcOff) to *(dst+dstOff). Both
// areas must be 8-aligned and hold align8(size) bytes. It clobbers R0-R5.
func (f *fn) copyMem(dst asm.Register, dstOff int, src asm.Register, srcOff int, size int) {
	size = align8(size)
	if size <= 256 {
		for i := 0; i < size; i += 8 {
			f.emit(
				memAt(asm.LoadMem(asm.R0, src, 0, asm.DWord), srcOff+i),
				memAt(asm.StoreMem(dst, 0, asm.R0, asm.DWord), dstOff+i),
			)
		}
		return
	}
	f.emit(
		asm.Mov.Reg(asm.R1, dst),
		asm.Add.Imm(asm.R1, int32(dstOff)),
		asm.Mov.Imm(asm.R2, int32(size)),
		asm.Mov.Reg(asm.R3, src),
		asm.Add.Imm(asm.R3, int32(srcOff)),
		asm.FnProbeReadKernel.Call(),
	)
}

// lookupZeroKey sets R0 to the value of entry 0 of the one-entry array
// map name, or NULL.
func (f *fn) lookupZeroKey(name string) {
	f.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(name),
		asm.Mov.Reg(asm.R2, f.fp),
		asm.Add.Imm(asm.R2, slotZero),
		asm.FnMapLookupElem.Call(),
	)
}

// incrementCounter atomically adds one to the u64 at byte offset off of
// the counters map's value (see DecodeCounters). The value's address is
// an instruction's immediate, filled in at load time: a map lookup here
// would be inlined by the verifier at each printf and map update, and
// that patching took most of the time to load a script of 2,000 printf
// statements. It clobbers R1 and R2.
func (f *fn) incrementCounter(off int) {
	f.emit(
		asm.LoadMapValue(asm.R1, 0, uint32(off)).WithReference(countersMapName),
		asm.Mov.Imm(asm.R2, 1),
		asm.AddAtomic.Mem(asm.R1, asm.R2, asm.DWord, 0),
	)
}
