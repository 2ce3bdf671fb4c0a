package codegen

// The family filter of a -c trace. A command such as "sh -c ./prog" or
// "runuser -u bitcoin -- ./bitcoind" runs the traced program in a process
// it starts; attaching the probes for each such process once it is seen
// (polling /proc) left a window in which its first hits were lost. So the
// probes of a -c trace are attached for every process, and each usdt,
// uprobe and uretprobe program begins by asking whether the current
// process is one of the command's family: a bit per PID, which a
// sched_process_fork program sets (a child of a member is a member) and a
// sched_process_exit program clears. The runtime sets the command's own
// PID before the command leaves its gate, so the family is known in the
// kernel before any of it runs. The bits are the kernel's PIDs: where
// gotrace runs in a PID namespace of its own (a container), the PID it
// knows its command by is not one, and a sched_process_exec program adds
// the command by the kernel's PID when it leaves its gate (its exec),
// before any of its code runs.
//
// The family is a bitmap, not a hash map of PIDs: on the AMD VMs a hash
// lookup (two function calls, each paying the return-thunk mitigation)
// made the program of an empty probe body run 223 ns instead of 76; the
// bitmap is one load at an offset from an address the loader writes into
// the instruction. It covers every PID the kernel can give (PID_MAX_LIMIT,
// 2^22, in 512 KiB), so it never fills.

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// FamilyPIDLimit bounds the PIDs the family bitmap holds: the kernel's
// PID_MAX_LIMIT on 64-bit systems, above any pid_max.
const FamilyPIDLimit = 1 << 22

// FamilyBitmapBytes is the size of the family map's one value: a bit per
// PID, bit pid%32 of the native-endian u32 at byte 4*(pid/32).
const FamilyBitmapBytes = FamilyPIDLimit / 8

// The keys of the family's maps in Collection.Maps and programs in
// Collection.Programs.
const (
	familyMapName      = "family"
	familyStatsMapName = "family_stats"
	familyForkProgram  = "family_fork"
	familyExitProgram  = "family_exit"
	familySeedProgram  = "family_seed"
)

// FamilyRecords says where the fields the family programs read lie in
// the records of this kernel's tracepoints (their tracefs format files):
// the layouts changed between kernels.
type FamilyRecords struct {
	// ChildPID is the offset of sched_process_fork's child_pid.
	ChildPID int
	// GroupDead is the offset of sched_process_exit's group_dead (true
	// when the last thread of a process exits), or -1 where the kernel's
	// record has none: the process is then taken to be gone when its
	// main thread exits.
	GroupDead int
}

// FamilySpec names the maps and programs of the family filter in the
// Spec's Collection.
type FamilySpec struct {
	// Map is the one-entry array whose value is the family's bitmap
	// (FamilyBitmapBytes), in which the runtime sets the command's PID.
	Map string
	// Stats is a one-entry u64 array set to 1 by the first hit that
	// passed the filter.
	Stats string
	// Fork and Exit are the programs to attach to the sched_process_fork
	// and sched_process_exit tracepoints; "" in a Spec that extends
	// another, whose programs keep the family.
	Fork, Exit string
	// Seed, in gotrace's PID namespace of its own (Options.PIDNamespace),
	// is the program to attach to sched_process_exec that adds the
	// command (Options.ChildPID, as the namespace numbers it) by the
	// kernel's PID when it execs; the runtime then sets no bit itself.
	// "" outside one, and in a Spec that extends another.
	Seed string
}

// addFamily declares the family's maps and, unless the Spec extends one
// that has them, its tracepoint programs: two, and the seed in a PID
// namespace of gotrace's own.
func (c *compiler) addFamily(rec FamilyRecords) {
	ms := c.spec.Collection.Maps
	ms[familyMapName] = &ebpf.MapSpec{Name: "gt_family", Type: ebpf.Array, KeySize: 4, ValueSize: FamilyBitmapBytes, MaxEntries: 1}
	ms[familyStatsMapName] = &ebpf.MapSpec{Name: "gt_family_hit", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	c.spec.Family = &FamilySpec{Map: familyMapName, Stats: familyStatsMapName}
	if c.opts.Extends != nil {
		return
	}
	progs := c.spec.Collection.Programs
	progs[familyForkProgram] = familyProgram("gt_family_fork", familyForkInsns(rec))
	progs[familyExitProgram] = familyProgram("gt_family_exit", familyExitInsns(rec))
	c.spec.Family.Fork, c.spec.Family.Exit = familyForkProgram, familyExitProgram
	if ns := c.opts.PIDNamespace; ns != nil {
		progs[familySeedProgram] = familyProgram("gt_family_seed", familySeedInsns(*ns, c.opts.ChildPID))
		c.spec.Family.Seed = familySeedProgram
	}
}

// familyProgram is a tracepoint program of the family.
func familyProgram(name string, insns asm.Instructions) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{Name: name, Type: ebpf.TracePoint, License: "GPL", Instructions: insns}
}

