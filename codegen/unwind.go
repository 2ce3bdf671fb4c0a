package codegen

// This file lowers ustack under stack_unwind=eh_frame: the program walks
// the user stack itself, a frame per bpf_loop iteration, with the rules
// that runtime loads from each mapped file's .eh_frame (runtime/unwind
// builds them, runtime's unwindTables loads them). docs/design.md,
// "Unwinding without frame pointers", says why.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// The maps of the eh_frame walk, keys in Spec.Collection.Maps. The
// runtime fills the first three; the walk only reads them.
const (
	// UnwindFilesMap is an array of maps, one inner array of rows per
	// file (UnwindRow values), by table index.
	UnwindFilesMap = "uw_files"
	// UnwindRulesMap is the array of every file's distinct rules
	// (UnwindRule values), which rows index.
	UnwindRulesMap = "uw_rules"
	// UnwindProcsMap holds each process's executable mappings
	// (UnwindProcs values), by process id.
	UnwindProcsMap = "uw_procs"
	// UnwindStopsMap counts the walks that stopped early, by
	// UnwindStop.
	UnwindStopsMap = "uw_stops"
)

// Sizes of the eh_frame walk's tables.
const (
	// UnwindMaxFiles is how many files' tables the walk holds.
	UnwindMaxFiles = 1024
	// UnwindMaxRules is how many distinct rules all files may have: a
	// row holds a rule's index in 16 bits.
	UnwindMaxRules = 1 << 16
	// UnwindMaxMappings is how many executable mappings of one process
	// the walk searches (a power of two: the search masks its index).
	UnwindMaxMappings = 64
	// UnwindNoTable is the table index of a mapping whose file has no
	// table (no .eh_frame): the walk stops there, counted.
	UnwindNoTable = 0xffffffff
	// unwindSearchSteps bound the binary search of rows: enough for
	// 2^24 rows (bitcoind has 120,179).
	unwindSearchSteps = 24
	// bpfFInnerMap is BPF_F_INNER_MAP: the inner arrays of
	// UnwindFilesMap may differ in size.
	bpfFInnerMap = 1 << 12
	// bpfNoExist is BPF_NOEXIST: a stack's frames are stored once.
	bpfNoExist = 1
	// bpfFNoPrealloc is BPF_F_NO_PREALLOC: UnwindProcsMap's values are
	// 2 KiB, allocated per process traced, not for every possible key.
	bpfFNoPrealloc = 1
)

// UnwindRow is one row of a file's table, a u64: the ELF virtual address
// where the row starts, shifted left 16 bits, or'ed with the index of its
// rule in UnwindRulesMap.
func UnwindRow(addr uint64, rule uint16) uint64 { return addr<<16 | uint64(rule) }

// UnwindRule is a value of UnwindRulesMap: how to find the caller's frame.
// Reg is a runtime/unwind.Reg (1 CFA = rsp + CFAOffset, 2 CFA = rbp +
// CFAOffset, 3 PLT; anything else stops the walk); FPOffset is where the
// caller's rbp was saved relative to the CFA, 0 when it was not.
type UnwindRule struct {
	Reg                 uint8
	_                   [3]uint8
	CFAOffset, FPOffset int32
	RAOffset            int32
}

// UnwindMapping is one executable mapping in an UnwindProcs value: pc in
// [Start, End) is ELF virtual address pc - Bias of the file whose table is
// Table (UnwindNoTable: none), Rows rows long.
type UnwindMapping struct {
	Start, End, Bias uint64
	Table, Rows      uint32
}

// UnwindProcs is a value of UnwindProcsMap: the first N of Mappings, sorted
// by Start and not overlapping.
type UnwindProcs struct {
	N        uint32
	_        uint32
	Mappings [UnwindMaxMappings]UnwindMapping
}

// UnwindStop says why a walk stopped before the frames' limit or the
// outermost frame, the index of its counter in UnwindStopsMap.
type UnwindStop int

const (
	// UnwindStopNoProcess: the process's mappings are not loaded (yet:
	// the runtime loads them from its mapping records and /proc reads).
	UnwindStopNoProcess UnwindStop = iota
	// UnwindStopNoMapping: the address is in no executable file mapping
	// (JIT code, the vdso).
	UnwindStopNoMapping
	// UnwindStopNoTable: the file has no .eh_frame table.
	UnwindStopNoTable
	// UnwindStopUnsupported: the rule is one the walk cannot follow.
	UnwindStopUnsupported
	// UnwindStopRead: the return address could not be read.
	UnwindStopRead
	// UnwindStops is the number of counters.
	UnwindStops
)

