package plan

import (
	"debug/elf"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/internal/capability"
	"github.com/gotrace/gotrace/lang"
	"github.com/gotrace/gotrace/lang/attachpoint"
	"github.com/gotrace/gotrace/usdt"
)

// capabilityOf answers what the machine can do: capability.Of, or a fixed
// answer in tests; only gatherHost asks it.
type capabilityOf func(capability.Feature) capability.Row

// checkKernelSupport refuses attach points that the machine cannot serve,
// as the capability table has, before anything is loaded, so that the
// user learns why instead of seeing a kernel error code. The table's rows
// are those gatherHost asked for: only the features the script's attach
// points need, so a script of BEGIN and uprobes tries none.
func checkKernelSupport(p *lang.Program, h *hostFacts) error {
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			switch ap.Kind {
			case lang.ProbeKprobe, lang.ProbeKretprobe:
				if r := h.features[capability.Kprobes]; !r.Available && !r.Unknown {
					return attachError(ap, "%s", r.NotAvailable())
				}
			case lang.ProbeHardware:
				if r := h.features[capability.PMU]; !r.Available && !r.Unknown {
					return attachError(ap, "hardware probes are not available: this machine has no hardware PMU, as most virtual machines (%s)", r.Evidence)
				}
			case lang.ProbeUnknown:
				return attachError(ap, "unknown probe type")
			}
		}
	}
	return nil
}

// resolution is what the rules make of a program and the host: the
// program reduced to what matched, with the usdt probes and the uprobe
// places it attaches to.
type resolution struct {
	// matched is the program with every attach point replaced by what
	// it matched (matchedProgram).
	matched *lang.Program
	// probes holds the usdt probes each usdt attach point matched.
	probes map[*lang.AttachPoint][]*usdt.Probe
	// places holds where each uprobe of matched attaches.
	places map[placeKey]place
	// watch says that the -c command's library loads are watched for
	// the usdt probes without a path (see Loaded); waiting is then the
	// program of those probes, which may be compiled later.
	watch   bool
	waiting *lang.Program
	// pidns is the PID namespace programs read ids in, nil for the
	// kernel's (readPIDNamespace).
	pidns *codegen.PIDNamespace
	// family is the -c command's family filter chosen, noFamily why a
	// trace that could have one has none (chooseFamily).
	family   *codegen.FamilyRecords
	noFamily error
}

// resolve applies the rules of resolution to p and to what h read of the
// host, in order, each once:
// it refuses the attach points this kernel cannot serve, resolves usdt
// probes, expands uprobe and kprobe wildcards and names, places the
// uprobes (checking addresses) and applies the missing-probe policy; it
// also chooses the -c command's family filter (chooseFamily). What it
// decided is compiled afterwards (compile).
func resolve(p *lang.Program, h *hostFacts, in Input) (*resolution, error) {
	// A -c command's probes without a path may be in a library it loads
	// later: those are looked for again then (see Loaded).
	watch := h.watchesLoads(in)
	family, noFamily, err := chooseFamily(h, in)
	if err != nil {
		return nil, err
	}
	if err := checkKernelSupport(p, h); err != nil {
		return nil, err
	}
	if err := checkWatchpoints(p, h); err != nil {
		return nil, err
	}
	probes, usdtErr := resolveUSDT(p, h)
	matches, uprobeErr := expandUprobes(p, h)
	if err := inScriptOrder(usdtErr, uprobeErr); err != nil {
		return nil, err
	}
	if err := expandKprobes(p, h, matches); err != nil {
		return nil, err
	}
	for ap, ps := range probes {
		if len(ps) > 0 {
			matches[ap] = []*lang.AttachPoint{ap}
		} else {
			matches[ap] = nil
		}
	}
	matched := matchedProgram(p, matches)
	places, err := placeUprobes(matched, h, in)
	if err != nil {
		return nil, err
	}
	if err := applyMissingPolicy(p, matches, h, in, len(matched.Probes) > 0 || watch, watch); err != nil {
		return nil, err
	}
	if h.pidnsNot != "" && in.Warnings != nil {
		fmt.Fprintf(in.Warnings, "WARNING: pid, tid and the processes of user stacks are the kernel's ids, not those of gotrace's PID namespace: %s\n", h.pidnsNot)
	}
	r := &resolution{matched: matched, probes: probes, places: places, watch: watch, family: family, noFamily: noFamily, pidns: h.pidns}
	if watch {
		r.waiting = matchedProgram(p, waitingPoints(p))
	}
	return r, nil
}

