// Package unwind turns a file's call frame information (.eh_frame) into
// the compact, sorted rule table the in-kernel unwinder searches. It owns
// reading CFI out of ELF files, interpreting each FDE's program into rows
// (Build, Open) and keeping each file's table once per run (Cache); it
// never touches BPF: loading the tables into maps and walking the frames
// is the caller's.
package unwind

import (
	"debug/elf"
	"fmt"
	"os"
	"sort"
)

// Reg says which register the CFA (canonical frame address, the caller's
// stack pointer before the call) is computed from, or that it cannot be.
type Reg uint8

const (
	// RegUndefined is no rule: the unwinder stops here (outermost frame,
	// where the return address is undefined, or no FDE covers the address).
	RegUndefined Reg = iota
	// RegSP is CFA = stack pointer + CFAOffset.
	RegSP
	// RegFP is CFA = frame pointer (rbp / x29) + CFAOffset.
	RegFP
	// RegPLT is an x86-64 PLT entry: CFA = rsp + 8, plus 8 when (pc & 15)
	// >= 11, the one expression gcc and ld emit for .plt. CFAOffset is 0.
	RegPLT
	// RegUnsupported is any other CFA expression or register, or a saved
	// frame pointer or return address the table cannot describe: the
	// unwinder stops and counts it.
	RegUnsupported
)

// String names r as the tests and error messages print it.
func (r Reg) String() string {
	switch r {
	case RegUndefined:
		return "undefined"
	case RegSP:
		return "sp"
	case RegFP:
		return "fp"
	case RegPLT:
		return "plt"
	case RegUnsupported:
		return "unsupported"
	}
	return fmt.Sprintf("Reg(%d)", uint8(r))
}

// Rule is one distinct unwind rule. On x86-64 the return address is at
// CFA-8 always; on arm64 RAOffset says where x30 was saved (0 = still in
// the register: a leaf, or before the prologue saved it).
type Rule struct {
	CFAReg    Reg
	CFAOffset int32
	// FPOffset is where the caller's frame pointer (rbp / x29) was saved,
	// relative to the CFA; 0 = not saved (unchanged).
	FPOffset int32
	// RAOffset is arm64's: where x30 was saved relative to the CFA; x86-64
	// leaves it 0.
	RAOffset int32
}

// Row says that from Addr (an ELF virtual address of the file) up to the
// next row's Addr, Rules[Rule] applies.
type Row struct {
	Addr uint64
	Rule uint16
}

// Table is one file's unwind table.
type Table struct {
	Machine elf.Machine
	// Rows are sorted by Addr, no two consecutive rows have the same rule,
	// and a RegUndefined row fills each gap between FDEs and follows the
	// last one.
	Rows []Row
	// Rules are distinct; index 0 is always {CFAReg: RegUndefined}.
	Rules []Rule
}

// Open opens the ELF file at path and builds its table, every call anew;
// Cache.Open builds a file's once.
func Open(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read unwind table of %s: %w", path, err)
	}
	defer f.Close()
	return buildFile(path, f)
}

// Lookup returns the rule for addr by binary search, as the BPF side
// does. ok is false where the unwinder cannot step: no row covers addr,
// or its rule is RegUndefined (then the rule returned is Rules[0]). Past
// the first frame, look up the return address less one: the call before
// it, not the instruction after it, which may start another row or even
// another function (a call to a noreturn function ends one).
func (t *Table) Lookup(addr uint64) (rule Rule, ok bool) {
	// The first row past addr; the one before it covers addr.
	i := sort.Search(len(t.Rows), func(i int) bool { return t.Rows[i].Addr > addr })
	if i == 0 {
		return t.Rules[0], false
	}
	r := t.Rules[t.Rows[i-1].Rule]
	return r, r.CFAReg != RegUndefined
}
