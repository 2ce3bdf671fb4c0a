package codegen

// This file lowers loops over maps, `for ($kv : @m)`, and len(@m), with
// bpf_for_each_map_elem: the kernel calls a callback, a BPF subprogram
// that follows the probe's program, with each element of the map.

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// mapLoop is what the callbacks of a probe's map loops share: the slots
// of the probe program's frame where the program leaves its context and
// scratch pointers for them (a callback starts with only its four
// arguments), and the flag a return in a callback sets, which stops the
// loops around it and then the program.
type mapLoop struct {
	ctxSlot, scratchSlot, returnSlot int16
}

// forMap lowers `for ($kv : @m) Body`. The callback gets the probe
// program's frame pointer as its context argument and keeps it in
// regFrame: the probe's variables and the temporaries of the body all
// live in that frame, so the body reads and writes the same variables as
// the code around the loop, and the callback's own frame stays empty (the
// kernel counts the frames of a call chain against one 512-byte stack).
// The callback returns 0 to go on and 1 to stop: break is `return 1`,
// continue `return 0`.
func (f *fn) forMap(s *lang.ForStmt) error {
	m, _, err := f.mapOf(s.Map, s.Map.Name)
	if err != nil {
		return err
	}
	if m.Array {
		return f.c.errorf(s.Map, "loop over map %s without keys: %w", s.Map.Name, ErrUnsupported)
	}
	v, ok := f.vars[s.Var.Name]
	if !ok || v.typ.Kind != lang.KindTuple || len(v.typ.Elems) != 2 {
		return f.c.errorf(s.Var, "loop variable %s is not a (key, value) tuple", s.Var.Name)
	}
	shared, pop, err := f.callbackFrame(s)
	if err != nil {
		return err
	}
	defer pop()
	cb := f.label("formap")
	err = f.callback(s, cb, shared, func() error {
		key, value := v.typ.Elems[0], v.typ.Elems[1]
		f.emit(
			asm.Mov.Reg(regFrame, asm.R4),
			asm.LoadMem(regScratch, regFrame, shared.scratchSlot, asm.DWord),
			asm.Mov.Reg(regCtx, asm.R2),
			asm.Mov.Reg(asm.R7, asm.R3),
		)
		if err := f.convert(regScratch, v.off, key, regCtx, 0, m.Info.Key); err != nil {
			return f.c.errorf(s.Var, "%w", err)
		}
		if m.PerCPU {
			// The key the helper handed over, where the merge's
			// callback finds it.
			kcopy := f.alloc(m.KeySize)
			f.copyMem(regScratch, kcopy, regCtx, 0, m.KeySize)
			if err := f.mergeCPUs(s, s.Map.Name, m, shared, kcopy, v.off+sizeOf(key)); err != nil {
				return err
			}
		} else if err := f.convert(regScratch, v.off+sizeOf(key), value, asm.R7, 0, m.Info.Value); err != nil {
			return f.c.errorf(s.Var, "%w", err)
		}
		f.emit(asm.LoadMem(regCtx, regFrame, shared.ctxSlot, asm.DWord))
		f.loops = append(f.loops, loopLabels{callback: true})
		return f.block(s.Body)
	})
	if err != nil {
		return err
	}
	f.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(s.Map.Name),
		funcPtr(asm.R2, cb),
		asm.Mov.Reg(asm.R3, f.fp),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnForEachMapElem.Call(),
	)
	f.returnIfCallbackReturned(shared, "formapdone")
	return nil
}

// callbackFrame returns the slots the callbacks of the probe's loops
// share, made and filled by the outermost loop (pop frees them after it):
// a callback starts with only its arguments, and finds the probe's
// context and scratch pointers there.
func (f *fn) callbackFrame(n lang.Node) (shared *mapLoop, pop func(), err error) {
	if f.loop != nil {
		return f.loop, func() {}, nil
	}
	slots, err := f.pushSlots(n, 3)
	if err != nil {
		return nil, nil, err
	}
	shared = &mapLoop{ctxSlot: slots[0], scratchSlot: slots[1], returnSlot: slots[2]}
	f.emit(
		asm.StoreMem(f.fp, shared.ctxSlot, regCtx, asm.DWord),
		asm.StoreMem(f.fp, shared.scratchSlot, regScratch, asm.DWord),
		storeImm64(f.fp, int(shared.returnSlot), 0),
	)
	return shared, func() { f.popSlots(len(slots)) }, nil
}

// enterCallback starts a loop's callback whose context argument, the
// probe's frame pointer, is in ctxArg: the frame, the scratch and context
// pointers are back in their registers.
func (f *fn) enterCallback(shared *mapLoop, ctxArg asm.Register) {
	f.emit(
		asm.Mov.Reg(regFrame, ctxArg),
		asm.LoadMem(regScratch, regFrame, shared.scratchSlot, asm.DWord),
		asm.LoadMem(regCtx, regFrame, shared.ctxSlot, asm.DWord),
	)
}