// matches reports whether pattern, a field of a script's attach point,
// names name: the plan's one way to match usdt probes, uprobe symbols and
// kernel functions, with bpftrace's * wildcards (attachpoint.Star; -l
// matches with the same matcher, ? a wildcard too). A function of a user
// file (cxx set) is also named by the start of the C++ name it demangles
// to (attachpoint.Star.MatchFunction).
func matches(pattern, name string, cxx bool) bool {
	if cxx {
		return attachpoint.Star.MatchFunction(pattern, name)
	}
	return attachpoint.Star.Match(pattern, name)
}

// matchNames returns the sorted, distinct names of names that pattern
// names (matches): the symbols of a file and the kernel's functions list
// a name more than once.
func matchNames(names iter.Seq[string], pattern string, cxx bool) []string {
	var matched []string
	for name := range names {
		if matches(pattern, name, cxx) {
			matched = append(matched, name)
		}
	}
	slices.Sort(matched)
	return slices.Compact(matched)
}

// matchSymbols returns the sorted, distinct names of the symbols that
// pattern names: the mangled name, or the start of the demangled C++
// name, with * wildcards in either.
func matchSymbols(syms []elf.Symbol, pattern string) []string {
	return matchNames(func(yield func(string) bool) {
		for _, s := range syms {
			if !yield(s.Name) {
				return
			}
		}
	}, pattern, true)
}

// kernelSpace is where x86-64's kernel half of the address space starts.
const kernelSpace = 0xffff800000000000

// checkWatchpoints refuses a watchpoint on a user address that the traced
// process does not map: with -p, one missing from its mappings; with -c,
// one outside the segments of a fixed-address (non-PIE) executable, the
// only memory of the command whose address is known before it runs.
// bpftrace 0.17 attaches there and the watchpoint never fires. Without -p
// or -c a watchpoint watches every process, and kernel addresses are not
// checked.
func checkWatchpoints(p *lang.Program, h *hostFacts) error {
	objs := h.objects
	var errs lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if ap.Kind != lang.ProbeWatchpoint || ap.Address >= kernelSpace {
				continue
			}
			switch {
			case h.pid != 0:
				w := h.watched[ap]
				if w.err != nil {
					return attachError(ap, "%v", w.err)
				}
				if !w.mapped {
					errs = append(errs, &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("address %#x is not mapped in process %d", ap.Address, h.pid)})
				}
			case h.command != "" && len(objs) > 0:
				exe := h.targets[objs[0]]
				if exe.file == nil {
					return attachError(ap, "%v", exe.err)
				}
				if _, ok := exe.file.Offset(ap.Address, false); exe.file.Type() == elf.ET_EXEC && !ok {
					errs = append(errs, &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("address %#x is not in a segment of %s, which the command maps at fixed addresses", ap.Address, objs[0])})
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// resolveUSDT finds the probes every usdt attach point of p matches in the
// files h read. An attach point without a path looks in h's objects:
// those the -p process maps or the -c command loads. An attach point that
// matches nothing gets an empty list: like bpftrace, the runtime fails
// only when no attach point of the script matches anything.
func resolveUSDT(p *lang.Program, h *hostFacts) (map[*lang.AttachPoint][]*usdt.Probe, error) {
	res := map[*lang.AttachPoint][]*usdt.Probe{}
	var errs lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if ap.Kind != lang.ProbeUSDT {
				continue
			}
			files := h.usdtFiles[ap]
			if files.err != nil {
				errs = append(errs, attachProblem(ap, "%v", files.err))
				continue
			}
			wild, glob := files.wild, files.glob
			matched := []*usdt.Probe{}
			for _, f := range files.targets {
				ps, err := f.probes, f.probesErr
				if err != nil {
					if wild || glob {
						// A mapped or matched object that is not a
						// readable ELF file has no probes to offer.
						continue
					}
					errs = append(errs, targetProblem(ap, err))
					break
				}
				for i := range ps {
					if !matchUSDT(ap, &ps[i]) {
						continue
					}
					pr := &ps[i]
					if !wild && !glob && ap.Target != f.path {
						// The probe builtin names the file as the
						// script does, like bpftrace.
						named := *pr
						named.Path = ap.Target
						pr = &named
					}
					matched = append(matched, pr)
				}
			}
			res[ap] = matched
		}
	}
	if len(errs) > 0 {
		// Every attach point whose file cannot be read, as bpftrace
		// reports them.
		return nil, errs
	}
	return res, nil
}

