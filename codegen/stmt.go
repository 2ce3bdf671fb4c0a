package codegen

import (
	"fmt"
	"slices"
	"sort"

	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// compile lowers one probe block for f's target.
func (f *fn) compile(probe *lang.Probe) (asm.Instructions, error) {
	f.comment = fmt.Sprintf("%s:%d:%d: %s", f.c.prog.File, probe.Loc.Start.Line, probe.Loc.Start.Col, f.t.probeName)
	f.emit(
		asm.Mov.Reg(regCtx, asm.R1),
		storeImm64(f.fp, slotZero, 0),
	)
	switch f.t.kind {
	case lang.ProbeBegin, lang.ProbeEnd:
	default:
		if !f.c.callsExit {
			break
		}
		// After exit(), probes stop. The flag's address is an immediate
		// filled in at load time: no map lookup on every hit.
		f.emit(
			asm.LoadMapValue(asm.R0, 0, 0).WithReference(exitedMapName),
			asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord),
		)
		f.returnUnless(asm.JEq, 0)
	}
	f.familyFilter()
	scratchLookup := len(f.insns)
	f.lookupZeroKey(ScratchMapName)
	scratchLookupCall := len(f.insns)
	f.returnUnless(asm.JNE, 0)
	f.emit(asm.Mov.Reg(regScratch, asm.R0))
	scratchLookupEnd := len(f.insns)
	if f.t.kind == lang.ProbeUSDT && len(f.t.layouts) > 1 {
		f.emit(
			asm.Mov.Reg(asm.R1, regCtx),
			asm.FnGetAttachCookie.Call(),
			asm.StoreMem(f.fp, slotCookie, asm.R0, asm.DWord),
		)
	}
	if err := f.declareVars(probe); err != nil {
		return nil, err
	}
	if probe.Pred != nil {
		f.mark(probe.Pred)
		if err := f.intExpr(probe.Pred); err != nil {
			return nil, err
		}
		f.returnUnless(asm.JNE, 0)
		f.scratch = f.varsEnd()
	}
	f.zeroVars()
	if err := f.block(probe.Body); err != nil {
		return nil, err
	}
	f.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	if len(f.callbacks) > 0 {
		withFuncInfo(f.insns)
		f.insns = append(f.insns, f.callbacks...)
	}
	f.resolveAliases()
	switch {
	case f.bigScratch():
		// The lookup's key becomes this CPU's index.
		f.insns = slices.Replace(f.insns, scratchLookup, scratchLookupCall,
			inheritMetadata(asm.FnGetSmpProcessorId.Call(), f.insns[scratchLookup]),
			asm.StoreMem(asm.RFP, slotIndex, asm.R0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(BigScratchMapName),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, slotIndex),
			asm.FnMapLookupElem.Call())
	case f.scratchOnStack():
		f.insns = slices.Replace(f.insns, scratchLookup, scratchLookupEnd,
			inheritMetadata(asm.Mov.Reg(regScratch, asm.RFP), f.insns[scratchLookup]),
			asm.Add.Imm(regScratch, -stackSize))
	}
	shortenLongJumps(f.insns)
	return f.insns, nil
}

// bigScratch reports whether the program's scratch area is larger than a
// per-CPU map value: it is then this CPU's entry of the big scratch map.
func (f *fn) bigScratch() bool {
	return f.scratchMax > maxScratch
}

// scratchOnStack reports whether the program's scratch area fits below
// its stack slots, at the bottom of the BPF stack. There it costs
// nothing, where the per-CPU map's value costs a lookup and, on machines
// whose TLB is flushed at each kernel entry, a page walk on every hit.
func (f *fn) scratchOnStack() bool {
	return !f.unalignedScratch && -stackSize+f.scratchMax <= int(f.stackLow)
}

// inheritMetadata gives ins the label and source comment of old, which it
// replaces.
func inheritMetadata(ins, old asm.Instruction) asm.Instruction {
	if sym := old.Symbol(); sym != "" {
		ins = ins.WithSymbol(sym)
	}
	if src := old.Source(); src != nil {
		ins = ins.WithSource(src)
	}
	return ins
}

// returnUnless ends the program, returning 0, unless R0 compares to v
// with jump (asm.JNE: unless R0 != v). Returns are inline: a conditional
// jump to a shared exit could be out of the 16-bit range of a jump in a
// long program.
func (f *fn) returnUnless(jump asm.JumpOp, v int32) {
	cont := f.label("cont")
	f.emit(jump.Imm(asm.R0, v, cont), asm.Mov.Imm(asm.R0, 0), asm.Return())
	f.place(cont)
}

