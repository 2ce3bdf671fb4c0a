// Package symbols owns naming code addresses: a traced process's user
// addresses through its mappings and its files' ELF symbol tables (func,
// usym, ustack), kernel addresses through /proc/kallsyms (ksym, kstack,
// kaddr), C++ demangling as bpftrace prints it, and the text of a stack
// as bpftrace formats one.
package symbols

import (
	"debug/elf"
	"fmt"
	"sort"
	"strings"
	"sync"

	cxxdemangle "github.com/ianlancetaylor/demangle"

	"github.com/gotrace/gotrace/usdt"
)

// Symbolizer names code addresses of the traced process for func and
// usym(): with a known PID through its memory map, otherwise by the page
// offset of the uprobe sites, which ASLR leaves unchanged.
//
// The mappings of each process it names addresses of are kept (see
// Capture), so that it names them after the process exits. A Symbolizer
// is safe for concurrent use.
type Symbolizer struct {
	// mu guards what follows pid and sites: the readers name addresses
	// while Refresh captures processes.
	mu  sync.Mutex
	pid int
	// sites are the symbols of the attached uprobe sites.
	sites []Site
	// files are the ELF files the trace holds open; cache holds the
	// function symbols of each file named, by path, within a bound.
	files *usdt.Files
	cache symbolCache
	procs processes
	// unmapped counts the frames named as addresses because their
	// process's mappings were never read.
	unmapped int
	// tracker, when Track started one, delivers the kernel's mapping
	// records; tracked holds what they told of each process, by pid.
	tracker *tracker
	tracked map[int]*trackedProcess
	// earlier holds, by pid, the mappings the records told of before the
	// process executed another program or its pid went to a new process
	// (at most maxEarlier, the latest), for the stacks recorded then.
	earlier map[int][]Mappings
	// badRecords and lostRecords count the records that did not parse
	// and those the kernel dropped for want of room in a ring.
	badRecords  int
	lostRecords uint64
	// onMappings, when set, is told each process's mappings when they
	// change (OnMappings).
	onMappings func(pid int, ms Mappings)
	// mangled says C++ names print as the files hold them (KeepMangled).
	mangled bool
}

// KeepMangled has C++ names print as the files hold them, not demangled
// (bpftrace's BPFTRACE_NO_CPP_DEMANGLE). Set it before naming anything.
func (s *Symbolizer) KeepMangled() { s.mangled = true }

// demangle is Demangle unless KeepMangled was set.
func (s *Symbolizer) demangle(name string) string {
	if s.mangled {
		return name
	}
	return Demangle(name)
}

// OnMappings has fn called with a process's file mappings whenever the
// symbolizer learns new ones: from a /proc read that differs from the
// last, from the kernel's mapping records, and for the processes that run
// when Track starts. It is called with the symbolizer's lock held, so it
// must not call the symbolizer. Set it before Track.
func (s *Symbolizer) OnMappings(fn func(pid int, ms Mappings)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onMappings = fn
}

// Site is an attached uprobe's symbol and its file offset.
type Site struct {
	Name   string
	Offset uint64
}

// elfSymbols are the function symbols of one file, sorted by address,
// and its loadable segments, which give a file offset's address.
type elfSymbols struct {
	loads []elf.ProgHeader
	syms  []elf.Symbol
}

// New returns a Symbolizer for process pid (0 when there is none) whose
// uprobes are attached at sites, opening files through files.
func New(pid int, sites []Site, files *usdt.Files) *Symbolizer {
	return &Symbolizer{pid: pid, sites: sites, files: files,
		tracked: map[int]*trackedProcess{}, earlier: map[int][]Mappings{},
		procs: processes{maps: map[processKey]Mappings{}, latest: map[int]processKey{}, threads: map[int]int{},
			starts: map[int][]uint64{}}}
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
	vaddr, ok := usdt.LoadAddress(es.loads, off)
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

// Name returns the demangled symbol at addr, or addr in hex when it cannot
// tell.
func (s *Symbolizer) Name(addr uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid != 0 {
		ms, _ := s.mappings(s.pid)
		if path, off, ok := ms.Find(addr); ok {
			if es := s.file(path); es != nil {
				if name, ok := es.at(off); ok {
					return s.demangle(name)
				}
			}
		}
	}
	match := ""
	for _, st := range s.sites {
		if st.Offset&0xfff == addr&0xfff {
			if match != "" && match != st.Name {
				match = ""
				break
			}
			match = st.Name
		}
	}
	if match != "" {
		return s.demangle(match)
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

// Mapping is one file mapping of a process (a line of /proc/PID/maps).
type Mapping struct {
	// Start and End bound the mapped addresses; Offset is the file offset
	// mapped at Start.
	Start, End, Offset uint64
	Path               string
	// Dev and Ino are the mapped file's device and inode.
	Dev, Ino uint64
}

// Mappings are a process's file mappings.
type Mappings []Mapping

// ProcessMappings reads the file mappings of process (or thread) pid; none
// when it is gone.
func ProcessMappings(pid int) Mappings {
	all, err := usdt.ReadMappings(pid)
	if err != nil {
		return nil
	}
	var ms Mappings
	for _, m := range all {
		if !strings.HasPrefix(m.Path, "/") {
			continue
		}
		// A file deleted since it was mapped is named by its old path,
		// which openMapped finds is no longer that file.
		path := strings.TrimSuffix(m.Path, " (deleted)")
		ms = append(ms, Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Path: path, Dev: m.Dev, Ino: m.Ino})
	}
	return ms
}

// Find returns the file and file offset that address addr maps.
func (ms Mappings) Find(addr uint64) (string, uint64, bool) {
	for _, m := range ms {
		if addr >= m.Start && addr < m.End {
			return m.Path, addr - m.Start + m.Offset, true
		}
	}
	return "", 0, false
}

// Demangle returns the demangled form of a C++ symbol, in c++filt's
// notation, or the name itself when it is not a mangled name. A clone
// keeps its suffix as libstdc++'s demangler writes it ("f(int) [clone
// .isra.0]"), which is how bpftrace 0.17 prints it in stacks and usym.
func Demangle(name string) string {
	return cxxdemangle.Filter(name)
}
