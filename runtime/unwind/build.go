package unwind

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// regs are the DWARF register numbers the table tracks on one machine.
type regs struct {
	sp, fp, ra uint64
}

// machineRegs are the machines Build knows: x86-64 (rsp 7, rbp 6, the
// return address column 16) and arm64 (sp 31, x29, x30).
var machineRegs = map[elf.Machine]regs{
	elf.EM_X86_64:  {sp: 7, fp: 6, ra: 16},
	elf.EM_AARCH64: {sp: 31, fp: 29, ra: 30},
}

// Build reads f's .eh_frame (or its .debug_frame when it has no
// .eh_frame) and interprets every FDE's program once into rows.
func Build(f *elf.File) (*Table, error) {
	mr, ok := machineRegs[f.Machine]
	if !ok {
		return nil, fmt.Errorf("build unwind table: unsupported machine %v", f.Machine)
	}
	if f.ByteOrder != binary.LittleEndian || f.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("build unwind table: %v %v files are not supported, only 64-bit little-endian", f.Class, f.Data)
	}
	name, ehFrameAddr := ".eh_frame", uint64(0)
	sec := f.Section(name)
	if sec != nil && sec.Type != elf.SHT_NOBITS {
		ehFrameAddr = sec.Addr
		if ehFrameAddr == 0 {
			// delve tells .eh_frame from .debug_frame by a non-zero address.
			return nil, fmt.Errorf("build unwind table: %s has address 0 (not a linked file)", name)
		}
	} else {
		name = ".debug_frame"
		sec = f.Section(name)
	}
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, errors.New("build unwind table: no .eh_frame or .debug_frame section")
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	fdes, err := parseFrames(data, ehFrameAddr)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	b := newBuilder(f.Machine, mr)
	b.interp.section, b.interp.ehFrameAddr = data, ehFrameAddr
	// bitcoind has a row per 5.5 bytes of .eh_frame; starting near that
	// saves the appends' copies, and finish trims what is left over.
	b.t.Rows = make([]Row, 0, len(data)/4)
	for _, o := range addressOrder(fdes) {
		fde := fdes[o.index]
		if fde.End() <= fde.Begin() {
			continue // empty, or its size wraps around: covers nothing
		}
		if err := b.addFDE(fde, data); err != nil {
			return nil, fmt.Errorf("interpret %s: %w", name, err)
		}
	}
	return b.finish(), nil
}

// fdeOrder is an FDE's place in address order: its start and its index
// in section order.
type fdeOrder struct {
	begin uint64
	index int
}

// addressOrder returns the order in which to add fdes: by start address,
// the first in the section first among FDEs that start together. Sorting
// these plain values rather than delve's pointers saves the write
// barriers, a quarter of Build's time when it sorted the pointers.
func addressOrder(fdes frame.FrameDescriptionEntries) []fdeOrder {
	order := make([]fdeOrder, len(fdes))
	for i, fde := range fdes {
		order[i] = fdeOrder{fde.Begin(), i}
	}
	slices.SortFunc(order, func(a, b fdeOrder) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.index, b.index))
	})
	return order
}

// parseFrames parses an .eh_frame (ehFrameAddr, its address, non-zero)
// or a .debug_frame (ehFrameAddr 0) with delve's parser. That parser
// panics on some malformed sections (v1.27.2 slices past an FDE's end
// when its augmentation length runs past it; FuzzBuild found it), so a
// panic is turned into an error here: a bad file is an error, never a
// crash of the tracer.
func parseFrames(data []byte, ehFrameAddr uint64) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if r := recover(); r != nil {
			fdes, err = nil, fmt.Errorf("malformed entries (the parser failed: %v)", r)
		}
	}()
	return frame.Parse(data, binary.LittleEndian, 0, 8, ehFrameAddr)
}

// builder collects the rows of a table FDE by FDE, in address order.
type builder struct {
	t     Table
	regs  regs
	index map[Rule]uint16
	// end is where the last FDE added stops covering.
	end uint64
	// interp is reused across FDEs so that its state stack is allocated once.
	interp interpreter
	// lastRule and lastIndex are the rule rule returned last, and its
	// index (rule 0, undefined, to start with).
	lastRule  Rule
	lastIndex uint16
}