// varsEnd is where the scratch temporaries start: after the variables.
func (f *fn) varsEnd() int {
	end := 0
	for _, v := range f.vars {
		if !isScalar(v.typ) {
			end = max(end, v.off+align8(sizeOf(v.typ)))
		}
	}
	return end
}

// declareVars gives every scratch variable of the probe its slot.
// Variables are probe-wide: one first assigned inside an if is visible
// after it, and reads as zero when the if was not taken (zeroVars).
func (f *fn) declareVars(probe *lang.Probe) error {
	types := map[string]lang.Type{}
	var firstUse = map[string]lang.Node{}
	visit := func(n lang.Node) {
		v, ok := n.(*lang.Var)
		if !ok {
			return
		}
		t := f.typeOf(v)
		if old, seen := types[v.Name]; seen {
			t = widen(old, t)
		} else {
			firstUse[v.Name] = v
		}
		types[v.Name] = t
	}
	lang.InspectProbe(probe, visit)
	names := make([]string, 0, len(types))
	for name := range types {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := types[name]
		v := variable{typ: t}
		if isScalar(t) {
			slot, err := f.pushSlot(firstUse[name])
			if err != nil {
				return err
			}
			v.slot = slot
		} else {
			if sizeOf(t) == 0 {
				return f.c.errorf(firstUse[name], "variable %s: type %s: %w", name, t, ErrUnsupported)
			}
			v.off = f.alloc(sizeOf(t))
		}
		f.vars[name] = v
		f.varNames = append(f.varNames, name)
	}
	return nil
}

// zeroVars zeroes every variable, once the predicate (which cannot read
// variables) has passed.
func (f *fn) zeroVars() {
	for _, name := range f.varNames {
		v := f.vars[name]
		if isScalar(v.typ) {
			f.emit(storeImm64(f.fp, int(v.slot), 0))
		} else {
			f.zero(regScratch, v.off, sizeOf(v.typ))
		}
	}
}

// widen returns the type that holds values of both a and b: the larger
// string, element by element for tuples.
func widen(a, b lang.Type) lang.Type {
	switch {
	case a.Kind == lang.KindString && b.Kind == lang.KindString:
		return lang.String(max(a.Size, b.Size))
	case a.Kind == lang.KindTuple && b.Kind == lang.KindTuple && len(a.Elems) == len(b.Elems):
		t := lang.Type{Kind: lang.KindTuple, Elems: make([]lang.Type, len(a.Elems)), Names: a.Names}
		for i := range a.Elems {
			t.Elems[i] = widen(a.Elems[i], b.Elems[i])
		}
		return t
	case a.Kind == lang.KindNone:
		return b
	}
	return a
}

// block lowers the statements of b.
func (f *fn) block(b *lang.Block) error {
	return f.stmts(b.Stmts)
}

// stmts lowers statements in order.
func (f *fn) stmts(ss []lang.Stmt) error {
	for _, s := range ss {
		if err := f.stmt(s); err != nil {
			return err
		}
	}
	return nil
}

// stmt lowers one statement. Scratch temporaries die with it.
func (f *fn) stmt(s lang.Stmt) error {
	mark := f.scratch
	defer func() { f.scratch = mark }()
	f.mark(s)
	switch s := s.(type) {
	case *lang.Block:
		return f.block(s)
	case *lang.ExprStmt:
		return f.exprStmt(s.X)
	case *lang.AssignStmt:
		return f.assign(s)
	case *lang.IfStmt:
		return f.ifStmt(s)
	case *lang.UnrollStmt:
		for range f.c.info.UnrollCount(s) {
			if err := f.block(s.Body); err != nil {
				return err
			}
		}
		return nil
	case *lang.WhileStmt:
		return f.whileStmt(s)
	case *lang.ForStmt:
		if s.Map != nil {
			return f.forMap(s)
		}
		return f.forRange(s)
	case *lang.JumpStmt:
		return f.jump(s)
	case *lang.LetStmt:
		// The variable has its slot, zeroed with the others.
		return nil
	}
	return f.c.errorf(s, "statement %T: %w", s, ErrUnsupported)
}

// exprStmt lowers an expression whose value is dropped.
func (f *fn) exprStmt(e lang.Expr) error {
	switch e := e.(type) {
	case *lang.Call:
		return f.callStmt(e)
	case *lang.BlockExpr:
		if err := f.stmts(e.Stmts); err != nil {
			return err
		}
		if e.Value == nil {
			return nil
		}
		return f.exprStmt(e.Value)
	case *lang.Ternary:
		if f.typeOf(e).Kind == lang.KindVoid {
			return f.ternary(e, f.exprStmt)
		}
	}
	t := f.typeOf(e)
	if isScalar(t) {
		return f.intExpr(e)
	}
	return f.valueInto(e, f.alloc(sizeOf(t)))
}

