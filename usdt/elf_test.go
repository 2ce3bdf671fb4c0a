package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// noteBytes encodes one stapsdt note.
func noteBytes(pc, base, sem uint64, provider, name, args string) []byte {
	desc := binary.LittleEndian.AppendUint64(nil, pc)
	desc = binary.LittleEndian.AppendUint64(desc, base)
	desc = binary.LittleEndian.AppendUint64(desc, sem)
	desc = append(desc, provider+"\x00"+name+"\x00"+args+"\x00"...)
	b := binary.LittleEndian.AppendUint32(nil, 8)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, noteType)
	b = append(b, "stapsdt\x00"...)
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// testELF describes a small x86-64 ELF64 file for the tests: an executable
// segment at 0x401000 (file offset 0x1000, 0x100 bytes), a writable one at
// 0x403000 (file offset 0x2000, 0x100 bytes in the file, 0x200 in memory),
// the notes, an optional .stapsdt.base and a symbol table.
type testELF struct {
	machine  elf.Machine
	notes    []byte
	baseAddr uint64 // address of .stapsdt.base; 0 for none
	symbols  map[string]uint64
}

const (
	textAddr, textOff = 0x401000, 0x1000
	dataAddr, dataOff = 0x403000, 0x2000
)

func (te testELF) bytes() []byte {
	machine := te.machine
	if machine == 0 {
		machine = elf.EM_X86_64
	}
	le := binary.LittleEndian
	file := make([]byte, 0x2100)
	shstr := []byte("\x00")
	addName := func(s string) uint32 {
		off := uint32(len(shstr))
		shstr = append(append(shstr, s...), 0)
		return off
	}
	var sections []elf.Section64
	appendData := func(data []byte, align int) uint64 {
		for len(file)%align != 0 {
			file = append(file, 0)
		}
		off := uint64(len(file))
		file = append(file, data...)
		return off
	}
	sections = append(sections, elf.Section64{}) // SHN_UNDEF
	sections = append(sections, elf.Section64{Name: addName(".text"), Type: uint32(elf.SHT_PROGBITS),
		Flags: uint64(elf.SHF_ALLOC | elf.SHF_EXECINSTR), Addr: textAddr, Off: textOff, Size: 0x100, Addralign: 16})
	sections = append(sections, elf.Section64{Name: addName(".probes"), Type: uint32(elf.SHT_PROGBITS),
		Flags: uint64(elf.SHF_ALLOC | elf.SHF_WRITE), Addr: dataAddr, Off: dataOff, Size: 0x100, Addralign: 2})
	if te.baseAddr != 0 {
		off := appendData([]byte{0}, 1)
		sections = append(sections, elf.Section64{Name: addName(".stapsdt.base"), Type: uint32(elf.SHT_PROGBITS),
			Flags: uint64(elf.SHF_ALLOC), Addr: te.baseAddr, Off: off, Size: 1, Addralign: 1})
	}
	if te.notes != nil {
		off := appendData(te.notes, 4)
		sections = append(sections, elf.Section64{Name: addName(".note.stapsdt"), Type: uint32(elf.SHT_NOTE),
			Off: off, Size: uint64(len(te.notes)), Addralign: 4})
	}
	if len(te.symbols) > 0 {
		strtab := []byte("\x00")
		var symtab bytes.Buffer
		binary.Write(&symtab, le, elf.Sym64{})
		for name, value := range te.symbols {
			sym := elf.Sym64{Name: uint32(len(strtab)), Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_OBJECT),
				Shndx: 2, Value: value, Size: 8}
			strtab = append(append(strtab, name...), 0)
			binary.Write(&symtab, le, sym)
		}
		strIndex := uint32(len(sections) + 1)
		off := appendData(symtab.Bytes(), 8)
		sections = append(sections, elf.Section64{Name: addName(".symtab"), Type: uint32(elf.SHT_SYMTAB),
			Off: off, Size: uint64(symtab.Len()), Link: strIndex, Info: 1, Addralign: 8, Entsize: elf.Sym64Size})
		off = appendData(strtab, 1)
		sections = append(sections, elf.Section64{Name: addName(".strtab"), Type: uint32(elf.SHT_STRTAB),
			Off: off, Size: uint64(len(strtab)), Addralign: 1})
	}
	shstrIndex := len(sections)
	nameOff := addName(".shstrtab")
	off := appendData(shstr, 1)
	sections = append(sections, elf.Section64{Name: nameOff, Type: uint32(elf.SHT_STRTAB),
		Off: off, Size: uint64(len(shstr)), Addralign: 1})
	shoff := appendData(nil, 8)
	var sh bytes.Buffer
	for _, s := range sections {
		binary.Write(&sh, le, s)
	}
	file = append(file, sh.Bytes()...)

	progs := []elf.Prog64{
		{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R), Off: 0, Vaddr: 0x400000, Paddr: 0x400000,
			Filesz: 0x100, Memsz: 0x100, Align: 0x1000},
		{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Off: textOff, Vaddr: textAddr, Paddr: textAddr,
			Filesz: 0x100, Memsz: 0x100, Align: 0x1000},
		{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_W), Off: dataOff, Vaddr: dataAddr, Paddr: dataAddr,
			Filesz: 0x100, Memsz: 0x200, Align: 0x1000},
	}
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Entry: textAddr, Phoff: 64, Shoff: shoff, Ehsize: 64,
		Phentsize: 56, Phnum: uint16(len(progs)), Shentsize: 64, Shnum: uint16(len(sections)),
		Shstrndx: uint16(shstrIndex),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var head bytes.Buffer
	binary.Write(&head, le, hdr)
	for _, p := range progs {
		binary.Write(&head, le, p)
	}
	copy(file, head.Bytes())
	return file
}

