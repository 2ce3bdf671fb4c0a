package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The owner and type of a systemtap SDT note (sys/sdt.h, version 3).
const (
	noteOwner = "stapsdt"
	noteType  = 3
)

// ReadFile reads the USDT probes of an x86-64 ELF64 executable or shared
// object from its .note.stapsdt section. Every note becomes a Location: its
// addresses get the .stapsdt.base adjustment and are converted to file
// offsets, and its arguments are parsed (an unreadable operand leaves
// ArgsErr set, the probe is still returned). Locations of one
// provider:name form one Probe, in note order; the probes are sorted by
// "provider:name" byte by byte, the order in which bpftrace lists them. A
// file without notes has no probes and no error.
func ReadFile(path string) ([]Probe, error) {
	probes, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read usdt notes of %s: %w", path, err)
	}
	return probes, nil
}

func readFile(path string) ([]Probe, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return readProbes(f, abs)
}

// readProbes reads the probes of the ELF file r, naming them path.
func readProbes(r io.ReaderAt, path string) ([]Probe, error) {
	ef, err := elf.NewFile(r)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("truncated ELF file: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("not a readable ELF file: %w", err)
	}
	if ef.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%v file, only 64-bit x86-64 ELF files are supported", ef.Class)
	}
	if ef.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("machine %v, only x86-64 ELF files are supported", ef.Machine)
	}
	sec := ef.Section(".note.stapsdt")
	if sec == nil {
		return nil, nil
	}
	if sec.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("section .note.stapsdt has no data")
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read section .note.stapsdt: %w", err)
	}
	notes, err := parseNotes(data, ef.ByteOrder)
	if err != nil {
		return nil, fmt.Errorf("section .note.stapsdt: %w", err)
	}
	var baseAddr uint64
	base := ef.Section(".stapsdt.base")
	if base != nil {
		baseAddr = base.Addr
	}
	syms := symbolTable{file: ef}

	var probes []Probe
	index := make(map[string]int)
	for _, n := range notes {
		loc := Location{PC: n.pc, Semaphore: n.semaphore, Base: n.base, ArgString: n.args}
		if base != nil {
			// Prelinking moves the code but not the notes: the
			// distance between the note's recorded base and where
			// .stapsdt.base really is moves the addresses back.
			delta := baseAddr - n.base
			loc.PC += delta
			if loc.Semaphore != 0 {
				loc.Semaphore += delta
			}
		}
		id := n.provider + ":" + n.name
		var ok bool
		loc.Offset, ok = fileOffset(ef.Progs, loc.PC, true)
		if !ok {
			return nil, fmt.Errorf("probe %s: address %#x is in no executable segment", id, loc.PC)
		}
		if loc.Semaphore != 0 {
			loc.SemaphoreOffset, ok = fileOffset(ef.Progs, loc.Semaphore, false)
			if !ok {
				return nil, fmt.Errorf("probe %s: semaphore %#x is in no loadable segment", id, loc.Semaphore)
			}
		}
		loc.Args, loc.ArgsErr = ParseArgs(n.args)
		if n, err := syms.resolve(loc.Args); err != nil {
			loc.Args, loc.ArgsErr = loc.Args[:n], err
		}
		i, seen := index[id]
		if !seen {
			i = len(probes)
			index[id] = i
			probes = append(probes, Probe{Path: path, Provider: n.provider, Name: n.name})
		}
		probes[i].Locations = append(probes[i].Locations, loc)
	}
	slices.SortFunc(probes, func(a, b Probe) int {
		return strings.Compare(a.Provider+":"+a.Name, b.Provider+":"+b.Name)
	})
	return probes, nil
}

// note is one decoded stapsdt note.
type note struct {
	pc, base, semaphore uint64
	provider, name      string
	args                string
}

