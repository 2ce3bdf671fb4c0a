package plan

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/runtime/proc"
	"github.com/gotrace/gotrace/runtime/symbols"
	"github.com/gotrace/gotrace/usdt"
)

// A plan reads the host first and decides after: gatherHost walks the
// attach points once and reads everything the rules will ask about (each
// target file opened once, with its usdt notes and function symbols; the
// -p process's mappings; the kernel's features and traceable functions
// only when a probe needs them) into a hostFacts value. The rules of
// resolve.go and boundary.go then read that value and never open, stat
// or ask the kernel themselves, so a rule that runs for several attach
// points, or a site planned after the code generator ran, costs no
// second read.

// opener opens an ELF file the plan reads: a run's usdt.Files.Open, so
// that the files stay open for attaching; tests count the calls.
type opener func(path string) (*usdt.File, error)

// hostFacts are what a plan knows of the host, read once by gatherHost.
// The rules read its fields; none of them reads the host.
type hostFacts struct {
	// objects are the objects an attach point without a path looks in
	// (Input.Objects); pid and command are the -p process and the -c
	// command.
	objects []string
	pid     int
	command string
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

	open opener
	has  capabilityOf
	// files holds every file opened, by absolute path: one open each.
	files map[string]*targetFacts
}

// targetFacts are what a plan read of one ELF file: the open file and
// what was read of it, each with why it could not be. A name never read
// has a zero targetFacts: no path, no file, no probes, no functions.
type targetFacts struct {
	path      string
	file      *usdt.File
	err       error
	probes    []usdt.Probe
	probesErr error
	funcs     []elf.Symbol
	funcsErr  error
}

// filesFact is the files a usdt attach point looks in, or why it has
// none to look in.
type filesFact struct {
	targets []targetFacts
	err     error
}

// mappedFact says whether an address is mapped in the -p process.
type mappedFact struct {
	mapped bool
	err    error
}

// fileID names a file whatever path reaches it: its device and inode.
type fileID [2]uint64

// gatherHost reads what the rules will ask about the attach points of p
// for a run on in: open opens each ELF file (once), has answers the
// capability table.
func gatherHost(p *lang.Program, in Input, open opener, has capabilityOf) *hostFacts {
	h := &hostFacts{
		objects:   in.Objects,
		pid:       in.PID,
		command:   in.Command,
		targets:   map[string]targetFacts{},
		usdtFiles: map[*lang.AttachPoint]filesFact{},
		features:  map[capability.Feature]capability.Row{},
		watched:   map[*lang.AttachPoint]mappedFact{},
		inodes:    map[string]fileID{},
		open:      open,
		has:       has,
		files:     map[string]*targetFacts{},
	}
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			h.gather(ap)
		}
	}
	// The rules read values: each name's facts as they stand now, with
	// everything read.
	for name, t := range h.targets {
		if f := h.files[t.path]; f != nil {
			h.targets[name] = *f
		}
	}
	if len(h.inodes) > 0 {
		h.readMappings()
	}
	return h
}

// gather reads what attach point ap needs of the host.
func (h *hostFacts) gather(ap *lang.AttachPoint) {
	switch ap.Kind {
	case lang.ProbeKprobe, lang.ProbeKretprobe:
		h.feature(capability.Kprobes)
		if strings.Contains(ap.Func, "*") && h.kernelFuncs == nil && h.kernelErr == nil {
			h.kernelFuncs, h.kernelErr = kernelFunctions()
		}
	case lang.ProbeHardware:
		h.feature(capability.PMU)
	case lang.ProbeWatchpoint:
		h.gatherWatchpoint(ap)
	case lang.ProbeUSDT:
		h.gatherUSDT(ap)
	case lang.ProbeUprobe, lang.ProbeUretprobe:
		targets := []string{ap.Target}
		if wildcardUprobe(ap) {
			targets = h.objects
		}
		for _, target := range targets {
			h.read(target).readFunctions()
		}
	}
	if UserKind(ap.Kind) && h.pid != 0 && !WildcardPath(ap.Target) {
		h.statTarget(ap.Target)
	}
}

// feature asks the capability table about f, once.
func (h *hostFacts) feature(f capability.Feature) {
	if _, ok := h.features[f]; !ok {
		h.features[f] = h.has(f)
	}
}