// elf32 returns the header of an i386 ELF32 executable without sections.
func elf32() []byte {
	hdr := elf.Header32{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_386), Version: uint32(elf.EV_CURRENT),
		Ehsize: 52, Phentsize: 32, Shentsize: 40}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS32)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, hdr)
	return b.Bytes()
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadFileSynthetic(t *testing.T) {
	var notes []byte
	notes = append(notes, noteBytes(0x401010, 0x402000, 0x403008, "net", "recv", "-8@%rdi 8@-16(%rbp)")...)
	notes = append(notes, noteBytes(0x401020, 0x402000, 0, "a0", "x", "")...)
	notes = append(notes, noteBytes(0x401030, 0x402000, 0x403008, "net", "recv", "-8@%rsi 8@16+table(%rip)")...)
	notes = append(notes, noteBytes(0x401040, 0x402000, 0, "a", "zz", "8f@%xmm0")...)
	notes = append(notes, noteBytes(0x401050, 0x402000, 0, "a", "sym", "4@%eax 8@nowhere(%rip) 8@%rax")...)
	path := writeTemp(t, "prog", testELF{notes: notes, baseAddr: 0x402000,
		symbols: map[string]uint64{"table": 0x403040}}.bytes())

	probes, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by "provider:name" byte by byte: "a0:x" < "a:sym" < "a:zz"
	// < "net:recv", as bpftrace lists them.
	var ids []string
	for _, p := range probes {
		ids = append(ids, p.Provider+":"+p.Name)
		if p.Path != path {
			t.Errorf("probe %s: Path = %q, want %q", p.Name, p.Path, path)
		}
	}
	if want := []string{"a0:x", "a:sym", "a:zz", "net:recv"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("probes = %v, want %v", ids, want)
	}

	recv := probes[3]
	if len(recv.Locations) != 2 {
		t.Fatalf("net:recv has %d locations, want 2", len(recv.Locations))
	}
	l0, l1 := recv.Locations[0], recv.Locations[1]
	if l0.PC != 0x401010 || l0.Offset != 0x1010 || l0.Semaphore != 0x403008 || l0.SemaphoreOffset != 0x2008 ||
		l0.Base != 0x402000 || l0.ArgString != "-8@%rdi 8@-16(%rbp)" || l0.ArgsErr != nil || len(l0.Args) != 2 {
		t.Errorf("net:recv location 0 = %+v", l0)
	}
	if l1.PC != 0x401030 || l1.Offset != 0x1030 || l1.ArgsErr != nil || len(l1.Args) != 2 {
		t.Fatalf("net:recv location 1 = %+v", l1)
	}
	if a := l1.Args[1]; a.Loc != ArgRIPRelative || a.Symbol != "table" || a.SymbolAddr != 0x403040 || a.Disp != 16 {
		t.Errorf("%%rip argument = %+v, want table at 0x403040 + 16", a)
	}

	if l := probes[0].Locations[0]; l.Semaphore != 0 || l.SemaphoreOffset != 0 || len(l.Args) != 0 || l.ArgsErr != nil {
		t.Errorf("a0:x = %+v, want no semaphore and no arguments", l)
	}
	if l := probes[2].Locations[0]; l.ArgsErr == nil || !strings.Contains(l.ArgsErr.Error(), "8f@%xmm0") {
		t.Errorf("a:zz ArgsErr = %v, want one naming 8f@%%xmm0", l.ArgsErr)
	}
	sym := probes[1].Locations[0]
	if sym.ArgsErr == nil || !strings.Contains(sym.ArgsErr.Error(), `symbol "nowhere"`) || len(sym.Args) != 1 {
		t.Errorf("a:sym = %d args, ArgsErr %v; want 1 arg and an error naming the symbol", len(sym.Args), sym.ArgsErr)
	}
}

