package unwind

import (
	"debug/elf"
	"strings"
	"testing"
)

// FuzzBuild feeds arbitrary bytes to Build as a file's .eh_frame: it must
// never panic, a table it returns must keep Table's promises, and an
// error must say which section and, past delve's parse, which FDE and
// instruction.
func FuzzBuild(f *testing.F) {
	f.Add(ehFrame(x86CIE, fdeBegin, fdeSize, nil), false)
	f.Add(ehFrame(x86CIE, fdeBegin, fdeSize, []byte{opAdvanceLoc | 1, opDefCFAOffset, 16, opOffset | 6, 2, opRememberState, opAdvanceLoc1, 4, opDefCFARegister, 6, opRestoreState}), false)
	f.Add(ehFrame(x86CIE, fdeBegin, fdeSize, append([]byte{opDefCFAExpression, byte(len(pltCFAExpression))}, pltCFAExpression...)), false)
	f.Add(ehFrame(arm64CIE, fdeBegin, fdeSize, []byte{opAdvanceLoc | 1, opDefCFAOffset, 16, opOffset | 29, 2, opOffset | 30, 1, opGNUWindowSave}), true)
	pcrel := x86CIE
	pcrel.enc = encPCRel | encSdata4
	f.Add(ehFrame(pcrel, fdeBegin, fdeSize, []byte{opSetLoc, 0x10, 0, 0, 0, opDefCFAOffset, 16}), false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, section []byte, arm64 bool) {
		m := elf.EM_X86_64
		if arm64 {
			m = elf.EM_AARCH64
		}
		table, err := Build(minimalELF(t, m, section))
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, ".eh_frame") {
				t.Fatalf("error %q does not name the section", msg)
			} else if strings.HasPrefix(msg, "interpret") && !strings.Contains(msg, "instructions at 0x") {
				t.Fatalf("error %q does not say where the instructions are", msg)
			}
			return
		}
		checkInvariants(t, table)
	})
}
