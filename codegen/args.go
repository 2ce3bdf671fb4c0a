package codegen

import (
	"fmt"
	"math/bits"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/usdt"
)

// arg lowers argN into R0.
func (f *fn) arg(e *lang.Builtin, n int) error {
	switch f.t.kind {
	case lang.ProbeUprobe, lang.ProbeKprobe:
		off, ok := ptregs.ArgOffset(n)
		if !ok {
			return f.c.errorf(e, "%s: %ss read arg0 to arg%d", e.Name, f.t.kind, len(ptregs.Args)-1)
		}
		f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), off))
		return nil
	case lang.ProbeUSDT:
	default:
		return f.c.errorf(e, "%s is not available in %s", e.Name, f.t.probeName)
	}
	for _, l := range f.t.layouts {
		if n < len(l.args) {
			continue
		}
		if l.argsErr != nil {
			return f.c.errorf(e, "%s: probe %s: %w", e.Name, f.t.probeName, l.argsErr)
		}
		return f.c.errorf(e, "%s: probe %s has only %d arguments", e.Name, f.t.probeName, len(l.args))
	}
	slot, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	if len(f.t.layouts) == 1 {
		l := f.t.layouts[0]
		insns, err := loadUSDTArg(regCtx, l.args[n], l.pc, f.fp, slot)
		if err != nil {
			return f.c.errorf(e, "%s of %s: %w", e.Name, f.t.probeName, err)
		}
		f.emit(insns...)
		return nil
	}
	// Several layouts: the attach cookie says which one this site uses.
	end := f.label("argend")
	f.emit(asm.LoadMem(asm.R0, f.fp, slotCookie, asm.DWord))
	cases := make([]string, len(f.t.layouts))
	for i := range f.t.layouts {
		cases[i] = f.label(fmt.Sprintf("layout%d", i))
		f.emit(asm.JEq.Imm(asm.R0, int32(i), cases[i]))
	}
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
	for i, l := range f.t.layouts {
		insns, err := loadUSDTArg(regCtx, l.args[n], l.pc, f.fp, slot)
		if err != nil {
			return f.c.errorf(e, "%s of %s: %w", e.Name, f.t.probeName, err)
		}
		f.place(cases[i])
		f.emit(insns...)
		f.emit(asm.Ja.Label(end))
	}
	f.place(end)
	return nil
}

// stackArg lowers sargN into R0: the Nth 8-byte argument the probed
// function finds on its stack (above the return address on x86-64, at
// the stack pointer on arm64: ptregs.StackArgs), read from user space, or
// the kernel's in a kprobe (0 when the read fails).
func (f *fn) stackArg(e *lang.Builtin, n int) error {
	assert(f.t.kind == lang.ProbeUprobe || f.t.kind == lang.ProbeKprobe, e, "a stack argument outside a uprobe or kprobe")
	sp, ok := ptregs.ByMember("sp")
	assert(ok, e, "no stack pointer in pt_regs")
	slot, err := f.pushSlot(e)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.emit(
		storeImm64(f.fp, int(slot), 0),
		asm.Mov.Reg(asm.R1, f.fp),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, 8),
		memAt(asm.LoadMem(asm.R3, regCtx, 0, asm.DWord), sp.Offset),
		asm.Add.Imm(asm.R3, int32(ptregs.StackArgs+8*n)),
		readHelper(f.t.kind == lang.ProbeKprobe).Call(),
		asm.LoadMem(asm.R0, f.fp, slot, asm.DWord),
	)
	return nil
}

