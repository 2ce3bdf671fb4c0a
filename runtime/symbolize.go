package runtime

import (
	"bufio"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	cxxdemangle "github.com/ianlancetaylor/demangle"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/usdt"
)

// symbolizer names code addresses of the traced process for func and
// usym(): with a known PID through its memory map, otherwise by the page
// offset of the uprobe sites, which ASLR leaves unchanged.
type symbolizer struct {
	pid int
	// sites are the symbols of the attached uprobe sites.
	sites []siteSymbol
	// files opens the ELF files; symbols holds the function symbols of
	// each, by path.
	files   *usdt.Files
	symbols map[string]*elfSymbols
}

// siteSymbol is an attached uprobe's symbol and its file offset.
type siteSymbol struct {
	name   string
	offset uint64
}

// elfSymbols are the function symbols of one file, sorted by address.
type elfSymbols struct {
	file *usdt.File
	syms []elf.Symbol
}

func newSymbolizer(pid int, sites []site, files *usdt.Files) *symbolizer {
	s := &symbolizer{pid: pid, files: files, symbols: map[string]*elfSymbols{}}
	for _, st := range sites {
		if st.symbol != "" {
			s.sites = append(s.sites, siteSymbol{name: st.symbol, offset: st.offset})
		}
	}
	return s
}

// file reads the symbols of path once; nil when it has none.
func (s *symbolizer) file(path string) *elfSymbols {
	if es, ok := s.symbols[path]; ok {
		return es
	}
	var es *elfSymbols
	if f, err := s.files.Open(path); err == nil {
		if syms, err := f.PlainFunctions(); err == nil {
			es = &elfSymbols{file: f, syms: slices.Clone(syms)}
			slices.SortStableFunc(es.syms, func(a, b elf.Symbol) int {
				if a.Value != b.Value {
					return cmp.Compare(a.Value, b.Value)
				}
				return cmp.Compare(symbolRank(a), symbolRank(b))
			})
		}
	}
	s.symbols[path] = es
	return es
}

// symbolRank orders the names of one address so that the one a stack
// prints, as bpftrace does, comes last (symbolAt takes the last): a sized
// symbol over one of size 0, then the public name of an alias
// (pthread_create over libc's local __GI___pthread_create and
// __pthread_create_2_1): global over weak over local binding, then a name
// without a version, then the name with fewer leading underscores.
func symbolRank(s elf.Symbol) int {
	rank := 0
	if s.Size > 0 {
		rank += 1000
	}
	switch elf.ST_BIND(s.Info) {
	case elf.STB_GLOBAL:
		rank += 200
	case elf.STB_WEAK:
		rank += 100
	}
	if !strings.Contains(s.Name, "@") {
		// The dynamic symbol's name, not the symbol table's versioned
		// copy (pthread_create@@GLIBC_2.34).
		rank += 50
	}
	return rank - (len(s.Name) - len(strings.TrimLeft(s.Name, "_")))
}

// at returns the symbol whose code holds file offset off.
func (es *elfSymbols) at(off uint64) (string, bool) {
	sym, _, ok := es.symbolAt(off)
	return sym.Name, ok
}

// symbolAt returns the symbol whose code holds file offset off, and the
// offset's virtual address.
func (es *elfSymbols) symbolAt(off uint64) (elf.Symbol, uint64, bool) {
	vaddr, ok := es.file.Address(off)
	if !ok {
		return elf.Symbol{}, 0, false
	}
	i := sort.Search(len(es.syms), func(i int) bool { return es.syms[i].Value > vaddr }) - 1
	if i < 0 {
		return elf.Symbol{}, 0, false
	}
	sym := es.syms[i]
	if vaddr != sym.Value && vaddr >= sym.Value+sym.Size {
		return elf.Symbol{}, 0, false
	}
	return sym, vaddr, true
}

// name returns the demangled symbol at addr, or addr in hex when it cannot
// tell.
func (s *symbolizer) name(addr uint64) string {
	if s.pid != 0 {
		if path, off, ok := mappedOffset(s.pid, addr); ok {
			if es := s.file(path); es != nil {
				if name, ok := es.at(off); ok {
					return demangle(name)
				}
			}
		}
	}
	match := ""
	for _, st := range s.sites {
		if st.offset&0xfff == addr&0xfff {
			if match != "" && match != st.name {
				match = ""
				break
			}
			match = st.name
		}
	}
	if match != "" {
		return demangle(match)
	}
	return hexAddr(addr)
}

// hexAddr formats an address no symbol covers as bpftrace does: in hex
// with 0x, except 0, which C++'s showbase prints as a bare 0.
func hexAddr(addr uint64) string {
	if addr == 0 {
		return "0"
	}
	return fmt.Sprintf("0x%x", addr)
}

// mappedOffset finds the file and file offset that address addr of
// process pid maps.
func mappedOffset(pid int, addr uint64) (string, uint64, bool) {
	return processMappings(pid).find(addr)
}

// mapping is one file mapping of a process (a line of /proc/PID/maps).
type mapping struct {
	start, end, offset uint64
	path               string
	// file is the mapped file's device and inode.
	file fileKey
}

// mappings are a process's file mappings.
type mappings []mapping

// processMappings reads the file mappings of process (or thread) pid; none
// when it is gone.
func processMappings(pid int) mappings {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms mappings
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		major, minor, ok := strings.Cut(fields[3], ":")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fields[2], 16, 64)
		maj, err4 := strconv.ParseUint(major, 16, 32)
		mnr, err5 := strconv.ParseUint(minor, 16, 32)
		ino, err6 := strconv.ParseUint(fields[4], 10, 64)
		if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
			continue
		}
		file := fileKey{dev: unix.Mkdev(uint32(maj), uint32(mnr)), ino: ino}
		ms = append(ms, mapping{start: start, end: end, offset: off, path: fields[5], file: file})
	}
	return ms
}

// find returns the file and file offset that address addr maps.
func (ms mappings) find(addr uint64) (string, uint64, bool) {
	for _, m := range ms {
		if addr >= m.start && addr < m.end {
			return m.path, addr - m.start + m.offset, true
		}
	}
	return "", 0, false
}

// demangle returns the demangled form of a C++ symbol, in c++filt's
// notation, or the name itself when it is not a mangled name.
func demangle(name string) string {
	return cxxdemangle.Filter(name, cxxdemangle.NoClones)
}
