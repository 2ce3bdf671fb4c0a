package plan

import (
	"debug/elf"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// A uprobe writes a breakpoint over the first byte of an instruction: at an
// address inside an instruction it corrupts that instruction and the traced
// program crashes or computes garbage. The attach points that give an
// address (uprobe:BIN:0x2262, uprobe:BIN:8802) or a function and an offset
// (uprobe:BIN:main+2) are checked before anything is loaded: the address
// must start an instruction of the function symbol that holds it, which is
// decoded from its first byte. bpftrace 0.17 as packaged here refuses them
// all ("compiled without (k|u)probe offset support").

// maxInstLen is the length of the longest x86-64 instruction.
const maxInstLen = 15

// place is where a uprobe attach point attaches in its file, resolved
// once: the symbol it names ("" for one given by address or by function
// and offset), the address, and the file offset the kernel takes; and
// the attach point's function field, which says how the site was given.
type place struct {
	symbol string
	addr   uint64
	offset uint64
	field  attachpoint.Func
}

// placeUprobes resolves where each uprobe and uretprobe attach point of p
// attaches, in the files h read, keyed by the attach point's place and
// function field. p is the matched program: each
// attach point names one symbol exactly, or an address. The uprobes
// given by address or by function and offset that would not start an
// instruction are refused, and such uretprobes that are not at a
// function's entry. Where gotrace cannot tell (no function symbol holds
// the address, as in a stripped file, or an instruction it does not know
// comes first) the attach point is refused too, unless in.Unsafe is set:
// then a warning says what was not checked.
func placeUprobes(p *lang.Program, h *hostFacts, in Input) (map[placeKey]place, error) {
	places := map[placeKey]place{}
	var errs, warnings lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if ap.Kind != lang.ProbeUprobe && ap.Kind != lang.ProbeUretprobe {
				continue
			}
			pl, e, unchecked := placeUprobe(ap, h.targets[ap.Target])
			switch {
			case e == nil:
			case unchecked && in.Unsafe:
				warnings = append(warnings, e)
			case unchecked:
				e.Hint = "--unsafe attaches there anyway"
				errs = append(errs, e)
				continue
			default:
				errs = append(errs, e)
				continue
			}
			places[placeKey{loc: ap.Loc, field: ap.Func}] = pl
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(warnings) > 0 && in.Warnings != nil {
		warnings.WriteWarnings(in.Warnings, p.File, p.Source)
	}
	return places, nil
}

// placeUprobe resolves where uprobe attach point ap attaches in target,
// the file as the plan read it. An error with unchecked set still comes
// with the place: gotrace could not check the address, and --unsafe
// attaches there.
func placeUprobe(ap *lang.AttachPoint, target targetFacts) (pl place, e *lang.Error, unchecked bool) {
	pl.field = ap.Function
	if ap.Function.AtAddress() {
		pl.addr, e, unchecked = checkAddress(ap, target)
		if e != nil && !unchecked {
			return pl, e, false
		}
	} else {
		// Attach by offset: symbols of size 0 (frame_dummy,
		// hand-written assembly) are still code.
		sym := symbolNamed(target.funcs, ap.Func)
		if sym.Name == "" {
			return pl, attachProblem(ap, "function %s not found", ap.Func), false
		}
		pl.symbol, pl.addr = sym.Name, sym.Value
	}
	if target.file == nil {
		return pl, attachProblem(ap, "the plan did not read %s", ap.Target), false
	}
	off, err := fileOffset(target.file, pl.addr)
	if err != nil && pl.symbol != "" {
		err = fmt.Errorf("symbol %s: %w", pl.symbol, err)
	}
	if err != nil {
		return pl, attachProblem(ap, "%v", err), false
	}
	pl.offset = off
	return pl, e, unchecked
}

// fileOffset turns a virtual address of the code of f into the file
// offset a uprobe takes.
func fileOffset(f *usdt.File, addr uint64) (uint64, error) {
	off, ok := f.Offset(addr, true)
	if !ok {
		return 0, fmt.Errorf("address %#x is not in an executable segment of %s", addr, f.Path())
	}
	return off, nil
}

// checkAddress checks one attach point in its file as the plan read it,
// target (see placeUprobes), and returns the address it gives. unchecked
// says that the problem is that gotrace could not check the address.
func checkAddress(ap *lang.AttachPoint, target targetFacts) (addr uint64, e *lang.Error, unchecked bool) {
	if !givesAddress(ap) {
		return 0, nil, false
	}
	if ap.Function.Offset != 0 && ap.Kind == lang.ProbeUretprobe {
		return 0, attachProblem(ap, "%s: a uretprobe attaches only at a function's entry, without an offset", ap.Func), false
	}
	syms, err := target.funcs, target.funcsErr
	switch {
	case err != nil:
		return 0, targetProblem(ap, err), false
	case target.file == nil:
		return 0, attachProblem(ap, "the plan did not read %s", ap.Target), false
	}
	addr, sym, err := uprobeAddress(ap.Function, ap.Address, syms)
	if err != nil {
		return addr, attachProblem(ap, "%v", err), false
	}
	if isFunctionStart(syms, addr) {
		return addr, nil, false
	}
	if sym.Name == "" {
		sym = symbolHolding(syms, addr)
	}
	e, unchecked = checkPlace(ap, target.file, sym, addr)
	return addr, e, unchecked
}

// givesAddress reports whether ap is a uprobe or uretprobe given by
// address or by function and offset.
func givesAddress(ap *lang.AttachPoint) bool {
	return (ap.Kind == lang.ProbeUprobe || ap.Kind == lang.ProbeUretprobe) && ap.Function.AtAddress()
}

// checkPlace checks address addr of the ELF file f, which is no
// function's entry, for attach point ap: the function symbol sym holds it
// (Name "" when none does).
func checkPlace(ap *lang.AttachPoint, f *usdt.File, sym elf.Symbol, addr uint64) (e *lang.Error, unchecked bool) {
	var start uint64
	var n int
	what := fmt.Sprintf("address %#x", addr)
	if ap.Function.HasOffset {
		what = fmt.Sprintf("%s (address %#x)", ap.Func, addr)
	}
	if _, err := f.ReadCode(addr, 1); err != nil {
		return attachProblem(ap, "%v", err), false
	}
	switch {
	case sym.Name == "" && ap.Kind == lang.ProbeUretprobe:
		return attachProblem(ap, "no function symbol of %s holds %s (a stripped file?): gotrace cannot check that it is a function's entry, the only place a uretprobe may attach", ap.Target, what), true
	case sym.Name == "":
		return attachProblem(ap, "no function symbol of %s holds %s (a stripped file?): gotrace cannot check that a uprobe there starts an instruction, and one inside an instruction corrupts it", ap.Target, what), true
	case ap.Kind == lang.ProbeUretprobe:
		return attachProblem(ap, "%s is %s+%d: a uretprobe attaches only at a function's entry", what, sym.Name, addr-sym.Value), false
	}
	// The function's code from its first byte through the longest
	// instruction that may start at addr.
	code, err := f.ReadCode(sym.Value, addr-sym.Value+maxInstLen)
	if err == nil {
		start, n, err = instructionAt(code, sym, addr)
	}
	if err != nil {
		return attachProblem(ap, "cannot check that %s starts an instruction of %s: %v", what, sym.Name, err), true
	}
	if start == addr {
		return nil, false
	}
	e = attachProblem(ap, "%s is inside an instruction of %s (at %#x, %d bytes long): a uprobe there would corrupt it", what, sym.Name, start, n)
	next := start + uint64(n)
	e.Hint = fmt.Sprintf("the nearest instructions start at %#x (%s+%d) and %#x (%s+%d)",
		start, sym.Name, start-sym.Value, next, sym.Name, next-sym.Value)
	return e, false
}

// attachProblem is a diagnostic at attach point ap.
func attachProblem(ap *lang.AttachPoint, format string, args ...any) *lang.Error {
	return &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf(format, args...)}
}