// newBuilder starts an empty table for machine m, whose tracked registers
// are mr, with rule 0 the undefined one.
func newBuilder(m elf.Machine, mr regs) *builder {
	b := &builder{
		t:     Table{Machine: m, Rules: []Rule{{CFAReg: RegUndefined}}},
		regs:  mr,
		index: map[Rule]uint16{{CFAReg: RegUndefined}: 0},
	}
	b.interp.regs = mr
	b.interp.arm64 = m == elf.EM_AARCH64
	return b
}

// sectionOffset is where sub, a slice of data, starts within data: delve's
// entries keep their instructions as sub-slices of the section, which is
// what lets an error name the offset of the instruction at fault.
func sectionOffset(data, sub []byte) int {
	return cap(data) - cap(sub)
}

// addFDE interprets fde's CIE initial instructions, then its own, and
// appends a row wherever the rule changes.
func (b *builder) addFDE(fde *frame.FrameDescriptionEntry, data []byte) error {
	begin, end := fde.Begin(), fde.End()
	if begin < b.end {
		// Overlaps the one before: the earlier FDE keeps the overlap, as a
		// lookup that finds the first FDE covering an address would.
		begin = b.end
		if begin >= end {
			return nil
		}
	}
	cie := fde.CIE
	in := &b.interp
	in.reset(cie.CodeAlignmentFactor, cie.DataAlignmentFactor, cie.ReturnAddressRegister)
	in.fde = nil
	if err := in.run(cie.InitialInstructions, fde.Begin(), nil); err != nil {
		return fmt.Errorf("CIE initial instructions at %#x, of the FDE for %#x: %w",
			sectionOffset(data, cie.InitialInstructions), fde.Begin(), err)
	}
	in.initial = in.cur
	if b.end < begin && len(b.t.Rows) > 0 {
		b.add(b.end, 0)
	}
	loc := fde.Begin()
	// rowStart is where the rule of the current state starts applying.
	rowStart := loc
	emit := func(next uint64) {
		if next <= rowStart || rowStart >= end {
			return
		}
		if next > begin {
			b.add(max(rowStart, begin), b.rule(&in.cur))
		}
		rowStart = next
	}
	in.fde = fde
	err := in.run(fde.Instructions, loc, emit)
	if err != nil {
		return fmt.Errorf("FDE for %#x..%#x, instructions at %#x: %w",
			fde.Begin(), end, sectionOffset(data, fde.Instructions), err)
	}
	emit(end)
	b.end = end
	return nil
}

// add appends a row unless the last row already has its rule.
func (b *builder) add(addr uint64, rule uint16) {
	if n := len(b.t.Rows); n > 0 {
		last := &b.t.Rows[n-1]
		if last.Rule == rule {
			return
		}
		if last.Addr == addr {
			// An earlier row that covers nothing: replace it, then merge
			// with the one before if they now agree.
			b.t.Rows = b.t.Rows[:n-1]
			b.add(addr, rule)
			return
		}
	}
	b.t.Rows = append(b.t.Rows, Row{Addr: addr, Rule: rule})
}

// finish closes the table with an undefined row after the last FDE.
func (b *builder) finish() *Table {
	if len(b.t.Rows) > 0 {
		b.add(b.end, 0)
	}
	// The table is kept for the whole run (Cache): drop the spare capacity.
	b.t.Rows = slices.Clone(b.t.Rows)
	return &b.t
}

// rule returns the index of the rule of state s, adding it if it is new.
// Past 65,535 distinct rules (a row's index is 16 bits) every new one is
// RegUnsupported: real files have a few hundred.
func (b *builder) rule(s *state) uint16 {
	r := s.rule(b.regs, b.interp.raReg, b.interp.arm64)
	if r == b.lastRule {
		// Consecutive rows often share a rule (an advance past a change
		// of an untracked register, an FDE starting as the last ended).
		return b.lastIndex
	}
	i, ok := b.index[r]
	if !ok {
		i = b.addRule(r)
	}
	b.lastRule, b.lastIndex = r, i
	return i
}

// addRule adds the new rule r and returns its index.
func (b *builder) addRule(r Rule) uint16 {
	if len(b.t.Rules) >= math.MaxUint16 && r != unsupported {
		// The last index is kept for the unsupported rule.
		if i, ok := b.index[unsupported]; ok {
			return i
		}
		r = unsupported
	}
	i := uint16(len(b.t.Rules))
	b.t.Rules = append(b.t.Rules, r)
	b.index[r] = i
	return i
}