// familyWord points word at the bitmap's u32 that holds pid's bit and
// leaves the bit's index in pid. The mask keeps the verifier's bounds
// within the value; it changes no PID the kernel gives.
func familyWord(pid, word asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R5, pid),
		asm.RSh.Imm(asm.R5, 5),
		asm.And.Imm(asm.R5, FamilyPIDLimit/32-1),
		asm.LSh.Imm(asm.R5, 2),
		asm.LoadMapValue(word, 0, 0).WithReference(familyMapName),
		asm.Add.Reg(word, asm.R5),
		asm.And.Imm(pid, 31),
	}
}

// familyTest leaves in R1 pid's bit of the family (0 or 1). It clobbers
// R2 and R5, and pid.
func familyTest(pid asm.Register) asm.Instructions {
	insns := familyWord(pid, asm.R2)
	return append(insns,
		asm.LoadMem(asm.R1, asm.R2, 0, asm.Word),
		asm.RSh.Reg(asm.R1, pid),
		asm.And.Imm(asm.R1, 1),
	)
}

// familyCurrent leaves in R1 the current process's bit of the family.
func familyCurrent() asm.Instructions {
	insns := asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
	}
	return append(insns, familyTest(asm.R0)...)
}

// familyChange sets (with asm.OrAtomic) or clears (asm.AndAtomic) pid's
// bit of the family, atomically: members on other CPUs fork and exit at
// the same time. It clobbers R2, R3 and R5, and pid.
func familyChange(pid asm.Register, op asm.AtomicOp) asm.Instructions {
	insns := familyWord(pid, asm.R2)
	insns = append(insns,
		asm.Mov.Imm(asm.R3, 1),
		asm.LSh.Reg(asm.R3, pid),
	)
	if op == asm.AndAtomic {
		insns = append(insns, asm.Xor.Imm(asm.R3, -1))
	}
	return append(insns, atomicMem(op, asm.R2, asm.R3, asm.Word))
}

// atomicMem is op.Mem(dst, src, size, 0) as the kernel must receive it.
// cilium/ebpf v0.22 encodes the operation of an atomic instruction into
// its immediate after it has read the immediate to write, so every atomic
// operation reached the kernel as an add (bpftool's translated listing
// showed the AND that clears a family bit as "atomic add"); the operation
// is therefore also given as the instruction's constant, where the kernel
// reads it.
func atomicMem(op asm.AtomicOp, dst, src asm.Register, size asm.Size) asm.Instruction {
	ins := op.Mem(dst, src, size, 0)
	ins.Constant = int64(op >> 8)
	return ins
}

// familyForkInsns adds the child of a family member to the family. The
// program runs in the parent, so the current tgid is the parent process
// whichever of its threads forked. A new thread's id is added too (the
// record does not tell a thread from a process); its exit clears it.
func familyForkInsns(rec FamilyRecords) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	insns = append(insns, familyCurrent()...)
	insns = append(insns,
		asm.JEq.Imm(asm.R1, 0, "out"),
		asm.LoadMem(asm.R0, asm.R6, int16(rec.ChildPID), asm.Word),
	)
	insns = append(insns, familyChange(asm.R0, asm.OrAtomic)...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// familySeedInsns adds the process that execs, by the kernel's PID, when
// namespace ns numbers it child: the -c command leaving its gate. A
// process outside ns, or another of its processes, changes nothing.
func familySeedInsns(ns PIDNamespace, child uint32) asm.Instructions {
	// struct bpf_pidns_info on the stack: its tgid at info+4.
	const info = -8
	insns := nsPidTgid(ns, asm.RFP, info)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R0, asm.RFP, info+4, asm.Word),
		asm.JNE.Imm(asm.R0, int32(child), "out"),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
	)
	insns = append(insns, familyChange(asm.R0, asm.OrAtomic)...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// familyExitInsns clears an exiting thread's own bit (a thread other than
// the main one was added by its id when it was created) and, when the
// process is gone, the process's: a PID taken again by another process
// must not be found in the family.
func familyExitInsns(rec FamilyRecords) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.RSh.Imm(asm.R7, 32),
		asm.Mov.Reg32(asm.R0, asm.R0),
		asm.JEq.Reg(asm.R0, asm.R7, "main"),
	}
	insns = append(insns, familyChange(asm.R0, asm.AndAtomic)...)
	if rec.GroupDead >= 0 {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R6, int16(rec.GroupDead), asm.Byte).WithSymbol("main"),
			asm.JEq.Imm(asm.R1, 0, "out"),
		)
	} else {
		// Without group_dead, the main thread's exit ends the process;
		// another thread's does not.
		insns = append(insns,
			asm.Ja.Label("out"),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("main"),
		)
	}
	insns = append(insns, familyChange(asm.R7, asm.AndAtomic)...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// familyFilter begins a usdt, uprobe or uretprobe program of a -c trace:
// it returns at once unless the current process is of the command's
// family, and otherwise notes that the family was hit (once: after the
// first hit the flag is only read).
func (f *fn) familyFilter() {
	if f.c.opts.Family == nil {
		return
	}
	switch f.t.kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
	default:
		return
	}
	f.emit(familyCurrent()...)
	f.emit(asm.Mov.Reg(asm.R0, asm.R1))
	f.returnUnless(asm.JNE, 0)
	hit := f.label("family_hit")
	f.emit(
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(familyStatsMapName),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord),
		asm.JNE.Imm(asm.R2, 0, hit),
		storeImm64(asm.R1, 0, 1),
	)
	f.place(hit)
}
