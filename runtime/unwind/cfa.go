package unwind

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// The call frame instructions (DWARF 5, section 6.4.2, and the GNU
// extensions gcc emits). The three with an operand in their low six bits
// are matched on their top two bits.
const (
	opAdvanceLoc = 0x40 // delta in the low 6 bits
	opOffset     = 0x80 // register in the low 6 bits, ULEB128 factored offset
	opRestore    = 0xc0 // register in the low 6 bits

	opNop                  = 0x00
	opSetLoc               = 0x01
	opAdvanceLoc1          = 0x02
	opAdvanceLoc2          = 0x03
	opAdvanceLoc4          = 0x04
	opOffsetExtended       = 0x05
	opRestoreExtended      = 0x06
	opUndefined            = 0x07
	opSameValue            = 0x08
	opRegister             = 0x09
	opRememberState        = 0x0a
	opRestoreState         = 0x0b
	opDefCFA               = 0x0c
	opDefCFARegister       = 0x0d
	opDefCFAOffset         = 0x0e
	opDefCFAExpression     = 0x0f
	opExpression           = 0x10
	opOffsetExtendedSF     = 0x11
	opDefCFASF             = 0x12
	opDefCFAOffsetSF       = 0x13
	opValOffset            = 0x14
	opValOffsetSF          = 0x15
	opValExpression        = 0x16
	opGNUWindowSave        = 0x2d // arm64: DW_CFA_AARCH64_negate_ra_state
	opGNUArgsSize          = 0x2e
	opGNUNegOffsetExtended = 0x2f
)

// maxRememberedStateDepth bounds DW_CFA_remember_state's stack, so that a
// corrupt program cannot grow it without end; gcc nests one or two.
const maxRememberedStateDepth = 64

// pltCFAExpression is the one CFA expression x86-64 linkers emit for .plt
// (binutils' ld, gold and lld alike): rsp + 8, plus 8 more once the entry
// has pushed its index, i.e. when (rip & 15) >= 11. In DWARF operations:
// breg7 8, breg16 0, lit15, and, lit11, ge, lit3, shl, plus.
var pltCFAExpression = []byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}

// cfaKind says how the CFA is computed in a state.
type cfaKind uint8

const (
	cfaRegister   cfaKind = iota // register + offset
	cfaPLT                       // pltCFAExpression
	cfaExpression                // any other expression
)

// regKind is how a tracked register (the frame pointer, the return
// address) was saved by the function at the current address.
type regKind uint8

const (
	regSame      regKind = iota // unchanged: still in the register
	regUndefined                // not recoverable (the outermost frame's return address)
	regOffset                   // saved at CFA + off
	regOther                    // in another register, at an expression, or a value rule
)

// regRule is the rule of one tracked register.
type regRule struct {
	kind regKind
	off  int64
}

// state is the interpreter's row: the CFA and the tracked registers.
type state struct {
	cfa    cfaKind
	cfaReg uint64
	cfaOff int64
	fp, ra regRule
}

// unsupported is the rule of every state the table cannot describe.
var unsupported = Rule{CFAReg: RegUnsupported}

// rule turns s into the table's rule: RegUndefined where the return
// address is undefined, RegUnsupported where anything the unwinder needs
// (the CFA, the saved frame pointer, the return address) is not a register
// plus an offset that fits 32 bits.
func (s *state) rule(mr regs, raReg uint64, arm64 bool) Rule {
	if s.ra.kind == regUndefined {
		return Rule{CFAReg: RegUndefined}
	}
	var r Rule
	switch {
	case s.cfa == cfaPLT:
		r.CFAReg = RegPLT
	case s.cfa == cfaExpression:
		return unsupported
	case s.cfaReg == mr.sp:
		r.CFAReg = RegSP
	case s.cfaReg == mr.fp:
		r.CFAReg = RegFP
	default:
		return unsupported
	}
	if s.cfa == cfaRegister {
		off, ok := fit32(s.cfaOff)
		if !ok {
			return unsupported
		}
		r.CFAOffset = off
	}
	switch s.fp.kind {
	case regOffset:
		off, ok := fit32(s.fp.off)
		if !ok || off == 0 {
			return unsupported
		}
		r.FPOffset = off
	case regOther:
		return unsupported
	}
	switch {
	case raReg != mr.ra:
		// A CIE naming another return address column than the ABI's:
		// nothing this table describes.
		return unsupported
	case arm64 && s.ra.kind == regOffset:
		off, ok := fit32(s.ra.off)
		if !ok || off == 0 {
			return unsupported
		}
		r.RAOffset = off
	case arm64 && s.ra.kind == regSame:
	case !arm64 && s.ra.kind == regOffset && s.ra.off == -8:
	default:
		return unsupported
	}
	return r
}