// returnIfCallbackReturned follows the helper that ran a loop's callback:
// a return (or exit()) in the body set the return flag, and the probe
// ends here too.
func (f *fn) returnIfCallbackReturned(shared *mapLoop, doneLabel string) {
	done := f.label(doneLabel)
	f.emit(
		asm.LoadMem(asm.R0, f.fp, shared.returnSlot, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, done),
	)
	f.endProbe()
	f.place(done)
}

// mergeCPUs stores at scratch offset off, and in R0, the value of the
// per-CPU map m's element whose key is at scratch offset key, merged over
// the CPUs as user space merges it for printing (see the values in
// aggregate): counts and sums added, the least or greatest of the CPUs
// that set a min or max, an avg's totals over its counts; 0 where no CPU
// has the element. bpf_loop calls a callback for each CPU, with shared
// (callbackFrame) as its frame: the verifier checks its body once, where
// a loop would be checked once per CPU of the machine.
func (f *fn) mergeCPUs(n lang.Node, name string, m userMap, shared *mapLoop, key, off int) error {
	slots, err := f.pushSlots(n, 2)
	if err != nil {
		return err
	}
	defer f.popSlots(len(slots))
	acc, aux := slots[0], slots[1]
	f.emit(
		storeImm64(f.fp, int(acc), 0),
		storeImm64(f.fp, int(aux), 0),
	)
	kind := m.Info.Value.Kind
	cb := f.label("cpus")
	err = f.callback(n, cb, shared, func() error {
		next, take := f.label("cpunext"), f.label("cputake")
		f.emit(
			asm.Mov.Reg(regFrame, asm.R2),
			asm.LoadMem(regScratch, regFrame, shared.scratchSlot, asm.DWord),
			asm.Mov.Reg(asm.R3, asm.R1),
			asm.LoadMapPtr(asm.R1, 0).WithReference(name),
			asm.Mov.Reg(asm.R2, regScratch),
			asm.Add.Imm(asm.R2, int32(key)),
			asm.FnMapLookupPercpuElem.Call(),
			asm.JEq.Imm(asm.R0, 0, next),
		)
		add := func(slot int16, at int16) {
			f.emit(
				asm.LoadMem(asm.R1, asm.R0, at, asm.DWord),
				asm.LoadMem(asm.R2, f.fp, slot, asm.DWord),
				asm.Add.Reg(asm.R2, asm.R1),
				asm.StoreMem(f.fp, slot, asm.R2, asm.DWord),
			)
		}
		switch kind {
		case lang.KindCount, lang.KindSum:
			add(acc, 0)
		case lang.KindAvg:
			add(aux, 0)
			add(acc, 8)
		case lang.KindMin, lang.KindMax:
			// aux says whether some CPU set a value yet.
			skip := asm.JSGE
			if kind == lang.KindMax {
				skip = asm.JSLE
			}
			f.emit(
				asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
				asm.JEq.Imm(asm.R1, 0, next),
				asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
				asm.LoadMem(asm.R2, f.fp, aux, asm.DWord),
				asm.JEq.Imm(asm.R2, 0, take),
				asm.LoadMem(asm.R2, f.fp, acc, asm.DWord),
				skip.Reg(asm.R1, asm.R2, next),
			)
			f.place(take)
			f.emit(
				asm.StoreMem(f.fp, acc, asm.R1, asm.DWord),
				storeImm64(f.fp, int(aux), 1),
			)
		default:
			return f.c.errorf(n, "loop over a map of %v: %w", kind, ErrUnsupported)
		}
		f.place(next)
		return nil
	})
	if err != nil {
		return err
	}
	f.emit(
		movImm(asm.R1, int64(max(f.c.opts.CPUs, 1))),
		funcPtr(asm.R2, cb),
		asm.Mov.Reg(asm.R3, f.fp),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
		asm.LoadMem(asm.R0, f.fp, acc, asm.DWord),
	)
	if kind == lang.KindAvg {
		// The total over the count, rounded toward zero; 0 without one.
		f.emit(asm.LoadMem(asm.R1, f.fp, aux, asm.DWord))
		f.avgDivide()
	}
	f.emit(memAt(asm.StoreMem(regScratch, 0, asm.R0, asm.DWord), off))
	return nil
}

// avgDivide sets R0, a signed total, to R0 / R1, a count, rounded toward
// zero, and to 0 when R1 is 0.
func (f *fn) avgDivide() {
	zero, neg, done := f.label("avgzero"), f.label("avgneg"), f.label("avgdone")
	f.emit(
		asm.JEq.Imm(asm.R1, 0, zero),
		asm.JSLT.Imm(asm.R0, 0, neg),
		asm.Div.Reg(asm.R0, asm.R1),
		asm.Ja.Label(done),
	)
	f.place(neg)
	f.emit(
		asm.Neg.Imm(asm.R0, 0),
		asm.Div.Reg(asm.R0, asm.R1),
		asm.Neg.Imm(asm.R0, 0),
		asm.Ja.Label(done),
	)
	f.place(zero)
	f.emit(asm.Mov.Imm(asm.R0, 0))
	f.place(done)
}

