package plan

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
	"github.com/gotrace/gotrace/runtime/tracefs"
	"github.com/gotrace/gotrace/usdt"
)

// A plan reads the host first and decides after. gatherHost finds what
// the attach points want of the host (wantsOf), then reads it all into a
// hostFacts value: each target file opened once, with its usdt notes and
// function symbols; the -p process's objects and mappings; the kernel's
// features and traceable functions only when a probe needs them; what
// decides a -c command's family filter. The
// rules (resolve.go, boundary.go, missing.go) and the sites then read
// that value and never open, stat or ask the kernel themselves, so a rule
// that runs for several attach points, or a site planned after the code
// generator ran, costs no second read.

// opener opens an ELF file the plan reads: a run's usdt.Files.Open, so
// that the files stay open for attaching; tests count the calls.
type opener func(path string) (*usdt.File, error)

// hostFacts are what a plan knows of the host, read once by gatherHost.
// The rules read its fields; none of them reads the host.
type hostFacts struct {
	// objects are the objects an attach point without a path looks in:
	// Input.Objects, or those the -p process maps, read when an attach
	// point needs them; objectsErr says why there are none. pid and
	// command are the -p process and the -c command.
	objects    []string
	objectsErr error
	pid        int
	command    string
	// wildUSDT says that a usdt attach point looks in the objects.
	wildUSDT bool
	// targets holds every file read, under each name it was asked for
	// by: a script's target as written, an object, a file a pattern
	// matched, and its absolute path.
	targets map[string]targetFacts
	// usdtFiles holds the files each usdt attach point looks in.
	usdtFiles map[*lang.AttachPoint]filesFact
	// features holds the capability table's rows the attach points need.
	features map[capability.Feature]capability.Row
	// kernelFuncs are the kernel's traceable functions, read when a
	// kprobe has a wildcard.
	kernelFuncs []string
	kernelErr   error
	// watched says, for a watchpoint on a user address with -p, whether
	// the process maps it.
	watched map[*lang.AttachPoint]mappedFact
	// mapped holds the device and inode of every file the -p process
	// maps, nil when its maps cannot be read; inodes those of the
	// targets usdt and uprobe attach points name as written.
	mapped  map[fileID]bool
	inodes  map[string]fileID
	pidName string
	// pidns is gotrace's PID namespace where it is not the initial one and
	// programs can read ids in it; pidnsNot why they cannot, where they
	// cannot (readPIDNamespace).
	pidns    *codegen.PIDNamespace
	pidnsNot string
	// family is what decides a -c command's family filter, read when
	// the plan chooses one for a trace with probes in user files.
	family familyFact
	// loader is the -c command's dynamic loader, read when its later
	// library loads are watched (readLoader).
	loader loaderFact
}

// targetFacts are what a plan read of one ELF file: the open file and
// what was read of it, each with why it could not be. A name never read
// has a zero targetFacts: no path, no file, no probes, no functions.
// funcs are the functions a uprobe can name; ifuncs, read with them, the
// names of the indirect functions (GNU_IFUNC), which it cannot: the
// missing-probe policy says why a name among them is refused.
type targetFacts struct {
	path      string
	file      *usdt.File
	err       error
	probes    []usdt.Probe
	probesErr error
	funcs     []elf.Symbol
	funcsErr  error
	ifuncs    []string
}

// filesFact is the files a usdt attach point looks in, or why it has
// none to look in (to be positioned at the attach point): the objects
// (wild), the files its pattern matches (glob), or the one file it
// names.
type filesFact struct {
	targets    []targetFacts
	err        error
	wild, glob bool
}

// hostWants are what the attach points of a program ask of the host,
// found before any file is opened: the files by name, each with what is
// read of it, and the rest.
type hostWants struct {
	// maps is the -p process's /proc/PID/maps, read once for the plan.
	maps        *pidMaps
	features    []capability.Feature
	kernelFuncs bool
	// objects are the objects an attach point without a path looks in,
	// or why there are none; wildUSDT says a usdt attach point does.
	objects    []string
	objectsErr error
	wildUSDT   bool
	// usdt holds the names of the files each usdt attach point looks
	// in, or why it has none.
	usdt map[*lang.AttachPoint]namesFact
	// names lists the files to read, in the order asked, and files what
	// to read of each.
	names []string
	files map[string]*fileWants
	// watched are the watchpoints whose address the -p process must map.
	watched []*lang.AttachPoint
	// stat are the targets whose inode the -p mapping check compares.
	stat []string
	// family says that the -c command's family filter is to be chosen:
	// the plan may, and an attach point is in a user file.
	family bool
}