// unwindState is the walk's state, after the frames in the per-CPU
// buffer (UnwindBufMap): the registers of the frame to step from, the
// hash of the frames so far, the process id, how many frames were
// stored, and the mapping's table and row count for the rows' lookup.
const (
	uwIP     = 0
	uwSP     = 8
	uwBP     = 16
	uwHash   = 24
	uwTgid   = 32
	uwDepth  = 40
	uwTable  = 48
	uwRows   = 52
	uwKey    = 56
	uwStateN = 64
)

// UnwindBufMap is the per-CPU buffer of a walk of up to frames frames: the
// frames, then the walk's state.
func UnwindBufMap(frames int) string { return fmt.Sprintf("uw_buf_%d", frames) }

// UnwoundStackMap is the key in Spec.Collection.Maps of the hash map that
// holds the frames of the user stacks walked with .eh_frame rules, up to
// frames frames: the id of a stack is the low 32 bits of its frames' hash,
// so equal stacks have one id, and two stacks whose hashes collide share
// the first one's frames (docs/design.md).
func UnwoundStackMap(frames int) string { return fmt.Sprintf("ustack_eh_%d", frames) }

// UserStackMap is the map that holds the frames of a user stack of frames
// frames under unwinder u.
func UserStackMap(frames int, u settings.StackUnwind) string {
	if u == settings.UnwindEhFrame {
		return UnwoundStackMap(frames)
	}
	return StackMap(frames)
}

// UnwindRowsSpec is the inner array of a file's rows rows (UnwindRow
// values) in UnwindFilesMap.
func UnwindRowsSpec(rows int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "gt_uw_rows", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(rows), Flags: bpfFInnerMap}
}

// declareUnwindMaps declares the maps the eh_frame walk of frames frames
// reads and writes.
func (c *compiler) declareUnwindMaps(frames int) {
	maps := c.spec.Collection.Maps
	maps[UnwindFilesMap] = &ebpf.MapSpec{
		Name: kernelName("gt_" + UnwindFilesMap), Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: UnwindMaxFiles,
		InnerMap: UnwindRowsSpec(1),
	}
	maps[UnwindRulesMap] = &ebpf.MapSpec{Name: kernelName("gt_" + UnwindRulesMap), Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: UnwindMaxRules}
	maps[UnwindProcsMap] = &ebpf.MapSpec{
		Name: kernelName("gt_" + UnwindProcsMap), Type: ebpf.Hash, KeySize: 4, ValueSize: 8 + 32*UnwindMaxMappings,
		MaxEntries: uint32(c.opts.MapKeysMax), Flags: bpfFNoPrealloc,
	}
	maps[UnwindStopsMap] = &ebpf.MapSpec{Name: kernelName("gt_" + UnwindStopsMap), Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(UnwindStops)}
	maps[UnwindBufMap(frames)] = &ebpf.MapSpec{Name: kernelName("gt_" + UnwindBufMap(frames)), Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(8*frames + uwStateN), MaxEntries: 1}
	maps[UnwoundStackMap(frames)] = &ebpf.MapSpec{
		Name: kernelName("gt_" + UnwoundStackMap(frames)), Type: ebpf.Hash, KeySize: 4, ValueSize: uint32(8 * frames), MaxEntries: uint32(c.opts.MapKeysMax),
	}
}

