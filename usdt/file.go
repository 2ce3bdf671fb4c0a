package usdt

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Files are the ELF files of one run (a trace or a listing): each is
// opened on first use and kept open, with what has been read of it, until
// Close, so that reading notes, symbols and code for expanding, checking,
// attaching and symbolizing opens and parses a file once. The zero value
// is ready for use; Files is safe for concurrent use.
type Files struct {
	mu   sync.Mutex
	open map[string]*File
}

// Open returns the file at path, opened on first use. A failure is not
// remembered: the next Open tries again.
func (fs *Files) Open(path string) (*File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.open[path]; ok {
		return f, nil
	}
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	if fs.open == nil {
		fs.open = make(map[string]*File)
	}
	fs.open[path] = f
	return f, nil
}

// Cached returns the file at path when Open opened it, without opening
// it: a reader that keeps what it needs of a file and drops the file
// shares the one already held instead.
func (fs *Files) Cached(path string) (*File, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.open[path]
	return f, ok
}

// Close closes every file opened; fs is empty and usable again after.
func (fs *Files) Close() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var errs []error
	for _, f := range fs.open {
		errs = append(errs, f.Close())
	}
	fs.open = nil
	return errors.Join(errs...)
}

// File is an open ELF file: the one place gotrace reads ELF files. It reads
// each part (notes, symbol tables) once, on first use, and never sizes an
// allocation from a field of the file beyond what the file really holds:
// every section and segment it reads is checked against the file's size
// first, and the notes are read as a stream.
type File struct {
	path string
	file io.Closer
	elf  *elf.File
	// size is the file's size in bytes.
	size uint64

	mu sync.Mutex
	// The parts read on first use, each with the error reading it gave.
	probes, symbols, functions part
	probeList                  []Probe
	symtab, dynsym             []elf.Symbol
	// functionList is FunctionSymbols, plainList the FUNC symbols of it.
	functionList, plainList []elf.Symbol
}

// part records whether a part of a File has been read, and its error.
type part struct {
	read bool
	err  error
}

// openRights runs the opening of every ELF file gotrace reads: plainly
// unless SetOpenRights has set it.
var openRights = func(open func() error) error { return open() }

// SetOpenRights makes every ELF file (a target, its libraries, the files
// a listing reads) be opened by open run through with, which lowers the
// rights it opens with: with privileges for a user who is not root, the
// user's own. The descriptor opened is used for everything after, reading
// and attaching (File.KernelPath), so the path is never looked up again
// with the privileges. Set it before any file is opened.
func SetOpenRights(with func(open func() error) error) { openRights = with }

// OpenFile opens the ELF file at path on its own, outside any Files. It
// must be a regular file: opening a FIFO or a device could block.
func OpenFile(path string) (*File, error) {
	var osf *os.File
	err := openRights(func() error {
		var err error
		osf, err = openRegular(path)
		return err
	})
	if err != nil {
		return nil, err
	}
	st, err := osf.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	var f *File
	if err == nil {
		f, err = newFile(osf, st.Size(), path)
	}
	if err != nil {
		osf.Close()
		return nil, err
	}
	f.file = osf
	return f, nil
}

// openRegular opens path for reading when it is a regular file, checked
// before opening (which would block on a FIFO); the caller checks again
// what was opened.
func openRegular(path string) (*os.File, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.Open(path)
}

// newFile reads the ELF headers of the size bytes of r, the file at path.
func newFile(r io.ReaderAt, size int64, path string) (*File, error) {
	ef, err := elf.NewFile(r)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("truncated ELF file: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("not a readable ELF file: %w", err)
	}
	return &File{path: path, elf: ef, size: uint64(size)}, nil
}

// Close closes the file.
func (f *File) Close() error {
	if f.file == nil {
		return nil
	}
	return f.file.Close()
}

// Path returns the path the file was opened by.
func (f *File) Path() string { return f.path }

// KernelPath returns the path to hand the kernel (a uprobe's file) and
// other readers for this file: /proc/self/fd/N of its descriptor, which
// leads to the very file opened, whatever its path names now; Path for a
// File not opened from a descriptor.
func (f *File) KernelPath() string {
	if osf, ok := f.file.(*os.File); ok {
		return fmt.Sprintf("/proc/self/fd/%d", osf.Fd())
	}
	return f.path
}

