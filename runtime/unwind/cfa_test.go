package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// lookupWant is the rule Lookup must give at an address.
type lookupWant struct {
	addr uint64
	rule Rule
	ok   bool
}

// The rules the cases below expect, by name.
var (
	sp8      = Rule{CFAReg: RegSP, CFAOffset: 8}
	sp16     = Rule{CFAReg: RegSP, CFAOffset: 16}
	sp16fp   = Rule{CFAReg: RegSP, CFAOffset: 16, FPOffset: -16}
	fp16fp   = Rule{CFAReg: RegFP, CFAOffset: 16, FPOffset: -16}
	plt      = Rule{CFAReg: RegPLT}
	undef    = Rule{CFAReg: RegUndefined}
	outside  = lookupWant{addr: 0xfff, rule: undef}
	atTheEnd = lookupWant{addr: 0x1100, rule: undef}
)

// fdeBegin and fdeSize are the range of every case's FDE.
const fdeBegin, fdeSize = 0x1000, 0x100

// TestInterpret runs hand-written FDE programs, one or more per kind of
// call frame instruction, through Build and checks Lookup around each
// location they set.
func TestInterpret(t *testing.T) {
	cases := []struct {
		name    string
		machine elf.Machine
		cie     cieParams
		program []byte
		want    []lookupWant
	}{
		{"CIE only", elf.EM_X86_64, x86CIE, nil,
			[]lookupWant{outside, {0x1000, sp8, true}, {0x10ff, sp8, true}, atTheEnd}},
		{"advance_loc and def_cfa_offset", elf.EM_X86_64, x86CIE,
			[]byte{opAdvanceLoc | 1, opDefCFAOffset, 16, opAdvanceLoc | 3, opDefCFAOffset, 8},
			[]lookupWant{{0x1000, sp8, true}, {0x1001, sp16, true}, {0x1003, sp16, true}, {0x1004, sp8, true}}},
		{"advance_loc1, 2 and 4", elf.EM_X86_64, x86CIE,
			[]byte{opAdvanceLoc1, 0x10, opDefCFAOffset, 16, opAdvanceLoc2, 0x10, 0, opDefCFAOffset, 8, opAdvanceLoc4, 0x10, 0, 0, 0, opDefCFAOffset, 16},
			[]lookupWant{{0x100f, sp8, true}, {0x1010, sp16, true}, {0x1020, sp8, true}, {0x1030, sp16, true}}},
		{"offset saves rbp, def_cfa_register moves the CFA to it", elf.EM_X86_64, x86CIE,
			[]byte{opAdvanceLoc | 1, opDefCFAOffset, 16, opOffset | 6, 2, opAdvanceLoc | 3, opDefCFARegister, 6},
			[]lookupWant{{0x1001, sp16fp, true}, {0x1004, fp16fp, true}}},
		{"def_cfa and def_cfa_sf", elf.EM_X86_64, x86CIE,
			[]byte{opOffset | 6, 2, opDefCFA, 6, 16, opAdvanceLoc | 1, opDefCFASF, 7, 0x7e}, // -2 * -8 = 16
			[]lookupWant{{0x1000, fp16fp, true}, {0x1001, Rule{CFAReg: RegSP, CFAOffset: 16, FPOffset: -16}, true}}},
		{"def_cfa_offset_sf", elf.EM_X86_64, x86CIE,
			[]byte{opDefCFAOffsetSF, 0x7c}, // -4 * -8 = 32
			[]lookupWant{{0x1000, Rule{CFAReg: RegSP, CFAOffset: 32}, true}}},
		{"offset_extended, _sf, restore and restore_extended", elf.EM_X86_64, x86CIE,
			[]byte{opOffsetExtended, 6, 2, opAdvanceLoc | 1, opRestore | 6, opAdvanceLoc | 1, opOffsetExtendedSF, 6, 0x03, opAdvanceLoc | 1, opRestoreExtended, 6},
			[]lookupWant{{0x1000, Rule{CFAReg: RegSP, CFAOffset: 8, FPOffset: -16}, true}, {0x1001, sp8, true},
				{0x1002, Rule{CFAReg: RegSP, CFAOffset: 8, FPOffset: -24}, true}, {0x1003, sp8, true}}},
		{"GNU_negative_offset_extended", elf.EM_X86_64, x86CIE,
			[]byte{opGNUNegOffsetExtended, 6, 0x7e}, // -(126 * -8) = 1008
			[]lookupWant{{0x1000, Rule{CFAReg: RegSP, CFAOffset: 8, FPOffset: 1008}, true}}},
		{"remember_state and restore_state bring the CFA back", elf.EM_X86_64, x86CIE,
			[]byte{opDefCFAOffset, 16, opOffset | 6, 2, opAdvanceLoc | 1, opRememberState, opDefCFAOffset, 8, opSameValue, 6, opAdvanceLoc | 1, opRestoreState},
			[]lookupWant{{0x1000, sp16fp, true}, {0x1001, sp8, true}, {0x1002, sp16fp, true}}},
		{"same_value forgets a save", elf.EM_X86_64, x86CIE,
			[]byte{opOffset | 6, 2, opAdvanceLoc | 1, opSameValue, 6},
			[]lookupWant{{0x1001, sp8, true}}},
		{"undefined return address: outermost frame", elf.EM_X86_64, x86CIE,
			[]byte{opAdvanceLoc | 1, opUndefined, 16},
			[]lookupWant{{0x1000, sp8, true}, {0x1001, undef, false}}},
		{"register and val_offset of rbp are unsupported", elf.EM_X86_64, x86CIE,
			[]byte{opRegister, 6, 3, opAdvanceLoc | 1, opValOffset, 6, 1, opAdvanceLoc | 1, opValOffsetSF, 6, 1},
			[]lookupWant{{0x1000, unsupported, true}, {0x1001, unsupported, true}, {0x1002, unsupported, true}}},
		{"untracked registers change nothing", elf.EM_X86_64, x86CIE,
			[]byte{opOffset | 3, 2, opRegister, 12, 13, opUndefined, 14, opExpression, 3, 1, 0x9c, opValExpression, 3, 1, 0x9c, opAdvanceLoc | 1, opDefCFAOffset, 16},
			[]lookupWant{{0x1000, sp8, true}, {0x1001, sp16, true}}},
		{"nop and GNU_args_size change nothing", elf.EM_X86_64, x86CIE,
			[]byte{opNop, opGNUArgsSize, 0x80, 0x01, opNop},
			[]lookupWant{{0x1000, sp8, true}, {0x10ff, sp8, true}}},
		{"the PLT expression", elf.EM_X86_64, x86CIE,
			append([]byte{opAdvanceLoc | 0x10, opDefCFAExpression, byte(len(pltCFAExpression))}, pltCFAExpression...),
			[]lookupWant{{0x100f, sp8, true}, {0x1010, plt, true}}},
		{"another CFA expression, and a register back", elf.EM_X86_64, x86CIE,
			[]byte{opDefCFAExpression, 3, 0x76, 0x78, 0x06, opAdvanceLoc | 1, opDefCFARegister, 7},
			[]lookupWant{{0x1000, unsupported, true}, {0x1001, sp8, true}}},
		{"a CFA on another register", elf.EM_X86_64, x86CIE,
			[]byte{opDefCFA, 10, 0},
			[]lookupWant{{0x1000, unsupported, true}}},
		{"expression for rbp", elf.EM_X86_64, x86CIE,
			[]byte{opExpression, 6, 2, 0x76, 0x70},
			[]lookupWant{{0x1000, unsupported, true}}},
		{"advancing past the FDE's end is cut", elf.EM_X86_64, x86CIE,
			[]byte{opAdvanceLoc2, 0x00, 0x02, opDefCFAOffset, 16},
			[]lookupWant{{0x10ff, sp8, true}, atTheEnd, {0x1200, undef, false}}},
		{"arm64: x29 and x30 saved, CFA moved to x29", elf.EM_AARCH64, arm64CIE,
			[]byte{opGNUWindowSave, opAdvanceLoc | 1, opDefCFAOffset, 32, opOffset | 29, 4, opOffset | 30, 3, opAdvanceLoc | 1, opDefCFARegister, 29},
			[]lookupWant{{0x1000, Rule{CFAReg: RegSP}, true}, {0x1003, Rule{CFAReg: RegSP}, true},
				{0x1004, Rule{CFAReg: RegSP, CFAOffset: 32, FPOffset: -32, RAOffset: -24}, true},
				{0x1008, Rule{CFAReg: RegFP, CFAOffset: 32, FPOffset: -32, RAOffset: -24}, true}}},
		{"arm64: the PLT bytes are just an expression", elf.EM_AARCH64, arm64CIE,
			append([]byte{opDefCFAExpression, byte(len(pltCFAExpression))}, pltCFAExpression...),
			[]lookupWant{{0x1000, unsupported, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := minimalELF(t, tc.machine, ehFrame(tc.cie, fdeBegin, fdeSize, tc.program))
			table, err := Build(f)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			checkInvariants(t, table)
			for _, w := range tc.want {
				rule, ok := table.Lookup(w.addr)
				if rule != w.rule || ok != w.ok {
					t.Errorf("Lookup(%#x) = %+v, %v; want %+v, %v (rows %+v, rules %+v)",
						w.addr, rule, ok, w.rule, w.ok, table.Rows, table.Rules)
				}
			}
		})
	}
}

// TestInterpretErrors checks that bad programs fail Build with an error
// naming the FDE and the instruction's offset.
func TestInterpretErrors(t *testing.T) {
	cases := []struct {
		name    string
		machine elf.Machine
		program []byte
		want    string
	}{
		{"truncated operand", elf.EM_X86_64, []byte{opNop, opDefCFA, 7}, "instruction 0x0c at +0x1: operands run past the end"},
		{"truncated block", elf.EM_X86_64, []byte{opDefCFAExpression, 5, 1}, "instruction 0x0f at +0x0: operands run past the end"},
		{"unknown opcode", elf.EM_X86_64, []byte{opAdvanceLoc | 1, 0x3f}, "instruction 0x3f at +0x1: unknown call frame instruction"},
		{"restore_state alone", elf.EM_X86_64, []byte{opRestoreState}, "without DW_CFA_remember_state"},
		{"set_loc truncated", elf.EM_X86_64, []byte{opSetLoc, 0, 0}, "instruction 0x01 at +0x0: operands run past the end"},
		{"window_save on x86-64", elf.EM_X86_64, []byte{opGNUWindowSave}, "SPARC"},
		{"LEB128 past 64 bits", elf.EM_X86_64, []byte{opDefCFAOffset, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "overflows 64 bits"},
		{"remember_state without end", elf.EM_X86_64, []byte(strings.Repeat(string(rune(opRememberState)), maxRememberedStateDepth+1)), "nested"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := minimalELF(t, tc.machine, ehFrame(x86CIE, fdeBegin, fdeSize, tc.program))
			_, err := Build(f)
			if err == nil {
				t.Fatal("Build succeeded")
			}
			for _, part := range []string{"interpret .eh_frame: FDE for 0x1000..0x1100, instructions at 0x", tc.want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Build error %q does not say %q", err, part)
				}
			}
		})
	}
}