// unwoundUstack lowers a user stack of t.StackFrames frames walked with
// .eh_frame rules into R0, packed as ustack packs it (thread id << 32 |
// stack id): the registers of the probed code go into the per-CPU
// buffer's state, bpf_loop runs the step callback once per frame, and the
// frames are stored under their hash in UnwoundStackMap, unless a stack
// with that hash is there already.
func (f *fn) unwoundUstack(n lang.Node, t lang.Type) error {
	if ptregs.Native != ptregs.AMD64 {
		return f.c.errorf(n, "ustack with stack_unwind=eh_frame on %s: %w", ptregs.Native.Arch, ErrUnsupported)
	}
	frames := t.StackFrames
	f.c.declareUnwindMaps(frames)
	step, err := f.unwindStep(n, frames)
	if err != nil {
		return err
	}
	st := 8 * frames
	empty, store, done, end := f.label("uwempty"), f.label("uwstore"), f.label("uwdone"), f.label("uwend")
	f.lookupZeroKey(UnwindBufMap(frames))
	f.emit(
		asm.JEq.Imm(asm.R0, 0, empty),
		asm.Mov.Reg(asm.R7, asm.R0),
	)
	f.unwindRegisters(st)
	f.emit(
		storeImm64(asm.R7, st+uwHash, 0),
		storeImm64(asm.R7, st+uwDepth, 0),
	)
	if err := f.currentPidTgid(n); err != nil {
		return err
	}
	f.emit(
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R7, int16(st+uwTgid), asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R1, int32(frames)),
		funcPtr(asm.R2, step),
		// The callback's context is the zero key, with which it looks
		// the buffer up again.
		asm.Mov.Reg(asm.R3, f.fp),
		asm.Add.Imm(asm.R3, slotZero),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
		// A stack shorter than the limit ends with a 0 frame, as the
		// kernel's stack maps do.
		asm.LoadMem(asm.R1, asm.R7, int16(st+uwDepth), asm.DWord),
		asm.JGE.Imm(asm.R1, int32(frames), store),
		asm.LSh.Imm(asm.R1, 3),
		asm.Add.Reg(asm.R1, asm.R7),
		storeImm64(asm.R1, 0, 0),
	)
	f.place(store)
	f.lookup(UnwoundStackMap(frames), keyAt{asm.R7, st + uwHash})
	f.emit(
		asm.JNE.Imm(asm.R0, 0, done),
		asm.LoadMapPtr(asm.R1, 0).WithReference(UnwoundStackMap(frames)),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(st+uwHash)),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
	)
	f.place(done)
	if err := f.currentPidTgid(n); err != nil {
		return err
	}
	f.emit(
		asm.LSh.Imm(asm.R0, 32),
		asm.LoadMem(asm.R1, asm.R7, int16(st+uwHash), asm.Word),
		asm.Or.Reg(asm.R0, asm.R1),
		asm.Ja.Label(end),
	)
	f.place(empty)
	// No buffer (never: it is an array): an id no stack has.
	if err := f.currentPidTgid(n); err != nil {
		return err
	}
	f.emit(
		asm.LSh.Imm(asm.R0, 32),
		movImm(asm.R1, 0xffffffff),
		asm.Or.Reg(asm.R0, asm.R1),
	)
	f.place(end)
	return nil
}

// unwindRegisters stores the user registers the walk starts from (ip,
// sp, rbp) into the state of the buffer R7 points to, at st. A uprobe's
// context is the user's pt_regs; a perf event's (profile) starts with the
// interrupted registers, which are the user's only when it interrupted
// user code; elsewhere, and in kernel code, they are the task's user
// registers, bpf_task_pt_regs of the current task, as the kernel's own
// user stack walk takes them.
func (f *fn) unwindRegisters(st int) {
	regs := ptregs.Native
	copyRegs := func(from asm.Register) {
		for _, r := range []struct {
			member string
			at     int
		}{{regs.IP, uwIP}, {regs.SP, uwSP}, {"bp", uwBP}} {
			f.emit(
				memAt(asm.LoadMem(asm.R1, from, 0, asm.DWord), regs.Offset(r.member)),
				asm.StoreMem(asm.R7, int16(st+r.at), asm.R1, asm.DWord),
			)
		}
	}
	switch f.t.kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
		copyRegs(regCtx)
		return
	case lang.ProbeProfile, lang.ProbeSoftware, lang.ProbeHardware, lang.ProbeWatchpoint:
		kernel := f.label("uwkernel")
		done := f.label("uwregs")
		f.emit(
			memAt(asm.LoadMem(asm.R1, regCtx, 0, asm.DWord), regs.Offset(regs.Mode)),
			asm.And.Imm(asm.R1, regs.ModeMask),
			asm.JNE.Imm(asm.R1, regs.UserMode, kernel),
		)
		copyRegs(regCtx)
		f.emit(asm.Ja.Label(done))
		f.place(kernel)
		f.taskUserRegs()
		copyRegs(asm.R0)
		f.place(done)
		return
	}
	f.taskUserRegs()
	copyRegs(asm.R0)
}

// taskUserRegs sets R0 to the current task's user registers.
func (f *fn) taskUserRegs() {
	f.emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
	)
}