// assign lowers `LHS op RHS`.
func (f *fn) assign(s *lang.AssignStmt) error {
	switch lhs := s.LHS.(type) {
	case *lang.Var:
		return f.assignVar(s, lhs)
	case *lang.MapExpr:
		if call := lang.ValueCall(s.RHS); call != nil && s.Op == "=" && call.ID.Aggregation() != lang.KindNone {
			// The statements of block expressions around it run first.
			for b, ok := s.RHS.(*lang.BlockExpr); ok; b, ok = b.Value.(*lang.BlockExpr) {
				if err := f.stmts(b.Stmts); err != nil {
					return err
				}
			}
			return f.aggregate(lhs, call)
		}
		return f.assignMap(s, lhs)
	}
	return f.c.errorf(s.LHS, "cannot assign to %T", s.LHS)
}

// assignVar lowers an assignment to a scratch variable.
func (f *fn) assignVar(s *lang.AssignStmt, lhs *lang.Var) error {
	v, ok := f.vars[lhs.Name]
	if !ok {
		return f.c.errorf(lhs, "undefined variable %s", lhs.Name)
	}
	if isScalar(v.typ) {
		if s.Op == "=" {
			if err := f.intExpr(s.RHS); err != nil {
				return err
			}
		} else {
			f.emit(asm.LoadMem(asm.R0, f.fp, v.slot, asm.DWord))
			if err := f.applyRHS(s, v.typ); err != nil {
				return err
			}
		}
		// An integer variable keeps the size of its first value.
		if v.typ.Kind == lang.KindInt {
			f.emit(extend(asm.R0, v.typ.Size, v.typ.Signed)...)
		}
		f.emit(asm.StoreMem(f.fp, v.slot, asm.R0, asm.DWord))
		return nil
	}
	if s.Op != "=" {
		return f.c.errorf(s, "operator %s on %s: %w", s.Op, v.typ, ErrUnsupported)
	}
	// Through a temporary: the right side may read the variable.
	rt := f.typeOf(s.RHS)
	tmp := f.alloc(sizeOf(rt))
	if err := f.valueInto(s.RHS, tmp); err != nil {
		return err
	}
	return f.convert(regScratch, v.off, v.typ, regScratch, tmp, rt)
}

// applyRHS computes R0 = R0 op RHS for a compound assignment (s.Op is
// "+=", "<<=", ...). lt is the type of the left side.
func (f *fn) applyRHS(s *lang.AssignStmt, lt lang.Type) error {
	if err := f.rightOperand(s, s.RHS); err != nil {
		return err
	}
	op := s.Op[:len(s.Op)-1]
	return f.applyOp(s, op, lt, f.typeOf(s.RHS))
}

// ifStmt lowers if/else, and an else-if chain in a loop however long it
// is.
func (f *fn) ifStmt(s *lang.IfStmt) error {
	var ends []string
	for i, s := range s.Chain() {
		if i > 0 {
			f.mark(s)
		}
		if err := f.intExpr(s.Cond); err != nil {
			return err
		}
		// Long jumps around the branches: an unrolled body can be longer
		// than a conditional jump reaches.
		then, elseL, end := f.label("then"), f.label("else"), f.label("endif")
		f.emit(asm.JNE.Imm(asm.R0, 0, then), asm.LongJump(elseL))
		f.place(then)
		if err := f.block(s.Then); err != nil {
			return err
		}
		if s.Else == nil {
			f.place(elseL)
			break
		}
		f.emit(asm.LongJump(end))
		f.place(elseL)
		ends = append(ends, end)
		if _, ok := s.Else.(*lang.IfStmt); !ok {
			if err := f.stmt(s.Else); err != nil {
				return err
			}
		}
	}
	for i := len(ends) - 1; i >= 0; i-- {
		f.place(ends[i])
	}
	return nil
}

// whileStmt lowers a while loop with an iteration cap, so the verifier
// sees that it ends.
func (f *fn) whileStmt(s *lang.WhileStmt) error {
	counter, err := f.pushSlot(s)
	if err != nil {
		return err
	}
	defer f.popSlot()
	top, body, end := f.label("while"), f.label("whilebody"), f.label("endwhile")
	f.emit(storeImm64(f.fp, int(counter), 0))
	f.place(top)
	f.mark(s.Cond)
	if err := f.intExpr(s.Cond); err != nil {
		return err
	}
	f.emit(asm.JNE.Imm(asm.R0, 0, body), asm.LongJump(end))
	f.place(body)
	// Counted once the condition holds: a loop of exactly
	// MaxLoopIterations iterations ends without a warning.
	f.countIteration(counter, end)
	f.loops = append(f.loops, loopLabels{brk: end, cont: top})
	err = f.block(s.Body)
	f.loops = f.loops[:len(f.loops)-1]
	if err != nil {
		return err
	}
	f.emit(asm.LongJump(top))
	f.place(end)
	return nil
}