// uprobeAddress returns the address a uprobe's function field gives: a
// decimal address, or a function and an offset; address, the parser's
// hexadecimal one, otherwise. For a function and offset it also returns
// the function's symbol, which the offset must lie in: expandUprobes has
// made the function one symbol's name.
func uprobeAddress(field attachpoint.Func, address uint64, syms []elf.Symbol) (uint64, elf.Symbol, error) {
	if field.IsAddress {
		return field.Address, elf.Symbol{}, nil
	}
	name, off := field.Name, field.Offset
	if !field.HasOffset {
		return address, elf.Symbol{}, nil
	}
	sym := symbolNamed(syms, name)
	if sym.Name == "" {
		return 0, elf.Symbol{}, fmt.Errorf("function %s not found", name)
	}
	if off != 0 && off >= sym.Size {
		return 0, sym, fmt.Errorf("Offset outside the function bounds ('%s' size is %d): +%d", sym.Name, sym.Size, off)
	}
	return sym.Value + off, sym, nil
}

// symbolNamed returns the symbol of syms called name.
func symbolNamed(syms []elf.Symbol, name string) elf.Symbol {
	for _, s := range syms {
		if s.Name == name {
			return s
		}
	}
	return elf.Symbol{}
}

// isFunctionStart reports whether a function symbol starts at addr.
func isFunctionStart(syms []elf.Symbol, addr uint64) bool {
	for _, s := range syms {
		if s.Value == addr {
			return true
		}
	}
	return false
}

