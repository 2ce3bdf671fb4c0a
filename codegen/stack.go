package codegen

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// bpfFUserStack is BPF_F_USER_STACK: bpf_get_stackid walks the user stack.
const bpfFUserStack = 1 << 8

// StackMap is the key in Spec.Collection.Maps of the stack trace map
// (BPF_MAP_TYPE_STACK_TRACE) that holds the stacks of a ustack or kstack with
// frames frames: its values are frames u64 code addresses, the unused
// ones 0.
func StackMap(frames int) string { return fmt.Sprintf("stack_%d", frames) }

// ustack lowers ustack, ustack(N), ustack(perf[, N]) into R0 the way
// bpftrace packs it: the thread id in the high 32 bits (user stacks are
// per process because of ASLR, and the runtime symbolizes them with that
// process's memory map) and the id of the stack in StackMap(frames) in
// the low 32. The kernel walks the user stack by frame pointers. A kstack
// is the id alone, which is negative where the probe interrupted user
// code (no kernel stack).
func (f *fn) ustack(n lang.Node, t lang.Type) error {
	frames := t.StackFrames
	if frames <= 0 {
		return f.c.errorf(n, "ustack with %d frames", frames)
	}
	if !t.StackKernel && f.c.opts.StackUnwind == settings.UnwindEhFrame {
		return f.unwoundUstack(n, t)
	}
	name := StackMap(frames)
	f.c.spec.Collection.Maps[name] = &ebpf.MapSpec{
		Name:       kernelName("gt_" + name),
		Type:       ebpf.StackTrace,
		KeySize:    4,
		ValueSize:  uint32(8 * frames),
		MaxEntries: uint32(f.c.opts.MapKeysMax),
	}
	if t.StackKernel {
		f.emit(
			asm.Mov.Reg(asm.R1, regCtx),
			asm.LoadMapPtr(asm.R2, 0).WithReference(name),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnGetStackid.Call(),
			asm.Mov.Reg32(asm.R0, asm.R0),
		)
		return nil
	}
	f.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.LoadMapPtr(asm.R2, 0).WithReference(name),
		asm.Mov.Imm(asm.R3, bpfFUserStack),
		asm.FnGetStackid.Call(),
		asm.Mov.Reg32(asm.R7, asm.R0),
	)
	if err := f.currentPidTgid(n); err != nil {
		return err
	}
	f.emit(
		asm.LSh.Imm(asm.R0, 32),
		asm.Or.Reg(asm.R0, asm.R7),
	)
	return nil
}