// checkInvariants checks what Table promises: rule 0 undefined, rows
// sorted by address with no two consecutive rows of one rule, every rule
// index in range and every rule distinct.
func checkInvariants(t testing.TB, table *Table) {
	t.Helper()
	if len(table.Rules) == 0 || table.Rules[0] != (Rule{CFAReg: RegUndefined}) {
		t.Fatalf("Rules[0] is not the undefined rule: %+v", table.Rules)
	}
	seen := map[Rule]bool{}
	for _, r := range table.Rules {
		if seen[r] {
			t.Fatalf("rule %+v twice in %+v", r, table.Rules)
		}
		seen[r] = true
	}
	for i, row := range table.Rows {
		if int(row.Rule) >= len(table.Rules) {
			t.Fatalf("row %d: rule %d of %d", i, row.Rule, len(table.Rules))
		}
		if i > 0 && (row.Addr <= table.Rows[i-1].Addr || row.Rule == table.Rows[i-1].Rule) {
			t.Fatalf("rows %d and %d: %+v then %+v", i-1, i, table.Rows[i-1], row)
		}
	}
	if n := len(table.Rows); n > 0 && table.Rows[n-1].Rule != 0 {
		t.Fatalf("last row %+v is not undefined", table.Rows[n-1])
	}
}

