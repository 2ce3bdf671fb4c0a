package codegen

import (
	"math"

	"github.com/cilium/ebpf/asm"
)

// shortenLongJumps turns each long jump of insns (BPF_JMP32 | BPF_JA,
// "gotol", a 32-bit offset) whose target is within a 16-bit offset into
// the classic jump (BPF_JMP | BPF_JA). Code generation emits long jumps
// around if and while bodies because an unrolled body can be longer than
// 32767 instructions; but kernels before 6.6 do not know the long form:
// arm64's JIT in Debian 12's 6.1 refuses it ("bpf_jit: unknown opcode
// 06") and the program does not load. Both forms are one instruction, so
// changing one moves no other, and only programs that need a long jump
// keep one (those need 6.6). The jump keeps its reference: the loader
// fills in the offset.
func shortenLongJumps(insns asm.Instructions) {
	at := map[string]int{}
	offsets := make([]int, len(insns))
	off := 0
	for i, ins := range insns {
		offsets[i] = off
		if sym := ins.Symbol(); sym != "" {
			at[sym] = off
		}
		off += int(ins.Size() / asm.InstructionSize)
	}
	for i, ins := range insns {
		if !isLongJump(ins) || ins.Reference() == "" {
			continue
		}
		target, ok := at[ins.Reference()]
		if !ok {
			continue
		}
		if d := target - offsets[i] - 1; d < math.MinInt16 || d > math.MaxInt16 {
			continue
		}
		insns[i].OpCode = asm.Ja.Op(asm.ImmSource)
		insns[i].Offset = -1
		insns[i].Constant = 0
	}
}

// isLongJump reports whether ins is a jump with a 32-bit offset.
func isLongJump(ins asm.Instruction) bool {
	return ins.OpCode.Class() == asm.Jump32Class && ins.OpCode.JumpOp() == asm.Ja
}