// symbolHolding returns the function symbol whose code holds addr, the
// innermost when several do; its Name is "" when none does.
func symbolHolding(syms []elf.Symbol, addr uint64) elf.Symbol {
	var best elf.Symbol
	for _, s := range syms {
		if addr < s.Value || addr-s.Value >= s.Size {
			continue
		}
		if best.Name == "" || s.Value > best.Value || (s.Value == best.Value && s.Name < best.Name) {
			best = s
		}
	}
	return best
}

// instructionAt decodes code, the code of the function sym from its
// first byte, and returns the start and the length of the instruction
// that holds addr.
func instructionAt(code []byte, sym elf.Symbol, addr uint64) (start uint64, n int, err error) {
	for pc := uint64(0); pc < uint64(len(code)); pc += uint64(n) {
		if n, err = instLen(code[pc:]); err != nil {
			return 0, 0, fmt.Errorf("decode the instruction at %#x: %w", sym.Value+pc, err)
		}
		if sym.Value+pc+uint64(n) > addr {
			return sym.Value + pc, n, nil
		}
	}
	return 0, 0, fmt.Errorf("the code of %s ends before %#x", sym.Name, addr)
}

// instLen returns the length of the x86-64 instruction that b starts with.
//
// x86asm does not know the hint-NOP opcodes 0F 18-0F 1F with a register
// operand, among them CET's endbr64 (F3 0F 1E FA), which starts every
// function of a binary built with -fcf-protection; and for a prefix before
// an opcode it does not know (F3 0F 1E FA, F3 0F AE EE) it returns the
// prefix alone as a 1-byte instruction without an error. So hint NOPs are
// measured here, and an instruction x86asm cannot name is an error.
func instLen(b []byte) (int, error) {
	if n, ok := hintNOPLen(b); ok {
		return n, nil
	}
	inst, err := x86asm.Decode(b, 64)
	if err != nil {
		return 0, err
	}
	if inst.Op == 0 {
		return 0, fmt.Errorf("unknown instruction % x", b[:min(len(b), inst.Len+4)])
	}
	return inst.Len, nil
}

// hintNOPLen returns the length of the hint NOP (opcode 0F 18 to 0F 1F,
// with legacy prefixes and a REX prefix) that b starts with; ok is false
// when b starts with another instruction.
func hintNOPLen(b []byte) (n int, ok bool) {
	i := 0
	for i < len(b) && isLegacyPrefix(b[i]) {
		i++
	}
	if i < len(b) && b[i]&0xf0 == 0x40 {
		i++
	}
	if i+2 >= len(b) || b[i] != 0x0f || b[i+1] < 0x18 || b[i+1] > 0x1f {
		return 0, false
	}
	m := modRMLen(b[i+2:])
	if m == 0 || i+2+m > maxInstLen {
		return 0, false
	}
	return i + 2 + m, true
}

// isLegacyPrefix reports whether c is an x86 legacy prefix: operand and
// address size, REP/REPNE, LOCK and the segment overrides.
func isLegacyPrefix(c byte) bool {
	switch c {
	case 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65:
		return true
	}
	return false
}

// modRMLen returns the length of the ModRM operand that b starts with
// (ModRM byte, SIB byte, displacement) in 64-bit mode; 0 when b is too
// short to hold it.
func modRMLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	mod, rm := b[0]>>6, b[0]&7
	n := 1
	if mod == 3 {
		return n
	}
	if rm == 4 {
		if len(b) < 2 {
			return 0
		}
		n++
		if mod == 0 && b[1]&7 == 5 {
			n += 4 // SIB without a base: disp32
		}
	}
	switch {
	case mod == 1:
		n++
	case mod == 2, mod == 0 && rm == 5:
		n += 4 // disp32, or RIP-relative
	}
	if len(b) < n {
		return 0
	}
	return n
}
