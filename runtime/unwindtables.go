package runtime

// This file fills the maps the eh_frame stack walk reads
// (stack_unwind=eh_frame, codegen/unwind.go): each mapped file's rows,
// the rules of all files, and each process's executable mappings, as
// runtime/symbols learns them.

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/runtime/symbols"
	"github.com/gotrace/gotrace/runtime/unwind"
)

// unwindTables loads unwind tables into the walk's maps. Each file is
// read once (by device and inode, else by path); a file that has no
// table, or whose table does not fit, gets none, and the walk stops
// there, counted in codegen.UnwindStopsMap.
type unwindTables struct {
	mu sync.Mutex
	// files, rules and procs are the walk's maps, created before the
	// collection so that mappings are loaded from the start of tracking.
	files, rules, procs, stops *ebpf.Map
	// byFile are the files read, and nextTable the next free index of
	// files.
	byFile    map[unwindFileKey]*unwindFile
	nextTable uint32
	// sent is what procs holds of each process.
	sent map[int]codegen.UnwindProcs
	// ruleIndex numbers the distinct rules of all files in rules.
	ruleIndex map[unwind.Rule]uint16
	// warn is told (under -v) why a file has no table, once per file,
	// and which files a process's walk has.
	warn func(format string, args ...any)
}

// unwindFileKey tells files apart: their device and inode, or their path
// where a mapping has no inode.
type unwindFileKey struct {
	dev, ino uint64
	path     string
}

// unwindFile is one file's table in the maps: its index (UnwindNoTable
// when it has none), its row count, and its executable segments, which
// give each mapping's load bias.
type unwindFile struct {
	table, rows uint32
	segments    []elf.ProgHeader
}

// newUnwindTables creates the walk's maps of spec, or returns nil when the
// script walks no stack with .eh_frame rules.
func newUnwindTables(spec *ebpf.CollectionSpec, warn func(format string, args ...any)) (*unwindTables, error) {
	if spec.Maps[codegen.UnwindProcsMap] == nil {
		return nil, nil
	}
	u := &unwindTables{byFile: map[unwindFileKey]*unwindFile{}, sent: map[int]codegen.UnwindProcs{}, ruleIndex: map[unwind.Rule]uint16{}, warn: warn}
	for name, m := range map[string]**ebpf.Map{
		codegen.UnwindFilesMap: &u.files, codegen.UnwindRulesMap: &u.rules,
		codegen.UnwindProcsMap: &u.procs, codegen.UnwindStopsMap: &u.stops,
	} {
		var err error
		if *m, err = ebpf.NewMap(spec.Maps[name]); err != nil {
			u.close()
			return nil, fmt.Errorf("create unwind map %s: %w", name, err)
		}
	}
	return u, nil
}

// replacements are the maps for the collection to use instead of creating
// them.
func (u *unwindTables) replacements() map[string]*ebpf.Map {
	if u == nil {
		return nil
	}
	return map[string]*ebpf.Map{
		codegen.UnwindFilesMap: u.files, codegen.UnwindRulesMap: u.rules,
		codegen.UnwindProcsMap: u.procs, codegen.UnwindStopsMap: u.stops,
	}
}

// close releases the maps (the collection holds its own references).
func (u *unwindTables) close() {
	if u == nil {
		return
	}
	for _, m := range []*ebpf.Map{u.files, u.rules, u.procs, u.stops} {
		if m != nil {
			m.Close()
		}
	}
}

// setProcess loads the tables of the files process pid maps and sets its
// executable mappings, ms as runtime/symbols gives them (a /proc read,
// all file mappings; or the kernel's records, executable ones). No
// mappings removes the process.
func (u *unwindTables) setProcess(pid int, ms symbols.Mappings) {
	u.mu.Lock()
	defer u.mu.Unlock()
	type entry struct {
		codegen.UnwindMapping
		file string
	}
	var entries []entry
	for _, m := range ms {
		f := u.file(m)
		if e, ok := f.mapping(m); ok {
			entries = append(entries, entry{e, filepath.Base(m.Path)})
		}
	}
	key := uint32(pid)
	if len(entries) == 0 {
		delete(u.sent, pid)
		u.procs.Delete(key)
		return
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if a.Start < b.Start {
			return -1
		}
		if a.Start > b.Start {
			return 1
		}
		return 0
	})
	// Records and a /proc read may both name a mapping: the walk's search
	// wants them apart.
	var v codegen.UnwindProcs
	var files []string
	for _, e := range entries {
		if v.N > 0 && e.Start < v.Mappings[v.N-1].End {
			continue
		}
		if int(v.N) == len(v.Mappings) {
			u.warn("unwind: process %d has more than %d executable mappings; its stacks stop at the others", pid, len(v.Mappings))
			break
		}
		v.Mappings[v.N] = e.UnwindMapping
		v.N++
		files = append(files, e.file)
	}
	// The /proc reads and the records tell the same mappings over and
	// over: the map is written when they change.
	if u.sent[pid] == v {
		return
	}
	u.sent[pid] = v
	if err := u.procs.Put(key, &v); err != nil {
		u.warn("unwind: set the mappings of process %d: %v", pid, err)
		return
	}
	u.warn("unwind: process %d maps %s", pid, strings.Join(files, ", "))
}

// preload builds the tables of the files at paths, the -c command's
// executable and the libraries it needs, before the command leaves its
// gate. The walk can use a file's table only once it is in the kernel;
// built when the command's mapping records arrive after exec, a large
// executable's table came after the first samples, whose stacks then
// stopped at their first frame. Only the mappings wait for exec now.
func (u *unwindTables) preload(paths []string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, path := range paths {
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil {
			continue
		}
		u.file(symbols.Mapping{Path: path, Dev: st.Dev, Ino: st.Ino})
	}
}