// unwindStep returns the symbol of the program's bpf_loop callback that
// walks one frame of a stack of up to frames frames, lowering it at its
// first use. Its context argument points to a zero u32, the key of the
// per-CPU buffer; it returns 1 to stop the walk.
//
// A step stores the frame's pc and adds it to the hash; finds the
// pc's mapping in the process's (binary search), the address in the
// file's rows (binary search) and its rule; computes the CFA from rsp or
// rbp; reads the return address at CFA-8 and the saved rbp where the rule
// says it was saved; and leaves the caller's registers in the state for
// the next step. A return address is looked up one byte before it, in
// the call instruction, whose rule is the caller's at the call.
func (f *fn) unwindStep(n lang.Node, frames int) (string, error) {
	if sym, ok := f.unwindSteps[frames]; ok {
		return sym, nil
	}
	sym := f.label("uwstep")
	if f.unwindSteps == nil {
		f.unwindSteps = map[int]string{}
	}
	f.unwindSteps[frames] = sym
	st := int16(8 * frames)
	stop := f.label("uwstop")
	stops := make([]string, UnwindStops)
	for i := range stops {
		stops[i] = f.label("uwcount")
	}
	err := f.callback(n, sym, nil, func() error {
		adjusted := f.label("uwpc")
		f.emit(
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMapPtr(asm.R1, 0).WithReference(UnwindBufMap(frames)),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, stop),
			asm.Mov.Reg(asm.R9, asm.R0),
			asm.JGE.Imm(asm.R6, int32(frames), stop),
			asm.LoadMem(asm.R7, asm.R9, st+uwIP, asm.DWord),
			asm.JEq.Imm(asm.R7, 0, stop),
			// frames[index] = pc; depth = index + 1.
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.LSh.Imm(asm.R1, 3),
			asm.Add.Reg(asm.R1, asm.R9),
			asm.StoreMem(asm.R1, 0, asm.R7, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R9, st+uwDepth, asm.R1, asm.DWord),
			// hash = mix(hash ^ pc): a multiply by the golden ratio and
			// a fold of its high bits.
			asm.LoadMem(asm.R1, asm.R9, st+uwHash, asm.DWord),
			asm.Xor.Reg(asm.R1, asm.R7),
			asm.Mul.Imm(asm.R1, -0x61c88647),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.RSh.Imm(asm.R2, 29),
			asm.Xor.Reg(asm.R1, asm.R2),
			asm.StoreMem(asm.R9, st+uwHash, asm.R1, asm.DWord),
			asm.Mov.Reg(asm.R8, asm.R7),
			asm.JEq.Imm(asm.R6, 0, adjusted),
			asm.Sub.Imm(asm.R8, 1),
		)
		f.place(adjusted)
		f.unwindFindMapping(st, stops)
		f.unwindFindRule(st, stop, stops)
		f.unwindStepFrame(st, stop, stops)
		f.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		for reason, l := range stops {
			f.place(l)
			f.emit(storeImm64(asm.R9, int(st+uwKey), int32(reason)))
			f.lookup(UnwindStopsMap, keyAt{asm.R9, int(st + uwKey)})
			f.emit(
				asm.JEq.Imm(asm.R0, 0, stop),
				asm.Mov.Imm(asm.R1, 1),
				asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
				asm.Ja.Label(stop),
			)
		}
		f.place(stop)
		f.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
		return nil
	})
	return sym, err
}

