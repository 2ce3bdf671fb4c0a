package runtime

// The probe plan: one stage, before anything is loaded, turns the checked
// program and the host (the files, -p, -c, the kernel) into the list of
// concrete places its programs attach to, each with why it was chosen.
// compile resolves the attach points (resolve.go: kernel support,
// watchpoint addresses, usdt probes, uprobe and kprobe wildcards, bare and
// C++ names; boundary.go: offsets and instruction boundaries; -p mapping
// checks) and applies the missing-probe policy, then the code generator
// compiles what matched; planSites (attach.go) turns its attachments into
// sites: the file, the file offset, the semaphore, the cookie. Attaching
// (run.go, uprobe_multi.go, follow.go) executes the sites without
// resolving anything again. Nothing here loads or attaches.

import (
	"fmt"
	"io"

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
func makePlan(p *lang.Program, opts Options, objs []string, childPID int, files *usdt.Files) (*probePlan, error) {
	spec, err := compile(p, opts, objs, childPID, files)
	if err != nil {
		return nil, err
	}
	sites, err := planSites(spec, files, opts.Unsafe)
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
// that matched something. p has been through lang.Resolve. childPID is
// the -c command's PID, the value of cpid; files are the ELF files the run
// reads, kept open for attaching.
func compile(p *lang.Program, opts Options, objs []string, childPID int, files *usdt.Files) (*codegen.Spec, error) {
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
	uprobes, err := expandUprobes(p, files)
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
	if err := checkAddresses(matched, opts, files); err != nil {
		return nil, err
	}
	// A -c command's probes without a path may be in a library it loads
	// later: those are looked for again then (see loader.go).
	watch := opts.Command != "" && hasWildcardUSDT(p)
	missing := notFound(p, uprobes, objs, watch, files)
	if opts.PID != 0 {
		missing = append(missing, notMapped(p, opts.PID)...)
	}
	if err := applyMissingPolicy(p, opts, len(matched.Probes) > 0 || watch, missing); err != nil {
		return nil, err
	}
	copts := codegenOptions(opts, probes, childPID)
	copts.WatchLoader = watch
	return codegen.Compile(matched, copts)
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