// gatherWatchpoint reads where a watchpoint on a user address may be:
// the -p process's mappings, or the -c command's executable.
func (h *hostFacts) gatherWatchpoint(ap *lang.AttachPoint) {
	switch {
	case ap.Address >= kernelSpace:
	case h.pid != 0:
		mapped, err := usdt.AddressMapped(h.pid, ap.Address)
		h.watched[ap] = mappedFact{mapped: mapped, err: err}
	case h.command != "" && len(h.objects) > 0:
		h.read(h.objects[0])
	}
}

// gatherUSDT reads the usdt probes of the files a usdt attach point looks
// in: the objects for one without a path, each file its pattern matches
// (named as expanded), or its file.
func (h *hostFacts) gatherUSDT(ap *lang.AttachPoint) {
	names := []string{ap.Target}
	var err error
	switch {
	case WildcardPath(ap.Target) && len(h.objects) == 0:
		err = attachError(ap, "a usdt probe without a path needs -p PID or -c CMD")
	case WildcardPath(ap.Target):
		names = h.objects
	case globTarget(ap.Target):
		if names, err = usdt.GlobTargets("usdt", ap.Target); err != nil {
			err = attachError(ap, "%v", err)
		}
	}
	if err != nil {
		h.usdtFiles[ap] = filesFact{err: err}
		return
	}
	var files []*targetFacts
	for _, name := range names {
		t := h.read(name)
		t.readProbes()
		files = append(files, t)
	}
	// Read in full now: the rules get the values.
	fact := filesFact{}
	for _, t := range files {
		fact.targets = append(fact.targets, *t)
	}
	h.usdtFiles[ap] = fact
}

// read opens the file a target names, once whatever name it is given by,
// and records it under that name and under its absolute path.
func (h *hostFacts) read(target string) *targetFacts {
	path, err := filepath.Abs(target)
	if err != nil {
		t := targetFacts{err: fmt.Errorf("resolve path %s: %w", target, err)}
		t.probesErr, t.funcsErr = t.err, t.err
		h.targets[target] = t
		return &t
	}
	t, ok := h.files[path]
	if !ok {
		t = &targetFacts{path: path}
		t.file, t.err = h.open(path)
		h.files[path] = t
	}
	h.targets[target], h.targets[path] = *t, *t
	return t
}

// readProbes reads the usdt probes of the file.
func (t *targetFacts) readProbes() {
	switch {
	case t.probes != nil || t.probesErr != nil:
	case t.err != nil:
		t.probesErr = fmt.Errorf("read usdt notes of %s: %w", t.path, t.err)
	default:
		t.probes, t.probesErr = t.file.Probes()
		if t.probes == nil && t.probesErr == nil {
			t.probes = []usdt.Probe{}
		}
	}
}

// readFunctions reads the function symbols of the file that a uprobe can
// name: File.PlainFunctions, as an IFUNC's symbol is the resolver the
// loader calls once, and a uprobe there is refused (symbolNotFound says
// why).
func (t *targetFacts) readFunctions() {
	switch {
	case t.funcs != nil || t.funcsErr != nil:
	case t.err != nil:
		t.funcsErr = fmt.Errorf("uprobe target file '%s' does not exist or is not an ELF file: %w", t.path, t.err)
	default:
		t.funcs, t.funcsErr = t.file.PlainFunctions()
		if t.funcs == nil && t.funcsErr == nil {
			t.funcs = []elf.Symbol{}
		}
	}
}

// statTarget records the device and inode of the file target names, for
// the -p mapping check; a target that cannot be stat'ed is left out.
func (h *hostFacts) statTarget(target string) {
	var st syscall.Stat_t
	if syscall.Stat(target, &st) == nil {
		h.inodes[target] = fileID{st.Dev, st.Ino}
	}
}

// readMappings reads which files the -p process maps, by device and
// inode, whatever path maps them; nothing when its maps cannot be read
// (-p 1 in a container).
func (h *hostFacts) readMappings() {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", h.pid))
	if err != nil {
		return
	}
	f.Close()
	h.mapped = map[fileID]bool{}
	for _, m := range symbols.ProcessMappings(h.pid) {
		h.mapped[fileID{m.Dev, m.Ino}] = true
	}
	h.pidName = proc.NameNote(h.pid)
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

// globTarget reports whether a usdt target is a pattern of files.
func globTarget(target string) bool {
	return !WildcardPath(target) && strings.ContainsAny(target, "*?")
}
