package codegen

// This file lowers the builtin variables and the calls that yield an
// integer: bswap(), reg(), uaddr(), the kernel-or-user mode test and the
// other integer builtins.

import (
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/internal/ptregs"
	"github.com/gotrace/gotrace/lang"
)

// builtin lowers an integer builtin variable.
func (f *fn) builtin(e *lang.Builtin) error {
	switch e.ID {
	case lang.VarNsecs:
		f.emit(asm.FnKtimeGetNs.Call())
	case lang.VarElapsed:
		slot, err := f.pushSlot(e)
		if err != nil {
			return err
		}
		defer f.popSlot()
		done := f.label("elapsed")
		f.emit(asm.FnKtimeGetNs.Call(), asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
		f.lookupZeroKey(startMapName)
		f.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.LoadMem(asm.R0, f.fp, slot, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, done),
			asm.LoadMem(asm.R1, asm.R1, 0, asm.DWord),
			asm.Sub.Reg(asm.R0, asm.R1),
		)
		f.place(done)
	case lang.VarPid:
		if err := f.currentPidTgid(e); err != nil {
			return err
		}
		f.emit(asm.RSh.Imm(asm.R0, 32))
	case lang.VarTid:
		if err := f.currentPidTgid(e); err != nil {
			return err
		}
		f.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	case lang.VarUID, lang.VarUsername:
		f.emit(asm.FnGetCurrentUidGid.Call(), asm.Mov.Reg32(asm.R0, asm.R0))
	case lang.VarGID:
		f.emit(asm.FnGetCurrentUidGid.Call(), asm.RSh.Imm(asm.R0, 32))
	case lang.VarCPU:
		f.emit(asm.FnGetSmpProcessorId.Call())
	case lang.VarJiffies:
		f.emit(asm.FnJiffies64.Call())
	case lang.VarNcpus:
		f.emit(movImm(asm.R0, int64(f.c.opts.CPUs)))
	case lang.VarUsermode:
		return f.usermode()
	case lang.VarRand:
		f.emit(asm.FnGetPrandomU32.Call())
	case lang.VarCgroup:
		f.emit(asm.FnGetCurrentCgroupId.Call())
	case lang.VarCurtask:
		f.emit(asm.FnGetCurrentTask.Call())
	case lang.VarNumaid:
		f.emit(asm.FnGetNumaNodeId.Call())
	case lang.VarUstack, lang.VarKstack:
		return f.ustack(e, f.typeOf(e))
	case lang.VarProbe:
		f.emit(asm.Mov.Imm(asm.R0, int32(f.t.index)))
	case lang.VarArgs:
		// A tracepoint's record is its context.
		f.emit(asm.Mov.Reg(asm.R0, regCtx))
	case lang.VarCpid:
		f.emit(movImm(asm.R0, int64(f.c.opts.ChildPID)))
	case lang.VarFunc:
		switch f.t.kind {
		case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe:
			f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), ptregs.IP))
		case lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
			// A kretprobe's ip is where the function returns to: the
			// helper gives the function's own address in all four.
			f.emit(asm.Mov.Reg(asm.R1, regCtx), asm.FnGetFuncIp.Call())
		default:
			return f.c.errorf(e, "func is not available in %s", f.t.probeName)
		}
	case lang.VarRetval:
		switch {
		case f.t.kind == lang.ProbeUretprobe || f.t.kind == lang.ProbeKretprobe:
			f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), ptregs.Return))
		case f.t.kind == lang.ProbeKretfunc && f.t.tracepoint.Retval != nil:
			return f.kfuncSlot(e, f.t.tracepoint.Retval)
		default:
			return f.c.errorf(e, "retval is not available in %s", f.t.probeName)
		}
	case lang.VarArg:
		return f.arg(e, e.ArgIndex())
	case lang.VarSarg:
		return f.stackArg(e, e.ArgIndex())
	default:
		return f.c.errorf(e, "builtin %s as an integer: %w", e.Name, ErrUnsupported)
	}
	return nil
}

// bswap lowers bswap(x): the bytes of x's width in reverse order, zero-
// extended (a byte comes back as it is).
func (f *fn) bswap(e *lang.Call) error {
	if err := f.intExpr(e.Args[0]); err != nil {
		return err
	}
	switch f.typeOf(e).Size {
	case 1:
		f.emit(asm.And.Imm(asm.R0, 0xff))
	case 2:
		f.emit(asm.HostTo(asm.BE, asm.R0, asm.Half))
	case 4:
		f.emit(asm.HostTo(asm.BE, asm.R0, asm.Word))
	default:
		f.emit(asm.HostTo(asm.BE, asm.R0, asm.DWord))
	}
	return nil
}

