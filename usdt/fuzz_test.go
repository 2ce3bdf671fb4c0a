package usdt

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzReadNotes feeds bytes to the note reader three ways: as a
// .note.stapsdt section on its own, as the notes of a generated x86-64 ELF
// file, and as a whole ELF file. None may panic; what is read must hold
// together.
func FuzzReadNotes(f *testing.F) {
	for _, name := range []string{"python3.11.notes", "libstdc++.notes"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	synthetic := noteBytes(0x401010, 0x402000, 0x403008, "net", "recv", "-8@%rdi 8@-16(%rbp) 8@sym+8(%rip)")
	synthetic = append(synthetic, noteBytes(0x401020, 0x402000, 0, "net", "recv", "-4@$5 1@%ah")...)
	f.Add(synthetic)
	f.Add(testELF{notes: synthetic, baseAddr: 0x402000, symbols: map[string]uint64{"sym": 0x403010}}.bytes())
	f.Add(testELF{notes: synthetic}.bytes())

	f.Fuzz(func(t *testing.T, data []byte) {
		if notes, err := parseNotes(bytes.NewReader(data), uint64(len(data)), binary.LittleEndian); err == nil {
			for _, n := range notes {
				if n.provider == "" || n.name == "" {
					t.Errorf("note %+v has an empty provider or name", n)
				}
				ParseArgs(n.args)
			}
		}
		for _, file := range [][]byte{testELF{notes: data, baseAddr: 0x402000}.bytes(), data} {
			f, err := newFile(bytes.NewReader(file), int64(len(file)), "fuzz")
			if err != nil {
				continue
			}
			probes, err := f.readProbes("fuzz", true)
			if err != nil {
				continue
			}
			for i, p := range probes {
				if len(p.Locations) == 0 {
					t.Errorf("probe %s:%s has no locations", p.Provider, p.Name)
				}
				if i > 0 && probes[i-1].Provider+":"+probes[i-1].Name >= p.Provider+":"+p.Name {
					t.Errorf("probes out of order at %s:%s", p.Provider, p.Name)
				}
				for _, l := range p.Locations {
					if l.ArgsErr == nil && len(l.Args) != len(strings.Fields(l.ArgString)) {
						t.Errorf("%s:%s: %d args from %q and no error", p.Provider, p.Name, len(l.Args), l.ArgString)
					}
					if l.Semaphore == 0 && l.SemaphoreOffset != 0 {
						t.Errorf("%s:%s: semaphore %#x at offset %#x", p.Provider, p.Name, l.Semaphore, l.SemaphoreOffset)
					}
				}
			}
		}
	})
}

// FuzzParseArg checks that no operand text makes ParseArg panic and that
// what it accepts is well formed.
func FuzzParseArg(f *testing.F) {
	for _, s := range []string{
		"8@%rdi", "-4@%eax", "4@%r9d", "2@%si", "1@%sil", "1@%al", "1@%ah", "-2@%r8w", "-1@%r9b", "1@%r8l",
		"-4@$5", "1@$-56", "8@$0x10", "8@-16(%rbp)", "8@(%rcx)", "8@0(%r13,%rdi,8)", "8@(%rcx,%rdi,8)",
		"-4@24(%rdi,%rdx,4)", "8@sym+16(%rip)", "-8@16+static_arr(%rip)", "8@sym(%rip)",
		"8f@%xmm0", "-4@[x29, -12]", "8@", "@", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseArg(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Errorf("ParseArg(%q) error %q does not name the operand", s, err)
			}
			return
		}
		if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
			t.Errorf("ParseArg(%q).Size = %d", s, a.Size)
		}
		if !strings.HasSuffix(s, "@"+a.Operand) {
			t.Errorf("ParseArg(%q).Operand = %q", s, a.Operand)
		}
		switch a.Loc {
		case ArgRegister:
			if a.Reg.Name == "" {
				t.Errorf("ParseArg(%q): register operand without a register", s)
			}
		case ArgConstant:
		case ArgMemory:
			if a.Reg.Width != 8 || (a.Index.Name != "" && a.Scale == 0) {
				t.Errorf("ParseArg(%q) = bad memory operand %+v", s, a)
			}
		case ArgRIPRelative:
			if a.Symbol == "" || a.Reg.Name != "rip" {
				t.Errorf("ParseArg(%q) = bad %%rip operand %+v", s, a)
			}
		default:
			t.Errorf("ParseArg(%q).Loc = %d", s, a.Loc)
		}
	})
}