// Type returns the ELF file type: an executable, a shared object (or a
// PIE), ...
func (f *File) Type() elf.Type { return f.elf.Type }

// segment returns the PT_LOAD segment that holds virtual address addr: an
// executable one whose bytes in the file hold it when exec is set (code),
// else any one whose memory image holds it (data, where the tail past the
// file's bytes is zero-filled).
func (f *File) segment(addr uint64, exec bool) (*elf.Prog, bool) {
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_LOAD || (exec && p.Flags&elf.PF_X == 0) {
			continue
		}
		size := p.Memsz
		if exec {
			size = p.Filesz
		}
		if addr >= p.Vaddr && addr-p.Vaddr < size {
			return p, true
		}
	}
	return nil, false
}

// Offset converts virtual address addr to the file offset a uprobe or a
// semaphore takes: through the executable segment whose file bytes hold
// it when exec is set (code), through any loadable segment otherwise. ok
// is false when no such segment holds addr.
func (f *File) Offset(addr uint64, exec bool) (off uint64, ok bool) {
	p, ok := f.segment(addr, exec)
	if !ok {
		return 0, false
	}
	return addr - p.Vaddr + p.Off, true
}

// Loads returns the file's loadable segments (PT_LOAD), what Address
// reads, for a caller that keeps file offsets' addresses after it closes
// and drops the file.
func (f *File) Loads() []elf.ProgHeader {
	var loads []elf.ProgHeader
	for _, p := range f.elf.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	return loads
}

// Address converts file offset off back to the virtual address a loadable
// segment maps it to; ok is false when no segment maps it.
func (f *File) Address(off uint64) (addr uint64, ok bool) {
	return LoadAddress(f.Loads(), off)
}

// LoadAddress converts file offset off back to the virtual address one of
// loads (a file's PT_LOAD segments, File.Loads) maps it to; ok is false
// when none maps it.
func LoadAddress(loads []elf.ProgHeader, off uint64) (addr uint64, ok bool) {
	for _, p := range loads {
		if off >= p.Off && off-p.Off < p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// ReadCode reads up to size bytes of code at virtual address addr, from
// the executable segment that holds it: fewer where the segment or the
// file ends.
func (f *File) ReadCode(addr, size uint64) ([]byte, error) {
	p, ok := f.segment(addr, true)
	if !ok {
		return nil, fmt.Errorf("address %#x is not in an executable segment of %s", addr, f.path)
	}
	off := addr - p.Vaddr + p.Off
	if off >= f.size {
		return nil, fmt.Errorf("read code of %s at %#x: offset %#x is past the end of the file", f.path, addr, off)
	}
	code := make([]byte, min(size, p.Filesz-(addr-p.Vaddr), f.size-off))
	if _, err := p.ReadAt(code, int64(addr-p.Vaddr)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read code of %s at %#x: %w", f.path, addr, err)
	}
	return code, nil
}

// Interpreter returns the dynamic loader the file names (PT_INTERP), or
// "" for a static executable. Like the kernel, it refuses a path longer
// than PATH_MAX.
func (f *File) Interpreter() (string, error) {
	for _, p := range f.elf.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		if p.Filesz > pathMax || p.Off > f.size || p.Filesz > f.size-p.Off {
			return "", fmt.Errorf("read the interpreter of %s: its path of %d bytes at offset %#x is longer than %d bytes or past the end of the file", f.path, p.Filesz, p.Off, pathMax)
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("read the interpreter of %s: %w", f.path, err)
		}
		if i := len(b) - 1; i >= 0 && b[i] == 0 {
			b = b[:i]
		}
		return string(b), nil
	}
	return "", nil
}

// pathMax is the kernel's PATH_MAX, the longest interpreter path it loads.
const pathMax = 4096

// Libraries returns the libraries the file needs (DT_NEEDED) and the
// directories its DT_RPATH and DT_RUNPATH entries name, as written
// ($ORIGIN unexpanded, each entry a colon-separated list). A file
// without a readable dynamic section has none.
func (f *File) Libraries() (needed, runpaths []string) {
	if f.checkSections(elf.SHT_DYNAMIC) != nil {
		return nil, nil
	}
	needed, _ = f.elf.ImportedLibraries()
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		vals, _ := f.elf.DynString(tag)
		runpaths = append(runpaths, vals...)
	}
	return needed, runpaths
}