// namesFact is the names of the files a usdt attach point looks in, or
// why it has none: the objects (wild), the files a pattern matches
// (glob), or the one file it names.
type namesFact struct {
	names      []string
	err        error
	wild, glob bool
}

// fileWants says what is read of one file: its usdt notes, its function
// symbols, or only the file (a -c command's executable, for its
// watchpoints).
type fileWants struct {
	probes, funcs bool
}

// mappedFact says whether an address is mapped in the -p process.
type mappedFact struct {
	mapped bool
	err    error
}

// fileID names a file whatever path reaches it: its device and inode.
type fileID [2]uint64

// gatherHost reads what the rules will ask about the attach points of p
// for a run on in, in one go: each ELF file is opened once (in.open, or
// in.Files.Open), by absolute path whatever names it is asked by, and the
// capability table (in.has, or capability.Of) is asked only about what
// the attach points need.
func gatherHost(p *lang.Program, in Input) *hostFacts {
	open, has := in.open, in.has
	if open == nil {
		open = in.Files.Open
	}
	if has == nil {
		has = capability.Of
	}
	w := wantsOf(p, in)
	h := &hostFacts{
		objects:    w.objects,
		objectsErr: w.objectsErr,
		wildUSDT:   w.wildUSDT,
		pid:        in.PID,
		command:    in.Command,
		targets:    map[string]targetFacts{},
		usdtFiles:  map[*lang.AttachPoint]filesFact{},
		features:   map[capability.Feature]capability.Row{},
		watched:    map[*lang.AttachPoint]mappedFact{},
		inodes:     map[string]fileID{},
	}
	for _, f := range w.features {
		h.features[f] = has(f)
	}
	if w.kernelFuncs {
		h.kernelFuncs, h.kernelErr = kernelFunctions()
	}
	for _, ap := range w.watched {
		ms, err := w.maps.read()
		h.watched[ap] = mappedFact{mapped: usdt.AddressMapped(ms, ap.Address), err: err}
	}
	opened := map[string]*targetFacts{}
	for _, name := range w.names {
		path, err := filepath.Abs(name)
		t := opened[path]
		switch {
		case err != nil:
			err = fmt.Errorf("resolve path %s: %w", name, err)
			t = &targetFacts{err: err, probesErr: err, funcsErr: err}
		case t == nil:
			t = &targetFacts{path: path}
			t.file, t.err = open(path)
			opened[path] = t
		}
		want := w.files[name]
		switch {
		case want.probes && t.err != nil && t.probesErr == nil:
			t.probesErr = unreadableTarget{fmt.Errorf("read usdt notes of %s: %w", path, t.err)}
		case want.probes && t.probes == nil && t.probesErr == nil:
			t.probes, t.probesErr = t.file.Probes()
		}
		switch {
		case want.funcs && t.err != nil && t.funcsErr == nil:
			t.funcsErr = unreadableTarget{fmt.Errorf("read function symbols of %s: %w", path, t.err)}
		case want.funcs && t.funcs == nil && t.funcsErr == nil:
			t.funcs, t.funcsErr = t.file.PlainFunctions()
			t.ifuncs = indirectFunctions(t.file)
		}
		opened[name] = t
	}
	// The rules read values, each name's with everything read of its
	// file.
	for name, t := range opened {
		h.targets[name] = *t
	}
	for ap, names := range w.usdt {
		fact := filesFact{err: names.err, wild: names.wild, glob: names.glob}
		for _, name := range names.names {
			fact.targets = append(fact.targets, h.targets[name])
		}
		h.usdtFiles[ap] = fact
	}
	for _, target := range w.stat {
		var st syscall.Stat_t
		if syscall.Stat(target, &st) == nil {
			h.inodes[target] = fileID{st.Dev, st.Ino}
		}
	}
	if len(h.inodes) > 0 {
		h.mapped, h.pidName = processMappings(w.maps)
	}
	h.loader = readLoader(h, in, open)
	h.pidns, h.pidnsNot = readPIDNamespace(has)
	if w.family {
		h.family = readFamily(in, h.pidnsNot)
	}
	return h
}

// indirectFunctions returns the names of the indirect functions
// (GNU_IFUNC) of f: its function symbols that PlainFunctions leaves out,
// which f read with them.
func indirectFunctions(f *usdt.File) []string {
	all, err := f.FunctionSymbols()
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range all {
		if elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC {
			names = append(names, s.Name)
		}
	}
	return names
}