// TestSetLoc checks DW_CFA_set_loc, whose operand is in the CIE's pointer
// encoding: absolute, and relative to the operand's own address.
func TestSetLoc(t *testing.T) {
	marker := []byte{0xde, 0xad, 0xbe, 0xef}
	program := append(append([]byte{opSetLoc}, marker...), opDefCFAOffset, 16)
	for _, enc := range []byte{encUdata4, encPCRel | encSdata4} {
		t.Run(fmt.Sprintf("encoding %#02x", enc), func(t *testing.T) {
			cie := x86CIE
			cie.enc = enc
			section := ehFrame(cie, fdeBegin, fdeSize, program)
			at := bytes.Index(section, marker)
			operand := uint32(fdeBegin + 0x10)
			if enc&0x70 == encPCRel {
				operand -= uint32(ehFrameAddr + at)
			}
			binary.LittleEndian.PutUint32(section[at:], operand)
			table, err := Build(minimalELF(t, elf.EM_X86_64, section))
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			for _, w := range []lookupWant{{0x100f, sp8, true}, {0x1010, sp16, true}} {
				if rule, ok := table.Lookup(w.addr); rule != w.rule || ok != w.ok {
					t.Errorf("Lookup(%#x) = %+v, %v; want %+v, %v", w.addr, rule, ok, w.rule, w.ok)
				}
			}
		})
	}
}

