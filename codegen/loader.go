package codegen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// loaderProgramName is Spec.LoaderProgram's key.
const loaderProgramName = "loader"

// addLoaderProgram adds the program described at Spec.LoaderProgram. When
// the record cannot be written (a full control ring) it does not stop the
// process, as nothing would resume it: the objects just mapped are then
// searched at the next change, or never.
func (c *compiler) addLoaderProgram() {
	id := len(c.events)
	c.events = append(c.events, Event{Kind: EventLoad})
	insns := asm.Instructions{
		storeImm64(asm.RFP, slotZero, int32(id)),
		asm.LoadMapPtr(asm.R1, 0).WithReference(controlMapName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, slotZero),
		asm.Mov.Imm(asm.R3, 8),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.JNE.Imm(asm.R0, 0, "done"),
		asm.Mov.Imm(asm.R1, int32(unix.SIGSTOP)),
		asm.FnSendSignal.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("done"),
		asm.Return(),
	}
	c.spec.Collection.Programs[loaderProgramName] = &ebpf.ProgramSpec{
		Name:         "gt_loader",
		Type:         ebpf.Kprobe,
		License:      "GPL",
		Instructions: insns,
	}
	c.spec.LoaderProgram = loaderProgramName
}