// loadUSDTArg returns instructions that load USDT argument a of the
// location at address pc into R0, sign- or zero-extended to 64 bits per
// its size. regs points to the probe's struct pt_regs (the context of a
// uprobe program); slot is an 8-byte stack slot for memory operands,
// addressed by fp (see fn.fp). The instructions clobber R0-R5.
func loadUSDTArg(regs asm.Register, a usdt.Arg, pc uint64, fp asm.Register, slot int16) (asm.Instructions, error) {
	if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
		return nil, fmt.Errorf("argument %s: size %d", a.Operand, a.Size)
	}
	var insns asm.Instructions
	switch a.Loc {
	case usdt.ArgRegister:
		r, err := loadReg(asm.R0, regs, a.Reg)
		if err != nil {
			return nil, err
		}
		insns = append(insns, r...)
	case usdt.ArgConstant:
		insns = append(insns, movImm(asm.R0, a.Const))
	case usdt.ArgMemory, usdt.ArgRIPRelative:
		if a.Loc == usdt.ArgMemory {
			base, err := loadReg(asm.R3, regs, a.Reg)
			if err != nil {
				return nil, err
			}
			insns = append(insns, base...)
			insns = append(insns, addConst(asm.R3, a.Disp)...)
			if a.Index.Name != "" {
				idx, err := loadReg(asm.R2, regs, a.Index)
				if err != nil {
					return nil, err
				}
				if a.Scale != 1 && a.Scale != 2 && a.Scale != 4 && a.Scale != 8 {
					return nil, fmt.Errorf("argument %s: scale %d", a.Operand, a.Scale)
				}
				insns = append(insns, idx...)
				if a.Scale > 1 {
					insns = append(insns, asm.LSh.Imm(asm.R2, int32(bits.TrailingZeros(uint(a.Scale)))))
				}
				insns = append(insns, asm.Add.Reg(asm.R3, asm.R2))
			}
		} else {
			if a.SymbolAddr == 0 {
				return nil, fmt.Errorf("argument %s: address of symbol %q unknown", a.Operand, a.Symbol)
			}
			// At the probe, regs->ip is the runtime address of pc.
			insns = append(insns, memAt(asm.LoadMem(asm.R3, regs, 0, asm.DWord), ptregs.IP))
			insns = append(insns, addConst(asm.R3, int64(a.SymbolAddr)+a.Disp-int64(pc))...)
		}
		insns = append(insns,
			storeImm64(fp, int(slot), 0),
			asm.Mov.Reg(asm.R1, fp),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, int32(a.Size)),
			asm.FnProbeReadUser.Call(),
			asm.LoadMem(asm.R0, fp, slot, asm.DWord),
		)
	default:
		return nil, fmt.Errorf("argument %s: unknown operand form", a.Operand)
	}
	return append(insns, extend(asm.R0, a.Size, a.Signed)...), nil
}

// loadReg loads register r from pt_regs into dst: the full 64-bit
// register, shifted down for the high-byte registers (ah, bh, ch, dh) and
// truncated to the named width.
func loadReg(dst, regs asm.Register, r usdt.Register) (asm.Instructions, error) {
	if r.PtRegsOffset < 0 || r.PtRegsOffset >= ptregs.Size {
		return nil, fmt.Errorf("register %%%s: offset %d outside pt_regs", r.Name, r.PtRegsOffset)
	}
	insns := asm.Instructions{memAt(asm.LoadMem(dst, regs, 0, asm.DWord), r.PtRegsOffset&^7)}
	if shift := r.PtRegsOffset & 7; shift != 0 {
		insns = append(insns, asm.RSh.Imm(dst, int32(8*shift)))
	}
	if r.Width > 0 && r.Width < 8 {
		insns = append(insns, extend(dst, r.Width, false)...)
	}
	return insns, nil
}

// addConst adds a 64-bit constant to r, using R1 when it does not fit an
// immediate.
func addConst(r asm.Register, v int64) asm.Instructions {
	switch {
	case v == 0:
		return nil
	case v >= -1<<31 && v < 1<<31:
		return asm.Instructions{asm.Add.Imm(r, int32(v))}
	}
	return asm.Instructions{asm.LoadImm(asm.R1, v, asm.DWord), asm.Add.Reg(r, asm.R1)}
}