// TestReadNames checks that ReadNames reads what ReadFile reads, the
// locations' arguments left unparsed: their operands (one that parses, one
// that does not, one naming a symbol) are not looked at.
func TestReadNames(t *testing.T) {
	notes := noteBytes(0x401010, 0x402000, 0x403008, "net", "recv", "-8@%rdi 8@-16(%rbp)")
	notes = append(notes, noteBytes(0x401040, 0x402000, 0, "a", "zz", "8f@%xmm0")...)
	notes = append(notes, noteBytes(0x401050, 0x402000, 0, "a", "sym", "8@nowhere(%rip)")...)
	path := writeTemp(t, "prog", testELF{notes: notes, baseAddr: 0x402000}.bytes())
	parsed, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names, err := ReadNames(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range parsed {
		for j := range parsed[i].Locations {
			loc := &parsed[i].Locations[j]
			if loc.ArgString == "" {
				t.Fatalf("%s location %d has no argument string", parsed[i].Name, j)
			}
			loc.Args, loc.ArgsErr = nil, nil
		}
	}
	if !reflect.DeepEqual(names, parsed) {
		t.Errorf("ReadNames = %+v\nwant ReadFile's without arguments: %+v", names, parsed)
	}
}

// TestReadFileBaseAdjustment checks the prelink case: notes whose addresses
// lag 0x1000 behind the code are moved by .stapsdt.base's real address.
func TestReadFileBaseAdjustment(t *testing.T) {
	notes := noteBytes(0x400010, 0x401000, 0x402008, "p", "moved", "")
	notes = append(notes, noteBytes(0x400020, 0x401000, 0, "p", "nosem", "")...)
	probes, err := ReadFile(writeTemp(t, "prelinked", testELF{notes: notes, baseAddr: 0x402000}.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	moved, nosem := probes[0].Locations[0], probes[1].Locations[0]
	if moved.PC != 0x401010 || moved.Offset != 0x1010 || moved.Semaphore != 0x403008 ||
		moved.SemaphoreOffset != 0x2008 || moved.Base != 0x401000 {
		t.Errorf("adjusted location = %+v", moved)
	}
	if nosem.PC != 0x401020 || nosem.Semaphore != 0 || nosem.SemaphoreOffset != 0 {
		t.Errorf("adjusted location without semaphore = %+v, want its semaphore left 0", nosem)
	}

	// Without .stapsdt.base the addresses are used as they are.
	probes, err = ReadFile(writeTemp(t, "nobase", testELF{notes: noteBytes(0x401010, 0x999000, 0x4031f0, "p", "n", "")}.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if l := probes[0].Locations[0]; l.PC != 0x401010 || l.Semaphore != 0x4031f0 || l.SemaphoreOffset != 0x21f0 {
		t.Errorf("location without .stapsdt.base = %+v", l)
	}
}

func TestReadFileNoNotes(t *testing.T) {
	probes, err := ReadFile(writeTemp(t, "plain", testELF{}.bytes()))
	if err != nil || len(probes) != 0 {
		t.Errorf("ReadFile of a file without notes = %v, %v; want nothing", probes, err)
	}
}

// TestReadFileAArch64 reads an AArch64 file's notes on any host: the
// probes and their operands in AArch64's syntax, as gcc -O2 writes them
// for the fixture (registers, immediates, memory with a space inside).
func TestReadFileAArch64(t *testing.T) {
	notes := append(noteBytes(0x401010, 0, 0, "net", "inbound_message", "-8@x0 8@x1 4@x3 1@0"),
		noteBytes(0x401020, 0, 0, "p", "mem", "8@[x22, 20] -4@[sp, 16] 8@[x1]")...)
	path := writeTemp(t, "arm64", testELF{machine: elf.EM_AARCH64, notes: notes}.bytes())
	probes, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 2 {
		t.Fatalf("%d probes, want 2", len(probes))
	}
	var got []string
	for _, p := range probes {
		l := p.Locations[0]
		if l.ArgsErr != nil {
			t.Fatalf("%s:%s: %v", p.Provider, p.Name, l.ArgsErr)
		}
		for _, a := range l.Args {
			// operand:location(ArgRegister 1, ArgConstant 2, ArgMemory 3)/offset/displacement
			got = append(got, fmt.Sprintf("%s:%d/%d/%d", a.Operand, a.Loc, a.Reg.PtRegsOffset, a.Disp))
		}
	}
	want := []string{"x0:1/0/0", "x1:1/8/0", "x3:1/24/0", "0:2/0/0", "[x22, 20]:3/176/20", "[sp, 16]:3/248/16", "[x1]:3/8/0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("operands %q, want %q", got, want)
	}
}

func TestReadFileErrors(t *testing.T) {
	good := testELF{notes: noteBytes(0x401010, 0, 0, "p", "n", ""), baseAddr: 0}.bytes()
	corrupt := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(good))
	}
	notesAt := bytes.Index(good, []byte("stapsdt\x00")) - 12
	tests := []struct {
		name string
		data []byte
		msg  string
	}{
		{"empty", nil, "truncated ELF file"},
		{"text", []byte("#!/bin/sh\necho hello\n"), "not a readable ELF file"},
		{"truncated", good[:40], "truncated ELF file"},
		{"truncated-sections", good[:len(good)-100], "truncated ELF file"},
		{"riscv", testELF{machine: elf.EM_RISCV, notes: noteBytes(0x401010, 0, 0, "p", "n", "")}.bytes(),
			"machine EM_RISCV, only x86-64 and AArch64"},
		{"elf32", elf32(), "ELFCLASS32 file, only 64-bit x86-64 and AArch64"},
		{"elf32-class-in-elf64", corrupt(func(b []byte) []byte { b[elf.EI_CLASS] = byte(elf.ELFCLASS32); return b }),
			"not a readable ELF file"},
		{"note-size", corrupt(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[notesAt+4:], 0xffff)
			return b
		}), "runs past the section"},
		{"note-strings", testELF{notes: func() []byte {
			n := noteBytes(0x401010, 0, 0, "p", "n", "")
			for i := 12 + 8 + 24; i < len(n); i++ {
				n[i] = 'x'
			}
			return n
		}()}.bytes(), "not NUL-terminated"},
		{"note-short-desc", testELF{notes: []byte("\x08\x00\x00\x00\x04\x00\x00\x00\x03\x00\x00\x00stapsdt\x00abcd")}.bytes(),
			"shorter than its 3 addresses"},
		{"note-header", testELF{notes: []byte("\x08\x00\x00\x00")}.bytes(), "truncated header"},
		{"pc-outside", testELF{notes: noteBytes(0x409000, 0, 0, "p", "n", "")}.bytes(),
			"address 0x409000 is in no executable segment"},
		{"pc-in-data", testELF{notes: noteBytes(0x403010, 0, 0, "p", "n", "")}.bytes(),
			"is in no executable segment"},
		{"semaphore-outside", testELF{notes: noteBytes(0x401010, 0, 0x500000, "p", "n", "")}.bytes(),
			"semaphore 0x500000 is in no loadable segment"},
		{"empty-name", testELF{notes: noteBytes(0x401010, 0, 0, "p", "", "")}.bytes(), "empty provider or probe name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.name, tt.data)
			_, err := ReadFile(path)
			if err == nil {
				t.Fatal("ReadFile succeeded")
			}
			t.Log(err)
			prefix := "read usdt notes of " + path + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("ReadFile = %q, want %q...%q", err, prefix, tt.msg)
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		_, err := ReadFile("/no/such/binary")
		if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "read usdt notes of /no/such/binary: ") {
			t.Errorf("ReadFile of a missing file = %v", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		if _, err := ReadFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile of a directory = %v", err)
		}
	})
}

// TestParseNotesSkipsOtherNotes checks that notes of another owner or type
// in the section are passed over.
func TestParseNotesSkipsOtherNotes(t *testing.T) {
	other := []byte("\x04\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00GNU\x00abcd")
	data := append(bytes.Clone(other), noteBytes(1, 2, 3, "p", "n", "8@%rax")...)
	notes, err := parseNotes(bytes.NewReader(data), uint64(len(data)), binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	want := []note{{pc: 1, base: 2, semaphore: 3, provider: "p", name: "n", args: "8@%rax"}}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("parseNotes = %+v, want %+v", notes, want)
	}
}