// intCall lowers a call with an integer value.
func (f *fn) intCall(e *lang.Call) error {
	switch e.ID {
	case lang.FuncUptr, lang.FuncKptr, lang.FuncUsym, lang.FuncKsym, lang.FuncStrerror, lang.FuncSignalName, lang.FuncSyscallName:
		return f.intExpr(e.Args[0])
	case lang.FuncMacaddr:
		return f.macaddr(e.Args[0])
	case lang.FuncKaddr, lang.FuncCgroupid:
		v, ok := f.c.info.ConstInt(e)
		assert(ok, e, e.Name+"() without the value the checker resolved")
		f.emit(movImm(asm.R0, v))
		return nil
	case lang.FuncSizeof:
		size, err := f.sizeofType(e, f.typeOf(e.Args[0]))
		if err != nil {
			return err
		}
		f.emit(movImm(asm.R0, int64(size)))
		return nil
	case lang.FuncStrncmp:
		n, ok := f.c.info.ConstInt(e.Args[2])
		assert(ok, e, "strncmp()'s length is not a constant")
		// bpftrace's strncmp is 0 when equal, 1 otherwise.
		return f.strEqual(e, e.Args[0], e.Args[1], int(max(n, 0)), 0, 1)
	case lang.FuncBswap:
		return f.bswap(e)
	case lang.FuncStrcontains:
		return f.strContains(e)
	case lang.FuncDelete:
		return f.deleted(e)
	case lang.FuncStrlen:
		return f.strlen(e)
	case lang.FuncNsecs:
		clock := asm.FnKtimeGetNs
		if len(e.Args) == 1 {
			switch b, _ := e.Args[0].(*lang.Builtin); b.Name {
			case "boot":
				clock = asm.FnKtimeGetBootNs
			case "tai", "sw_tai":
				clock = asm.FnKtimeGetTaiNs
			}
		}
		f.emit(clock.Call())
		return nil
	case lang.FuncHasKey:
		return f.hasKey(e)
	case lang.FuncLen:
		return f.mapLen(e)
	case lang.FuncReg:
		return f.reg(e)
	case lang.FuncUaddr:
		return f.uaddr(e)
	case lang.FuncUstack, lang.FuncKstack:
		return f.ustack(e, f.typeOf(e))
	}
	return f.c.errorf(e, "%s() as an integer value: %w", e.Name, ErrUnsupported)
}

// reg lowers reg("name"): a register of the probed thread.
func (f *fn) reg(e *lang.Call) error {
	lit, ok := e.Args[0].(*lang.StrLit)
	assert(ok, e, "reg() of what is not a string literal")
	switch f.t.kind {
	case lang.ProbeUSDT, lang.ProbeUprobe, lang.ProbeUretprobe, lang.ProbeKprobe, lang.ProbeKretprobe:
	default:
		return f.c.errorf(e, "reg() is not available in %s", f.t.probeName)
	}
	r, ok := ptregs.ByMember(lit.Value)
	assert(ok, e, "reg() of an unknown register")
	f.emit(memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), r.Offset))
	return nil
}

// usermode lowers usermode: whether the probe interrupted user-space
// code. A uprobe always does, and so do BEGIN, END and interval, which
// gotrace's own process runs (bpftrace's BEGIN is a uprobe too); profile
// and watchpoint (which the kernel's own accesses to user memory fire)
// read the privilege level of the interrupted code segment.
func (f *fn) usermode() error {
	switch f.t.kind {
	case lang.ProbeProfile, lang.ProbeWatchpoint:
		// R0 = (mode & mask) == user: x86-64's cs, arm64's pstate.
		t := ptregs.Native
		f.emit(
			memAt(asm.LoadMem(asm.R0, regCtx, 0, asm.DWord), t.Offset(t.Mode)),
			asm.And.Imm(asm.R0, t.ModeMask),
			asm.Xor.Imm(asm.R0, t.UserMode),
			// 0 (user) becomes 1; any other value, 0.
			asm.Neg.Imm(asm.R0, 0),
			asm.RSh.Imm(asm.R0, 63),
			asm.Xor.Imm(asm.R0, 1),
		)
	case lang.ProbeTracepoint, lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
		f.emit(asm.Mov.Imm(asm.R0, 0))
	default:
		f.emit(asm.Mov.Imm(asm.R0, 1))
	}
	return nil
}

// uaddr lowers uaddr("sym"): the address of a data symbol in the ELF file
// of the program's target, a constant the checker looked up
// (lang.Info.Symbols).
func (f *fn) uaddr(e *lang.Call) error {
	lit, ok := e.Args[0].(*lang.StrLit)
	assert(ok, e, "uaddr() of what is not a string literal")
	sym, ok := f.c.info.Symbols[lang.SymbolRef{Path: f.t.path, Name: lit.Value}]
	if !ok || sym.Err != nil {
		return f.c.errorf(e, "Could not resolve symbol: %s:%s", f.t.path, lit.Value)
	}
	f.emit(movImm(asm.R0, int64(sym.Addr)))
	return nil
}

// macaddr lowers macaddr(x) into R0: the six bytes of a MAC address in
// the low bytes of a u64, as they lie in memory (layout.Macaddr). x is
// the address to read them at (an integer, a pointer, an array the code
// holds by its address) or a value that holds them (a string, a buf, an
// array value), whose first six bytes are taken.
func (f *fn) macaddr(x lang.Expr) error {
	const mask = 1<<48 - 1
	switch f.typeOf(x).Kind {
	case lang.KindString, lang.KindBuf, lang.KindIntArray:
		data, err := f.dataOf(x)
		if err != nil {
			return err
		}
		f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, asm.DWord), data))
	default:
		tmp := f.alloc(8)
		f.emit(storeImm64(regScratch, tmp, 0))
		if err := f.readAt(x, tmp, lang.MacaddrLen); err != nil {
			return err
		}
		f.emit(memAt(asm.LoadMem(asm.R0, regScratch, 0, asm.DWord), tmp))
	}
	f.emit(movImm(asm.R1, mask), asm.And.Reg(asm.R0, asm.R1))
	return nil
}