// fit32 returns v as an int32 and whether it fits.
func fit32(v int64) (int32, bool) {
	return int32(v), v >= math.MinInt32 && v <= math.MaxInt32
}

// interpreter runs call frame instructions over a state.
type interpreter struct {
	regs  regs
	arm64 bool
	// caf and daf are the CIE's code and data alignment factors; raReg
	// its return address column.
	caf   uint64
	daf   int64
	raReg uint64
	// cur is the state; initial the one after the CIE's initial
	// instructions, which DW_CFA_restore returns a register to.
	cur, initial state
	stack        []state
	loc          uint64
	// fde is the FDE whose instructions run (nil for a CIE's), in
	// section, loaded at ehFrameAddr (0 for .debug_frame): what
	// DW_CFA_set_loc needs to decode its operand.
	fde         *frame.FrameDescriptionEntry
	section     []byte
	ehFrameAddr uint64
}

// reset starts the interpreter on a CIE's parameters.
func (in *interpreter) reset(caf uint64, daf int64, raReg uint64) {
	in.caf, in.daf, in.raReg = caf, daf, raReg
	in.cur, in.initial = state{}, state{}
	in.stack = in.stack[:0]
}

// tracked returns the rule of DWARF register reg if the table tracks it
// (the frame pointer or the return address column), else nil.
func (in *interpreter) tracked(s *state, reg uint64) *regRule {
	switch reg {
	case in.raReg:
		return &s.ra
	case in.regs.fp:
		return &s.fp
	}
	return nil
}

// setReg sets the rule of reg, if it is tracked.
func (in *interpreter) setReg(reg uint64, r regRule) {
	if p := in.tracked(&in.cur, reg); p != nil {
		*p = r
	}
}

// errTruncated is the error of an instruction whose operands run past the
// end of its program.
var errTruncated = errors.New("operands run past the end of the program")

// cursor reads a program's operands.
type cursor struct {
	code []byte
	pos  int
}

func (c *cursor) byte() (byte, error) {
	if c.pos >= len(c.code) {
		return 0, errTruncated
	}
	b := c.code[c.pos]
	c.pos++
	return b, nil
}

func (c *cursor) fixed(n int) (uint64, error) {
	if len(c.code)-c.pos < n {
		return 0, errTruncated
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(c.code[c.pos+i])
	}
	c.pos += n
	return v, nil
}

// uleb reads an unsigned LEB128; bits past 64 are an error, not dropped.
func (c *cursor) uleb() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b, err := c.byte()
		if err != nil {
			return 0, err
		}
		if shift >= 64 || (shift == 63 && b&0x7e != 0) {
			return 0, errors.New("LEB128 operand overflows 64 bits")
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, nil
		}
	}
}

// sleb reads a signed LEB128.
func (c *cursor) sleb() (int64, error) {
	var v int64
	shift := uint(0)
	for {
		b, err := c.byte()
		if err != nil {
			return 0, err
		}
		if shift >= 64 {
			return 0, errors.New("LEB128 operand overflows 64 bits")
		}
		v |= int64(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
	}
}

// block reads a ULEB128 length and that many bytes (a DWARF expression).
func (c *cursor) block() ([]byte, error) {
	n, err := c.uleb()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(c.code)-c.pos) {
		return nil, errTruncated
	}
	b := c.code[c.pos : c.pos+int(n)]
	c.pos += int(n)
	return b, nil
}

// run interprets code from location loc, calling advance with the new
// location at every instruction that moves it (advance may be nil: a
// CIE's initial instructions). An error names the offset of the
// instruction at fault within code.
func (in *interpreter) run(code []byte, loc uint64, advance func(uint64)) error {
	c := cursor{code: code}
	in.loc = loc
	for c.pos < len(code) {
		at := c.pos
		op, _ := c.byte()
		if err := in.step(&c, op, advance); err != nil {
			return fmt.Errorf("instruction %#02x at +%#x: %w", op, at, err)
		}
	}
	return nil
}

// moveTo sets the location and reports it.
func (in *interpreter) moveTo(loc uint64, advance func(uint64)) {
	in.loc = loc
	if advance != nil {
		advance(loc)
	}
}