// parseNotes decodes the notes of a .note.stapsdt section. Notes of other
// owners or types are skipped; a note that runs past the section or lacks
// its strings is an error.
func parseNotes(data []byte, order binary.ByteOrder) ([]note, error) {
	var notes []note
	for off, i := uint64(0), 0; off < uint64(len(data)); i++ {
		start := off
		rest := data[off:]
		if len(rest) < 12 {
			return nil, fmt.Errorf("note %d at %#x: truncated header", i, start)
		}
		namesz := uint64(order.Uint32(rest[0:4]))
		descsz := uint64(order.Uint32(rest[4:8]))
		typ := order.Uint32(rest[8:12])
		nameEnd := 12 + namesz
		descStart := 12 + align4(namesz)
		descEnd := descStart + descsz
		next := descStart + align4(descsz)
		if descEnd > uint64(len(rest)) {
			return nil, fmt.Errorf("note %d at %#x: size %d+%d runs past the section", i, start, namesz, descsz)
		}
		name := rest[12:nameEnd]
		desc := rest[descStart:descEnd]
		off += min(next, uint64(len(rest)))
		if typ != noteType || string(bytes.TrimRight(name, "\x00")) != noteOwner {
			continue
		}
		n, err := parseNoteDesc(desc, order)
		if err != nil {
			return nil, fmt.Errorf("note %d at %#x: %w", i, start, err)
		}
		notes = append(notes, n)
	}
	return notes, nil
}

// parseNoteDesc decodes a stapsdt note's descriptor: three 64-bit
// addresses, then the provider, name and argument strings, each ending in
// NUL.
func parseNoteDesc(desc []byte, order binary.ByteOrder) (note, error) {
	var n note
	if len(desc) < 24 {
		return n, fmt.Errorf("descriptor of %d bytes is shorter than its 3 addresses", len(desc))
	}
	n.pc = order.Uint64(desc[0:8])
	n.base = order.Uint64(desc[8:16])
	n.semaphore = order.Uint64(desc[16:24])
	rest := desc[24:]
	var strs [3]string
	for i, what := range []string{"provider", "name", "arguments"} {
		end := bytes.IndexByte(rest, 0)
		if end < 0 {
			return n, fmt.Errorf("%s string is not NUL-terminated", what)
		}
		strs[i] = string(rest[:end])
		rest = rest[end+1:]
	}
	n.provider, n.name, n.args = strs[0], strs[1], strs[2]
	if n.provider == "" || n.name == "" {
		return n, fmt.Errorf("empty provider or probe name")
	}
	return n, nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// fileOffset converts the virtual address addr to a file offset through the
// PT_LOAD segment that contains it, an executable one when exec is set.
func fileOffset(progs []*elf.Prog, addr uint64, exec bool) (uint64, bool) {
	for _, p := range progs {
		if p.Type != elf.PT_LOAD || (exec && p.Flags&elf.PF_X == 0) {
			continue
		}
		size := p.Memsz
		if exec {
			size = p.Filesz
		}
		if addr >= p.Vaddr && addr-p.Vaddr < size {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// symbolTable looks up the symbols of %rip-relative operands, reading the
// file's symbol tables only when the first such operand asks.
type symbolTable struct {
	file   *elf.File
	loaded bool
	addrs  map[string]uint64
}

// resolve fills in SymbolAddr of the %rip-relative args. A symbol that is in
// no symbol table is an error naming the argument, returned with the
// argument's index.
func (t *symbolTable) resolve(args []Arg) (int, error) {
	for i := range args {
		a := &args[i]
		if a.Loc != ArgRIPRelative {
			continue
		}
		if !t.loaded {
			t.load()
		}
		addr, ok := t.addrs[a.Symbol]
		if !ok {
			return i, fmt.Errorf("argument %d (%s): symbol %q is in no symbol table", i, a.Operand, a.Symbol)
		}
		a.SymbolAddr = addr
	}
	return len(args), nil
}

func (t *symbolTable) load() {
	t.loaded = true
	t.addrs = make(map[string]uint64)
	add := func(syms []elf.Symbol, err error) {
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return
		}
		for _, s := range syms {
			if s.Name == "" || s.Section == elf.SHN_UNDEF {
				continue
			}
			if _, dup := t.addrs[s.Name]; !dup {
				t.addrs[s.Name] = s.Value
			}
		}
	}
	add(t.file.Symbols())
	add(t.file.DynamicSymbols())
}