// unwindFindMapping finds the mapping of the address in R8 among the
// process's (R9 the buffer, st its state) and leaves in R8 the address
// in the file, and the file's table index and row count in the state.
func (f *fn) unwindFindMapping(st int16, stops []string) {
	const mask = UnwindMaxMappings - 1
	found := f.label("uwmapping")
	f.lookup(UnwindProcsMap, keyAt{asm.R9, int(st + uwTgid)})
	f.emit(
		asm.JEq.Imm(asm.R0, 0, stops[UnwindStopNoProcess]),
		asm.LoadMem(asm.R3, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R3, 0, stops[UnwindStopNoProcess]),
		asm.Mov.Imm(asm.R2, 0),
	)
	// The last mapping that starts at or below the address: lo's start
	// is at or below it, hi's above (or hi is past the end).
	for range bitsFor(UnwindMaxMappings) + 1 {
		high, next := f.label("uwmhi"), f.label("uwmnext")
		f.emit(
			asm.Mov.Reg(asm.R4, asm.R3),
			asm.Sub.Reg(asm.R4, asm.R2),
			asm.JLE.Imm(asm.R4, 1, found),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Reg(asm.R4, asm.R3),
			asm.RSh.Imm(asm.R4, 1),
			asm.Mov.Reg(asm.R5, asm.R4),
			asm.And.Imm(asm.R5, mask),
			asm.LSh.Imm(asm.R5, 5),
			asm.Add.Reg(asm.R5, asm.R0),
			asm.LoadMem(asm.R5, asm.R5, 8, asm.DWord),
			asm.JGT.Reg(asm.R5, asm.R8, high),
			asm.Mov.Reg(asm.R2, asm.R4),
			asm.Ja.Label(next),
		)
		f.place(high)
		f.emit(asm.Mov.Reg(asm.R3, asm.R4))
		f.place(next)
	}
	f.place(found)
	f.emit(
		asm.And.Imm(asm.R2, mask),
		asm.LSh.Imm(asm.R2, 5),
		asm.Add.Reg(asm.R2, asm.R0),
		asm.LoadMem(asm.R1, asm.R2, 8, asm.DWord),
		asm.JGT.Reg(asm.R1, asm.R8, stops[UnwindStopNoMapping]),
		asm.LoadMem(asm.R1, asm.R2, 16, asm.DWord),
		asm.JGE.Reg(asm.R8, asm.R1, stops[UnwindStopNoMapping]),
		asm.LoadMem(asm.R1, asm.R2, 24, asm.DWord),
		asm.Sub.Reg(asm.R8, asm.R1),
		asm.LoadMem(asm.R1, asm.R2, 32, asm.Word),
		asm.JEq.Imm32(asm.R1, -1, stops[UnwindStopNoTable]),
		asm.StoreMem(asm.R9, st+uwTable, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R2, 36, asm.Word),
		asm.JEq.Imm(asm.R1, 0, stops[UnwindStopNoTable]),
		asm.StoreMem(asm.R9, st+uwRows, asm.R1, asm.Word),
	)
}

// unwindFindRule finds the row of the file address in R8 in the file's
// table (binary search, the upper bound kept in the state's row count)
// and leaves its rule's value in R0. It stops the walk where no row
// covers the address.
func (f *fn) unwindFindRule(st int16, stop string, stops []string) {
	found := f.label("uwrow")
	// row loads into R1 the row whose index the state's key holds.
	row := func() {
		f.emit(
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Reg(asm.R2, asm.R9),
			asm.Add.Imm(asm.R2, int32(st+uwKey)),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, stops[UnwindStopNoTable]),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		)
	}
	f.lookup(UnwindFilesMap, keyAt{asm.R9, int(st + uwTable)})
	f.emit(
		asm.JEq.Imm(asm.R0, 0, stops[UnwindStopNoTable]),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.Mov.Imm(asm.R7, 0),
	)
	for range unwindSearchSteps {
		high, next := f.label("uwrhi"), f.label("uwrnext")
		f.emit(
			asm.LoadMem(asm.R1, asm.R9, st+uwRows, asm.Word),
			asm.Sub.Reg(asm.R1, asm.R7),
			asm.JLE.Imm(asm.R1, 1, found),
			asm.LoadMem(asm.R1, asm.R9, st+uwRows, asm.Word),
			asm.Add.Reg(asm.R1, asm.R7),
			asm.RSh.Imm(asm.R1, 1),
			asm.StoreMem(asm.R9, st+uwKey, asm.R1, asm.Word),
		)
		row()
		f.emit(
			asm.RSh.Imm(asm.R1, 16),
			asm.LoadMem(asm.R2, asm.R9, st+uwKey, asm.Word),
			asm.JGT.Reg(asm.R1, asm.R8, high),
			asm.Mov.Reg(asm.R7, asm.R2),
			asm.Ja.Label(next),
		)
		f.place(high)
		f.emit(asm.StoreMem(asm.R9, st+uwRows, asm.R2, asm.Word))
		f.place(next)
	}
	f.place(found)
	f.emit(asm.StoreMem(asm.R9, st+uwKey, asm.R7, asm.Word))
	row()
	f.emit(
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 16),
		// Below the first row: no FDE, the outermost frame.
		asm.JGT.Reg(asm.R2, asm.R8, stop),
		asm.And.Imm(asm.R1, 0xffff),
		asm.StoreMem(asm.R9, st+uwKey, asm.R1, asm.Word),
	)
	f.lookup(UnwindRulesMap, keyAt{asm.R9, int(st + uwKey)})
	f.emit(asm.JEq.Imm(asm.R0, 0, stops[UnwindStopUnsupported]))
}