// expandUprobes resolves the symbols of uprobe and uretprobe attach
// points: one that matches nothing maps to no attach point, one that names
// a symbol by its own name to itself, and any other (a wildcard, a C++ name
// that names its symbols by their demangled start) to an attach point per
// matching symbol, so that the probe builtin names the symbol, as in
// bpftrace. Each attach point that results names one symbol exactly. A
// function with an offset (main+2) is matched by its function; with offset
// 0 it becomes the function alone, which the probe builtin prints as
// bpftrace does. Attach points given by address are left as they are.
// Every attach point whose file cannot be read is reported, with the
// others (targetProblem).
// A target of * stands for every object of h, those the -p process maps or
// the -c command loads (expandObjects). Each attach point made here
// carries its own function field, made from its parts (Function), as
// Resolve's carry theirs. The symbols are those h read.
func expandUprobes(p *lang.Program, h *hostFacts) (map[*lang.AttachPoint][]*lang.AttachPoint, error) {
	res := map[*lang.AttachPoint][]*lang.AttachPoint{}
	var errs lang.ErrorList
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if ap.Kind != lang.ProbeUprobe && ap.Kind != lang.ProbeUretprobe {
				continue
			}
			field := ap.Function
			if ap.Func == "" || field.IsAddress {
				// An address, placed by placeUprobes; a file that
				// cannot be read is reported with the others.
				if err := h.targets[ap.Target].funcsErr; err != nil {
					errs = append(errs, targetProblem(ap, err))
				}
				continue
			}
			if wildcardUprobe(ap) {
				aps, err := expandObjects(ap, h)
				if err != nil {
					return nil, err
				}
				res[ap] = aps
				continue
			}
			fs, err := h.targets[ap.Target].funcs, h.targets[ap.Target].funcsErr
			if err != nil {
				errs = append(errs, targetProblem(ap, err))
				continue
			}
			fn, suffix := field.Name, field.Suffix()
			names := matchSymbols(fs, fn)
			switch {
			case len(names) == 0:
				res[ap] = nil
			case len(names) == 1 && names[0] == fn && fn+suffix == ap.Func:
				res[ap] = []*lang.AttachPoint{ap}
			case len(names) == 1 && names[0] == fn:
				one := *ap
				one.Func = fn
				one.Function = attachpoint.Func{Field: fn, Name: fn}
				res[ap] = []*lang.AttachPoint{&one}
			default:
				res[ap] = expandWildcard(ap, names)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return res, nil
}

// inScriptOrder joins the diagnostics of errs, each a lang.ErrorList or
// nil, in the order of their places in the script, as bpftrace reports
// the attach points whose files it cannot read; another error is
// returned as it is.
func inScriptOrder(errs ...error) error {
	var all lang.ErrorList
	for _, err := range errs {
		var l lang.ErrorList
		switch {
		case err == nil:
		case errors.As(err, &l):
			all = append(all, l...)
		default:
			return err
		}
	}
	if len(all) == 0 {
		return nil
	}
	all.Sort()
	return all
}

// unreadableTarget is why a target file the script names could not be
// opened: bpftrace says of it that it "does not exist or is not
// executable" (targetProblem).
type unreadableTarget struct{ err error }

func (u unreadableTarget) Error() string { return u.err.Error() }
func (u unreadableTarget) Unwrap() error { return u.err }

// targetProblem is the diagnostic of attach point ap, whose target file
// could not be read for err: bpftrace 0.17's words, with err as the hint,
// for a usdt probe's file or one that could not be opened, else err.
func targetProblem(ap *lang.AttachPoint, err error) *lang.Error {
	var unreadable unreadableTarget
	switch {
	case ap.Kind == lang.ProbeUSDT:
		return &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("usdt target file '%s' does not exist or is not executable", ap.Target), Hint: err.Error()}
	case errors.As(err, &unreadable):
		// uretprobe's too: bpftrace names the file's kind, not the probe's.
		return &lang.Error{Span: ap.Loc, Msg: fmt.Sprintf("uprobe target file '%s' does not exist or is not executable", ap.Target), Hint: err.Error()}
	}
	return attachProblem(ap, "%v", err)
}

