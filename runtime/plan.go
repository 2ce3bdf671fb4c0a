package runtime

// The probe plan: one stage, before anything is loaded, turns the checked
// program and the host (the files, -p, -c, the kernel) into the list of
// concrete places its programs attach to, each with why it was chosen.
// compile resolves the attach points (resolve.go: kernel support,
// watchpoint addresses, usdt probes, uprobe and kprobe wildcards, bare and
// C++ names; boundary.go: offsets and instruction boundaries; -p mapping
// checks) and applies the missing-probe policy, then the code generator
// compiles what matched; planSites turns its attachments into sites: the
// file, the file offset, the semaphore, the cookie. Attaching executes the
// sites without resolving anything again, a file per mechanism:
// uprobe_multi.go, uprobe.go (perf-event uprobes), tracepoint.go,
// profile.go (perf events), watchpoint.go, kprobe.go (kprobes and kfuncs),
// dispatched by run.go and follow.go. Nothing here loads or attaches.

import (
	"debug/elf"
	"fmt"
	"io"
	"sort"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// probePlan is a run's plan: the compiled program and every site its
// programs attach to.
type probePlan struct {
	spec  *codegen.Spec
	sites []site
	// pid is the process the uprobes and usdt probes are filtered on (-p,
	// or the -c command's), 0 for every process.
	pid int
}

// makePlan computes the plan of p for a run with opts: objs are the
// objects an attach point without a path looks in, childPID the -c
// command's PID (0 before it is started), files the ELF files the run
// reads, kept open for attaching.
func makePlan(p *lang.Program, info *lang.Info, opts Options, objs []string, childPID int, files *usdt.Files) (*probePlan, error) {
	fields := parseFuncFields(p)
	spec, err := compile(p, info, fields, opts, objs, childPID, files)
	if err != nil {
		return nil, err
	}
	sites, err := planSites(spec, fields, files, opts.Unsafe)
	if err != nil {
		return nil, err
	}
	pid := opts.PID
	if childPID != 0 {
		pid = childPID
	}
	return &probePlan{spec: spec, sites: sites, pid: pid}, nil
}

// compile refuses the attach points this kernel cannot serve, resolves
// USDT probes in objs and runs the code generator on the attach points
// that matched something. p has been through lang.Resolve; fields holds
// the function fields of its uprobes, and compile adds those of the
// attach points their wildcards expand to. childPID is
// the -c command's PID, the value of cpid; files are the ELF files the run
// reads, kept open for attaching.
func compile(p *lang.Program, info *lang.Info, fields funcFields, opts Options, objs []string, childPID int, files *usdt.Files) (*codegen.Spec, error) {
	if err := checkKernelSupport(p, capability.Of); err != nil {
		return nil, err
	}
	if err := checkWatchpoints(p, opts, objs, files); err != nil {
		return nil, err
	}
	probes, err := resolveUSDT(p, objs, files)
	if err != nil {
		return nil, err
	}
	uprobes, err := expandUprobes(p, fields, objs, files)
	if err != nil {
		return nil, err
	}
	if err := expandKprobes(p, uprobes); err != nil {
		return nil, err
	}
	for ap, ps := range probes {
		if len(ps) > 0 {
			uprobes[ap] = []*lang.AttachPoint{ap}
		} else {
			uprobes[ap] = nil
		}
	}
	matched := matchedProgram(p, uprobes)
	if err := checkAddresses(matched, fields, opts, files); err != nil {
		return nil, err
	}
	// A -c command's probes without a path may be in a library it loads
	// later: those are looked for again then (see loader.go).
	watch := opts.Command != "" && hasWildcardUSDT(p)
	missing := notFound(p, fields, uprobes, objs, watch, files)
	if opts.PID != 0 {
		missing = append(missing, notMapped(p, opts.PID)...)
	}
	if err := applyMissingPolicy(p, opts, len(matched.Probes) > 0 || watch, missing); err != nil {
		return nil, err
	}
	copts := codegenOptions(opts, probes, childPID)
	copts.WatchLoader = watch
	return codegen.Compile(matched, info, copts)
}

// funcFields holds the function field of every uprobe and uretprobe
// attach point of a run, parsed once when the plan starts (after
// lang.Resolve has substituted positional parameters), and those of the
// attach points its wildcards and C++ names expand to, made from their
// parts. It is keyed by the attach point's place and field, which the
// code generator's Attachment keeps as ProbePos and Symbol, so that
// planning the sites reads the same parse.
type funcFields map[funcKey]attachpoint.Func

// funcKey names one uprobe attach point: an expanded attach point keeps
// the place of the one it came from, with a field of its own.
type funcKey struct {
	loc   lang.Span
	field string
}

// parseFuncFields parses the function field of every uprobe and
// uretprobe attach point of p.
func parseFuncFields(p *lang.Program) funcFields {
	fields := funcFields{}
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if ap.Kind == lang.ProbeUprobe || ap.Kind == lang.ProbeUretprobe {
				fields.add(ap, parseFuncField(ap))
			}
		}
	}
	return fields
}

// parseFuncField parses the function field of uprobe attach point ap:
// the one place a script's attach point is split into function, offset
// or address.
func parseFuncField(ap *lang.AttachPoint) attachpoint.Func {
	return attachpoint.ParseFunc(ap.Func)
}

// add records the function field of attach point ap.
func (ff funcFields) add(ap *lang.AttachPoint, f attachpoint.Func) {
	ff[funcKey{loc: ap.Loc, field: ap.Func}] = f
}

// of returns the function field of attach point ap.
func (ff funcFields) of(ap *lang.AttachPoint) attachpoint.Func {
	return ff[funcKey{loc: ap.Loc, field: ap.Func}]
}