// mapping returns the walk's entry for mapping m of file f: pc in m is
// the file's virtual address pc - bias, where the mapped file offset
// lies in an executable segment. Other mappings (data, read-only) are
// left out.
func (f *unwindFile) mapping(m symbols.Mapping) (codegen.UnwindMapping, bool) {
	for _, seg := range f.segments {
		if m.Offset < seg.Off&^0xfff || m.Offset >= seg.Off+seg.Filesz {
			continue
		}
		return codegen.UnwindMapping{
			Start: m.Start, End: m.End,
			Bias:  m.Start - m.Offset + seg.Off - seg.Vaddr,
			Table: f.table, Rows: f.rows,
		}, true
	}
	return codegen.UnwindMapping{}, false
}

// file returns the table of the file mapping m maps, loading it at its
// first use. The caller holds u.mu.
func (u *unwindTables) file(m symbols.Mapping) *unwindFile {
	key := unwindFileKey{dev: m.Dev, ino: m.Ino}
	if m.Ino == 0 {
		key.path = m.Path
	}
	if f, ok := u.byFile[key]; ok {
		return f
	}
	f := &unwindFile{table: codegen.UnwindNoTable}
	u.byFile[key] = f
	ef, err := elf.Open(m.Path)
	if err != nil {
		var format *elf.FormatError
		if !errors.As(err, &format) {
			// Not an ELF file (locale archives, caches) holds no
			// code: only a file that could not be read is told.
			u.warn("unwind: %v", err)
		}
		return f
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			f.segments = append(f.segments, p.ProgHeader)
		}
	}
	if len(f.segments) == 0 {
		return f
	}
	t, err := unwind.Build(ef)
	if err != nil {
		u.warn("unwind: %s: %v", m.Path, err)
		return f
	}
	if err := u.load(f, t); err != nil {
		u.warn("unwind: %s: %v", m.Path, err)
	}
	return f
}

// load puts table t of file f into the maps: its rules among all files',
// its rows into an inner array of their size. The caller holds u.mu.
func (u *unwindTables) load(f *unwindFile, t *unwind.Table) error {
	if t.Machine != elf.EM_X86_64 {
		return fmt.Errorf("load unwind table: %v tables are not walked yet", t.Machine)
	}
	if len(t.Rows) == 0 {
		return errors.New("load unwind table: no rows")
	}
	if u.nextTable == codegen.UnwindMaxFiles {
		return fmt.Errorf("load unwind table: more than %d files", codegen.UnwindMaxFiles)
	}
	global := make([]uint16, len(t.Rules))
	for i, r := range t.Rules {
		g, ok := u.ruleIndex[r]
		if !ok {
			if len(u.ruleIndex) == codegen.UnwindMaxRules {
				return fmt.Errorf("load unwind table: more than %d distinct rules", codegen.UnwindMaxRules)
			}
			g = uint16(len(u.ruleIndex))
			v := codegen.UnwindRule{Reg: uint8(r.CFAReg), CFAOffset: r.CFAOffset, FPOffset: r.FPOffset, RAOffset: r.RAOffset}
			if err := u.rules.Put(uint32(g), &v); err != nil {
				return fmt.Errorf("load unwind rule: %w", err)
			}
			u.ruleIndex[r] = g
		}
		global[i] = g
	}
	keys := make([]uint32, len(t.Rows))
	values := make([]uint64, len(t.Rows))
	for i, row := range t.Rows {
		keys[i], values[i] = uint32(i), codegen.UnwindRow(row.Addr, global[row.Rule])
	}
	inner, err := ebpf.NewMap(codegen.UnwindRowsSpec(len(t.Rows)))
	if err != nil {
		return fmt.Errorf("create unwind rows: %w", err)
	}
	defer inner.Close()
	if _, err := inner.BatchUpdate(keys, values, nil); err != nil {
		return fmt.Errorf("load unwind rows: %w", err)
	}
	if err := u.files.Put(u.nextTable, inner); err != nil {
		return fmt.Errorf("load unwind rows: %w", err)
	}
	f.table, f.rows = u.nextTable, uint32(len(t.Rows))
	u.nextTable++
	return nil
}

// stopCounts returns how many walks stopped early, by codegen.UnwindStop.
func (u *unwindTables) stopCounts() []uint64 {
	counts := make([]uint64, codegen.UnwindStops)
	for i := range counts {
		if err := u.stops.Lookup(uint32(i), &counts[i]); err != nil {
			return nil
		}
	}
	return counts
}

// report writes, under -v, why walks stopped before the outermost frame.
func (u *unwindTables) report(w io.Writer) {
	if u == nil {
		return
	}
	c := u.stopCounts()
	if c == nil {
		return
	}
	fmt.Fprintf(w, "unwind: walks stopped early: %d in processes without loaded mappings, %d outside file mappings, %d in files without .eh_frame, %d at unsupported rules, %d at unreadable return addresses\n",
		c[codegen.UnwindStopNoProcess], c[codegen.UnwindStopNoMapping], c[codegen.UnwindStopNoTable], c[codegen.UnwindStopUnsupported], c[codegen.UnwindStopRead])
}

// verbosef writes a line under -v: why a file has no unwind table, which
// the walk then stops at.
func (t *tracer) verbosef(format string, args ...any) {
	if t.opts.Verbose {
		fmt.Fprintf(t.opts.Err, format+"\n", args...)
	}
}