// checkSections checks that the sections of type typ and the string
// tables they link to lie within the file, so that debug/elf, which reads
// them whole, allocates no more than the file holds.
func (f *File) checkSections(typ elf.SectionType) error {
	for _, s := range f.elf.Sections {
		if s.Type != typ {
			continue
		}
		if err := f.checkSection(s); err != nil {
			return err
		}
		if int(s.Link) < len(f.elf.Sections) {
			if err := f.checkSection(f.elf.Sections[s.Link]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSection checks that the bytes of section s lie within the file.
func (f *File) checkSection(s *elf.Section) error {
	if s.Type == elf.SHT_NOBITS || (s.Offset <= f.size && s.FileSize <= f.size-s.Offset) {
		return nil
	}
	return fmt.Errorf("section %s of %d bytes at offset %#x runs past the end of the file (%d bytes)", s.Name, s.FileSize, s.Offset, f.size)
}

// readSymbols reads .symtab and .dynsym once; a file may lack either.
func (f *File) readSymbols() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.symbols.read {
		return f.symbols.err
	}
	f.symbols.read = true
	for _, t := range []struct {
		typ  elf.SectionType
		read func() ([]elf.Symbol, error)
		syms *[]elf.Symbol
	}{
		{elf.SHT_SYMTAB, f.elf.Symbols, &f.symtab},
		{elf.SHT_DYNSYM, f.elf.DynamicSymbols, &f.dynsym},
	} {
		if err := f.checkSections(t.typ); err != nil {
			f.symbols.err = err
			return err
		}
		syms, err := t.read()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			f.symbols.err = err
			return err
		}
		*t.syms = syms
	}
	return nil
}

// eachSymbol calls fn for the symbols of .symtab, then those of .dynsym,
// until it returns false.
func (f *File) eachSymbol(fn func(elf.Symbol) bool) error {
	if err := f.readSymbols(); err != nil {
		return err
	}
	for _, syms := range [][]elf.Symbol{f.symtab, f.dynsym} {
		for _, s := range syms {
			if !fn(s) {
				return nil
			}
		}
	}
	return nil
}

// ObjectSymbol returns the data symbol (STT_OBJECT) called name that the
// file defines, from .symtab or else .dynsym: what uaddr() resolves. Its
// Value is the address in the file, not relocated for a PIE's load
// address. ok is false when the file has no such symbol, or no readable
// symbol table.
func (f *File) ObjectSymbol(name string) (sym elf.Symbol, ok bool) {
	f.eachSymbol(func(s elf.Symbol) bool {
		ok = s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF
		sym = s
		return !ok
	})
	if !ok {
		return elf.Symbol{}, false
	}
	return sym, true
}

// FunctionSymbols returns the file's function symbols: those of type FUNC
// or GNU_IFUNC with a name and a non-zero value, from .symtab and
// .dynsym, and from the file's separate debug file when one is installed
// (libc's local functions, such as malloc_consolidate; its values are the
// file's addresses). A non-PIE executable's undefined function whose
// address it takes has a value (its PLT entry), so python3.11 has malloc,
// as bpftrace 0.17 lists it. The slice is shared: callers must not modify
// it.
func (f *File) FunctionSymbols() ([]elf.Symbol, error) {
	f.mu.Lock()
	done, list, err := f.functions.read, f.functionList, f.functions.err
	f.mu.Unlock()
	if done {
		return list, err
	}
	list, err = f.definedFunctions()
	if err == nil {
		if debug := f.DebugFile(); debug != "" {
			if df, err := OpenFile(debug); err == nil {
				more, err := df.definedFunctions()
				df.Close()
				if err == nil {
					list = append(list, more...)
				}
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.functions, f.functionList = part{read: true, err: err}, list
	return list, err
}

// PlainFunctions returns the FUNC symbols of FunctionSymbols, without the
// indirect functions (GNU_IFUNC), whose symbol is the resolver the
// dynamic loader calls once to choose an implementation. The slice is
// shared: callers must not modify it.
func (f *File) PlainFunctions() ([]elf.Symbol, error) {
	list, err := f.FunctionSymbols()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.plainList == nil {
		f.plainList = []elf.Symbol{}
		for _, s := range list {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				f.plainList = append(f.plainList, s)
			}
		}
	}
	return f.plainList, nil
}

// definedFunctions returns the FUNC and GNU_IFUNC symbols of f with a name
// and a value, from .symtab and .dynsym.
func (f *File) definedFunctions() ([]elf.Symbol, error) {
	var syms []elf.Symbol
	err := f.eachSymbol(func(s elf.Symbol) bool {
		typ := elf.ST_TYPE(s.Info)
		if s.Name != "" && s.Value != 0 && (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC) {
			syms = append(syms, s)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read function symbols of %s: %w", f.path, err)
	}
	return syms, nil
}

// debugRoot is where distributions install separate debug files (by
// build id under .build-id, by the file's own directory otherwise).
const debugRoot = "/usr/lib/debug"

// maxBuildIDNote bounds what is read of a build-id note: its header, the
// owner "GNU" and an id, 20 bytes for SHA-1 and rarely more.
const maxBuildIDNote = 1024

// DebugFile returns the path of the file's separate debug file, where
// gdb and libdw look for it: by its GNU build id under
// /usr/lib/debug/.build-id (libc6-dbg installs libc's so), then by the
// name its .gnu_debuglink gives, beside the file, in its .debug
// directory and under /usr/lib/debug; "" when none is installed.
func (f *File) DebugFile() string {
	for _, path := range f.debugCandidates() {
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			return path
		}
	}
	return ""
}

// debugCandidates returns the paths DebugFile tries, in order.
func (f *File) debugCandidates() []string {
	var paths []string
	if id := f.buildID(); len(id) > 1 {
		h := hex.EncodeToString(id)
		paths = append(paths, filepath.Join(debugRoot, ".build-id", h[:2], h[2:]+".debug"))
	}
	if name := f.debugLink(); name != "" {
		dir := filepath.Dir(f.path)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		paths = append(paths, filepath.Join(dir, name), filepath.Join(dir, ".debug", name), filepath.Join(debugRoot, dir, name))
	}
	return paths
}

// buildID returns the file's GNU build id, nil when it has none.
func (f *File) buildID() []byte {
	sec := f.elf.Section(".note.gnu.build-id")
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil
	}
	note := make([]byte, min(sec.Size, maxBuildIDNote))
	// The note: namesz, descsz, type, "GNU\0", then the id.
	if _, err := io.ReadFull(sec.Open(), note); err != nil || len(note) < 16 {
		return nil
	}
	namesz := int(f.elf.ByteOrder.Uint32(note[0:]))
	descsz := int(f.elf.ByteOrder.Uint32(note[4:]))
	start := 12 + (namesz+3)&^3
	if descsz < 2 || namesz > len(note) || descsz > len(note) || start+descsz > len(note) {
		return nil
	}
	return note[start : start+descsz]
}

// maxDebugLink bounds what is read of .gnu_debuglink: a file name, its
// NUL, padding and a CRC.
const maxDebugLink = 4096

// debugLink returns the file name the file's .gnu_debuglink gives, ""
// when it has none.
func (f *File) debugLink() string {
	sec := f.elf.Section(".gnu_debuglink")
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return ""
	}
	data := make([]byte, min(sec.Size, maxDebugLink))
	if _, err := io.ReadFull(sec.Open(), data); err != nil {
		return ""
	}
	name, _, found := bytes.Cut(data, []byte{0})
	if !found || len(name) == 0 || bytes.ContainsRune(name, '/') {
		return ""
	}
	return string(name)
}

// DWARF returns the file's debug information: its own, or, for a file
// stripped of it, its separate debug file's (DebugFile).
func (f *File) DWARF() (*dwarf.Data, error) {
	d, err := f.elf.DWARF()
	if err == nil && hasUnits(d) {
		return d, nil
	}
	if debug := f.DebugFile(); debug != "" {
		if df, openErr := OpenFile(debug); openErr == nil {
			dd, dwarfErr := df.elf.DWARF()
			df.Close()
			if dwarfErr == nil {
				return dd, nil
			}
		}
	}
	if err == nil {
		err = errors.New("no compilation units")
	}
	return nil, fmt.Errorf("%s has no debug information (DWARF), nor a separate debug file: %w", f.path, err)
}

// hasUnits reports whether d describes a compilation unit: a stripped
// file may keep an empty DWARF section.
func hasUnits(d *dwarf.Data) bool {
	e, err := d.Reader().Next()
	return err == nil && e != nil
}
