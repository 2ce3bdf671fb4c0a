package codegen

// This file lowers the operators: binary arithmetic and comparisons,
// logical and/or, unary operators and ++/--.

import (
	"github.com/cilium/ebpf/asm"

	"github.com/gotrace/gotrace/lang"
)

// binary lowers a binary operator. A left-nested chain of integer
// operators (1+1+...+1, a && b && c) is lowered in a loop rather than by
// recursion: down the chain to its innermost left operand, then each
// operator's right side, innermost first, so that its length is bounded by
// the script's size and not by the stack.
func (f *fn) binary(e *lang.Binary) error {
	xt, yt := f.typeOf(e.X), f.typeOf(e.Y)
	switch {
	case xt.Kind == lang.KindString || yt.Kind == lang.KindString:
		return f.strCompare(e)
	case xt.Kind == lang.KindBuf && yt.Kind == lang.KindBuf:
		return f.bufCompare(e)
	}
	chain := e.LeftSpine()
	// labels are those of the chain's && and || operators, by index: a
	// chain of 200,000 additions needs none.
	labels := map[int]logicalLabels{}
	for i, b := range chain {
		xt, yt := f.typeOf(b.X), f.typeOf(b.Y)
		if xt.Kind == lang.KindString || yt.Kind == lang.KindString || xt.Kind == lang.KindBuf && yt.Kind == lang.KindBuf {
			// Lowered by intExpr, as the chain's innermost operand.
			chain = chain[:i]
			break
		}
		if b != e {
			f.mark(b)
		}
		if b.Op == "&&" || b.Op == "||" {
			labels[i] = logicalLabels{short: f.label("short"), end: f.label("logend")}
		}
	}
	if err := f.intExpr(chain[len(chain)-1].X); err != nil {
		return err
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var err error
		if b := chain[i]; b.Op == "&&" || b.Op == "||" {
			err = f.logical(b, labels[i])
		} else {
			err = f.arithmetic(b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// arithmetic lowers an arithmetic, bitwise or comparison operator whose
// left operand is in R0.
func (f *fn) arithmetic(e *lang.Binary) error {
	xt, yt := f.typeOf(e.X), f.typeOf(e.Y)
	if lit, ok := e.Y.(*lang.IntLit); ok {
		// bpftrace's compiler folds these undefined operations to 0.
		if (e.Op == "/" || e.Op == "%") && lit.Value == 0 || (e.Op == "<<" || e.Op == ">>") && lit.Value >= 64 {
			f.emit(asm.Mov.Imm(asm.R0, 0))
			return nil
		}
		// A constant right side needs no spill.
		f.emit(movImm(asm.R1, int64(lit.Value)))
		return f.applyOp(e, e.Op, xt, yt)
	}
	if err := f.rightOperand(e, e.Y); err != nil {
		return err
	}
	return f.applyOp(e, e.Op, xt, yt)
}

// rightOperand evaluates y, the right operand of n, into R1 and leaves
// the left one in R0, where it was: R0 waits in a stack slot of n's
// while y is computed.
func (f *fn) rightOperand(n lang.Node, y lang.Expr) error {
	slot, err := f.pushSlot(n)
	if err != nil {
		return err
	}
	defer f.popSlot()
	f.emit(asm.StoreMem(f.fp, slot, asm.R0, asm.DWord))
	if err := f.intExpr(y); err != nil {
		return err
	}
	f.emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R0, f.fp, slot, asm.DWord),
	)
	return nil
}

// applyOp computes R0 = R0 op R1 with bpftrace 0.17's semantics, which
// are the BPF instructions': 64-bit arithmetic; / % and >> unsigned;
// x/0 is 0 and x%0 is x; shift counts are taken modulo 64; comparisons
// are signed only when both sides are signed; pointer +/- integer scales
// by the pointee size.
func (f *fn) applyOp(n lang.Node, op string, xt, yt lang.Type) error {
	if alu, ok := aluOps[op]; ok {
		if op == "+" || op == "-" {
			f.scaleOffset(op, xt, yt)
		}
		f.emit(alu.Reg(asm.R0, asm.R1))
		return nil
	}
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		signed := xt.Kind == lang.KindInt && yt.Kind == lang.KindInt && xt.Signed && yt.Signed
		j := compareJump(op, signed)
		yes, end := f.label("true"), f.label("cmpend")
		f.emit(j.Reg(asm.R0, asm.R1, yes), asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
		f.place(yes)
		f.emit(asm.Mov.Imm(asm.R0, 1))
		f.place(end)
	default:
		return f.c.errorf(n, "operator %s: %w", op, ErrUnsupported)
	}
	return nil
}

// scaleOffset multiplies the integer operand of pointer + integer,
// integer + pointer and pointer - integer (R0 op R1, of types xt and yt)
// by the size of what the pointer points to, as C does.
func (f *fn) scaleOffset(op string, xt, yt lang.Type) {
	offset, ptr := asm.R1, xt
	switch {
	case xt.Kind == lang.KindPointer && yt.Kind != lang.KindPointer:
	case op == "+" && yt.Kind == lang.KindPointer && xt.Kind != lang.KindPointer:
		offset, ptr = asm.R0, yt
	default:
		return
	}
	if s := f.elemSize(ptr); s != 1 {
		f.emit(asm.Mul.Imm(offset, int32(s)))
	}
}

// aluOps are the operators that are one BPF instruction on R0 and R1,
// and that instruction.
var aluOps = map[string]asm.ALUOp{
	"+": asm.Add, "-": asm.Sub, "*": asm.Mul, "/": asm.Div, "%": asm.Mod,
	"&": asm.And, "|": asm.Or, "^": asm.Xor, "<<": asm.LSh, ">>": asm.RSh,
}

// compareJump is the jump taken when `a op b` holds.
func compareJump(op string, signed bool) asm.JumpOp {
	switch op {
	case "==":
		return asm.JEq
	case "!=":
		return asm.JNE
	case "<":
		if signed {
			return asm.JSLT
		}
		return asm.JLT
	case "<=":
		if signed {
			return asm.JSLE
		}
		return asm.JLE
	case ">":
		if signed {
			return asm.JSGT
		}
		return asm.JGT
	}
	if signed {
		return asm.JSGE
	}
	return asm.JGE
}

// logical lowers && and || with short-circuit evaluation, its left
// operand in R0; the result is 0 or 1.
func (f *fn) logical(e *lang.Binary, l logicalLabels) error {
	// &&: a false side decides (result 0); ||: a true side (result 1).
	jump, shortVal, fullVal := asm.JEq, int32(0), int32(1)
	if e.Op == "||" {
		jump, shortVal, fullVal = asm.JNE, 1, 0
	}
	f.emit(jump.Imm(asm.R0, 0, l.short))
	if err := f.intExpr(e.Y); err != nil {
		return err
	}
	f.emit(jump.Imm(asm.R0, 0, l.short), asm.Mov.Imm(asm.R0, fullVal), asm.Ja.Label(l.end))
	f.place(l.short)
	f.emit(asm.Mov.Imm(asm.R0, shortVal))
	f.place(l.end)
	return nil
}

// unary lowers ! ~ -, the dereference * and the address-of &.
func (f *fn) unary(e *lang.Unary) error {
	if e.Op == "&" {
		return f.addressOf(e)
	}
	if err := f.intExpr(e.X); err != nil {
		return err
	}
	switch e.Op {
	case "!":
		yes, end := f.label("not"), f.label("notend")
		f.emit(asm.JEq.Imm(asm.R0, 0, yes), asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
		f.place(yes)
		f.emit(asm.Mov.Imm(asm.R0, 1))
		f.place(end)
	case "~":
		f.emit(asm.Xor.Imm(asm.R0, -1))
	case "-":
		f.emit(asm.Neg.Imm(asm.R0, 0))
	case "*":
		xt := f.typeOf(e.X)
		switch xt.Kind {
		case lang.KindPointer:
			return f.load(e, f.pointee(xt), f.inKernel(e.X))
		case lang.KindInt:
			// An integer is an address of a u64, as in bpftrace.
			return f.load(e, lang.Uint64, false)
		}
		return f.c.errorf(e, "dereferencing %s, not a pointer", xt)
	default:
		return f.c.errorf(e, "operator %s: %w", e.Op, ErrUnsupported)
	}
	return nil
}

// incDec lowers ++ and -- on a variable or a map element.
func (f *fn) incDec(e *lang.IncDec) error {
	// A pointer steps by the size of what it points to, as in 0.17.
	delta := int32(1)
	if t := f.typeOf(e.X); t.Kind == lang.KindPointer {
		delta = int32(f.elemSize(t))
	}
	if e.Op == "--" {
		delta = -delta
	}
	switch x := e.X.(type) {
	case *lang.Var:
		v, ok := f.vars[x.Name]
		if !ok || !isScalar(v.typ) {
			return f.c.errorf(e, "%s on %s, not an integer variable", e.Op, x.Name)
		}
		f.emit(
			asm.LoadMem(asm.R0, f.fp, v.slot, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Add.Imm(asm.R1, delta),
		)
		if v.typ.Kind == lang.KindInt {
			f.emit(extend(asm.R1, v.typ.Size, v.typ.Signed)...)
		}
		f.emit(asm.StoreMem(f.fp, v.slot, asm.R1, asm.DWord))
		if !e.Post {
			f.emit(asm.Mov.Reg(asm.R0, asm.R1))
		}
		return nil
	case *lang.MapExpr:
		return f.mapIncDec(e, x, delta)
	}
	return f.c.errorf(e, "%s on %T", e.Op, e.X)
}
