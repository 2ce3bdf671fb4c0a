package usdt

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
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
// object from its .note.stapsdt section (see File.Probes), opening it on
// its own. A file without notes has no probes and no error.
func ReadFile(path string) ([]Probe, error) {
	var fs Files
	defer fs.Close()
	return fs.Probes(path)
}

// ReadNames reads the USDT probes of a file as ReadFile does, but leaves
// their locations' arguments unparsed (Args and ArgsErr empty, ArgString
// as written): `-l` without `-v` prints only the probes' names, and the
// operands of every location were 40% of what listing libjvm.so's 531
// locations allocated (370 KB in 2,000 allocations), each fresh page of
// heap a page fault (issue 24).
func ReadNames(path string) ([]Probe, error) {
	var fs Files
	defer fs.Close()
	return fs.ProbeNames(path)
}

// ProbeNames reads the USDT probes of the file at path, opened through fs,
// as ReadNames does.
func (fs *Files) ProbeNames(path string) ([]Probe, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read usdt notes of %s: %w", path, err)
	}
	abs, err := filepath.Abs(f.path)
	if err == nil {
		var list []Probe
		if list, err = f.readProbes(abs, false); err == nil {
			return list, nil
		}
	}
	return nil, fmt.Errorf("read usdt notes of %s: %w", f.path, err)
}

// Probes returns the USDT probes of the file at path (File.Probes), opened
// through fs.
func (fs *Files) Probes(path string) ([]Probe, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read usdt notes of %s: %w", path, err)
	}
	return f.Probes()
}

// Probes returns the USDT probes of the file, an x86-64 ELF64 executable
// or shared object, read once from its .note.stapsdt section. Every note
// becomes a Location: its addresses get the .stapsdt.base adjustment and
// are converted to file offsets, and its arguments are parsed (an
// unreadable operand leaves ArgsErr set, the probe is still returned).
// Locations of one provider:name form one Probe, in note order; the
// probes are sorted by "provider:name" byte by byte, the order in which
// bpftrace lists them, and name the file by its absolute path. A file
// without notes has no probes and no error. The slice is shared: callers
// must not modify it.
func (f *File) Probes() ([]Probe, error) {
	f.mu.Lock()
	done, list, err := f.probes.read, f.probeList, f.probes.err
	f.mu.Unlock()
	if done {
		return list, err
	}
	abs, err := filepath.Abs(f.path)
	if err == nil {
		list, err = f.readProbes(abs, true)
	}
	if err != nil {
		err = fmt.Errorf("read usdt notes of %s: %w", f.path, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes, f.probeList = part{read: true, err: err}, list
	return list, err
}

// readProbes reads the probes of the file, naming them path; with
// parseArgs, it also parses each location's arguments.
func (f *File) readProbes(path string, parseArgs bool) ([]Probe, error) {
	ef := f.elf
	if ef.Class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("%v file, only 64-bit x86-64 and AArch64 ELF files are supported", ef.Class)
	}
	if ef.Machine != elf.EM_X86_64 && ef.Machine != elf.EM_AARCH64 {
		return nil, fmt.Errorf("machine %v, only x86-64 and AArch64 ELF files are supported", ef.Machine)
	}
	sec := ef.Section(".note.stapsdt")
	if sec == nil {
		return nil, nil
	}
	if sec.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("section .note.stapsdt has no data")
	}
	if err := f.checkSection(sec); err != nil {
		return nil, err
	}
	notes, err := parseNotes(sec.Open(), sec.Size, ef.ByteOrder)
	if err != nil {
		return nil, fmt.Errorf("section .note.stapsdt: %w", err)
	}
	var baseAddr uint64
	base := ef.Section(".stapsdt.base")
	if base != nil {
		baseAddr = base.Addr
	}
	syms := symbolTable{file: f}

	var probes []Probe
	var ids []string // each probe's provider:name, its sort key
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
		loc.Offset, ok = f.Offset(loc.PC, true)
		if !ok {
			return nil, fmt.Errorf("probe %s: address %#x is in no executable segment", id, loc.PC)
		}
		if loc.Semaphore != 0 {
			loc.SemaphoreOffset, ok = f.Offset(loc.Semaphore, false)
			if !ok {
				return nil, fmt.Errorf("probe %s: semaphore %#x is in no loadable segment", id, loc.Semaphore)
			}
		}
		if parseArgs {
			loc.Args, loc.ArgsErr = ParseArgsFor(ef.Machine, n.args)
			if n, err := syms.resolve(loc.Args); err != nil {
				loc.Args, loc.ArgsErr = loc.Args[:n], err
			}
		}
		i, seen := index[id]
		if !seen {
			i = len(probes)
			index[id] = i
			probes = append(probes, Probe{Path: path, Provider: n.provider, Name: n.name})
			ids = append(ids, id)
		}
		probes[i].Locations = append(probes[i].Locations, loc)
	}
	return sortProbes(probes, ids), nil
}