// TestRuleOverflow checks that past the 65,535 rules a 16-bit index can
// tell apart, every new rule becomes the unsupported one instead of
// wrapping around.
func TestRuleOverflow(t *testing.T) {
	const distinct = 70_000
	var program []byte
	for i := range distinct {
		program = appendULEB(append(program, opDefCFAOffset), uint64(8+8*i))
		program = append(program, opAdvanceLoc|1)
	}
	table, err := Build(minimalELF(t, elf.EM_X86_64, ehFrame(x86CIE, fdeBegin, distinct, program)))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	checkInvariants(t, table)
	if len(table.Rules) != 1<<16 || table.Rules[len(table.Rules)-1] != unsupported {
		t.Fatalf("%d rules, the last %+v; want 65,536, the last unsupported", len(table.Rules), table.Rules[len(table.Rules)-1])
	}
	for _, w := range []lookupWant{
		{fdeBegin, sp8, true},
		{fdeBegin + 65_533, Rule{CFAReg: RegSP, CFAOffset: 8 + 8*65_533}, true},
		{fdeBegin + 65_534, unsupported, true},
		{fdeBegin + distinct - 1, unsupported, true},
	} {
		if rule, ok := table.Lookup(w.addr); rule != w.rule || ok != w.ok {
			t.Errorf("Lookup(%#x) = %+v, %v; want %+v, %v", w.addr, rule, ok, w.rule, w.ok)
		}
	}
}