// forRange lowers `for ($i : start..end)` with bpf_loop: the kernel calls
// the body, a callback like a map loop's (formap.go), end-start times and
// at most MaxLoopIterations, a cap counted as while's is. The verifier then
// checks the body once whatever the count: unrolled by its analysis, a
// range loop around a map loop was more than it explores
// ("BPF program is too large"). $i is start plus the kernel's index, so
// the body may change $i without changing the count.
func (f *fn) forRange(s *lang.ForStmt) error {
	v, ok := f.vars[s.Var.Name]
	if !ok || !isScalar(v.typ) {
		return f.c.errorf(s.Var, "loop variable %s is not an integer", s.Var.Name)
	}
	shared, pop, err := f.callbackFrame(s)
	if err != nil {
		return err
	}
	defer pop()
	start, err := f.pushSlot(s)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.mark(s.Start)
	if err := f.intExpr(s.Start); err != nil {
		return err
	}
	f.emit(asm.StoreMem(f.fp, start, asm.R0, asm.DWord))
	f.mark(s.End)
	if err := f.intExpr(s.End); err != nil {
		return err
	}
	// The count, end - start, into R1: none when negative, and capped.
	some, capped, call := f.label("forsome"), f.label("forcapped"), f.label("forcall")
	f.emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R0, f.fp, start, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R0),
		asm.JSGT.Imm(asm.R1, 0, some),
		asm.Mov.Imm(asm.R1, 0),
		asm.LongJump(call),
	)
	f.place(some)
	f.emit(asm.JSGT.Imm(asm.R1, MaxLoopIterations, capped), asm.LongJump(call))
	f.place(capped)
	f.incrementCounter(f.c.spec.loopCounter())
	f.emit(asm.Mov.Imm(asm.R1, MaxLoopIterations))
	f.place(call)
	cb := f.label("forrange")
	f.emit(
		funcPtr(asm.R2, cb),
		asm.Mov.Reg(asm.R3, f.fp),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
	)
	err = f.callback(s, cb, shared, func() error {
		// bpf_loop passes the index in R1 and the context in R2.
		f.enterCallback(shared, asm.R2)
		f.emit(
			asm.LoadMem(asm.R0, regFrame, start, asm.DWord),
			asm.Add.Reg(asm.R0, asm.R1),
			asm.StoreMem(regFrame, v.slot, asm.R0, asm.DWord),
		)
		f.loops = append(f.loops, loopLabels{callback: true})
		return f.block(s.Body)
	})
	if err != nil {
		return err
	}
	f.returnIfCallbackReturned(shared, "forrangedone")
	return nil
}

// countIteration counts one more iteration of a loop in the slot
// counter, and jumps to end when the loop has run MaxLoopIterations times,
// counting that stop in CountersMap so that the runtime warns.
func (f *fn) countIteration(counter int16, end string) {
	capOK := f.label("loopcap")
	f.emit(
		asm.LoadMem(asm.R0, f.fp, counter, asm.DWord),
		asm.JLT.Imm(asm.R0, MaxLoopIterations, capOK),
	)
	f.incrementCounter(f.c.spec.loopCounter())
	f.emit(asm.LongJump(end))
	f.place(capOK)
	f.emit(
		asm.Add.Imm(asm.R0, 1),
		asm.StoreMem(f.fp, counter, asm.R0, asm.DWord),
	)
}

// jump lowers break, continue and return.
func (f *fn) jump(s *lang.JumpStmt) error {
	if s.Kind == "return" {
		f.endProbe()
		return nil
	}
	if len(f.loops) == 0 {
		return f.c.errorf(s, "%s outside a loop", s.Kind)
	}
	l := f.loops[len(f.loops)-1]
	if l.callback {
		// A map loop's callback: 1 stops the loop, 0 goes on.
		stop := int32(0)
		if s.Kind == "break" {
			stop = 1
		}
		f.emit(asm.Mov.Imm(asm.R0, stop), asm.Return())
		return nil
	}
	if s.Kind == "break" {
		f.emit(asm.LongJump(l.brk))
	} else {
		f.emit(asm.LongJump(l.cont))
	}
	return nil
}