// ofAttachment returns the function field of the uprobe attach point
// attachment a was compiled from.
func (ff funcFields) ofAttachment(a *codegen.Attachment) attachpoint.Func {
	return ff[funcKey{loc: a.ProbePos, field: a.Symbol}]
}

// applyMissingPolicy decides what the attach points that named one usdt
// probe or function and matched nothing (missing) do to the run: with
// nothing else to trace (matched is false) the run fails, else
// opts.MissingProbes says whether it fails, warns or goes on silently.
func applyMissingPolicy(p *lang.Program, opts Options, matched bool, missing lang.ErrorList) error {
	switch {
	case !matched && len(missing) > 0:
		return missing
	case !matched:
		return errNoProbes
	case len(missing) > 0 && opts.MissingProbes == settings.MissingError:
		return missing
	case len(missing) > 0 && opts.MissingProbes == settings.MissingWarn && !opts.NoWarnings && opts.Err != nil:
		missing.WriteWarnings(opts.Err, p.File, p.Source)
	}
	return nil
}

// write prints the plan, one line per site: the program, the probe, where
// it attaches and why.
func (pl *probePlan) write(w io.Writer) {
	fmt.Fprintf(w, "plan: %d sites", len(pl.sites))
	if pl.spec.LoaderProgram != "" {
		fmt.Fprintf(w, ", and the -c command's library loads watched for usdt probes without a path")
	}
	fmt.Fprintln(w)
	for _, s := range pl.sites {
		fmt.Fprintf(w, "  %s %s", s.att.Program, s.att.Probe)
		if s.att.ProbeName != s.att.Probe {
			// A wildcard, a bare or C++ name, an offset of 0: the
			// attach point as it matched.
			fmt.Fprintf(w, " as %s", s.att.ProbeName)
		}
		fmt.Fprintf(w, ": %s", s.why)
		if pl.pid != 0 && isUserSite(s.att.Kind) {
			fmt.Fprintf(w, " (process %d)", pl.pid)
		}
		fmt.Fprintln(w)
	}
}

// ownWhy says what a site that is not in a user file is.
func ownWhy(a *codegen.Attachment) string {
	switch a.Kind {
	case lang.ProbeBegin, lang.ProbeEnd:
		return "run once by gotrace"
	case lang.ProbeInterval:
		return fmt.Sprintf("run by gotrace every %v", a.Period)
	case lang.ProbeProfile:
		if a.Frequency != 0 {
			return fmt.Sprintf("perf CPU clock event on each CPU, %d Hz", a.Frequency)
		}
		return fmt.Sprintf("perf CPU clock event on each CPU, every %v", a.Period)
	case lang.ProbeTracepoint:
		return fmt.Sprintf("tracepoint %s:%s", a.Tracepoint.Category, a.Tracepoint.Name)
	case lang.ProbeSoftware, lang.ProbeHardware:
		return fmt.Sprintf("perf event %s config %d, every %d events", a.Kind, a.PerfConfig, a.Count)
	case lang.ProbeWatchpoint:
		return fmt.Sprintf("hardware breakpoint on %d bytes at %#x", a.WatchLen, a.Address)
	case lang.ProbeKprobe, lang.ProbeKretprobe:
		return fmt.Sprintf("%s on kernel function %s", a.Kind, a.Symbol)
	case lang.ProbeKfunc, lang.ProbeKretfunc:
		return fmt.Sprintf("%s (BPF trampoline) on kernel function %s", a.Kind, a.Symbol)
	}
	return a.Kind.String()
}

// usdtWhy says where a usdt site is and what it found there.
func usdtWhy(a *codegen.Attachment, path string, s codegen.Site) string {
	why := fmt.Sprintf("usdt %s:%s in %s at %#x", a.USDT.Provider, a.USDT.Name, path, s.Offset)
	if s.SemaphoreOffset != 0 {
		why += fmt.Sprintf(" (semaphore %#x)", s.SemaphoreOffset)
	}
	return why + fmt.Sprintf(", cookie %d", s.Cookie)
}

// addressWhy says where a uprobe given by address or by function and
// offset attaches: compile has checked that addr starts an instruction
// or, with --unsafe, warned where it could not.
func addressWhy(a *codegen.Attachment, field attachpoint.Func, addr, off uint64, unsafe bool) string {
	what := fmt.Sprintf("%#x", addr)
	if field.HasOffset {
		what = fmt.Sprintf("%s (%#x)", field.Field, addr)
	}
	checked := "instruction boundary checked"
	if unsafe {
		checked += ", or a warning said it could not be"
	}
	return fmt.Sprintf("%s %s in %s, file offset %#x: %s", a.Kind, what, a.Path, off, checked)
}

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

// planSites expands the attachments of spec into sites; fields holds the
// function fields of their uprobe attach points. Uprobe symbols are
// resolved here, before anything is loaded, so that the count printed
// first is right; an attach point that matches nothing drops out silently,
// as in bpftrace.
func planSites(spec *codegen.Spec, fields funcFields, files *usdt.Files, unsafe bool) ([]site, error) {
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
			us, err := uprobeSites(a, fields.ofAttachment(a), f, fs, unsafe)
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
// file f, whose function symbols are syms, and whose function field is
// field: one site at an address
// (0x2262, 8802, main+2; checkAddresses has checked it), or at the
// function that the attachment names (expandUprobes has made it one
// symbol's name). unsafe is --unsafe, which attached addresses whose
// boundary could not be checked.
func uprobeSites(a *codegen.Attachment, field attachpoint.Func, f *usdt.File, syms []elf.Symbol, unsafe bool) ([]site, error) {
	path := f.Path()
	if field.AtAddress() {
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