// sortProbes returns probes in the order of their provider:name, ids[i]
// being probes[i]'s. The keys are built once: a comparison that joined
// them made a third of what gotrace -l of libjvm.so allocates (432 KB),
// and each fresh page of heap is a page fault (issue 24).
func sortProbes(probes []Probe, ids []string) []Probe {
	order := make([]int, len(probes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	sorted := make([]Probe, len(probes))
	for k, i := range order {
		sorted[k] = probes[i]
	}
	return sorted
}

// note is one decoded stapsdt note.
type note struct {
	pc, base, semaphore uint64
	provider, name      string
	args                string
}

// parseNotes decodes the notes of a .note.stapsdt section of size bytes,
// read from r as a stream: only stapsdt notes are kept, so memory grows
// with the probes found, not with the section, however large it claims
// to be. Notes of other owners or types are skipped; a note that runs past
// the section or lacks its strings is an error.
func parseNotes(r io.Reader, size uint64, order binary.ByteOrder) ([]note, error) {
	br := bufio.NewReaderSize(r, noteBuffer)
	var notes []note
	var hdr [12]byte
	for off, i := uint64(0), 0; off < size; i++ {
		start := off
		rest := size - off
		if rest < 12 {
			return nil, fmt.Errorf("note %d at %#x: truncated header", i, start)
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil, fmt.Errorf("note %d at %#x: %w", i, start, err)
		}
		namesz := uint64(order.Uint32(hdr[0:4]))
		descsz := uint64(order.Uint32(hdr[4:8]))
		typ := order.Uint32(hdr[8:12])
		descStart := 12 + align4(namesz)
		descEnd := descStart + descsz
		next := min(descStart+align4(descsz), rest)
		if descEnd > rest {
			return nil, fmt.Errorf("note %d at %#x: size %d+%d runs past the section", i, start, namesz, descsz)
		}
		off += next
		owner, err := isOwner(br, namesz)
		if err == nil {
			_, err = br.Discard(int(descStart - 12 - namesz))
		}
		if err == nil && (typ != noteType || !owner) {
			_, err = br.Discard(int(next - descStart))
			if err == nil {
				continue
			}
		}
		var n note
		if err == nil {
			n, err = parseNoteDesc(br, descsz, order)
		}
		if err == nil {
			_, err = br.Discard(int(next - descStart - descsz))
		}
		if err != nil {
			return nil, fmt.Errorf("note %d at %#x: %w", i, start, err)
		}
		notes = append(notes, n)
	}
	return notes, nil
}

// noteBuffer is the size of parseNotes' buffer: a read a few notes long
// where the notes are real, and few reads through a run of zeros.
const noteBuffer = 64 << 10

// isOwner reads a note's name of n bytes from br and reports whether it is
// the stapsdt owner: "stapsdt" followed by any number of NULs.
func isOwner(br *bufio.Reader, n uint64) (bool, error) {
	owner := true
	for i := uint64(0); i < n; {
		chunk, err := br.Peek(int(min(n-i, uint64(br.Size()))))
		if err != nil {
			return false, err
		}
		for j, c := range chunk {
			want := byte(0)
			if k := i + uint64(j); k < uint64(len(noteOwner)) {
				want = noteOwner[k]
			}
			owner = owner && c == want
		}
		i += uint64(len(chunk))
		br.Discard(len(chunk))
	}
	return owner && n >= uint64(len(noteOwner)), nil
}

// parseNoteDesc decodes a stapsdt note's descriptor of size bytes from br:
// three 64-bit addresses, then the provider, name and argument strings,
// each ending in NUL. It reads the descriptor up to the arguments' NUL and
// no further.
func parseNoteDesc(br *bufio.Reader, size uint64, order binary.ByteOrder) (note, error) {
	var n note
	if size < 24 {
		if _, err := br.Discard(int(size)); err != nil {
			return n, err
		}
		return n, fmt.Errorf("descriptor of %d bytes is shorter than its 3 addresses", size)
	}
	var addrs [24]byte
	if _, err := io.ReadFull(br, addrs[:]); err != nil {
		return n, err
	}
	n.pc = order.Uint64(addrs[0:8])
	n.base = order.Uint64(addrs[8:16])
	n.semaphore = order.Uint64(addrs[16:24])
	rest := size - 24
	var strs [3]string
	for i, what := range []string{"provider", "name", "arguments"} {
		s, err := readString(br, rest)
		if err != nil {
			return n, err
		}
		if uint64(len(s)) == rest {
			return n, fmt.Errorf("%s string is not NUL-terminated", what)
		}
		strs[i] = s
		rest -= uint64(len(s)) + 1
	}
	if _, err := br.Discard(int(rest)); err != nil {
		return n, err
	}
	n.provider, n.name, n.args = strs[0], strs[1], strs[2]
	if n.provider == "" || n.name == "" {
		return n, fmt.Errorf("empty provider or probe name")
	}
	return n, nil
}

// readString reads a NUL-terminated string of at most limit bytes before
// its NUL from br, and the NUL. A string of limit bytes without a NUL is
// returned whole, its bytes consumed.
func readString(br *bufio.Reader, limit uint64) (string, error) {
	var b []byte
	for uint64(len(b)) < limit {
		chunk, err := br.Peek(int(min(limit-uint64(len(b)), uint64(br.Size()))))
		if len(chunk) == 0 {
			return "", err
		}
		if end := bytes.IndexByte(chunk, 0); end >= 0 {
			b = append(b, chunk[:end]...)
			br.Discard(end + 1)
			return string(b), nil
		}
		b = append(b, chunk...)
		br.Discard(len(chunk))
	}
	return string(b), nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// symbolTable looks up the symbols of %rip-relative operands, reading the
// file's symbol tables only when the first such operand asks.
type symbolTable struct {
	file   *File
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

// load maps the names of the defined symbols to their values, the first
// of a name winning, .symtab before .dynsym.
func (t *symbolTable) load() {
	t.loaded = true
	t.addrs = make(map[string]uint64)
	t.file.eachSymbol(func(s elf.Symbol) bool {
		if s.Name == "" || s.Section == elf.SHN_UNDEF {
			return true
		}
		if _, dup := t.addrs[s.Name]; !dup {
			t.addrs[s.Name] = s.Value
		}
		return true
	})
}