// expandKprobes adds to res, for each kprobe or kretprobe attach point of
// p with a wildcard, one attach point per function of the kernel's
// traceable functions (available_filter_functions) its pattern matches,
// in name order, as bpftrace 0.17 expands them: a symbol of
// /proc/kallsyms outside that list (an __init function such as
// vfs_caches_init, which kprobe:vfs_* matches) cannot be probed and
// would fail the whole attach. Where the kernel does not give that list,
// the symbols of /proc/kallsyms are matched (kernelFunctions); h read
// them.
func expandKprobes(p *lang.Program, h *hostFacts, res map[*lang.AttachPoint][]*lang.AttachPoint) error {
	for _, pr := range p.Probes {
		for _, ap := range pr.Attach {
			if (ap.Kind != lang.ProbeKprobe && ap.Kind != lang.ProbeKretprobe) || !strings.Contains(ap.Func, "*") {
				continue
			}
			if h.kernelErr != nil {
				return attachError(ap, "%v", h.kernelErr)
			}
			aps := []*lang.AttachPoint{}
			for _, name := range matchNames(slices.Values(h.kernelFuncs), ap.Func, false) {
				one := *ap
				one.Func = name
				one.Raw = ap.Kind.String() + ":" + name
				aps = append(aps, &one)
			}
			res[ap] = aps
		}
	}
	return nil
}

// expandObjects returns an attach point per function of the objects of h
// (those the -p process maps or the -c command loads) that uprobe attach
// point ap, whose target is "*", matches, each with its object as the
// target. An object that is not a readable ELF file has no functions to
// offer.
func expandObjects(ap *lang.AttachPoint, h *hostFacts) ([]*lang.AttachPoint, error) {
	switch {
	case h.objectsErr != nil:
		return nil, attachError(ap, "%v", h.objectsErr)
	case len(h.objects) == 0:
		return nil, attachError(ap, "a uprobe whose target is * needs -p PID or -c CMD, whose objects it names")
	}
	aps := []*lang.AttachPoint{}
	for _, obj := range h.objects {
		fs, err := h.targets[obj].funcs, h.targets[obj].funcsErr
		if err != nil {
			continue
		}
		inObj := *ap
		inObj.Target = obj
		aps = append(aps, expandWildcard(&inObj, matchSymbols(fs, ap.Function.Name))...)
	}
	return aps, nil
}

// expandWildcard returns an attach point per symbol name that uprobe
// attach point ap matched, each with the field's non-zero offset (+2)
// after the name, and its function field made from those parts.
func expandWildcard(ap *lang.AttachPoint, names []string) []*lang.AttachPoint {
	aps := []*lang.AttachPoint{}
	field := ap.Function
	suffix := field.Suffix()
	for _, name := range names {
		one := *ap
		one.Func = name + suffix
		one.Raw = ap.Kind.String() + ":" + ap.Target + ":" + one.Func
		one.Function = attachpoint.Func{Field: one.Func, Name: name, Offset: field.Offset, HasOffset: suffix != ""}
		aps = append(aps, &one)
	}
	return aps
}

// matchUSDT reports whether probe pr matches attach point ap: provider and
// name patterns may hold * wildcards, and an attach point with no provider
// (usdt:PATH:NAME) matches any provider.
func matchUSDT(ap *lang.AttachPoint, pr *usdt.Probe) bool {
	if ap.Provider != "" && !matches(ap.Provider, pr.Provider, false) {
		return false
	}
	return matches(ap.Func, pr.Name, false)
}

// attachError reports a problem with an attach point at its place in the
// script, as a diagnostic in bpftrace's format.
func attachError(ap *lang.AttachPoint, format string, args ...any) error {
	return attachErrorHint(ap, "", format, args...)
}

// attachErrorHint is attachError with a hint line, for the underlying
// reason when the message is bpftrace's fixed text.
func attachErrorHint(ap *lang.AttachPoint, hint, format string, args ...any) error {
	return spanError(ap.Loc, hint, format, args...)
}

// spanError is a diagnostic at span of the script.
func spanError(span lang.Span, hint, format string, args ...any) error {
	return lang.ErrorList{{Span: span, Msg: fmt.Sprintf(format, args...), Hint: hint}}
}

// matchedProgram returns p with every attach point in replace replaced by
// its list: the usdt and uprobe attach points that matched nothing
// disappear, those with a wildcard become one attach point per match, and
// probe blocks left with no attach point go, as bpftrace skips them
// silently. p itself is not changed.
func matchedProgram(p *lang.Program, replace map[*lang.AttachPoint][]*lang.AttachPoint) *lang.Program {
	q := *p
	q.Probes = nil
	for _, pr := range p.Probes {
		var aps []*lang.AttachPoint
		changed := false
		for _, ap := range pr.Attach {
			with, ok := replace[ap]
			if !ok {
				aps = append(aps, ap)
				continue
			}
			aps = append(aps, with...)
			changed = changed || len(with) != 1 || with[0] != ap
		}
		switch {
		case len(aps) == 0:
		case !changed:
			q.Probes = append(q.Probes, pr)
		default:
			kept := *pr
			kept.Attach = aps
			q.Probes = append(q.Probes, &kept)
		}
	}
	return &q
}