// wantsOf finds what the attach points of p ask of the host for a run on
// in. It reads only what decides which files those are: the -p
// process's objects when an attach point looks in them, and the files a
// usdt pattern matches.
func wantsOf(p *lang.Program, in Input) hostWants {
	readMaps := in.readMaps
	if readMaps == nil {
		readMaps = usdt.ReadMappings
	}
	w := hostWants{maps: &pidMaps{pid: in.PID, readMaps: readMaps}, objects: in.Objects, usdt: map[*lang.AttachPoint]namesFact{}, files: map[string]*fileWants{}}
	w.wildUSDT = HasWildcardUSDT(p)
	if in.Objects == nil && in.PID != 0 && (w.wildUSDT || HasWildcardUprobe(p)) {
		w.objects, w.objectsErr = processObjects(w.maps)
	}
	asked := map[capability.Feature]bool{}
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			var feature capability.Feature
			switch ap.Kind {
			case lang.ProbeKprobe, lang.ProbeKretprobe:
				feature = capability.Kprobes
				w.kernelFuncs = w.kernelFuncs || strings.Contains(ap.Func, "*")
			case lang.ProbeHardware:
				feature = capability.PMU
			case lang.ProbeWatchpoint:
				w.wantWatchpoint(ap, in)
			case lang.ProbeUSDT:
				names := w.usdtNames(ap)
				w.usdt[ap] = names
				w.read(names.names, fileWants{probes: true})
			case lang.ProbeUprobe, lang.ProbeUretprobe:
				targets := []string{ap.Target}
				if wildcardUprobe(ap) {
					targets = w.objects
				}
				w.read(targets, fileWants{funcs: true})
			}
			if feature != "" && !asked[feature] {
				asked[feature] = true
				w.features = append(w.features, feature)
			}
			if UserKind(ap.Kind) && in.PID != 0 && !WildcardPath(ap.Target) {
				w.stat = append(w.stat, ap.Target)
			}
			w.family = w.family || UserKind(ap.Kind) && in.ChildPID != 0 && in.FamilyRecords != nil
		}
	}
	return w
}

// wantWatchpoint asks what decides whether a watchpoint on a user
// address may be: the -p process's mappings, or the -c command's
// executable.
func (w *hostWants) wantWatchpoint(ap *lang.AttachPoint, in Input) {
	switch {
	case ap.Address >= kernelSpace:
	case in.PID != 0:
		w.watched = append(w.watched, ap)
	case in.Command != "" && len(w.objects) > 0:
		w.read(w.objects[:1], fileWants{})
	}
}

// usdtNames returns the names of the files a usdt attach point looks in:
// the objects for one without a path, each file its pattern matches
// (named as expanded), or its file.
func (w *hostWants) usdtNames(ap *lang.AttachPoint) namesFact {
	wild := WildcardPath(ap.Target)
	switch {
	case wild && w.objectsErr != nil:
		return namesFact{wild: true, err: w.objectsErr}
	case wild && len(w.objects) == 0:
		return namesFact{wild: true, err: errors.New("a usdt probe without a path needs -p PID or -c CMD")}
	case wild:
		return namesFact{wild: true, names: w.objects}
	case globTarget(ap.Target):
		names, err := usdt.GlobTargets("usdt", ap.Target)
		return namesFact{glob: true, names: names, err: err}
	}
	return namesFact{names: []string{ap.Target}}
}

// read asks for want of each of the files names.
func (w *hostWants) read(names []string, want fileWants) {
	for _, name := range names {
		f, ok := w.files[name]
		if !ok {
			f = &fileWants{}
			w.files[name] = f
			w.names = append(w.names, name)
		}
		f.probes = f.probes || want.probes
		f.funcs = f.funcs || want.funcs
	}
}

// pidMaps is the -p process's /proc/PID/maps, read at most once for a
// plan: the objects its attach points without a path look in, whether it
// maps a watchpoint's address and which files it maps all come from the
// one read.
type pidMaps struct {
	pid      int
	readMaps func(pid int) ([]usdt.Mapping, error)
	done     bool
	ms       []usdt.Mapping
	err      error
}

// read returns the process's mappings, reading them the first time.
func (m *pidMaps) read() ([]usdt.Mapping, error) {
	if !m.done {
		m.ms, m.err = m.readMaps(m.pid)
		m.done = true
	}
	return m.ms, m.err
}