// unwindStepFrame applies the rule R0 points to: the CFA into R7 from
// rsp or rbp, then the return address (CFA-8) into the state's ip, the
// saved rbp into its bp where the rule says one was saved, and the CFA
// into its sp.
func (f *fn) unwindStepFrame(st int16, stop string, stops []string) {
	fromSP, fromFP, plt, cfa, noFP := f.label("uwsp"), f.label("uwfp"), f.label("uwplt"), f.label("uwcfa"), f.label("uwnofp")
	f.emit(
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Byte),
		asm.LoadMem(asm.R2, asm.R0, 4, asm.Word),
	)
	f.emit(extend(asm.R2, 4, true)...)
	f.emit(
		asm.LoadMem(asm.R3, asm.R0, 8, asm.Word),
		asm.StoreMem(asm.R9, st+uwKey, asm.R3, asm.Word),
		asm.JEq.Imm(asm.R1, 0, stop),
		asm.JEq.Imm(asm.R1, 1, fromSP),
		asm.JEq.Imm(asm.R1, 2, fromFP),
		asm.JEq.Imm(asm.R1, 3, plt),
		asm.Ja.Label(stops[UnwindStopUnsupported]),
	)
	f.place(fromSP)
	f.emit(
		asm.LoadMem(asm.R7, asm.R9, st+uwSP, asm.DWord),
		asm.Add.Reg(asm.R7, asm.R2),
		asm.Ja.Label(cfa),
	)
	f.place(fromFP)
	f.emit(
		asm.LoadMem(asm.R7, asm.R9, st+uwBP, asm.DWord),
		asm.Add.Reg(asm.R7, asm.R2),
		asm.Ja.Label(cfa),
	)
	// A PLT entry pushes once, after its 11th byte.
	f.place(plt)
	f.emit(
		asm.LoadMem(asm.R7, asm.R9, st+uwSP, asm.DWord),
		asm.Add.Imm(asm.R7, 8),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, 15),
		asm.JLT.Imm(asm.R1, 11, cfa),
		asm.Add.Imm(asm.R7, 8),
	)
	f.place(cfa)
	f.emit(
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, int32(st+uwIP)),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Sub.Imm(asm.R3, 8),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, stops[UnwindStopRead]),
		asm.LoadMem(asm.R3, asm.R9, st+uwKey, asm.Word),
	)
	f.emit(extend(asm.R3, 4, true)...)
	f.emit(
		asm.JEq.Imm(asm.R3, 0, noFP),
		asm.Add.Reg(asm.R3, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, int32(st+uwBP)),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadUser.Call(),
	)
	f.place(noFP)
	f.emit(asm.StoreMem(asm.R9, st+uwSP, asm.R7, asm.DWord))
}

// bitsFor returns how many bits index n values: log2 of a power of two.
func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// unwoundStackLen lowers len(s) of a user stack walked with .eh_frame
// rules: its frames are stored in UnwoundStackMap under the id in s's low
// 32 bits, which the program can read (a stack trace map it cannot), so
// they are counted up to the first 0, which ends a stack shorter than its
// limit, or the limit. An id with no stored stack (the map was full) has
// length 0. Counting what is stored, rather than walking again, gives the
// length of the stack s holds, whenever it was walked.
func (f *fn) unwoundStackLen(s lang.Expr, t lang.Type) error {
	frames := t.StackFrames
	if err := f.intExpr(s); err != nil {
		return err
	}
	key, err := f.pushSlot(s)
	if err != nil {
		return err
	}
	defer f.popSlot()
	zero, done := f.label("uwlenzero"), f.label("uwlen")
	f.emit(asm.StoreMem(f.fp, key, asm.R0, asm.Word))
	f.lookup(UnwoundStackMap(frames), keyAt{f.fp, int(key)})
	f.emit(
		asm.JEq.Imm(asm.R0, 0, zero),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R0, 0),
	)
	for i := range frames {
		f.emit(
			asm.LoadMem(asm.R2, asm.R1, int16(8*i), asm.DWord),
			asm.JEq.Imm(asm.R2, 0, done),
			asm.Add.Imm(asm.R0, 1),
		)
	}
	f.emit(asm.Ja.Label(done))
	f.place(zero)
	f.emit(asm.Mov.Imm(asm.R0, 0))
	f.place(done)
	return nil
}
