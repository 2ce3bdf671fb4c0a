package runtime

import (
	"debug/elf"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	cxxdemangle "github.com/ianlancetaylor/demangle"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// site is one place a program runs: what bpftrace counts in "Attaching N
// probes...". BEGIN, END and every interval are one site each, a USDT
// probe one site per location, a uprobe one site per matching symbol.
type site struct {
	att *codegen.Attachment
	// path is the absolute ELF path of USDT and uprobe sites.
	path string
	// usdt is the location of a USDT site.
	usdt codegen.Site
	// symbol names a uprobe's ELF symbol ("" for one by address) and
	// offset is where it attaches in the file.
	symbol string
	offset uint64
	// why says how the plan chose the site, for --dry-run -v.
	why string
}

// planSites expands the attachments of spec into sites. Uprobe symbols are
// resolved here, before anything is loaded, so that the count printed
// first is right; an attach point that matches nothing drops out silently,
// as in bpftrace.
func planSites(spec *codegen.Spec, files *usdt.Files, unsafe bool) ([]site, error) {
	var sites []site
	for i := range spec.Attachments {
		a := &spec.Attachments[i]
		switch a.Kind {
		case lang.ProbeBegin, lang.ProbeEnd, lang.ProbeInterval, lang.ProbeProfile, lang.ProbeTracepoint, lang.ProbeSoftware, lang.ProbeHardware, lang.ProbeWatchpoint,
			lang.ProbeKprobe, lang.ProbeKretprobe, lang.ProbeKfunc, lang.ProbeKretfunc:
			sites = append(sites, site{att: a, why: ownWhy(a)})
		case lang.ProbeUSDT:
			path, err := absPath(a.Path)
			if err != nil {
				return nil, err
			}
			for _, s := range a.Sites {
				sites = append(sites, site{att: a, path: path, usdt: s, why: usdtWhy(a, path, s)})
			}
		case lang.ProbeUprobe, lang.ProbeUretprobe:
			path, err := absPath(a.Path)
			if err != nil {
				return nil, err
			}
			f, err := openTarget(files, path)
			if err != nil {
				return nil, siteError(a, "%v", err)
			}
			fs, err := f.PlainFunctions()
			if err != nil {
				return nil, siteError(a, "%v", err)
			}
			us, err := uprobeSites(a, f, fs, unsafe)
			if err != nil {
				return nil, err
			}
			sites = append(sites, us...)
		default:
			return nil, fmt.Errorf("%s: probes of this kind cannot be attached", a.Probe)
		}
	}
	return sites, nil
}

// siteError is attachError for the attach point an attachment of the
// Spec came from.
func siteError(a *codegen.Attachment, format string, args ...any) error {
	return spanError(a.ProbePos, "", format, args...)
}

// uprobeSites returns the sites of a uprobe or uretprobe attachment of the
// file f, whose function symbols are syms: one site at an address
// (0x2262, 8802, main+2; checkAddresses has checked it), or at the
// function that the attachment names (expandUprobes has made it one
// symbol's name). unsafe is --unsafe, which attached addresses whose
// boundary could not be checked.
func uprobeSites(a *codegen.Attachment, f *usdt.File, syms []elf.Symbol, unsafe bool) ([]site, error) {
	path := f.Path()
	if field := attachpoint.ParseFunc(a.Symbol); field.AtAddress() {
		addr, _, err := uprobeAddress(field, a.Address, syms)
		if err != nil {
			return nil, siteError(a, "%v", err)
		}
		off, err := fileOffset(f, addr)
		if err != nil {
			return nil, siteError(a, "%v", err)
		}
		return []site{{att: a, path: path, offset: off, why: addressWhy(a, field, addr, off, unsafe)}}, nil
	}
	// Attach by offset: symbols of size 0 (frame_dummy, hand-written
	// assembly) are still code.
	sym := symbolNamed(syms, a.Symbol)
	if sym.Name == "" {
		return nil, siteError(a, "function %s not found", a.Symbol)
	}
	off, err := fileOffset(f, sym.Value)
	if err != nil {
		return nil, siteError(a, "symbol %s: %v", sym.Name, err)
	}
	return []site{{att: a, path: path, symbol: sym.Name, offset: off,
		why: fmt.Sprintf("%s %s in %s: symbol at %#x, file offset %#x", a.Kind, sym.Name, path, sym.Value, off)}}, nil
}

// functionSymbols returns the function symbols of the ELF file at path
// that a uprobe can name, read through files: File.PlainFunctions, as an
// IFUNC's symbol is the resolver the loader calls once, and a uprobe there
// is refused (symbolNotFound says why). The slice is shared: callers must
// not modify it.
func functionSymbols(files *usdt.Files, path string) ([]elf.Symbol, error) {
	f, err := openTarget(files, path)
	if err != nil {
		return nil, err
	}
	return f.PlainFunctions()
}

// openTarget opens the target file of a uprobe through files.
func openTarget(files *usdt.Files, path string) (*usdt.File, error) {
	f, err := files.Open(path)
	if err != nil {
		return nil, fmt.Errorf("uprobe target file '%s' does not exist or is not an ELF file: %w", path, err)
	}
	return f, nil
}

// matchSymbols returns the sorted, distinct names of the symbols that
// pattern names (attachpoint.Star.MatchFunction: the mangled name, or the
// start of the demangled C++ name, with * wildcards in either).
func matchSymbols(syms []elf.Symbol, pattern string) []string {
	seen := map[string]bool{}
	var names []string
	for _, s := range syms {
		if seen[s.Name] {
			continue
		}
		if attachpoint.Star.MatchFunction(pattern, s.Name) {
			seen[s.Name] = true
			names = append(names, s.Name)
		}
	}
	sort.Strings(names)
	return names
}

// fileOffset turns a virtual address of the code of f into the file
// offset a uprobe takes.
func fileOffset(f *usdt.File, addr uint64) (uint64, error) {
	off, ok := f.Offset(addr, true)
	if !ok {
		return 0, fmt.Errorf("address %#x is not in an executable segment of %s", addr, f.Path())
	}
	return off, nil
}

// attachSite attaches the program of a USDT or uprobe site, filtered on
// pid when it is not 0.
func attachSite(s site, prog *ebpf.Program, execs *executables, pid int) (link.Link, error) {
	ex, err := execs.open(s)
	if err != nil {
		return nil, err
	}
	var l link.Link
	switch s.att.Kind {
	case lang.ProbeUSDT:
		l, err = ex.Uprobe("", prog, &link.UprobeOptions{
			Address:      s.usdt.Offset,
			RefCtrOffset: s.usdt.SemaphoreOffset,
			Cookie:       s.usdt.Cookie,
			PID:          pid,
		})
	case lang.ProbeUprobe:
		l, err = ex.Uprobe(s.symbol, prog, &link.UprobeOptions{Address: s.offset, PID: pid})
	case lang.ProbeUretprobe:
		l, err = ex.Uretprobe(s.symbol, prog, &link.UprobeOptions{Address: s.offset, PID: pid})
	default:
		return nil, fmt.Errorf("attach %s: probes of this kind cannot be attached", s.att.Probe)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s to %s: %w", s.att.Probe, s.where(), err)
	}
	return l, nil
}

// executables are the files of a run's uprobes, each opened once. The
// kernel is handed the descriptor files holds (File.KernelPath), not the
// path: the file it attaches to is the one opened (with the user's rights,
// see usdt.SetOpenRights) and read, even if the path (a symlink) has been
// changed since.
type executables struct {
	files  *usdt.Files
	byPath map[string]*link.Executable
}

// newExecutables returns the executables of a run whose files are files.
func newExecutables(files *usdt.Files) *executables {
	return &executables{files: files, byPath: map[string]*link.Executable{}}
}

// open returns the executable of a site's file.
func (e *executables) open(s site) (*link.Executable, error) {
	if ex, ok := e.byPath[s.path]; ok {
		return ex, nil
	}
	f, err := e.files.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.att.Probe, err)
	}
	ex, err := link.OpenExecutable(f.KernelPath())
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.att.Probe, err)
	}
	e.byPath[s.path] = ex
	return ex, nil
}