// step interprets one instruction whose opcode op has been read from c.
func (in *interpreter) step(c *cursor, op byte, advance func(uint64)) error {
	switch op & 0xc0 {
	case opAdvanceLoc:
		in.moveTo(in.loc+uint64(op&0x3f)*in.caf, advance)
		return nil
	case opOffset:
		off, err := c.uleb()
		if err != nil {
			return err
		}
		in.setReg(uint64(op&0x3f), regRule{kind: regOffset, off: int64(off) * in.daf})
		return nil
	case opRestore:
		in.restore(uint64(op & 0x3f))
		return nil
	}
	switch op {
	case opNop:
	case opSetLoc:
		// Compilers and assemblers do not emit it; hand-written CFI may.
		if in.fde == nil {
			return errors.New("DW_CFA_set_loc outside an FDE")
		}
		d, err := newLocationDecoder(in.section, in.fde, in.ehFrameAddr)
		if err != nil {
			return err
		}
		loc, err := d.decode(c)
		if err != nil {
			return err
		}
		in.moveTo(loc, advance)
	case opAdvanceLoc1, opAdvanceLoc2, opAdvanceLoc4:
		delta, err := c.fixed(1 << (op - opAdvanceLoc1))
		if err != nil {
			return err
		}
		in.moveTo(in.loc+delta*in.caf, advance)
	case opOffsetExtended, opValOffset, opGNUNegOffsetExtended:
		reg, err := c.uleb()
		if err != nil {
			return err
		}
		off, err := c.uleb()
		if err != nil {
			return err
		}
		r := regRule{kind: regOffset, off: int64(off) * in.daf}
		switch op {
		case opValOffset:
			r.kind = regOther
		case opGNUNegOffsetExtended:
			r.off = -r.off
		}
		in.setReg(reg, r)
	case opOffsetExtendedSF, opValOffsetSF:
		reg, err := c.uleb()
		if err != nil {
			return err
		}
		off, err := c.sleb()
		if err != nil {
			return err
		}
		r := regRule{kind: regOffset, off: off * in.daf}
		if op == opValOffsetSF {
			r.kind = regOther
		}
		in.setReg(reg, r)
	case opRestoreExtended, opUndefined, opSameValue:
		reg, err := c.uleb()
		if err != nil {
			return err
		}
		switch op {
		case opRestoreExtended:
			in.restore(reg)
		case opUndefined:
			in.setReg(reg, regRule{kind: regUndefined})
		default:
			in.setReg(reg, regRule{kind: regSame})
		}
	case opRegister, opExpression, opValExpression:
		// The register is in another register, or at or equal to an
		// expression's value: nothing the table can describe.
		reg, err := c.uleb()
		if err != nil {
			return err
		}
		if op == opRegister {
			_, err = c.uleb()
		} else {
			_, err = c.block()
		}
		if err != nil {
			return err
		}
		in.setReg(reg, regRule{kind: regOther})
	case opRememberState:
		if len(in.stack) >= maxRememberedStateDepth {
			return fmt.Errorf("more than %d nested DW_CFA_remember_state", maxRememberedStateDepth)
		}
		in.stack = append(in.stack, in.cur)
	case opRestoreState:
		if len(in.stack) == 0 {
			return errors.New("DW_CFA_restore_state without DW_CFA_remember_state")
		}
		// The CFA comes back with the registers, as gcc's unwinder and
		// readelf do: gcc brackets an epilogue in the middle of a function
		// with the pair and changes the CFA offset between them.
		in.cur = in.stack[len(in.stack)-1]
		in.stack = in.stack[:len(in.stack)-1]
	case opDefCFA, opDefCFASF:
		reg, err := c.uleb()
		if err != nil {
			return err
		}
		var off int64
		if op == opDefCFA {
			u, err := c.uleb()
			if err != nil {
				return err
			}
			off = int64(u)
		} else {
			s, err := c.sleb()
			if err != nil {
				return err
			}
			off = s * in.daf
		}
		in.cur.cfa, in.cur.cfaReg, in.cur.cfaOff = cfaRegister, reg, off
	case opDefCFARegister:
		reg, err := c.uleb()
		if err != nil {
			return err
		}
		in.cur.cfa, in.cur.cfaReg = cfaRegister, reg
	case opDefCFAOffset:
		off, err := c.uleb()
		if err != nil {
			return err
		}
		in.cur.cfaOff = int64(off)
	case opDefCFAOffsetSF:
		off, err := c.sleb()
		if err != nil {
			return err
		}
		in.cur.cfaOff = off * in.daf
	case opDefCFAExpression:
		expr, err := c.block()
		if err != nil {
			return err
		}
		in.cur.cfa = cfaExpression
		if !in.arm64 && bytes.Equal(expr, pltCFAExpression) {
			in.cur.cfa = cfaPLT
		}
	case opGNUArgsSize:
		if _, err := c.uleb(); err != nil {
			return err
		}
	case opGNUWindowSave:
		if !in.arm64 {
			return errors.New("DW_CFA_GNU_window_save is SPARC's (arm64's negate_ra_state), not x86-64's")
		}
		// Pointer authentication: x30 is signed from here on. The saved
		// value is where the rules say; stripping its PAC bits is the
		// unwinder's.
	default:
		return errors.New("unknown call frame instruction")
	}
	return nil
}

// restore returns reg to its rule after the CIE's initial instructions.
func (in *interpreter) restore(reg uint64) {
	if p := in.tracked(&in.initial, reg); p != nil {
		in.setReg(reg, *p)
	}
}