// processObjects returns the objects the -p process maps: those its
// attach points without a path look in.
func processObjects(maps *pidMaps) ([]string, error) {
	ms, err := maps.read()
	if err != nil {
		return nil, fmt.Errorf("failed to find the objects of process %d: %w", maps.pid, err)
	}
	objs := usdt.ObjectPaths(ms, maps.pid)
	if len(objs) == 0 {
		// Else the rules would ask for the -p that was given.
		return nil, fmt.Errorf("process %d maps no files to look for usdt probes in%s", maps.pid, proc.ExitedNote(maps.pid))
	}
	return objs, nil
}

// processMappings returns which files the -p process maps, by device
// and inode, whatever path maps them, and its name for messages; nothing
// when its maps cannot be read (-p 1 in a container).
func processMappings(maps *pidMaps) (map[fileID]bool, string) {
	ms, err := maps.read()
	if err != nil {
		return nil, ""
	}
	mapped := map[fileID]bool{}
	for _, m := range ms {
		// An anonymous mapping's device and inode are 0, no file's.
		mapped[fileID{m.Dev, m.Ino}] = true
	}
	return mapped, proc.NameNote(maps.pid)
}

// kernelFunctions returns the kernel functions a kprobe wildcard is
// matched against: the traceable ones (available_filter_functions) or,
// where the kernel refuses that list (this project's answer EPERM), the
// symbols of /proc/kallsyms, and attaching then says what the kernel
// lacks.
func kernelFunctions() ([]string, error) {
	funcs, err := TraceableFunctions()
	if err == nil {
		return funcs, nil
	}
	return kernelFunctionNames()
}

// TraceableFunctions returns the kernel functions kprobes can attach to,
// in tracefs's available_filter_functions order: the list bpftrace
// matches kprobe wildcards and -l against. A function of a module is
// listed by its name alone, without the "[module]" the file adds. Names
// with a dot, the compiler's copies of a function (vfs_statfs.part.0.isra.0),
// are left out as bpftrace 0.17 leaves them out: vfscount.bt's kprobe:vfs_*
// attaches 72 probes in Debian's 6.1 under both (internal/vmtest), not 74.
func TraceableFunctions() ([]string, error) {
	dir, err := tracefs.Find(os.Geteuid() == 0)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "available_filter_functions"))
	if err != nil {
		return nil, fmt.Errorf("read traceable kernel functions: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, _, _ := strings.Cut(line, " "); name != "" && !strings.Contains(name, ".") {
			names = append(names, name)
		}
	}
	return names, nil
}

// kernelFunctionNames returns the names of /proc/kallsyms, in its order.
func kernelFunctionNames() ([]string, error) {
	syms, err := symbols.KernelSymbols()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(syms))
	for i, s := range syms {
		names[i] = s.Name
	}
	return names, nil
}

// WildcardPath reports whether a usdt or uprobe target means "every
// object of the traced process" (empty or *).
func WildcardPath(target string) bool { return target == "" || target == "*" }

// HasWildcardUSDT reports whether p has a usdt attach point without a
// path: one that looks in the objects of the traced process.
func HasWildcardUSDT(p *lang.Program) bool {
	return anyAttachPoint(p, func(ap *lang.AttachPoint) bool {
		return ap.Kind == lang.ProbeUSDT && WildcardPath(ap.Target)
	})
}

// HasWildcardUprobe reports whether p has a uprobe or uretprobe attach
// point whose target is "*": every object of the -p process or -c command.
func HasWildcardUprobe(p *lang.Program) bool {
	return anyAttachPoint(p, wildcardUprobe)
}

// wildcardUprobe reports whether ap is a uprobe or uretprobe whose target
// is "*".
func wildcardUprobe(ap *lang.AttachPoint) bool {
	return (ap.Kind == lang.ProbeUprobe || ap.Kind == lang.ProbeUretprobe) && ap.Target == "*"
}

// anyAttachPoint reports whether is holds for an attach point of p.
func anyAttachPoint(p *lang.Program, is func(*lang.AttachPoint) bool) bool {
	for _, pr := range p.Probes {
		if slices.ContainsFunc(pr.Attach, is) {
			return true
		}
	}
	return false
}

// globTarget reports whether a usdt target is a pattern of files.
func globTarget(target string) bool {
	return !WildcardPath(target) && strings.ContainsAny(target, "*?")
}

// watchesLoads says whether the run's -c command's library loads are
// watched: a usdt attach point without a path may find its probe in a
// library the command loads later (see Loaded). The resolution and the
// loader's site both follow it.
func (h *hostFacts) watchesLoads(in Input) bool {
	return in.Command != "" && h.wildUSDT
}