// where names the place of a USDT or uprobe site in messages.
func (s site) where() string {
	if s.symbol != "" {
		return s.path + ":" + s.symbol
	}
	return fmt.Sprintf("%s at offset %#x", s.path, s.usdt.Offset+s.offset)
}

// demangle returns the demangled form of a C++ symbol, in c++filt's
// notation, or the name itself when it is not a mangled name.
func demangle(name string) string {
	return cxxdemangle.Filter(name, cxxdemangle.NoClones)
}

// attachKernelFunc attaches a kprobe, kretprobe, kfunc or kretfunc program
// to its kernel function. A refusal names what the kernel lacks: kprobes
// (CONFIG_KPROBES) or BPF trampolines for fentry and fexit programs.
func attachKernelFunc(a *codegen.Attachment, prog *ebpf.Program) (link.Link, error) {
	var l link.Link
	var err error
	switch a.Kind {
	case lang.ProbeKprobe:
		l, err = link.Kprobe(a.Symbol, prog, nil)
	case lang.ProbeKretprobe:
		l, err = link.Kretprobe(a.Symbol, prog, nil)
	default:
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	}
	if err == nil {
		return l, nil
	}
	switch {
	case (a.Kind == lang.ProbeKprobe || a.Kind == lang.ProbeKretprobe) && !capability.Of(capability.Kprobes).Available:
		return nil, fmt.Errorf("attach %s: %s: %w", a.ProbeName, notAvailable(capability.Of(capability.Kprobes)), err)
	case a.Kind == lang.ProbeKfunc || a.Kind == lang.ProbeKretfunc:
		return nil, fmt.Errorf("attach %s: the kernel refuses fentry/fexit programs: %w", a.ProbeName, err)
	}
	return nil, fmt.Errorf("attach %s: %w", a.ProbeName, err)
}

// kernelFuncLoadError turns the kernel's refusal to load the program of a
// kfunc or kretfunc attach point into an error at that attach point,
// saying that it is fentry/fexit programs the kernel refuses (this
// project's kernels refuse them with EPERM, even to root); other errors
// are returned as they are.
func kernelFuncLoadError(spec *codegen.Spec, err error) error {
	for _, a := range spec.Attachments {
		if (a.Kind == lang.ProbeKfunc || a.Kind == lang.ProbeKretfunc) && strings.Contains(err.Error(), "program "+a.Program+":") {
			return spanError(a.ProbePos, "", "%s: the kernel refuses to load fentry/fexit programs (kfunc, kretfunc): %v", a.ProbeName, err)
		}
	}
	return err
}