// callback lowers a callback subprogram named sym for node n, the
// instructions that body emits and a `return 0`, into f.callbacks. It is
// lowered as a part of the probe's program: the same variables, labels,
// stack slots and scratch offsets, those of the code around the loop left
// alone.
func (f *fn) callback(n lang.Node, sym string, shared *mapLoop, body func() error) error {
	insns, dead, pending, comment, loops, fp, loop := f.insns, f.dead, f.pending, f.comment, f.loops, f.fp, f.loop
	f.insns, f.dead, f.pending, f.comment, f.loops, f.fp, f.loop = nil, false, sym, "", nil, regFrame, shared
	f.mark(n)
	err := body()
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	cb := f.insns
	f.insns, f.dead, f.pending, f.comment, f.loops, f.fp, f.loop = insns, dead, pending, comment, loops, fp, loop
	if err != nil {
		return err
	}
	f.addCallback(cb)
	return nil
}

// addCallback appends the instructions of a callback, whose first one
// carries its symbol and a source comment, to f.callbacks. The kernel
// takes a callback only from a program with BTF function information,
// which must then describe every function, the program too (see
// withFuncInfo); and line information, which the comments are, must
// cover every function's first instruction.
func (f *fn) addCallback(cb asm.Instructions) {
	cb[0] = btf.WithFuncMetadata(cb[0], &btf.Func{Name: cb[0].Symbol(), Type: callbackProto, Linkage: btf.StaticFunc})
	f.callbacks = append(f.callbacks, cb...)
}

// endProbe ends the probe's program, returning 0 (return, exit()). In a
// callback it sets the return flag and stops the loop; the loops around
// it then see the flag and stop too.
func (f *fn) endProbe() {
	if f.loop != nil {
		f.emit(
			storeImm64(f.fp, int(f.loop.returnSlot), 1),
			asm.Mov.Imm(asm.R0, 1),
			asm.Return(),
		)
		return
	}
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// mapLen lowers len(@m): bpf_for_each_map_elem returns how many elements
// it visited, all of them when the callback always goes on.
func (f *fn) mapLen(call *lang.Call) error {
	e, ok := call.Args[0].(*lang.MapExpr)
	if !ok {
		return f.stackLen(call.Args[0])
	}
	if _, _, err := f.mapOf(e, e.Name); err != nil {
		return err
	}
	if f.countCallback == "" {
		f.countCallback = f.label("count")
		f.addCallback(asm.Instructions{
			asm.Mov.Imm(asm.R0, 0).WithSymbol(f.countCallback).WithSource(asm.Comment("len(): count the elements")),
			asm.Return(),
		})
	}
	f.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(e.Name),
		funcPtr(asm.R2, f.countCallback),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnForEachMapElem.Call(),
	)
	return nil
}

// stackLen lowers len(s) of a ustack or kstack value s: the number of
// frames bpf_get_stack walks, up to s's limit, 0 where it cannot (a user
// stack walked with .eh_frame rules is counted where it is stored). A
// stack trace map cannot be read in BPF, so the stack is walked again:
// within one run of a probe it is the same stack.
func (f *fn) stackLen(s lang.Expr) error {
	t := f.typeOf(s)
	assert(t.Kind == lang.KindStack && t.StackFrames > 0, s, "len() of what is not a stack")
	if !t.StackKernel && f.c.opts.StackUnwind == settings.UnwindEhFrame {
		return f.unwoundStackLen(s, t)
	}
	buf := f.alloc(8 * t.StackFrames)
	flags := int32(bpfFUserStack)
	if t.StackKernel {
		flags = 0
	}
	done := f.label("stacklen")
	f.emit(asm.Mov.Reg(asm.R1, regCtx))
	f.scratchPtr(asm.R2, buf)
	f.emit(
		asm.Mov.Imm(asm.R3, int32(8*t.StackFrames)),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnGetStack.Call(),
		asm.JSGT.Imm(asm.R0, 0, done),
		asm.Mov.Imm(asm.R0, 0),
	)
	f.place(done)
	f.emit(asm.RSh.Imm(asm.R0, 3))
	return nil
}

// funcPtr loads the address of the subprogram sym into r, for a helper
// that takes a callback.
func funcPtr(r asm.Register, sym string) asm.Instruction {
	return asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: r, Src: asm.PseudoFunc, Constant: -1}.WithReference(sym)
}

// withFuncInfo gives a program with callbacks the BTF function
// information the kernel wants: the program's first instruction starts a
// global function of the context, each callback's a static one of four
// pointers.
func withFuncInfo(insns asm.Instructions) {
	insns[0] = btf.WithFuncMetadata(insns[0], &btf.Func{Name: "probe", Type: probeProto, Linkage: btf.GlobalFunc})
}

var (
	voidPtr       = &btf.Pointer{Target: &btf.Void{}}
	btfLong       = &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	probeProto    = &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Params: []btf.FuncParam{{Name: "ctx", Type: voidPtr}}}
	callbackProto = &btf.FuncProto{Return: btfLong, Params: []btf.FuncParam{
		{Name: "map", Type: voidPtr}, {Name: "key", Type: voidPtr}, {Name: "value", Type: voidPtr}, {Name: "ctx", Type: voidPtr},
	}}
)
