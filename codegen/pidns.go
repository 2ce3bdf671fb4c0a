package codegen

// The process and thread ids programs read: the kernel's, or those of
// gotrace's PID namespace when it runs in one of its own (a container).

import (
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// PIDNamespace is gotrace's PID namespace, named by the device and inode
// of its nsfs file (/proc/self/ns/pid), in which pid, tid and the ids
// stored with user stacks are read when gotrace runs in a PID namespace
// of its own. There the kernel's ids name no process gotrace can see:
// cpid, -p, /proc and the symbols of a stack are all in its namespace's
// numbers.
type PIDNamespace struct {
	Dev, Ino uint64
}

// currentPidTgid leaves in R0 what bpf_get_current_pid_tgid returns, the
// current thread's process id in the upper 32 bits and its thread id in
// the lower: with Options.PIDNamespace, as that namespace numbers them
// (bpf_get_ns_current_pid_tgid), and 0 for a thread outside it. It
// clobbers R1-R5.
func (f *fn) currentPidTgid(n lang.Node) error {
	ns := f.c.opts.PIDNamespace
	if ns == nil {
		f.emit(asm.FnGetCurrentPidTgid.Call())
		return nil
	}
	// struct bpf_pidns_info { u32 pid; u32 tgid; }: read as one u64, the
	// same layout as bpf_get_current_pid_tgid's.
	info, err := f.pushSlot(n)
	if err != nil {
		return err
	}
	defer f.popSlot()
	found, done := f.label("nspid"), f.label("nspiddone")
	f.emit(nsPidTgid(*ns, f.fp, info)...)
	f.emit(
		asm.JEq.Imm(asm.R0, 0, found),
		// Not in the namespace (or not a task): no id there.
		asm.Mov.Imm(asm.R0, 0),
		asm.Ja.Label(done),
	)
	f.place(found)
	f.emit(asm.LoadMem(asm.R0, f.fp, info, asm.DWord))
	f.place(done)
	return nil
}

// nsPidTgid calls bpf_get_ns_current_pid_tgid for namespace ns, its
// struct bpf_pidns_info { u32 pid; u32 tgid; } written at fp+off: R0 is 0
// when the current thread is in ns. It clobbers R1-R5.
func nsPidTgid(ns PIDNamespace, fp asm.Register, off int16) asm.Instructions {
	return asm.Instructions{
		movImm(asm.R1, int64(ns.Dev)),
		movImm(asm.R2, int64(ns.Ino)),
		asm.Mov.Reg(asm.R3, fp),
		asm.Add.Imm(asm.R3, int32(off)),
		asm.Mov.Imm(asm.R4, 8),
		asm.FnGetNsCurrentPidTgid.Call(),
	}
}
