package codegen

// The family filter of a -c trace. A command such as "sh -c ./prog" or
// "runuser -u bitcoin -- ./bitcoind" runs the traced program in a process
// it starts; attaching the probes for each such process once it is seen
// (polling /proc) left a window in which its first hits were lost. So the
// probes of a -c trace are attached for every process, and each usdt,
// uprobe and uretprobe program begins by asking whether the current
// process is one of the command's family: a hash map of PIDs, which a
// sched_process_fork program grows (a child of a member is a member) and
// a sched_process_exit program shrinks. The runtime puts the command's
// own PID in before the command leaves its gate, so the family is known
// in the kernel before any of it runs.

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// FamilyMaxProcs is how many processes and threads of a -c command's
// family the kernel keeps at once (a thread is kept by its thread id, as
// sched_process_fork does not say whether the new task is a thread). A
// child forked while the map is full is not added: its hits are not
// counted, and the fork program counts it (FamilyStats), which the runtime
// reports.
const FamilyMaxProcs = 16384

// The keys of the family's maps in Collection.Maps and programs in
// Collection.Programs.
const (
	familyMapName      = "family"
	familyStatsMapName = "family_stats"
	familyForkProgram  = "family_fork"
	familyExitProgram  = "family_exit"
)

// The layout of the family statistics map's one value: the children that
// could not be added, then whether a filtered program has let a hit of the
// family through.
const (
	// FamilyDroppedOffset is the u64 count of children not added because
	// the family map was full.
	FamilyDroppedOffset = 0
	// FamilyHitOffset is a u64 set to 1 by the first hit that passed the
	// filter.
	FamilyHitOffset = 8
	familyStatsSize = 16
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
	// Map is the hash map of the family's PIDs (u32 key, u32 value), into
	// which the runtime puts the command's PID.
	Map string
	// Stats is the one-entry array of FamilyDroppedOffset and
	// FamilyHitOffset.
	Stats string
	// Fork and Exit are the programs to attach to the sched_process_fork
	// and sched_process_exit tracepoints; "" in a Spec that extends
	// another, whose programs keep the family.
	Fork, Exit string
}

// addFamily declares the family's maps and, unless the Spec extends one
// that has them, its two tracepoint programs.
func (c *compiler) addFamily(rec FamilyRecords) {
	ms := c.spec.Collection.Maps
	ms[familyMapName] = &ebpf.MapSpec{Name: "gt_family", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: FamilyMaxProcs}
	ms[familyStatsMapName] = &ebpf.MapSpec{Name: "gt_family_stats", Type: ebpf.Array, KeySize: 4, ValueSize: familyStatsSize, MaxEntries: 1}
	c.spec.Family = &FamilySpec{Map: familyMapName, Stats: familyStatsMapName}
	if c.opts.Extends != nil {
		return
	}
	progs := c.spec.Collection.Programs
	progs[familyForkProgram] = familyProgram("gt_family_fork", familyForkInsns(rec))
	progs[familyExitProgram] = familyProgram("gt_family_exit", familyExitInsns(rec))
	c.spec.Family.Fork, c.spec.Family.Exit = familyForkProgram, familyExitProgram
}

// familyProgram is a tracepoint program of the family.
func familyProgram(name string, insns asm.Instructions) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{Name: name, Type: ebpf.TracePoint, License: "GPL", Instructions: insns}
}

// The family programs' stack: a u32 key and a u32 value.
const (
	familyKeySlot   = -8
	familyValueSlot = -4
)

// familyForkInsns adds the child of a family member to the family. The
// program runs in the parent, so the current tgid is the parent process
// whichever of its threads forked.
func familyForkInsns(rec FamilyRecords) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	insns = append(insns, familyLookup(asm.RFP, familyKeySlot)...)
	return append(insns,
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R6, int16(rec.ChildPID), asm.Word),
		asm.StoreMem(asm.RFP, familyKeySlot, asm.R1, asm.Word),
		asm.StoreImm(asm.RFP, familyValueSlot, 1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(familyMapName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, familyKeySlot),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, familyValueSlot),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateAny)),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		// The map is full: the child is not traced, and that is counted.
		asm.LoadMapValue(asm.R1, 0, FamilyDroppedOffset).WithReference(familyStatsMapName),
		asm.Mov.Imm(asm.R2, 1),
		asm.AddAtomic.Mem(asm.R1, asm.R2, asm.DWord, 0),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// familyLookup looks the current tgid up in the family map, leaving the
// value's address (or 0) in R0 and the tgid as the u32 at fp+slot.
func familyLookup(fp asm.Register, slot int16) asm.Instructions {
	return asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(fp, slot, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(familyMapName),
		asm.Mov.Reg(asm.R2, fp),
		asm.Add.Imm(asm.R2, int32(slot)),
		asm.FnMapLookupElem.Call(),
	}
}

// familyExitInsns removes an exiting thread's own key (a thread other than
// the main one was added by its id when it was created) and, when the
// process is gone, the process's: a PID taken again by another process
// must not be found in the family.
func familyExitInsns(rec FamilyRecords) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.RSh.Imm(asm.R7, 32),
		asm.Mov.Reg32(asm.R8, asm.R0),
		asm.JEq.Reg(asm.R8, asm.R7, "main"),
		asm.StoreMem(asm.RFP, familyKeySlot, asm.R8, asm.Word),
	}
	insns = append(insns, familyDelete()...)
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
	insns = append(insns, asm.StoreMem(asm.RFP, familyKeySlot, asm.R7, asm.Word))
	insns = append(insns, familyDelete()...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// familyDelete deletes the key in the key slot from the family map.
func familyDelete() asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(familyMapName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, familyKeySlot),
		asm.FnMapDeleteElem.Call(),
	}
}

// familyFilter begins a usdt, uprobe or uretprobe program of a -c trace:
// it returns at once unless the current process is of the command's
// family, and otherwise notes that the family was hit (once: after the
// first hit the flag is only read). It uses the counters' key slot, free
// at this point of the program.
func (f *fn) familyFilter() {
	if f.c.opts.Family == nil {
		return
	}
	switch f.t.kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
	default:
		return
	}
	hit := f.label("family_hit")
	f.emit(familyLookup(f.fp, slotIndex)...)
	f.returnUnless(asm.JNE, 0)
	f.emit(
		asm.LoadMapValue(asm.R1, 0, FamilyHitOffset).WithReference(familyStatsMapName),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord),
		asm.JNE.Imm(asm.R2, 0, hit),
		storeImm64(asm.R1, 0, 1),
	)
	f.place(hit)
}
